import { afterEach, describe, expect, it, vi } from 'vitest';
import { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import {
  CANCEL_CHECK_MS,
  CrewRunner,
  LEASE_MS,
  type RunnerStore,
  type RunTimer,
  type StepRunner,
  type StepTimer,
} from '../../functions/crews/runner.js';
import type { RunLogEntry, Step } from '../../functions/crews/schemas.js';
import type { StepOutcome } from '../../functions/crews/steps.js';
import { StepExecutor } from '../../functions/crews/steps.js';
import type { LeaseWrite, RunItem, RunUpdate } from '../../functions/crews/store.js';
import { eventually } from '../support/eventually.js';

/**
 * One executor at a time (CrewRunner's lease) over a fake store that keeps the run store's
 * conditions: an append is refused when its index is taken or another delivery holds an
 * unexpired lease.
 */

const ID = 'r'.repeat(36);

type Stored = Omit<RunItem, 'lease'> & { lease_owner?: string; lease_until?: number };

class MemoryRuns implements RunnerStore {
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
  const armed: { id: string; delaySeconds: number; timer: StepTimer | undefined }[] = [];
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
    const runner = new CrewRunner(store, steps.runner, undefined, timers);

    const first = runner.process(ID);
    await eventually(() => steps.counts.call === 1, 5_000, 'the step called', 5);
    expect(await runner.process(ID)).toBe('done');
    expect(steps.counts).toEqual({ call: 1 });
    expect(armed).toHaveLength(1);
    expect(armed[0]).toMatchObject({ id: ID, timer: undefined });
    expect(armed[0]!.delaySeconds).toBeGreaterThanOrEqual(LEASE_MS / 1000 - 1);
    expect(armed[0]!.delaySeconds).toBeLessThanOrEqual(LEASE_MS / 1000 + 1);

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
    const runner = new CrewRunner(store, steps.runner, undefined, timers);

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
    const runner = new CrewRunner(store, steps.runner, undefined, timers);

    const first = runner.process(ID);
    await vi.waitFor(() => expect(steps.counts.call).toBe(1));
    const before = { get: store.calls.get ?? 0, renew: store.calls.renewLease ?? 0 };
    await vi.advanceTimersByTimeAsync(25 * CANCEL_CHECK_MS);
    const checks = { get: store.calls.get! - before.get, renew: store.calls.renewLease! - before.renew };
    // renewed after a third of the lease (about every 10 s), read at the other checks
    expect(checks.renew).toBe(2);
    expect(checks.get + checks.renew).toBe(25);
    expect(store.run.lease_until).toBeGreaterThan(Date.now() + LEASE_MS / 2);

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
    await new CrewRunner(store, heldSteps().runner, undefined, timers).process(ID);
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
    const runner = new CrewRunner(store, steps.runner, undefined, timers);

    // held by the delivery running `call`, and after that delivery died: nothing either way
    store.holdFor('holder', Date.now() + LEASE_MS);
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
    expect(await new CrewRunner(store, steps.runner, undefined, timers).process(ID, undefined, timer)).toBe('done');
    expect(steps.counts).toEqual({});
    expect(armed).toEqual([]);
    expect(store.calls.append ?? 0).toBe(0);
    expect(store.calls.takeLease ?? 0).toBe(0);
  }, 10_000);

  it("a timer of an earlier wait of the step does nothing; one whose decided step is the run's last event continues it", async () => {
    const store = decided();
    const steps = heldSteps();
    const { timers } = recordingTimers();
    const runner = new CrewRunner(store, steps.runner, undefined, timers);
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
