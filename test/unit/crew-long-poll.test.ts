import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunLogService } from '../../functions/crews/runs/run-log-service.js';
import { InProcessRunSignals, LONG_POLL_INTERVAL_MS, notifyingAppends } from '../../functions/crews/runs/signals.js';
import type { RunLogEntry } from '../../functions/crews/runs/run-schemas.js';
import type { RunItem, RunStore } from '../../functions/crews/runs/run-store.js';
import { WaitingPolls } from '../../functions/crews/runs/waiting-polls.js';
import type { Caller } from '../../shared/auth/caller.js';
import { TooManyRequests } from '../../shared/errors.js';
import { errorAnswer } from '../../shared/http/errors.js';

/** The E13 long poll over a fake store: how often it reads, what wakes it, how many may wait. */

const caller = (name: string, roles: string[] = []): Caller => ({
  principal: `["https://issuer.test","sub-${name}"]`,
  name,
  roles: new Set(roles),
  via: 'bearer',
});
const STARTER = caller('ada');
/** Another principal, who may read every run. */
const ADMIN = caller('root', ['admin']);

function world(polls?: WaitingPolls) {
  const run = {
    correlation_id: 'c'.repeat(36),
    template_id: 't',
    status: 'running',
    values: {},
    created_by: 'ada',
    created_by_principal: STARTER.principal,
    created_at: '2026-11-24T00:00:00.000Z',
    started_at: '2026-11-24T00:00:00.000Z',
    finished_at: null,
    event_count: 2,
    error: null,
    steps: [],
    expires_at: 0,
  } as RunItem;
  const written: RunLogEntry[] = [];
  const counts = { gets: 0, reads: 0 };
  let failing = false;
  /** What happens while the n-th read is under way (after it has read). */
  const reading = new Map<number, () => Promise<unknown>>();
  const signals = new InProcessRunSignals();
  // As the composition wires it: the store's appends notify the signals.
  const runs = notifyingAppends(
    {
      get: async () => {
        counts.gets++;
        return run;
      },
      logEntries: async (_id: string, from: number) => {
        counts.reads++;
        if (failing) throw new Error('the store does not answer');
        const seen = written.filter((e) => e.index >= from);
        const during = reading.get(counts.reads);
        if (during) await during();
        return seen;
      },
      append: async (_run: { correlation_id: string }, events: RunLogEntry | readonly RunLogEntry[]) => {
        written.push(...[events].flat());
        return true;
      },
    },
    signals,
  ) as unknown as RunStore;
  const service = new RunLogService(runs, signals, polls);
  const event = (index: number): RunLogEntry => ({
    index,
    correlation_id: run.correlation_id,
    type: 'step.started',
    timestamp: new Date().toISOString(),
    message: 'm',
  });
  /** An event written elsewhere (another process): nothing notifies. */
  const writeElsewhere = (index: number) => written.push(event(index));
  /** An event appended through this process's store: its long polls are notified. */
  const append = (index: number) => runs.append(run, event(index));
  return {
    service,
    signals,
    writeElsewhere,
    append,
    counts,
    fail: () => (failing = true),
    duringRead: (n: number, happen: () => Promise<unknown>) => reading.set(n, happen),
    id: run.correlation_id,
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('E13 long poll', () => {
  it('reads the store at most once a second while it waits, whatever else happens to the run', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const w = world();
    const answer = w.service.runLog(w.id, 5, STARTER, 20);
    // Changes of the run that are no event at or after `start`: a runner's own wake-ups,
    // and events before the poll's start (the client asked past the end).
    const noise = setInterval(() => {
      w.signals.notify(w.id);
      w.signals.notify(w.id, 3);
    }, 10);
    await vi.advanceTimersByTimeAsync(20_000);
    clearInterval(noise);
    expect(await answer).toEqual([]);
    // the read before waiting, then one a second over 20 s
    expect(w.counts.reads).toBeLessThanOrEqual(1 + 20);
    expect(w.counts.reads).toBeGreaterThanOrEqual(20);
    // ownership is read once per poll, not per read
    expect(w.counts.gets).toBe(1);
  });

  it('answers as soon as this process writes an event at or after `start`, before the next read is due', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const w = world();
    const started = Date.now();
    let answered: RunLogEntry[] | undefined;
    void w.service.runLog(w.id, 2, STARTER, 10).then((events) => (answered = events));
    // the poll has read and waits
    await vi.advanceTimersByTimeAsync(30);
    expect(answered).toBeUndefined();
    await w.append(2);
    // answered with no more time passing: not at the next read, due a second after the first
    await vi.advanceTimersByTimeAsync(0);
    expect(answered?.map((e) => e.index)).toEqual([2]);
    expect(Date.now() - started).toBeLessThan(LONG_POLL_INTERVAL_MS);
    expect(w.counts.reads).toBe(2);
  });

  it('finds an event written elsewhere (no signal) at its next read, a second later at most', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const w = world();
    const answer = w.service.runLog(w.id, 2, STARTER, 10);
    await vi.advanceTimersByTimeAsync(300);
    w.writeElsewhere(2);
    await vi.advanceTimersByTimeAsync(LONG_POLL_INTERVAL_MS - 300);
    expect((await answer).map((e) => e.index)).toEqual([2]);
    expect(w.counts.reads).toBe(2);
  });

  it.each([
    ['its first read', 1, 0],
    ['a read while it waits', 2, LONG_POLL_INTERVAL_MS],
  ])('does not miss an event this process writes during %s', async (_, read, readAt) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const w = world();
    // The write commits (and notifies) while the read is under way, too late for it to see.
    w.duringRead(read, () => w.append(2));
    let answered: RunLogEntry[] | undefined;
    void w.service.runLog(w.id, 2, STARTER, 10).then((events) => (answered = events));
    await vi.advanceTimersByTimeAsync(readAt);
    // read again at once, not a second later
    expect(answered?.map((e) => e.index)).toEqual([2]);
    expect(w.counts.reads).toBe(read + 1);
  });

  it('forgets its waiters, also aborted ones', async () => {
    const signals = new InProcessRunSignals();
    const abort = new AbortController();
    const watch = signals.watch('c', 0);
    const aborted = watch.next(60_000, abort.signal);
    abort.abort();
    await aborted;
    watch.close();
    const polled = signals.watch('a', 3);
    await Promise.all([signals.next('a', 10), polled.next(20), signals.next('b', 5)]);
    polled.close();
    expect((signals as unknown as { waiters: Map<string, unknown> }).waiters.size).toBe(0);
  });
});

describe('E13 long polls waiting at once (fair use)', () => {
  /** Lets every started poll reach its wait. */
  const settle = () => vi.advanceTimersByTimeAsync(0);

  it('lets 10 of one caller wait; the 11th is TooManyRequests (retry after 1 s), another caller still waits', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const polls = new WaitingPolls();
    const w = world(polls);
    const ten = Array.from({ length: 10 }, () => w.service.runLog(w.id, 2, STARTER, 20));
    await settle();
    expect(polls.waiting).toBe(10);
    const refused = await w.service.runLog(w.id, 2, STARTER, 20).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(TooManyRequests);
    expect(errorAnswer(refused)?.headers).toEqual({ 'Retry-After': '1' });
    // Polls that do not wait take no place: no wait, or something to answer at once.
    expect(await w.service.runLog(w.id, 2, STARTER, 0)).toEqual([]);
    w.writeElsewhere(2);
    expect((await w.service.runLog(w.id, 2, STARTER, 20)).map((e) => e.index)).toEqual([2]);
    const other = w.service.runLog(w.id, 3, ADMIN, 20);
    await settle();
    expect(polls.waiting).toBe(11);
    await vi.advanceTimersByTimeAsync(1000);
    // the ten found event 2 at their next read and answered: their places are free again
    for (const answer of ten) expect((await answer).map((e) => e.index)).toEqual([2]);
    expect(polls.waiting).toBe(1);
    const again = Array.from({ length: 10 }, () => w.service.runLog(w.id, 3, STARTER, 2));
    await settle();
    expect(polls.waiting).toBe(11);
    await vi.advanceTimersByTimeAsync(20_000);
    for (const answer of [...again, other]) expect(await answer).toEqual([]);
    expect(polls.waiting).toBe(0);
  });

  it('gives the place back when the client goes away or the store fails', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const polls = new WaitingPolls();
    const w = world(polls);
    const clients = Array.from({ length: 10 }, () => new AbortController());
    const gone = clients.map((client) => w.service.runLog(w.id, 2, STARTER, 20, client.signal));
    await settle();
    expect(polls.waiting).toBe(10);
    for (const client of clients) client.abort();
    for (const answer of gone) expect(await answer).toEqual([]);
    expect(polls.waiting).toBe(0);

    const failing = Array.from({ length: 10 }, () => w.service.runLog(w.id, 2, STARTER, 20).catch((e: Error) => e));
    await settle();
    expect(polls.waiting).toBe(10);
    w.fail();
    await vi.advanceTimersByTimeAsync(LONG_POLL_INTERVAL_MS);
    for (const answer of failing) expect(await answer).toEqual(new Error('the store does not answer'));
    expect(polls.waiting).toBe(0);
  });

  it('lets at most 500 wait in one process', () => {
    const polls = new WaitingPolls();
    const releases = Array.from({ length: 50 }, (_, i) =>
      Array.from({ length: 10 }, () => polls.take(`principal-${i}`)),
    ).flat();
    expect(polls.waiting).toBe(500);
    expect(() => polls.take('one-more')).toThrow(TooManyRequests);
    releases[0]!();
    releases[0]!();
    expect(polls.waiting).toBe(499);
    const release = polls.take('one-more');
    expect(() => polls.take('yet-another')).toThrow(TooManyRequests);
    release();
    releases.forEach((r) => r());
    expect(polls.waiting).toBe(0);
  });

  it('is answered 429 with Retry-After and the ErrorResponse body', () => {
    expect(errorAnswer(new TooManyRequests('At most 10 long polls of one caller may wait at once'))).toEqual({
      status: 429,
      headers: { 'Retry-After': '1' },
      body: { error: 'At most 10 long polls of one caller may wait at once', code: 429 },
    });
  });
});

describe('a run answer', () => {
  it('has a whole progress also for an item stored without its steps', async () => {
    const { toRun } = await import('../../functions/crews/runs/run-store.js');
    const item = { correlation_id: 'c', status: 'succeeded', event_count: 3 } as unknown as RunItem;
    expect(toRun(item).progress).toEqual({ completed_steps: 0, total_steps: 0, current_step: null });
  });
});
