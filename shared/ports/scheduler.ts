/**
 * What fires crew schedules (docs/crews.md, schedules). On AWS one EventBridge
 * Scheduler schedule per crew schedule, in the stage's schedule group, sending a
 * ScheduleFire message to the crew-run queue; locally the platform keeps the timers itself
 * and sends the same message. The crews worker starts the run (E2 with
 * `Idempotency-Key: schedule:<id>:<scheduled_time>`), so a repeated fire starts nothing.
 */
export interface ScheduleTrigger {
  /** The crew schedule's id (a UUID): also the trigger's name. */
  readonly id: string;
  /** EventBridge Scheduler syntax: `cron(m h dom mon dow year)` or `rate(N unit)`. */
  readonly expression: string;
  /** IANA time zone name (`ScheduleExpressionTimezone`). */
  readonly timezone: string;
  /** A disabled trigger fires nothing (EventBridge Scheduler `State: DISABLED`). */
  readonly enabled: boolean;
  /**
   * When the schedule's expression was last set (ISO 8601): a `rate()` first fires one period
   * after it, then every period (docs/crews.md).
   */
  readonly anchor?: string;
  /**
   * A `rate()`'s next fire in that series (ISO 8601), after the moment the trigger is put:
   * EventBridge Scheduler's StartDate ("the first occurrence" of a rate schedule; without one
   * Scheduler fires at once). Absent for a cron.
   */
  readonly start?: string;
}

export interface Scheduler {
  /** Creates the trigger of schedule `trigger.id`, or replaces it when it exists. */
  put(trigger: ScheduleTrigger): Promise<void>;
  /** Removes the trigger of schedule `id`; one that does not exist is no error. */
  remove(id: string): Promise<void>;
}

/** The crew-run queue message of one fire. */
export interface ScheduleFire {
  readonly schedule_id: string;
  /** When the fire was due (ISO 8601; on AWS Scheduler's `<aws.scheduler.scheduled-time>`). */
  readonly scheduled_time: string;
}
