import { randomUUID } from 'node:crypto';
import type { Caller } from '../../../shared/auth/caller.js';
import { type Clock, systemClock } from '../../../shared/clock.js';
import type { Page } from '../../../shared/page.js';
import { Conflict, Invalid, NotFound, type ValidationIssue, valueError } from '../../../shared/errors.js';
import type { Change, DomainEventType } from '../../../shared/events/types.js';
import { logger } from '../../../shared/logger.js';
import type { Scheduler, ScheduleTrigger } from '../../../shared/ports/scheduler.js';
import { AGAIN, retry } from '../../../shared/retry.js';
import { resolveValues } from '../templates/declaration.js';
import { isTimeZone, nextFireAfter, parseScheduleExpression } from './schedule-expression.js';
import {
  rateAnchor,
  type ScheduleItem,
  type ScheduleStore,
  type ScheduleUpdate,
  toCrewSchedule,
} from './schedule-store.js';
import type { CrewRun } from '../runs/run-schemas.js';
import type { CrewSchedule, SchedulePatch, ScheduleRequest } from './schedule-schemas.js';
import type { RunService } from '../runs/run-service.js';
import { FINISHED_STATUSES, type RunStore, toRun } from '../runs/run-store.js';
import { type TemplateStore } from '../templates/template-store.js';

/** Tries when the schedule changes between read and write. */
const ROUNDS = 5;

/** A deleted template's schedules are disabled this many at a time. */
const TEMPLATE_PAGE = 100;

/**
 * Crew schedules (docs/crews.md, schedules): what an admin declares, and what a
 * fire does. The Scheduler port holds the triggers (EventBridge Scheduler on AWS, the local
 * platform's timers otherwise); each fire reaches `fire` through the crew-run queue.
 *
 * Writes to the two go in the order that leaves no schedule firing when it should not: a new
 * or changed trigger is set before the schedule is stored (a trigger without its schedule
 * fires nothing: `fire` finds no schedule), and removed before the schedule is deleted.
 */
export class ScheduleService {
  constructor(
    private readonly schedules: ScheduleStore,
    private readonly templates: TemplateStore,
    private readonly runs: Pick<RunStore, 'get'>,
    private readonly crews: Pick<RunService, 'startScheduledRun'>,
    private readonly scheduler: Scheduler,
    /** The time a schedule's next fire counts from, and each change's `at`. */
    private readonly clock: Clock = systemClock,
  ) {}

  async create(req: ScheduleRequest, caller: Caller): Promise<CrewSchedule> {
    const template = await this.templates.get(req.template_id);
    const issues = this.expressionIssues(req.expression, req.timezone);
    if (template) issues.push(...valueIssues(() => resolveValues(template.variables, req.values, 'values')));
    if (issues.length > 0) throw new Invalid(issues);
    if (!template) throw new NotFound(`No crew template ${req.template_id}`);
    const at = this.clock.iso();
    const schedule: ScheduleItem = {
      id: randomUUID(),
      template_id: template.id,
      name: req.name,
      expression: req.expression,
      timezone: req.timezone,
      values: req.values,
      overlap: req.overlap,
      enabled: req.enabled,
      next_run_at: null,
      last_run_at: null,
      last_correlation_id: null,
      last_skipped_at: null,
      created_by: caller.name,
      created_by_principal: caller.principal,
      created_at: at,
      updated_at: at,
      expression_set_at: at,
    };
    const stored = { ...schedule, next_run_at: this.nextRun(schedule, this.clock.now()) };
    await this.scheduler.put(this.trigger(stored));
    try {
      await this.schedules.create(stored, change('crew.schedule.created', caller, at));
    } catch (err) {
      await this.unset(stored.id);
      throw err;
    }
    return toCrewSchedule(stored);
  }

  async list(limit: number, cursor: string | undefined): Promise<Page<CrewSchedule>> {
    const page = await this.schedules.list(limit, cursor);
    return { items: page.items.map(toCrewSchedule), nextCursor: page.nextCursor };
  }

  async get(id: string): Promise<CrewSchedule> {
    return toCrewSchedule(await this.existing(id));
  }

  async update(id: string, patch: SchedulePatch, caller: Caller): Promise<CrewSchedule> {
    const written = await retry(
      async () => {
        const current = await this.existing(id);
        const next: ScheduleItem = {
          ...current,
          ...(patch.expression !== undefined ? { expression: patch.expression } : {}),
          ...(patch.timezone !== undefined ? { timezone: patch.timezone } : {}),
          ...(patch.values !== undefined ? { values: patch.values } : {}),
          ...(patch.overlap !== undefined ? { overlap: patch.overlap } : {}),
          ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
        };
        const issues =
          patch.expression !== undefined || patch.timezone !== undefined
            ? this.expressionIssues(next.expression, next.timezone)
            : [];
        if (patch.values !== undefined) {
          const template = await this.templates.get(current.template_id);
          if (template) issues.push(...valueIssues(() => resolveValues(template.variables, next.values, 'values')));
          else
            issues.push(
              valueError(['body', 'values'], `its crew template ${current.template_id} was deleted`, patch.values),
            );
        }
        if (issues.length > 0) throw new Invalid(issues);
        // Nothing sent: nothing changes, and no event says it did.
        if (Object.values(patch).every((v) => v === undefined)) return toCrewSchedule(current);
        const at = this.clock.iso();
        // A rate counts from the last change of its expression (docs/crews.md): other changes keep its fires.
        const changes = {
          updated_at: at,
          ...(next.expression !== current.expression ? { expression_set_at: at } : {}),
        };
        const updated = { ...next, ...changes, next_run_at: this.nextRun({ ...next, ...changes }, this.clock.now()) };
        await this.scheduler.put(this.trigger(updated));
        if (
          await this.schedules.update(current, changed(current, updated), change('crew.schedule.updated', caller, at))
        )
          return toCrewSchedule(updated);
        // Changed meanwhile: the trigger is set again from what is stored at the next round.
        return AGAIN;
      },
      { attempts: ROUNDS },
    );
    if (written.done) return written.value;
    await this.resetTrigger(id);
    throw new Conflict(`Crew schedule ${id} changed concurrently; try again`);
  }

  async delete(id: string, caller: Caller): Promise<void> {
    await this.existing(id);
    await this.unset(id, true);
    if (!(await this.schedules.delete(id, change('crew.schedule.deleted', caller, this.clock.iso()))))
      throw new NotFound(`No crew schedule ${id}`);
  }

  /** The runs the schedule started, newest first. */
  async runsOf(id: string, limit: number, cursor: string | undefined): Promise<Page<CrewRun>> {
    await this.existing(id);
    const page = await this.schedules.runs(id, limit, cursor);
    return { items: page.items.map(toRun), nextCursor: page.nextCursor };
  }

  /** A deleted template disables its schedules (each with its `crew.schedule.updated`). */
  async templateDeleted(templateId: string, caller: Caller | undefined): Promise<void> {
    let cursor: string | undefined;
    do {
      const page = await this.schedules.ofTemplate(templateId, TEMPLATE_PAGE, cursor);
      for (const schedule of page.items) if (schedule.enabled) await this.disable(schedule, caller);
      cursor = page.nextCursor;
    } while (cursor);
  }

  /**
   * One fire of schedule `id`, due at `scheduledTime` (a crew-run queue message): starts the
   * run as the schedule's creator would, or records why it started none (`overlap: skip` while
   * the previous run is unfinished, values the template no longer takes, or a later fire that
   * has started its run already). Either is stored with the fire's record, on condition that
   * the fire has none: a repeated fire (a message delivered twice, a send retried) does
   * nothing. A schedule deleted or disabled since fires nothing; one whose template was
   * deleted is disabled.
   */
  async fire(id: string, scheduledTime: string): Promise<void> {
    const log = logger.createChild({ persistentKeys: { schedule_id: id, scheduled_time: scheduledTime } });
    const fired = await retry<void>(
      async () => {
        const schedule = await this.schedules.get(id);
        if (!schedule || !schedule.enabled) {
          log.info('crew schedule fire ignored: the schedule was deleted or disabled');
          return;
        }
        // Each record of a fire (its run, or its skip) moves `last_run_at` or `last_skipped_at` to
        // its time or past it: while both are before it, the fire has none (or a skip recorded
        // at the same moment as a later one's: its record then refuses the write, below).
        const ranSince = schedule.last_run_at !== null && schedule.last_run_at >= scheduledTime;
        const skippedSince = schedule.last_skipped_at !== null && schedule.last_skipped_at >= scheduledTime;
        const ignored = () =>
          log.info('crew schedule fire ignored: this scheduled time already started its run or was skipped');
        if (
          (ranSince || skippedSince) &&
          (schedule.last_run_at === scheduledTime || (await this.schedules.hasFired(id, scheduledTime)))
        ) {
          ignored();
          return;
        }
        /**
         * After a write that a condition refused (nothing was stored): whether the fire was
         * recorded meanwhile (a copy of it); else the schedule changed or ran a later fire since
         * it was read, and the next round reads it again.
         */
        const recordedMeanwhile = async () => {
          if (!(await this.schedules.hasFired(id, scheduledTime))) return false;
          ignored();
          return true;
        };
        const template = await this.templates.get(schedule.template_id);
        if (!template) {
          log.warn('crew schedule disabled: its template was deleted');
          await this.disable(schedule, undefined);
          return;
        }
        const at = this.clock.iso();
        const next_run_at = this.nextRun(schedule, Math.max(this.clock.now(), Date.parse(scheduledTime)));
        const skip = async (reason: string) => {
          const recorded = await this.schedules.skip(
            schedule,
            scheduledTime,
            { last_skipped_at: latest(schedule.last_skipped_at, scheduledTime), next_run_at },
            { ...change('crew.schedule.fired', undefined, at), about: { skipped: true, reason } },
          );
          if (recorded) log.info('crew schedule fire skipped', { reason });
          return recorded || recordedMeanwhile();
        };
        // A fire that comes after a later one started its run (a send retried late) starts none:
        // runs start in the order of their fires, and `last_run_at` never goes back.
        if (ranSince) {
          if (await skip(`a later fire, due ${schedule.last_run_at}, has started its run`)) return;
          return AGAIN;
        }
        if (schedule.overlap === 'skip' && schedule.last_correlation_id) {
          const previous = await this.runs.get(schedule.last_correlation_id);
          if (previous && !FINISHED_STATUSES.has(previous.status)) {
            if (await skip(`its previous run ${previous.correlation_id} is ${previous.status}`)) return;
            return AGAIN;
          }
        }
        let started: { correlation_id: string } | undefined;
        try {
          started = await this.crews.startScheduledRun(
            template,
            schedule.values,
            { name: schedule.created_by, principal: schedule.created_by_principal },
            {
              scheduleId: id,
              scheduledTime,
              // The run, its record, `last_run_at` and the `crew.schedule.fired` event: one
              // transaction, so no run exists without its fire's event (docs/crews.md).
              record: (run) =>
                this.schedules.fireWrites(
                  schedule,
                  scheduledTime,
                  run,
                  { last_run_at: scheduledTime, last_correlation_id: run.correlation_id, next_run_at },
                  { ...change('crew.schedule.fired', undefined, at), about: { correlation_id: run.correlation_id } },
                ),
            },
          );
        } catch (err) {
          // The template changed since: its values no longer fit. Recorded; the next fire tries again.
          if (!(err instanceof Invalid)) throw err;
          if (await skip(`its values do not fit the template: ${err.message}`)) return;
          return AGAIN;
        }
        if (!started) {
          if (await recordedMeanwhile()) return;
          return AGAIN;
        }
        log.info('crew schedule fired', { correlation_id: started.correlation_id });
      },
      { attempts: ROUNDS },
    );
    if (!fired.done) throw new Error(`crew schedule ${id}: gave up firing after repeated concurrent changes`);
  }

  /** Sets every enabled schedule's trigger (the local platform's start: its timers live in the process). */
  async armAll(): Promise<number> {
    let count = 0;
    let cursor: string | undefined;
    do {
      const page = await this.schedules.list(100, cursor);
      for (const schedule of page.items) {
        await this.scheduler.put(this.trigger(schedule));
        if (schedule.enabled) count++;
      }
      cursor = page.nextCursor;
    } while (cursor);
    return count;
  }

  private async disable(schedule: ScheduleItem, caller: Caller | undefined): Promise<void> {
    const at = this.clock.iso();
    const disabled = { ...schedule, enabled: false, next_run_at: null, updated_at: at };
    await this.scheduler.put(this.trigger(disabled));
    if (
      !(await this.schedules.update(
        schedule,
        { enabled: false, next_run_at: null, updated_at: at },
        change('crew.schedule.updated', caller, at),
      ))
    )
      await this.resetTrigger(schedule.id);
  }

  /** The trigger as the stored schedule says (after a write that lost a race). */
  private async resetTrigger(id: string): Promise<void> {
    const stored = await this.schedules.get(id);
    if (stored) await this.scheduler.put(this.trigger(stored));
  }

  /** Removes a trigger; with `strict` a failure is the caller's (a delete must not leave one firing). */
  private async unset(id: string, strict = false): Promise<void> {
    try {
      await this.scheduler.remove(id);
    } catch (err) {
      if (strict) throw err;
      logger.error('crew schedule: could not remove the trigger of a schedule that was not stored', {
        schedule_id: id,
        error: err as Error,
      });
    }
  }

  private async existing(id: string): Promise<ScheduleItem> {
    const schedule = await this.schedules.get(id);
    if (!schedule) throw new NotFound(`No crew schedule ${id}`);
    return schedule;
  }

  private expressionIssues(expression: string, timezone: string): ValidationIssue[] {
    const issues: ValidationIssue[] = [];
    const parsed = parseScheduleExpression(expression);
    if (!parsed.ok) issues.push(valueError(['body', 'expression'], parsed.reason, expression));
    if (!isTimeZone(timezone))
      issues.push(
        valueError(['body', 'timezone'], 'must be an IANA time zone name, e.g. UTC or Europe/Berlin', timezone),
      );
    return issues;
  }

  /** The next fire after `afterMs` (null when disabled or none is left). */
  private nextRun(schedule: ScheduleItem, afterMs: number): string | null {
    if (!schedule.enabled) return null;
    const parsed = parseScheduleExpression(schedule.expression);
    if (!parsed.ok) return null;
    const next = nextFireAfter(parsed.expression, schedule.timezone, afterMs, Date.parse(rateAnchor(schedule)));
    return next === undefined ? null : new Date(next).toISOString();
  }

  /**
   * The Scheduler's view of a schedule: a rate counts from the last change of its expression,
   * and starts (StartDate on AWS) at its next fire in that series, the one `next_run_at` names.
   */
  private trigger(schedule: ScheduleItem): ScheduleTrigger {
    const parsed = parseScheduleExpression(schedule.expression);
    const start =
      schedule.enabled && parsed.ok && parsed.expression.kind === 'rate'
        ? nextFireAfter(parsed.expression, schedule.timezone, this.clock.now(), Date.parse(rateAnchor(schedule)))
        : undefined;
    return {
      id: schedule.id,
      expression: schedule.expression,
      timezone: schedule.timezone,
      enabled: schedule.enabled,
      anchor: rateAnchor(schedule),
      ...(start !== undefined ? { start: new Date(start).toISOString() } : {}),
    };
  }
}

/** The later of two instants (ISO 8601, as stored: they compare as text). */
const latest = (a: string | null, b: string): string => (a !== null && a > b ? a : b);

const change = (type: DomainEventType, caller: Caller | undefined, at: string): Change => ({
  type,
  actor: caller?.name ?? null,
  at,
});

/** What differs between two versions of a schedule, as a store update. */
function changed(before: ScheduleItem, after: ScheduleItem): ScheduleUpdate {
  return {
    expression: after.expression,
    ...(after.expression_set_at !== before.expression_set_at ? { expression_set_at: after.expression_set_at } : {}),
    timezone: after.timezone,
    ...(JSON.stringify(before.values) !== JSON.stringify(after.values) ? { values: after.values } : {}),
    overlap: after.overlap,
    enabled: after.enabled,
    next_run_at: after.next_run_at,
    updated_at: after.updated_at,
  };
}

/** The issues `check` throws, if any. */
function valueIssues(check: () => unknown): ValidationIssue[] {
  try {
    check();
    return [];
  } catch (err) {
    if (err instanceof Invalid) return err.issues;
    throw err;
  }
}
