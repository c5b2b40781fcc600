import { describe, expect, it } from 'vitest';
import { ApprovalService } from '../../functions/approvals/service.js';
import { LocalScheduler } from '../../functions/crews/schedules/local-scheduler.js';
import type { ScheduleItem, ScheduleStore } from '../../functions/crews/schedules/schedule-store.js';
import { ScheduleService } from '../../functions/crews/schedules/schedule-service.js';
import type { RunLogEntry } from '../../functions/crews/runs/run-schemas.js';
import { type ScheduledRun } from '../../functions/crews/runs/run-service.js';
import { RunService } from '../../functions/crews/runs/run-service.js';
import type { TemplateService } from '../../functions/crews/templates/template-service.js';
import type { RunItem, RunStore } from '../../functions/crews/runs/run-store.js';
import type { TemplateStore } from '../../functions/crews/templates/template-store.js';
import { ManualClock } from '../../shared/clock.js';
import { Conflict } from '../../shared/errors.js';
import { adminCaller, principalOf, userCaller } from './fakes.js';

/**
 * The services on one ManualClock: an approval step's expiry as the decision endpoint and
 * the approvers' inbox see it, and a schedule fired by the local platform's timers, all
 * without waiting (the runner's side of both: crew-runner.test.ts, local-scheduler.test.ts).
 */

const T0 = Date.parse('2026-05-04T09:00:00.250Z');
const iso = (ms: number) => new Date(ms).toISOString();

describe('an approval step’s expiry on the clock', () => {
  const ID = 'a'.repeat(36);
  const EXPIRES = T0 + 60_000;

  /** A run waiting at step `gate` since T0, for a minute; the services over it on `clock`. */
  function world() {
    const clock = new ManualClock(T0);
    const waiting: RunLogEntry = {
      index: 3,
      correlation_id: ID,
      type: 'step.waiting',
      step_id: 'gate',
      timestamp: iso(T0),
      message: 'waits',
      data: { prompt: 'go?', role: 'approver', expires_at: iso(EXPIRES) },
    };
    const run = {
      correlation_id: ID,
      template_id: 't',
      template_name: 'release',
      status: 'waiting',
      values: {},
      created_by: 'ada',
      created_by_principal: principalOf('ada'),
      created_at: iso(T0 - 1_000),
      started_at: iso(T0 - 1_000),
      finished_at: null,
      event_count: 4,
      error: null,
      current_step: 'gate',
      steps: [{ id: 'gate', kind: 'approval', prompt: 'go?', timeout_seconds: 60 }],
      approval_roles: ['approver'],
      waiting: { step_id: 'gate', role: 'approver', prompt: 'go?', since: iso(T0), expires_at: iso(EXPIRES) },
      expires_at: 0,
    } as RunItem;
    const appended: RunLogEntry[] = [];
    const runs = {
      get: async () => run,
      logEntries: async (_id: string, from: number) => (from === waiting.index ? [waiting] : []),
      append: async (_run: RunItem, events: RunLogEntry | readonly RunLogEntry[]) => {
        appended.push(...[events].flat());
        return true;
      },
      waitingAfter: async () => ({ items: [{ position: `${iso(T0)}#c#${ID}`, item: run }], more: false }),
    } as unknown as RunStore;
    const queued: string[] = [];
    const crews = new RunService(
      {} as TemplateService,
      runs,
      { send: async (id) => void queued.push(id) },
      { eventsTtlDays: 1, clock },
    );
    const inbox = new ApprovalService(
      { decisions: { submittedAfter: async () => ({ items: [], more: false }) }, runs },
      clock,
    );
    const approver = userCaller('bob', { roles: ['approver'] });
    return {
      clock,
      appended,
      queued,
      decide: () => crews.decideStep(ID, 'gate', { approve: true }, approver),
      listed: async () => (await inbox.list(approver, { limit: 10, kind: 'crew_step' })).items.length,
    };
  }

  it('is listed and decided up to the millisecond before expires_at', async () => {
    const w = world();
    await w.clock.set(EXPIRES - 1);
    expect(await w.listed()).toBe(1);
    const decided = await w.decide();
    expect(decided.status).toBe('running');
    expect(w.appended).toEqual([
      expect.objectContaining({ type: 'step.completed', step_id: 'gate', timestamp: iso(EXPIRES - 1) }),
    ]);
    expect(w.queued).toEqual([ID]);
  });

  it('from expires_at on, leaves the inbox and refuses a decision (409), writing nothing', async () => {
    const w = world();
    await w.clock.set(EXPIRES);
    expect(await w.listed()).toBe(0);
    const refused = await w.decide().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Conflict);
    expect((refused as Error).message).toBe(`The approval of step gate expired at ${iso(EXPIRES)}`);
    expect(w.appended).toEqual([]);
    expect(w.queued).toEqual([]);
  });
});

describe('a schedule fired by the local timers on the clock', () => {
  it('fires a rate(1 minute) a minute after its creation (to the second), records the fire and its next one, and stops when disabled', async () => {
    const clock = new ManualClock(T0);
    const stored = new Map<string, ScheduleItem>();
    const apply = (id: string, update: Partial<ScheduleItem>) => stored.set(id, { ...stored.get(id)!, ...update });
    const store = {
      create: async (schedule: ScheduleItem) => void stored.set(schedule.id, schedule),
      get: async (id: string) => stored.get(id),
      hasFired: async () => false,
      update: async (seen: ScheduleItem, update: Partial<ScheduleItem>) => (apply(seen.id, update), true),
      // The fire's writes go with its run's (here: applied as the run is made).
      fireWrites: (seen: ScheduleItem, _time: string, _run: RunItem, update: Partial<ScheduleItem>) => (
        apply(seen.id, update),
        []
      ),
    } as unknown as ScheduleStore;
    const started: { scheduledTime: string; by: string; at: number }[] = [];
    const crews = {
      startScheduledRun: async (
        _template: unknown,
        _values: unknown,
        starter: { name: string },
        fire: ScheduledRun,
      ): Promise<{ correlation_id: string }> => {
        const run = { correlation_id: `run-${started.length + 1}` } as RunItem;
        fire.record(run);
        started.push({ scheduledTime: fire.scheduledTime, by: starter.name, at: clock.now() });
        return run;
      },
    };
    // What the crew-run queue and its worker do with a fire: hand it to `fire`.
    const timers = new LocalScheduler((fire) => service.fire(fire.schedule_id, fire.scheduled_time), clock);
    const service: ScheduleService = new ScheduleService(
      store,
      { get: async (id: string) => ({ id, name: 'hello', variables: [], steps: [] }) } as unknown as TemplateStore,
      { get: async () => undefined },
      crews,
      timers,
      clock,
    );
    const admin = adminCaller('dana');
    const made = await service.create(
      {
        template_id: 't1',
        name: 'every minute',
        expression: 'rate(1 minute)',
        timezone: 'UTC',
        values: {},
        overlap: 'allow',
        enabled: true,
      },
      admin,
    );
    expect(made).toMatchObject({ created_at: iso(T0), next_run_at: '2026-05-04T09:01:00.000Z' });

    await clock.set('2026-05-04T09:00:59.999Z');
    expect(started).toEqual([]);
    await clock.set('2026-05-04T09:01:00.000Z');
    expect(started).toEqual([{ scheduledTime: '2026-05-04T09:01:00.000Z', by: 'dana', at: clock.now() }]);
    expect(await service.get(made.id)).toMatchObject({
      last_run_at: '2026-05-04T09:01:00.000Z',
      last_correlation_id: 'run-1',
      next_run_at: '2026-05-04T09:02:00.000Z',
    });

    await clock.advance(60_000);
    expect(started.map((s) => s.scheduledTime)).toEqual(['2026-05-04T09:01:00.000Z', '2026-05-04T09:02:00.000Z']);

    const disabled = await service.update(made.id, { enabled: false }, admin);
    expect(disabled).toMatchObject({ enabled: false, next_run_at: null, updated_at: '2026-05-04T09:02:00.000Z' });
    await clock.advance(600_000);
    expect(started).toHaveLength(2);
    expect(timers.armed).toBe(0);
  });
});
