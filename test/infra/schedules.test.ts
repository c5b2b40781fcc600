import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { SCHEDULE_ACTIONS, scheduleGroupName } from '../../infra/aws/schedules.js';
import type { StageName } from '../../infra/aws/stages.js';
import { QUEUES, physicalQueueName } from '../../infra/tables.js';
import {
  actions,
  functionDefs,
  functionIn,
  importOf,
  resources,
  single,
  statementsIn,
  withStubHandlers,
  type Resource,
  type Statement,
} from './support.js';

/**
 * Crew schedules on AWS (docs/crews.md, schedules, issue 29): the stage's
 * EventBridge Scheduler group, the role its schedules send as (only to the crew-run queue),
 * and the crews function that manages the schedules.
 */

const { synthesizeOnce } = withStubHandlers();

/** A statement with its actions sorted (CDK orders them its own way). */
const sorted = (s: Statement): Statement => ({
  ...s,
  Action: Array.isArray(s.Action) ? [...s.Action].sort() : s.Action,
});

/**
 * The Lambdas that manage Scheduler schedules: the crews API (/api/crew-schedules), and the
 * crew worker, which disables the schedule of a fire whose template was deleted.
 */
const MANAGERS = ['crews', 'crews-worker'] as const;

describe.each(['dev', 'prod'] as const)('crew schedules on stage %s', (name: StageName) => {
  let stateful: Template;
  let stateless: Template;
  beforeAll(() => {
    ({ stateful, stateless } = synthesizeOnce(name));
  }, 60_000);

  const group = (): [string, Resource] =>
    single(resources(stateful, 'AWS::Scheduler::ScheduleGroup'), 'schedule groups of the stage');
  const role = (): [string, Resource] =>
    single(
      resources(stateful, 'AWS::IAM::Role').filter(([, r]) =>
        JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('scheduler.amazonaws.com'),
      ),
      'roles Scheduler may assume',
    );
  const logicalId = (type: string, prefix: string): string =>
    single(
      resources(stateful, type).filter(([id]) => id.startsWith(prefix)),
      `${type} ${prefix}`,
    )[0];
  const crewRunQueue = (): string =>
    single(
      resources(stateful, 'AWS::SQS::Queue').filter(
        ([, q]) => q.Properties.QueueName === physicalQueueName(name, QUEUES.crewRuns),
      ),
      'crew-run queue',
    )[0];

  it('has one schedule group, dpm-<stage>, kept as the stage keeps its data', () => {
    const [, g] = group();
    expect(g.Properties).toEqual({ Name: `dpm-${name}` });
    expect(scheduleGroupName(name)).toBe(`dpm-${name}`);
    expect(g.DeletionPolicy).toBe(name === 'dev' ? 'Delete' : 'Retain');
  });

  it("lets only Scheduler assume the scheduler role, for this account's schedule group", () => {
    const [, r] = role();
    expect(r.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Action: 'sts:AssumeRole',
        Condition: {
          StringEquals: {
            'aws:SourceAccount': { Ref: 'AWS::AccountId' },
            'aws:SourceArn': { 'Fn::GetAtt': [group()[0], 'Arn'] },
          },
        },
      },
    ]);
    expect(r.Properties.ManagedPolicyArns).toBeUndefined();
    expect(r.Properties.Policies).toBeUndefined();
  });

  it('lets the scheduler role send to the crew-run queue, and do nothing else', () => {
    const [roleId] = role();
    const policies = resources(stateful, 'AWS::IAM::Policy').filter(([, p]) =>
      JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`),
    );
    const statements = policies.flatMap(([, p]) => (p.Properties.PolicyDocument.Statement as Statement[]).map(sorted));
    const keyId = logicalId('AWS::KMS::Key', 'Key');
    expect(statements).toEqual([
      // The one permission: sqs:SendMessage on exactly the crew-run queue.
      { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [crewRunQueue(), 'Arn'] } },
      // What SendMessage to a queue encrypted with the stage key takes.
      { Effect: 'Allow', Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Resource: { 'Fn::GetAtt': [keyId, 'Arn'] } },
    ]);
    // No other role of either stack names the scheduler.
    expect(
      resources(stateless, 'AWS::IAM::Role').filter(([, r]) =>
        JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('scheduler'),
      ),
    ).toEqual([]);
  });

  it.each(MANAGERS)('tells %s the group, the role and the queue the schedules send to', (fn) => {
    const env = functionIn(stateless, name, fn)[1].Properties.Environment.Variables;
    expect(env.SCHEDULE_GROUP_NAME).toBe(`dpm-${name}`);
    expect(env.SCHEDULER_ROLE_ARN).toEqual(importOf(name, role()[0], 'Arn'));
    expect(env.CREW_RUN_QUEUE_ARN).toEqual(importOf(name, crewRunQueue(), 'Arn'));
  });

  it.each(MANAGERS)("lets %s manage the group's schedules and pass the scheduler role to Scheduler only", (fn) => {
    const statements = statementsIn(stateless, name, fn).map(sorted);
    const onSchedules = statements.filter((s) => actions(s).some((a) => a.startsWith('scheduler:')));
    expect(onSchedules).toEqual([
      {
        Effect: 'Allow',
        Action: [...SCHEDULE_ACTIONS].sort(),
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':scheduler:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              `:schedule/dpm-${name}/*`,
            ],
          ],
        },
      },
    ]);
    expect(SCHEDULE_ACTIONS).toEqual([
      'scheduler:CreateSchedule',
      'scheduler:UpdateSchedule',
      'scheduler:DeleteSchedule',
      'scheduler:GetSchedule',
    ]);
    const passRole = statements.filter((s) => actions(s).some((a) => a.startsWith('iam:')));
    expect(passRole).toEqual([
      {
        Effect: 'Allow',
        Action: 'iam:PassRole',
        Resource: importOf(name, role()[0], 'Arn'),
        Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      },
    ]);
  });

  it('gives no other function a scheduler or IAM permission, nor the schedule settings', () => {
    for (const { name: fn } of functionDefs.filter((f) => !(MANAGERS as readonly string[]).includes(f.name))) {
      expect(
        statementsIn(stateless, name, fn)
          .flatMap(actions)
          .filter((a) => /^(scheduler|iam):/.test(a)),
        fn,
      ).toEqual([]);
      const env = functionIn(stateless, name, fn)[1].Properties.Environment.Variables;
      for (const variable of ['SCHEDULE_GROUP_NAME', 'SCHEDULER_ROLE_ARN', 'CREW_RUN_QUEUE_ARN'])
        expect(env[variable], `${fn} ${variable}`).toBeUndefined();
    }
  });
});
