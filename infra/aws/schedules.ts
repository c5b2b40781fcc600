import { Stack } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal, type IGrantable, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { ScheduleGroup, type IScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct, IConstruct } from 'constructs';
import { KEY_ACTIONS } from './grants.js';
import { acknowledgeFindings } from './nag.js';
import type { Stage, StageName } from './stages.js';

/**
 * Crew schedules on AWS (docs/crews.md, schedules): one EventBridge Scheduler
 * schedule per crew schedule, in the stage's schedule group, sending each fire to the
 * crew-run queue as a role that may do nothing else. The crews function (a Lambda with
 * `managesSchedules`) creates, updates and deletes them (shared/adapters/eventbridge-scheduler.ts).
 */

/** The stage's schedule group. */
export const scheduleGroupName = (stage: StageName): string => `dpm-${stage}`;

const SCHEDULER = 'scheduler.amazonaws.com';

/** What the crews function does with its schedules (the adapter's calls, and GetSchedule to read one back). */
export const SCHEDULE_ACTIONS = [
  'scheduler:CreateSchedule',
  'scheduler:UpdateSchedule',
  'scheduler:DeleteSchedule',
  'scheduler:GetSchedule',
] as const;

export interface CrewSchedules {
  /** `dpm-<stage>`: removing it removes its schedules, so it is kept as the stage keeps its data. */
  readonly group: ScheduleGroup;
  /** What Scheduler sends the fires as: sqs:SendMessage on the crew-run queue, and the key that encrypts it. */
  readonly role: Role;
}

/** The stateful stack's part: schedules mirror crew schedules kept in its tables, and outlive redeploys. */
export function crewSchedules(scope: Construct, stage: Stage, crewRunQueue: IQueue, key: IKey): CrewSchedules {
  const group = new ScheduleGroup(scope, 'ScheduleGroup', {
    scheduleGroupName: scheduleGroupName(stage.name),
    removalPolicy: stage.removalPolicy,
  });
  const role = new Role(scope, 'SchedulerRole', {
    description: `dpm ${stage.name}: EventBridge Scheduler sends crew schedule fires to the crew-run queue as this role`,
    // Confused deputy prevention: only schedules of this account's group (Scheduler's guide
    // scopes aws:SourceArn to the schedule group, never to a schedule).
    assumedBy: new ServicePrincipal(SCHEDULER, {
      conditions: {
        StringEquals: { 'aws:SourceAccount': Stack.of(scope).account, 'aws:SourceArn': group.scheduleGroupArn },
      },
    }),
  });
  role.addToPrincipalPolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [crewRunQueue.queueArn] }));
  // The queue is encrypted with the stage key: a producer needs a data key and decrypt.
  key.grant(role, ...KEY_ACTIONS.queueSend);
  return { group, role };
}

/**
 * A Lambda's grants for `managesSchedules`: SCHEDULE_ACTIONS on the group's schedules only, and
 * passing the scheduler role to Scheduler only (what CreateSchedule and UpdateSchedule need).
 */
export function grantScheduleManagement(fn: IGrantable & IConstruct, group: IScheduleGroup, role: IRole): void {
  fn.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: [...SCHEDULE_ACTIONS],
      resources: [
        Stack.of(fn).formatArn({
          service: 'scheduler',
          resource: 'schedule',
          resourceName: `${group.scheduleGroupName}/*`,
        }),
      ],
    }),
  );
  fn.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['iam:PassRole'],
      resources: [role.roleArn],
      conditions: { StringEquals: { 'iam:PassedToService': SCHEDULER } },
    }),
  );
  acknowledgeFindings(fn, {
    rule: 'AwsSolutions-IAM5',
    finding: /^Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule\/.+\/\*$/,
    reason: "the schedules of the stage's schedule group: one per crew schedule, named by its id, made at run time",
  });
}
