import { logger } from '../../shared/logger.js';
import type { ScheduleFire, Scheduler, ScheduleTrigger } from '../../shared/ports/scheduler.js';
import { nextFireAfter, parseScheduleExpression } from './schedule-expression.js';

/** setTimeout's longest delay (about 24.8 days): a later fire is reached in hops. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * The local platform's Scheduler: one timer per enabled schedule in this process, at the
 * next fire EventBridge Scheduler would make (schedule-expression.ts, the same rules), which
 * sends the same ScheduleFire message to the crew-run queue. Timers live in the process:
 * the platform sets every schedule's again when it starts (ScheduleService.armAll); a fire
 * due while the platform was stopped is not made up, as Scheduler makes none while a
 * schedule is disabled. Timers do not keep the process alive.
 */
export class LocalScheduler implements Scheduler {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly send: (fire: ScheduleFire) => Promise<void>,
    private readonly now: () => number = Date.now,
  ) {}

  async put(trigger: ScheduleTrigger): Promise<void> {
    this.clear(trigger.id);
    if (!trigger.enabled) return;
    const parsed = parseScheduleExpression(trigger.expression);
    if (!parsed.ok) throw new Error(`schedule ${trigger.id}: ${parsed.reason}`);
    const anchor = trigger.anchor ? Date.parse(trigger.anchor) : this.now();
    const arm = (after: number) => {
      const due = nextFireAfter(parsed.expression, trigger.timezone, after, anchor);
      if (due === undefined) return;
      const wait = () => {
        const left = due - this.now();
        if (left > 0) {
          this.timers.set(trigger.id, setTimeout(wait, Math.min(left, MAX_DELAY_MS)).unref());
          return;
        }
        const fire = { schedule_id: trigger.id, scheduled_time: new Date(due).toISOString() };
        this.send(fire).catch((err: unknown) =>
          logger.error('local scheduler: could not send a schedule fire', { ...fire, error: err as Error }),
        );
        arm(due);
      };
      wait();
    };
    arm(this.now());
  }

  async remove(id: string): Promise<void> {
    this.clear(id);
  }

  /** Stops every timer (the platform stops). */
  stop(): void {
    for (const id of [...this.timers.keys()]) this.clear(id);
  }

  /** The schedules with a timer set (tests, the start's log line). */
  get armed(): number {
    return this.timers.size;
  }

  private clear(id: string): void {
    const timer = this.timers.get(id);
    if (timer) clearTimeout(timer);
    this.timers.delete(id);
  }
}
