import { type Clock, systemClock } from '../../../shared/clock.js';
import { logger } from '../../../shared/logger.js';
import type { ScheduleFire, Scheduler, ScheduleTrigger } from '../../../shared/ports/scheduler.js';
import { nextFireAfter, parseScheduleExpression } from './schedule-expression.js';

/** A timer's longest delay (about 24.8 days): a later fire is reached in hops. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * A fire whose send failed (the queue did not answer) is sent again after 1 s, 2 s, 4 s, ...
 * at most a minute apart, for up to an hour after it was due: what EventBridge Scheduler does
 * with a fire its target refused (eventbridge-scheduler.ts RETRY_POLICY, an hour at most).
 * A repeated fire starts no second run (its scheduled time keys it), so a send that did arrive
 * although it failed is harmless.
 */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;
const RETRY_FOR_MS = 3_600_000;

/**
 * The local platform's Scheduler: one timer per enabled schedule in this process, at the
 * next fire EventBridge Scheduler would make (schedule-expression.ts, the same rules), which
 * sends the same ScheduleFire message to the crew-run queue. Timers live in the process:
 * the platform sets every schedule's again when it starts (ScheduleService.armAll); a fire
 * due while the platform was stopped is not made up, as Scheduler makes none while a
 * schedule is disabled. Timers do not keep the process alive. A send that fails is sent again
 * (RETRY_FOR_MS), said once in the log when it first fails and once more if it is given up.
 */
export class LocalScheduler implements Scheduler {
  /** Each armed schedule's timer: aborting it clears the timer. */
  private readonly timers = new Map<string, AbortController>();
  /** Sends waiting to be tried again (cleared by stop, not by a put or remove: the fire is still owed). */
  private readonly retries = new Set<AbortController>();
  /** Counts stops: a send that fails after one (it was under way) is not tried again. */
  private stops = 0;

  constructor(
    private readonly send: (fire: ScheduleFire) => Promise<void>,
    /** The time fires are due on, and what their timers sleep on. */
    private readonly clock: Clock = systemClock,
  ) {}

  async put(trigger: ScheduleTrigger): Promise<void> {
    this.clear(trigger.id);
    if (!trigger.enabled) return;
    const parsed = parseScheduleExpression(trigger.expression);
    if (!parsed.ok) throw new Error(`schedule ${trigger.id}: ${parsed.reason}`);
    const anchor = trigger.anchor ? Date.parse(trigger.anchor) : this.clock.now();
    const timer = new AbortController();
    this.timers.set(trigger.id, timer);
    const arm = (after: number) => {
      const due = nextFireAfter(parsed.expression, trigger.timezone, after, anchor);
      if (due === undefined) {
        if (this.timers.get(trigger.id) === timer) this.timers.delete(trigger.id);
        return;
      }
      const wait = () => {
        // Cleared (a put or remove of the schedule, the platform's stop) as its sleep ended.
        if (timer.signal.aborted) return;
        const left = due - this.clock.now();
        if (left > 0) {
          this.clock.sleep(Math.min(left, MAX_DELAY_MS), timer.signal, { ref: false }).then(wait, () => undefined);
          return;
        }
        this.deliver({ schedule_id: trigger.id, scheduled_time: new Date(due).toISOString() }, due);
        arm(due);
      };
      wait();
    };
    arm(this.clock.now());
  }

  async remove(id: string): Promise<void> {
    this.clear(id);
  }

  /** Stops every timer (the platform stops), sends waiting to be retried too. */
  stop(): void {
    for (const id of [...this.timers.keys()]) this.clear(id);
    for (const retry of this.retries) retry.abort();
    this.retries.clear();
    this.stops++;
  }

  /**
   * Sends one fire (due at `due`), and again after each failure with growing pauses until an
   * hour after it was due. Logged once when it first fails, and once if it is given up.
   */
  private deliver(fire: ScheduleFire, due: number, attempt = 1, pause = FIRST_RETRY_MS): void {
    const stops = this.stops;
    this.send(fire).then(
      () => undefined,
      (err: unknown) => {
        if (this.stops !== stops) return;
        const retryAt = this.clock.now() + pause;
        if (retryAt - due > RETRY_FOR_MS) {
          logger.error('local scheduler: gave up sending a schedule fire; it starts no run', {
            ...fire,
            attempts: attempt,
            error: err as Error,
          });
          return;
        }
        if (attempt === 1)
          logger.warn('local scheduler: could not send a schedule fire; sending it again', {
            ...fire,
            error: err as Error,
          });
        const retry = new AbortController();
        this.retries.add(retry);
        this.clock.sleep(pause, retry.signal, { ref: false }).then(
          () => {
            this.retries.delete(retry);
            this.deliver(fire, due, attempt + 1, Math.min(pause * 2, MAX_RETRY_MS));
          },
          () => undefined,
        );
      },
    );
  }

  /** The schedules with a timer set (tests, the start's log line). */
  get armed(): number {
    return this.timers.size;
  }

  private clear(id: string): void {
    this.timers.get(id)?.abort();
    this.timers.delete(id);
  }
}
