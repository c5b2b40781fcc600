import type { CreateScheduleCommandInput, SchedulerClient } from '@aws-sdk/client-scheduler';
import { MAX_ATTEMPTS, requestTimeouts } from '../aws/client-options.js';
import { lazy, type Lazy } from '../aws/lazy.js';
import type { ScheduleFire, ScheduleTrigger, Scheduler } from '../ports/scheduler.js';

type Sdk = typeof import('@aws-sdk/client-scheduler');

/** Where the stage's schedules live and what they send (shared/config.ts: SCHEDULE_GROUP_NAME, SCHEDULER_ROLE_ARN, CREW_RUN_QUEUE_ARN). */
export interface EventBridgeSchedulerSettings {
  /** The stage's schedule group, `dpm-<stage>`. */
  readonly groupName: string;
  /** The role Scheduler assumes to send a fire: it may only send to the crew-run queue. */
  readonly roleArn: string;
  /** The crew-run queue, the schedules' target. */
  readonly queueArn: string;
  readonly region: string;
}

/**
 * Scheduler answers a fire that the target refused (SQS throttled or unavailable) with retries
 * for at most this long: a nightly run still starts if SQS recovers within the hour, not in the
 * afternoon. A retried fire carries the same scheduled time, so it starts no second run.
 */
const RETRY_POLICY = { MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 185 } as const;

/**
 * Crew schedules on AWS (docs/crews.md, schedules): one EventBridge Scheduler
 * schedule per crew schedule, named by its id in the stage's group, sending a ScheduleFire to
 * the crew-run queue. Scheduler fills in `<aws.scheduler.scheduled-time>` at each fire.
 * SDK errors propagate: a throttled or unavailable Scheduler is a dependency failure (503).
 */
export class EventBridgeScheduler implements Scheduler {
  private readonly client: Lazy<{ sdk: Sdk; client: SchedulerClient }>;

  constructor(private readonly settings: EventBridgeSchedulerSettings) {
    this.client = lazy(async () => {
      const sdk = await import('@aws-sdk/client-scheduler');
      const client = new sdk.SchedulerClient({
        region: settings.region,
        maxAttempts: MAX_ATTEMPTS,
        requestHandler: requestTimeouts(),
      });
      return { sdk, client };
    });
  }

  /**
   * CreateSchedule, and UpdateSchedule when it exists (ConflictException). Create first, since
   * two puts of one new schedule at once then end with one schedule and no error, where update
   * first would need a third call when both find none and both create; and a group that does not
   * exist answers ResourceNotFoundException, a broken dependency. Both take the whole schedule.
   */
  async put(trigger: ScheduleTrigger): Promise<void> {
    const { sdk, client } = await this.client();
    const input = this.scheduleOf(trigger);
    try {
      await client.send(new sdk.CreateScheduleCommand(input));
    } catch (err) {
      if ((err as { name?: string }).name !== 'ConflictException') throw err;
      await client.send(new sdk.UpdateScheduleCommand(input));
    }
  }

  async remove(id: string): Promise<void> {
    const { sdk, client } = await this.client();
    try {
      await client.send(new sdk.DeleteScheduleCommand({ Name: id, GroupName: this.settings.groupName }));
    } catch (err) {
      if ((err as { name?: string }).name !== 'ResourceNotFoundException') throw err;
    }
  }

  private scheduleOf(trigger: ScheduleTrigger): CreateScheduleCommandInput {
    const fire: ScheduleFire = { schedule_id: trigger.id, scheduled_time: '<aws.scheduler.scheduled-time>' };
    return {
      Name: trigger.id,
      GroupName: this.settings.groupName,
      ScheduleExpression: trigger.expression,
      ScheduleExpressionTimezone: trigger.timezone,
      State: trigger.enabled ? 'ENABLED' : 'DISABLED',
      // A rate's first fire: one period after its expression was set, not at once (docs/crews.md).
      ...(trigger.start !== undefined ? { StartDate: new Date(trigger.start) } : {}),
      // Fires at the scheduled minute, as the contract promises.
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: this.settings.queueArn,
        RoleArn: this.settings.roleArn,
        Input: JSON.stringify(fire),
        RetryPolicy: RETRY_POLICY,
      },
    };
  }
}
