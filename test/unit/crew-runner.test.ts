import { afterEach, describe, expect, it, vi } from 'vitest';
import { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import {
  CANCEL_CHECK_MS,
  CrewRunner,
  RUN_LEASE_MS,
  type RunnerStore,
  type RunTimer,
  type RunWake,
  type StepRunner,
  type StepTimer,
} from '../../functions/crews/worker/runner.js';
import type { RunLogEntry } from '../../functions/crews/runs/run-schemas.js';
import type { Step } from '../../functions/crews/templates/template-schemas.js';
import { InProcessRunSignals } from '../../functions/crews/runs/signals.js';
import type { StepOutcome } from '../../functions/crews/worker/steps.js';
import { StepExecutor } from '../../functions/crews/worker/steps.js';
import type { LeaseWrite, RunItem, RunUpdate } from '../../functions/crews/runs/run-store.js';
import type { SlotCondition, SlotHolders, Slots, SlotStore } from '../../functions/crews/runs/slot-store.js';
import { ManualClock } from '../../shared/clock.js';
import { eventually } from '../support/eventually.js';

/**
 * One executor at a time (CrewRunner's lease) over a fake store that keeps the run store's
 * conditions: an append is refused when its index is taken or another delivery holds an
 * unexpired lease.
 */

const ID = 'r'.repeat(36);

type Stored = Omit<RunItem, 'lease'> & { lease_owner?: string; lease_until?: number };

class MemoryRuns implements RunnerStore, SlotStore {
  run: Stored;
  events: RunLogEntry[];
  readonly calls: Record<string, number> = {};

  constructor(steps: Step[], events: Omit<RunLogEntry, 'correlation_id' | 'timestamp' | 'index'>[] = []) {
    const at = new Date().toISOString();
    const queued: (typeof events)[number] = { type: 'run.queued', message: 'queued' };
    this.events = [queued, ...events].map((e, index) => ({
      ...e,
      index,
      correlation_id: ID,
      timestamp: at,
    }));
    this.run = {
      correlation_id: ID,
      template_id: 't',
      status: 'pending',
      values: {},
      created_by: 'ada',
      created_at: at,
      started_at: null,
      finished_at: null,
      event_count: this.events.length,
      error: null,
      steps,
      expires_at: 0,
    };
  }

  private count(method: string) {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
  }

  private free(owner: string, now: number): boolean {
    return this.run.lease_until === undefined || this.run.lease_until < now || this.run.lease_owner === owner;
  }

  private view(): RunItem {
    const { lease_owner, lease_until, ...run } = structuredClone(this.run);
    return lease_owner !== undefined && lease_until !== undefined
      ? { ...run, lease: { owner: lease_owner, until: lease_until } }
      : run;
  }

  /** A lease as a delivery elsewhere holds it (or held it, when it died). */
  holdFor(owner: string, until: number) {
    this.run.lease_owner = owner;
    this.run.lease_until = until;
  }

  async get(): Promise<RunItem | undefined> {
    this.count('get');
    return this.view();
  }

  async allLogEntries(): Promise<RunLogEntry[]> {
    this.count('allLogEntries');
    return structuredClone(this.events);
  }

  async append(
    _run: unknown,
    written: RunLogEntry | readonly RunLogEntry[],
    update: RunUpdate = {},
    _change?: unknown,
    lease?: LeaseWrite,
  ): Promise<boolean> {
    this.count('append');
    const events = Array.isArray(written) ? written : [written as RunLogEntry];
    if (events[0]!.index !== this.run.event_count) return false;
    if (lease && !this.free(lease.owner, lease.now)) return false;
    this.events.push(...structuredClone(events));
    Object.assign(this.run, update, { event_count: this.run.event_count + events.length });
    if (lease?.until === null) {
      delete this.run.lease_owner;
      delete this.run.lease_until;
    } else if (lease) this.holdFor(lease.owner, lease.until);
    return true;
  }

  async takeLease(_id: string, lease: LeaseWrite & { until: number }, eventCount: number): Promise<boolean> {
    this.count('takeLease');
    if (this.run.event_count !== eventCount || !this.free(lease.owner, lease.now)) return false;
    this.holdFor(lease.owner, lease.until);
    return true;
  }

  async renewLease(_id: string, owner: string, until: number): Promise<RunItem | undefined> {
    this.count('renewLease');
    if (this.run.lease_owner !== owner) return undefined;
    this.run.lease_until = until;
    return this.view();
  }

  async releaseLease(_id: string, owner: string): Promise<void> {
    this.count('releaseLease');
    if (this.run.lease_owner !== owner) return;
    delete this.run.lease_owner;
    delete this.run.lease_until;
  }

  /** The slots of each key, as DynamoRunStore keeps them in their item. */
  readonly slotItems = new Map<string, { holders: Record<string, number>; version: number }>();
  /** The runs waiting in this run's key's line before it, oldest first (the tests set them). */
  ahead: string[] = [];

  async slotQueue(_key: string, limit: number, before?: unknown): Promise<string[]> {
    this.count('slotQueue');
    const self = this.run.status === 'pending' && this.run.limit ? [ID] : [];
    return (before ? this.ahead : [...this.ahead, ...self]).slice(0, limit);
  }

  async slotQueueCount(): Promise<number> {
    this.count('slotQueueCount');
    return this.ahead.length;
  }

  async slots(key: string): Promise<Slots | undefined> {
    this.count('slots');
    return structuredClone(this.slotItems.get(key));
  }

  async takeSlot(
    key: string,
    holder: string,
    until: number,
    _expiresAt: number,
    when: SlotCondition,
  ): Promise<{ taken: true } | { taken: false; slots: Slots | undefined }> {
    this.count('takeSlot');
    const item = this.slotItems.get(key);
    const refused = { taken: false as const, slots: structuredClone(item) };
    if ('fewerThan' in when) {
      if (!item || !(holder in item.holders || Object.keys(item.holders).length < when.fewerThan)) return refused;
    } else if (!when.as) {
      if (item) return refused;
      this.slotItems.set(key, { holders: { [holder]: until }, version: 1 });
      return { taken: true };
    } else if (item?.version !== when.as.version || when.dropping.some(([id, until]) => item.holders[id] !== until)) {
      return refused;
    } else for (const [id] of when.dropping) delete item.holders[id];
    item.holders[holder] = until;
    item.version++;
    return { taken: true };
  }

  async renewSlot(key: string, holder: string, until: number): Promise<boolean> {
    this.count('renewSlot');
    const item = this.slotItems.get(key);
    if (!item || !(holder in item.holders)) return false;
    item.holders[holder] = until;
    return true;
  }

  async releaseSlot(key: string, holder: string): Promise<SlotHolders> {
    this.count('releaseSlot');
    const item = this.slotItems.get(key);
    if (item && holder in item.holders) {
      delete item.holders[holder];
      item.version++;
    }
    return structuredClone(item?.holders ?? {});
  }

  kinds() {
    return this.events.map((e) => (e.step_id ? `${e.type}:${e.step_id}` : e.type));
  }
}

/** A step runner whose steps end when the test says so; counts executions. */
function heldSteps() {
  const counts: Record<string, number> = {};
  const finish: ((outcome: StepOutcome) => void)[] = [];
  const runner: StepRunner = {
    execute: (step) => {
      counts[step.id] = (counts[step.id] ?? 0) + 1;
      return new Promise((resolve) => finish.push(resolve));
    },
  };
  return { runner, counts, finish: () => finish.shift()!({ ok: true, output: 'done' }) };
}

function recordingTimers() {
  const armed: { id: string; delaySeconds: number; timer: RunWake | undefined }[] = [];
  const timers: RunTimer = { after: async (id, delaySeconds, timer) => void armed.push({ id, delaySeconds, timer }) };
  return { timers, armed };
}

const call: Step = { id: 'call', kind: 'http', method: 'POST', url: 'http://127.0.0.1:9/' };
/** The log of a run of `call` alone that executed it once. */
const CALLED_ONCE = ['run.queued', 'run.started', 'step.started:call', 'step.completed:call', 'run.completed'];
const gate: Step = { id: 'gate', kind: 'approval', prompt: 'go?', role: 'approver', timeout_seconds: 60 };

afterEach(() => {
  vi.useRealTimers();
});

describe('CrewRunner: one executor at a time', () => {
  it('of two concurrent deliveries the step runs once; the other message comes back when the lease would lapse', async () => {
    const store = new MemoryRuns([call]);
    const steps = heldSteps();
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, steps.runner, undefined, timers);

    const first = runner.process(ID);
    await eventually(() => steps.counts.call === 1, 5_000, 'the step called', 5);
    expect(await runner.process(ID)).toBe('done');
    expect(steps.counts).toEqual({ call: 1 });
    expect(armed).toHaveLength(1);
    expect(armed[0]).toMatchObject({ id: ID, timer: undefined });
    expect(armed[0]!.delaySeconds).toBeGreaterThanOrEqual(RUN_LEASE_MS / 1000 - 1);
    expect(armed[0]!.delaySeconds).toBeLessThanOrEqual(RUN_LEASE_MS / 1000 + 1);

    steps.finish();
    expect(await first).toBe('done');
    expect(store.kinds()).toEqual(CALLED_ONCE);
    expect(steps.counts).toEqual({ call: 1 });
    // the last write let the lease go
    expect(store.run.lease_owner).toBeUndefined();
  }, 10_000);

  it("takes over a started step once the dead holder's lease lapsed, and not before", async () => {
    const store = new MemoryRuns(
      [call],
      [
        { type: 'run.started', message: 'started' },
        { type: 'step.started', step_id: 'call', message: 'started' },
      ],
    );
    Object.assign(store.run, { status: 'running', current_step: 'call' });
    const steps = heldSteps();
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, steps.runner, undefined, timers);

    // the holder died 20 s ago: its lease runs 10 s more
    store.holdFor('dead-worker', Date.now() + 10_000);
    expect(await runner.process(ID)).toBe('done');
    expect(steps.counts).toEqual({});
    expect(store.calls.allLogEntries ?? 0).toBe(0);
    expect(armed.map((a) => a.delaySeconds)).toEqual([11]);

    // lapsed: the step runs again (its step.started is not written twice)
    store.holdFor('dead-worker', Date.now() - 1);
    const resumed = runner.process(ID);
    await eventually(() => steps.counts.call === 1, 5_000, 'the step called', 5);
    expect(store.run.lease_owner).not.toBe('dead-worker');
    steps.finish();
    expect(await resumed).toBe('done');
    expect(store.kinds()).toEqual(CALLED_ONCE);
    expect(store.run.lease_owner).toBeUndefined();
  }, 10_000);

  it('renews the lease while a step runs, one store call a second either way, so a delivery 25 s in still finds it held', async () => {
    vi.useFakeTimers();
    const store = new MemoryRuns([call]);
    const steps = heldSteps();
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, steps.runner, undefined, timers);

    const first = runner.process(ID);
    await vi.waitFor(() => expect(steps.counts.call).toBe(1));
    const before = { get: store.calls.get ?? 0, renew: store.calls.renewLease ?? 0 };
    await vi.advanceTimersByTimeAsync(25 * CANCEL_CHECK_MS);
    const checks = { get: store.calls.get! - before.get, renew: store.calls.renewLease! - before.renew };
    // renewed after a third of the lease (about every 10 s), read at the other checks
    expect(checks.renew).toBe(2);
    expect(checks.get + checks.renew).toBe(25);
    expect(store.run.lease_until).toBeGreaterThan(Date.now() + RUN_LEASE_MS / 2);

    expect(await runner.process(ID)).toBe('done');
    expect(steps.counts).toEqual({ call: 1 });
    expect(armed).toHaveLength(1);
    steps.finish();
    expect(await first).toBe('done');
    expect(store.events.at(-1)?.type).toBe('run.completed');
  });
});

describe('CrewRunner: approval timers', () => {
  const decided = (): MemoryRuns => {
    const expires = new Date(Date.now() + 30_000).toISOString();
    const store = new MemoryRuns(
      [gate, call],
      [
        { type: 'run.started', message: 'started' },
        { type: 'step.started', step_id: 'gate', message: 'started' },
        { type: 'step.waiting', step_id: 'gate', message: 'waits', data: { expires_at: expires } },
        { type: 'step.completed', step_id: 'gate', message: 'approved', data: { output: { approved: true } } },
      ],
    );
    Object.assign(store.run, { status: 'running', current_step: null });
    return store;
  };
  /** The run went on after the decision: `call` started (and runs elsewhere). */
  const callStarted = (store: MemoryRuns) => {
    store.events.push({
      index: store.events.length,
      correlation_id: ID,
      timestamp: new Date().toISOString(),
      type: 'step.started',
      step_id: 'call',
      message: 'started',
    });
    store.run.event_count = store.events.length;
  };
  const timerOf = (store: MemoryRuns): StepTimer => ({
    step_id: 'gate',
    expires_at: String(store.events.find((e) => e.type === 'step.waiting')!.data!.expires_at),
  });

  it('arms the expiry with the wait it ends', async () => {
    const store = new MemoryRuns([gate]);
    const { timers, armed } = recordingTimers();
    await new CrewRunner(store, store, heldSteps().runner, undefined, timers).process(ID);
    const waiting = store.events.at(-1)!;
    expect(waiting.type).toBe('step.waiting');
    expect(armed).toEqual([
      { id: ID, delaySeconds: 60, timer: { step_id: 'gate', expires_at: waiting.data!.expires_at } },
    ]);
    expect(store.run.lease_owner).toBeUndefined();
  });

  it('a timer that finds its step decided and a later step started does nothing (no second execution)', async () => {
    const store = decided();
    const timer = timerOf(store);
    callStarted(store);
    store.run.current_step = 'call';
    const steps = heldSteps();
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, steps.runner, undefined, timers);

    // held by the delivery running `call`, and after that delivery died: nothing either way
    store.holdFor('holder', Date.now() + RUN_LEASE_MS);
    expect(await runner.process(ID, undefined, timer)).toBe('done');
    store.holdFor('holder', Date.now() - 1);
    expect(await runner.process(ID, undefined, timer)).toBe('done');
    expect(steps.counts).toEqual({});
    expect(armed).toEqual([]);
    expect(store.calls.append ?? 0).toBe(0);
    expect(store.calls.takeLease ?? 0).toBe(0);
  }, 10_000);

  it('a timer that finds in the log its step decided and the run gone on does nothing, also where the run names no current step', async () => {
    // A run item that names no current step (stored before it was kept): the log decides.
    const store = decided();
    const timer = timerOf(store);
    callStarted(store);
    delete store.run.current_step;
    const steps = heldSteps();
    const { timers, armed } = recordingTimers();
    expect(await new CrewRunner(store, store, steps.runner, undefined, timers).process(ID, undefined, timer)).toBe(
      'done',
    );
    expect(steps.counts).toEqual({});
    expect(armed).toEqual([]);
    expect(store.calls.append ?? 0).toBe(0);
    expect(store.calls.takeLease ?? 0).toBe(0);
  }, 10_000);

  it("a timer of an earlier wait of the step does nothing; one whose decided step is the run's last event continues it", async () => {
    const store = decided();
    const steps = heldSteps();
    const { timers } = recordingTimers();
    const runner = new CrewRunner(store, store, steps.runner, undefined, timers);
    const stale = { step_id: 'gate', expires_at: new Date(Date.now() - 3_600_000).toISOString() };
    expect(await runner.process(ID, undefined, stale)).toBe('done');
    expect(steps.counts).toEqual({});

    // the decision's own message was lost: the timer carries the run on
    const continued = runner.process(ID, undefined, timerOf(store));
    await eventually(() => steps.counts.call === 1, 5_000, 'the step called', 5);
    steps.finish();
    expect(await continued).toBe('done');
    expect(store.events.at(-1)?.type).toBe('run.completed');
  }, 10_000);
});

describe('CrewRunner: the process stops', () => {
  it('abandons a running wait step within a second, writes no event for it and lets the lease go', async () => {
    const store = new MemoryRuns([{ id: 'w', kind: 'wait', seconds: 60 }]);
    const stop = new AbortController();
    const runner = new CrewRunner(
      store,
      store,
      new StepExecutor(new OutboundHttp([]), undefined),
      undefined,
      recordingTimers().timers,
      stop.signal,
    );
    const running = runner.process(ID);
    await eventually(() => store.events.at(-1)?.type === 'step.started', 5_000, 'the wait step started', 5);
    const written = store.calls.append;

    const stoppedAt = Date.now();
    stop.abort();
    expect(await running).toBe('done');
    // a guard against a hang: the 60 s wait was given up
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    expect(store.calls.append).toBe(written);
    expect(store.kinds()).toEqual(['run.queued', 'run.started', 'step.started:w']);
    expect(store.run.status).toBe('running');
    expect(store.run.lease_owner).toBeUndefined();

    // nothing starts after the stop
    const reads = store.calls.get;
    expect(await runner.process(ID)).toBe('done');
    expect(store.calls.get).toBe(reads);
  }, 10_000);
});

/** Steps that succeed at once. */
const doneSteps: StepRunner = { execute: async () => ({ ok: true, output: 'done' }) };

describe('CrewRunner: concurrency limits (slots)', () => {
  const KEY = 'k'.repeat(64);
  const limited = (steps: Step[], max = 1) => {
    const store = new MemoryRuns(steps);
    store.run.limit = { key: KEY, max };
    return store;
  };

  it('a run over its limit stays pending: run.throttled once with its position, no step, and its message comes back when the holder would lapse', async () => {
    const store = limited([call]);
    store.slotItems.set(KEY, { holders: { other: Date.now() + 10_000 }, version: 1 });
    const steps = heldSteps();
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, steps.runner, undefined, timers);

    expect(await runner.process(ID)).toBe('done');
    expect(store.kinds()).toEqual(['run.queued', 'run.throttled']);
    expect(store.events.at(-1)!.data).toEqual({ position: 1 });
    expect(store.run.status).toBe('pending');
    expect(store.run.lease_owner).toBeUndefined();
    expect(armed).toEqual([{ id: ID, delaySeconds: 11, timer: { slot: 'wait' } }]);

    // Its message back, the slot still held: nothing more is written; it comes back again.
    expect(await runner.process(ID, undefined, { slot: 'wait' })).toBe('done');
    expect(store.kinds()).toEqual(['run.queued', 'run.throttled']);
    expect(armed).toHaveLength(2);
    expect(armed[1]!.timer).toEqual({ slot: 'wait' });
    // A freed slot's message is sent once: it is not sent again.
    expect(await runner.process(ID, undefined, { slot: 'freed' })).toBe('done');
    expect(armed).toHaveLength(2);
    expect(steps.counts).toEqual({});

    // The holder's lease lapsed (its worker died): the run takes the slot over, runs, lets it go.
    store.slotItems.get(KEY)!.holders.other = Date.now() - 1;
    const running = runner.process(ID, undefined, { slot: 'wait' });
    await eventually(() => steps.counts.call === 1, 5_000, 'the step called', 5);
    expect(Object.keys(store.slotItems.get(KEY)!.holders)).toEqual([ID]);
    steps.finish();
    expect(await running).toBe('done');
    expect(store.kinds()).toEqual(['run.queued', 'run.throttled', ...CALLED_ONCE.slice(1)]);
    expect(store.slotItems.get(KEY)!.holders).toEqual({});
  }, 10_000);

  it('a free slot goes to no run while an older one waits in line (oldest first), which the run then follows', async () => {
    const store = limited([call], 2);
    store.slotItems.set(KEY, { holders: { running: Date.now() + RUN_LEASE_MS }, version: 3 });
    store.ahead = ['older'];
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, heldSteps().runner, undefined, timers);
    expect(await runner.process(ID)).toBe('done');
    expect(store.kinds()).toEqual(['run.queued', 'run.throttled']);
    expect(store.events.at(-1)!.data).toEqual({ position: 2 });
    expect(Object.keys(store.slotItems.get(KEY)!.holders)).toEqual(['running']);
    expect(armed.map((a) => a.timer)).toEqual([{ slot: 'wait' }]);
  });

  it('a run that ends lets its slot go and sends the oldest run in line a message at once', async () => {
    const store = limited([{ id: 'a', kind: 'render', template: 'x' }]);
    const { timers, armed } = recordingTimers();
    await new CrewRunner(store, store, doneSteps, undefined, timers).process(ID);
    expect(store.events.at(-1)!.type).toBe('run.completed');
    expect(store.slotItems.get(KEY)!.holders).toEqual({});
    expect(armed).toEqual([]);

    const next = limited([{ id: 'a', kind: 'render', template: 'x' }]);
    next.ahead = ['waiting-1', 'waiting-2'];
    next.slotItems.set(KEY, { holders: {}, version: 1 });
    const woken = recordingTimers();
    // Behind older runs it waits; as if they went, it takes the slot, and at its end wakes the oldest.
    await new CrewRunner(next, next, doneSteps, undefined, woken.timers).process(ID);
    expect(next.kinds()).toEqual(['run.queued', 'run.throttled']);
    const line = ['waiting-2'];
    next.slotQueue = async (_key, limit, before) => (before ? [] : line.slice(0, limit));
    await new CrewRunner(next, next, doneSteps, undefined, woken.timers).process(ID, undefined, { slot: 'wait' });
    expect(next.events.at(-1)!.type).toBe('run.completed');
    expect(woken.armed.at(-1)).toEqual({ id: 'waiting-2', delaySeconds: 0, timer: { slot: 'freed' } });
  });

  it("a freed slot's message for a run cancelled while it waited in line goes on to the next in line", async () => {
    const store = limited([{ id: 'a', kind: 'render', template: 'x' }]);
    store.slotItems.set(KEY, { holders: {}, version: 1 });
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, doneSteps, undefined, timers);
    // Behind an older run it waits in line; then it is cancelled (it leaves the line).
    store.ahead = ['older'];
    await runner.process(ID);
    expect(store.kinds()).toEqual(['run.queued', 'run.throttled']);
    Object.assign(store.run, { status: 'cancelled', finished_at: new Date().toISOString() });
    store.slotQueue = async (_key, limit, before) => (before ? [] : ['behind'].slice(0, limit));
    armed.length = 0;
    // The slot freed meanwhile woke it (the oldest then): the wake goes to the next instead.
    expect(await runner.process(ID, undefined, { slot: 'freed' })).toBe('done');
    expect(store.kinds()).toEqual(['run.queued', 'run.throttled']);
    expect(armed).toEqual([{ id: 'behind', delaySeconds: 0, timer: { slot: 'freed' } }]);
  });

  it('a run that goes on in a new delivery (out of time) keeps its slot, also while others wait in line', async () => {
    const store = limited([
      { id: 'a', kind: 'render', template: 'x' },
      { id: 'b', kind: 'render', template: 'y' },
    ]);
    const runner = new CrewRunner(store, store, doneSteps, undefined, recordingTimers().timers);
    expect(await runner.process(ID, { remainingMs: () => 0 })).toBe('continue-later');
    expect(Object.keys(store.slotItems.get(KEY)!.holders)).toEqual([ID]);
    store.ahead = ['queued-later-but-older'];
    expect(await runner.process(ID)).toBe('done');
    expect(store.kinds()).toEqual([
      'run.queued',
      'run.started',
      'step.started:a',
      'step.completed:a',
      'step.started:b',
      'step.completed:b',
      'run.completed',
    ]);
    expect(store.slotItems.get(KEY)!.holders).toEqual({});
  });

  it("a run started by a freed slot's message that loses its slot while a step runs takes one again and goes on", async () => {
    vi.useFakeTimers();
    const store = limited([call]);
    const counts = { call: 0 };
    // The step ends when it is abandoned the first time, and at once the second.
    const steps: StepRunner = {
      execute: (_step, _ctx, cancelled) =>
        new Promise((resolve) => {
          if (++counts.call > 1) return resolve({ ok: true, output: 'done' });
          cancelled?.addEventListener('abort', () => resolve({ ok: false, error: 'abandoned' }));
        }),
    };
    const running = new CrewRunner(store, store, steps, undefined, recordingTimers().timers).process(ID, undefined, {
      slot: 'freed',
    });
    await vi.waitFor(() => expect(counts.call).toBe(1));
    // Its slot lapsed and was dropped by another run's take: the renewal finds none.
    delete store.slotItems.get(KEY)!.holders[ID];
    await vi.advanceTimersByTimeAsync(25 * CANCEL_CHECK_MS);
    expect(await running).toBe('done');
    expect(counts.call).toBe(2);
    expect(store.kinds()).toEqual(CALLED_ONCE);
    expect(store.slotItems.get(KEY)!.holders).toEqual({});
  });

  it('an approval timer that carried a decided run on goes on with it when the run loses its slot in a step', async () => {
    vi.useFakeTimers();
    const expires = new Date(Date.now() + 30_000).toISOString();
    const store = new MemoryRuns(
      [gate, call],
      [
        { type: 'run.started', message: 'started' },
        { type: 'step.started', step_id: 'gate', message: 'started' },
        { type: 'step.waiting', step_id: 'gate', message: 'waits', data: { expires_at: expires } },
        { type: 'step.completed', step_id: 'gate', message: 'approved', data: { output: { approved: true } } },
      ],
    );
    Object.assign(store.run, { status: 'running', current_step: null, limit: { key: KEY, max: 1 } });
    const counts = { call: 0 };
    const steps: StepRunner = {
      execute: (_step, _ctx, cancelled) =>
        new Promise((resolve) => {
          if (++counts.call > 1) return resolve({ ok: true, output: 'done' });
          cancelled?.addEventListener('abort', () => resolve({ ok: false, error: 'abandoned' }));
        }),
    };
    const running = new CrewRunner(store, store, steps, undefined, recordingTimers().timers).process(ID, undefined, {
      step_id: 'gate',
      expires_at: expires,
    });
    await vi.waitFor(() => expect(counts.call).toBe(1));
    delete store.slotItems.get(KEY)!.holders[ID];
    await vi.advanceTimersByTimeAsync(25 * CANCEL_CHECK_MS);
    expect(await running).toBe('done');
    expect(counts.call).toBe(2);
    expect(store.events.at(-1)!.type).toBe('run.completed');
  });

  it('a run without a limit makes no slot call', async () => {
    const store = new MemoryRuns([{ id: 'a', kind: 'render', template: 'x' }]);
    store.run.run_timeout_seconds = 60;
    await new CrewRunner(store, store, doneSteps, undefined, recordingTimers().timers).process(ID);
    expect(store.events.at(-1)!.type).toBe('run.completed');
    // a run of render steps is one write, from run.started to run.completed
    expect(store.calls).toEqual({ get: 1, append: 1 });
  });
});

/** When the tests on a ManualClock start. */
const T0 = Date.parse('2026-05-04T09:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A runner whose every reading and wait of the time is on `clock`: its leases, deadlines and
 * timestamps, the cancellation checks between (its signals) and the `wait` steps (its steps).
 */
const onClock = (store: MemoryRuns, clock: ManualClock, timers: RunTimer = recordingTimers().timers) =>
  new CrewRunner(
    store,
    store,
    new StepExecutor(new OutboundHttp([]), undefined, clock),
    new InProcessRunSignals(clock),
    timers,
    undefined,
    clock,
  );

/** When the run's event of `type` happened (epoch ms). */
const timeOf = (store: MemoryRuns, type: string) => Date.parse(store.events.find((e) => e.type === type)!.timestamp);

describe('CrewRunner on a ManualClock: wait steps, approval expiry, deadlines, without waiting', () => {
  it('ends a wait step once its seconds have passed on the clock, not a millisecond before, checking the run each second meanwhile', async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryRuns([{ id: 'w', kind: 'wait', seconds: 45 }]);
    const running = onClock(store, clock).process(ID);
    // the step's sleep and the cancellation check's
    await clock.whenSleeping(2);
    await clock.advance(44_999);
    expect(store.kinds()).toEqual(['run.queued', 'run.started', 'step.started:w']);
    await clock.advance(1);
    expect(await running).toBe('done');
    expect(store.kinds()).toEqual(['run.queued', 'run.started', 'step.started:w', 'step.completed:w', 'run.completed']);
    expect(timeOf(store, 'step.started')).toBe(T0);
    expect(timeOf(store, 'step.completed')).toBe(T0 + 45_000);
    expect(store.run).toMatchObject({ status: 'succeeded', finished_at: iso(T0 + 45_000) });
    // One check a second; the lease renewed once a third of it had passed (at 11, 22, 33 and 44 s).
    expect(store.calls.renewLease).toBe(4);
    expect((store.calls.get ?? 0) + store.calls.renewLease!).toBeGreaterThanOrEqual(44);
    expect(clock.sleeping).toBe(0);
  });

  it('expires an approval at exactly its timeout_seconds: a timer back early is armed again for the rest', async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryRuns([gate, { id: 'after', kind: 'render', template: 'never' }]);
    const { timers, armed } = recordingTimers();
    const runner = onClock(store, clock, timers);
    expect(await runner.process(ID)).toBe('done');
    const expiresAt = iso(T0 + 60_000);
    expect(store.events.at(-1)).toMatchObject({
      type: 'step.waiting',
      timestamp: iso(T0),
      data: { expires_at: expiresAt },
    });
    expect(store.run.waiting).toMatchObject({ since: iso(T0), expires_at: expiresAt });
    const timer = { step_id: 'gate', expires_at: expiresAt };
    expect(armed).toEqual([{ id: ID, delaySeconds: 60, timer }]);

    await clock.advance(59_999);
    expect(await runner.process(ID, undefined, timer)).toBe('done');
    expect(store.run.status).toBe('waiting');
    expect(armed.at(-1)).toEqual({ id: ID, delaySeconds: 1, timer });

    await clock.advance(1);
    expect(await runner.process(ID, undefined, timer)).toBe('done');
    expect(store.kinds().slice(-2)).toEqual(['step.failed:gate', 'run.failed']);
    const error = `no decision by ${expiresAt}: the approval expired`;
    expect(store.events.at(-2)).toMatchObject({ timestamp: expiresAt, data: { error } });
    expect(store.run).toMatchObject({ status: 'failed', error, finished_at: expiresAt });
    expect(armed).toHaveLength(2);
  });

  it('brings an approval of an hour back every 15 minutes (the longest SQS delay) and expires it at the hour', async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryRuns([{ ...gate, timeout_seconds: 3600 }]);
    const { timers, armed } = recordingTimers();
    const runner = onClock(store, clock, timers);
    await runner.process(ID);
    for (let quarter = 1; quarter <= 4; quarter++) {
      expect(armed.at(-1)!.delaySeconds).toBe(900);
      await clock.advance(900_000);
      expect(await runner.process(ID, undefined, armed.at(-1)!.timer)).toBe('done');
    }
    expect(armed).toHaveLength(4);
    expect(store.kinds().slice(-3)).toEqual(['step.waiting:gate', 'step.failed:gate', 'run.failed']);
    expect(timeOf(store, 'run.failed')).toBe(T0 + 3_600_000);
  });

  it('abandons a running wait step at the deadline: run.timed_out then run.failed, the step left started', async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryRuns([
      { id: 'w', kind: 'wait', seconds: 30 },
      { id: 'after', kind: 'render', template: 'never' },
    ]);
    store.run.run_timeout_seconds = 2;
    const running = onClock(store, clock).process(ID);
    await clock.whenSleeping(2);
    await clock.advance(1_999);
    expect(store.kinds()).toEqual(['run.queued', 'run.started', 'step.started:w']);
    await clock.advance(1);
    expect(await running).toBe('done');
    expect(store.kinds()).toEqual(['run.queued', 'run.started', 'step.started:w', 'run.timed_out', 'run.failed']);
    expect(timeOf(store, 'run.timed_out') - timeOf(store, 'run.started')).toBe(2_000);
    expect(store.events.at(-2)!.data).toEqual({ timeout_seconds: 2 });
    expect(store.events.at(-1)!.data).toEqual({ error: 'timed out after 2 s' });
    expect(store.run).toMatchObject({ status: 'failed', error: 'timed out after 2 s', current_step: 'w' });
    expect(store.run.lease_owner).toBeUndefined();
    // the wait was given up: nothing sleeps any more
    expect(clock.sleeping).toBe(0);
  });

  it('times out a run waiting for an approval at its deadline, which comes before the expiry', async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryRuns([gate]);
    store.run.run_timeout_seconds = 5;
    const { timers, armed } = recordingTimers();
    const runner = onClock(store, clock, timers);
    await runner.process(ID);
    expect(armed).toEqual([{ id: ID, delaySeconds: 5, timer: { step_id: 'gate', expires_at: iso(T0 + 60_000) } }]);
    await clock.advance(4_999);
    expect(await runner.process(ID, undefined, armed[0]!.timer)).toBe('done');
    expect(store.run.status).toBe('waiting');
    await clock.advance(1);
    expect(await runner.process(ID, undefined, armed[0]!.timer)).toBe('done');
    expect(store.kinds().slice(-2)).toEqual(['run.timed_out', 'run.failed']);
    expect(timeOf(store, 'run.timed_out')).toBe(T0 + 5_000);
    expect(store.run).toMatchObject({ status: 'failed', error: 'timed out after 5 s' });
  });

  it("counts a retried run's deadline from its new start", async () => {
    const clock = new ManualClock(T0);
    const store = new MemoryRuns(
      [{ id: 'w', kind: 'wait', seconds: 10 }],
      [
        { type: 'run.started', message: 'started' },
        { type: 'step.started', step_id: 'w', message: 'started' },
        { type: 'run.timed_out', message: 'timed out', data: { timeout_seconds: 2 } },
        { type: 'run.failed', message: 'failed', data: { error: 'timed out after 2 s' } },
        { type: 'run.retried', message: 'retried' },
      ],
    );
    // The first attempt started an hour before the retry.
    for (const e of store.events) e.timestamp = iso(T0 - 3_600_000);
    Object.assign(store.run, { status: 'pending', run_timeout_seconds: 2 });
    const running = onClock(store, clock).process(ID);
    await clock.whenSleeping(2);
    expect(store.kinds().slice(-1)).toEqual(['step.started:w']);
    await clock.advance(1_999);
    expect(store.kinds().slice(-1)).toEqual(['step.started:w']);
    await clock.advance(1);
    expect(await running).toBe('done');
    expect(store.kinds().slice(-3)).toEqual(['step.started:w', 'run.timed_out', 'run.failed']);
    expect(Date.parse(store.events.at(-2)!.timestamp) - Date.parse(store.events.at(-3)!.timestamp)).toBe(2_000);
  });

  it("a run waiting for an approval: its timer comes back at the deadline (not the approval's expiry), and the run times out", async () => {
    const store = new MemoryRuns([gate]);
    store.run.run_timeout_seconds = 5;
    const { timers, armed } = recordingTimers();
    const runner = new CrewRunner(store, store, heldSteps().runner, undefined, timers);
    expect(await runner.process(ID)).toBe('done');
    expect(store.run.status).toBe('waiting');
    const timer = armed[0]!.timer as StepTimer;
    expect(armed[0]!.delaySeconds).toBe(5);

    // the deadline passed (the run started 6 s ago)
    const started = store.events.find((e) => e.type === 'run.started')!;
    started.timestamp = new Date(Date.now() - 6_000).toISOString();
    expect(await runner.process(ID, undefined, timer)).toBe('done');
    expect(store.kinds()).toEqual([
      'run.queued',
      'run.started',
      'step.started:gate',
      'step.waiting:gate',
      'run.timed_out',
      'run.failed',
    ]);
    expect(store.run).toMatchObject({ status: 'failed', error: 'timed out after 5 s' });
  });

  it('a retried run times out counting from its new start, not its first', async () => {
    const long = new Date(Date.now() - 3_600_000).toISOString();
    const store = new MemoryRuns(
      [{ id: 'a', kind: 'render', template: 'x' }],
      [
        { type: 'run.started', message: 'started' },
        { type: 'run.failed', message: 'failed', data: { error: 'boom' } },
        { type: 'run.retried', message: 'retried' },
      ],
    );
    store.events[1]!.timestamp = long;
    store.run.run_timeout_seconds = 60;
    Object.assign(store.run, { status: 'pending' });
    await new CrewRunner(store, store, doneSteps, undefined, recordingTimers().timers).process(ID);
    expect(store.events.at(-1)!.type).toBe('run.completed');
  });
});
