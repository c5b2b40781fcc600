import { describe, expect, it } from 'vitest';
import { CrewService } from '../../functions/crews/service.js';
import { InProcessRunSignals, LONG_POLL_INTERVAL_MS } from '../../functions/crews/signals.js';
import type { CrewEvent } from '../../functions/crews/schemas.js';
import type { RunItem, RunStore, TemplateStore } from '../../functions/crews/store.js';

/** The E13 long poll over a fake store: how often it reads, and what wakes it. */

const STARTER = {
  principal: '["https://issuer.test","sub-ada"]',
  name: 'ada',
  roles: new Set<string>(),
  via: 'bearer' as const,
};

function world() {
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
  const written: CrewEvent[] = [];
  let reads = 0;
  const runs = {
    get: async () => run,
    events: async (_id: string, from: number) => {
      reads++;
      return written.filter((e) => e.index >= from);
    },
  } as unknown as RunStore;
  const signals = new InProcessRunSignals();
  const service = new CrewService(
    {} as TemplateStore,
    runs,
    { send: async () => undefined },
    { eventsTtlDays: 1 },
    undefined,
    signals,
  );
  const write = (index: number) =>
    written.push({
      index,
      correlation_id: run.correlation_id,
      type: 'step.started',
      timestamp: new Date().toISOString(),
      message: 'm',
    });
  return { service, signals, write, reads: () => reads, id: run.correlation_id };
}

describe('E13 long poll', () => {
  it('reads the store a few times a second while nothing happens, then answers []', async () => {
    const w = world();
    const started = Date.now();
    expect(await w.service.events(w.id, 2, STARTER, 1)).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    // one read at first, then one per interval
    expect(w.reads()).toBeLessThanOrEqual(1 + Math.ceil(1000 / LONG_POLL_INTERVAL_MS) + 1);
  });

  it('answers as soon as this process writes an event of the run (signalled), before the next interval', async () => {
    const w = world();
    const started = Date.now();
    const answer = w.service.events(w.id, 2, STARTER, 10);
    await new Promise((r) => setTimeout(r, 30));
    w.write(2);
    w.signals.notify(w.id);
    expect((await answer).map((e) => e.index)).toEqual([2]);
    expect(Date.now() - started).toBeLessThan(LONG_POLL_INTERVAL_MS);
  });

  it('finds an event written elsewhere (no signal) within an interval', async () => {
    const w = world();
    const answer = w.service.events(w.id, 2, STARTER, 10);
    await new Promise((r) => setTimeout(r, 30));
    const written = Date.now();
    w.write(2);
    expect((await answer).map((e) => e.index)).toEqual([2]);
    expect(Date.now() - written).toBeLessThanOrEqual(LONG_POLL_INTERVAL_MS + 50);
  });

  it('forgets its waiters', async () => {
    const signals = new InProcessRunSignals();
    await Promise.all([signals.next('a', 10), signals.next('a', 20), signals.next('b', 5)]);
    expect((signals as unknown as { waiters: Map<string, unknown> }).waiters.size).toBe(0);
  });
});

describe('a run answer', () => {
  it('has a whole progress also for an item stored without its steps', async () => {
    const { toRun } = await import('../../functions/crews/store.js');
    const item = { correlation_id: 'c', status: 'succeeded', event_count: 3 } as unknown as RunItem;
    expect(toRun(item).progress).toEqual({ completed_steps: 0, total_steps: 0, current_step: null });
  });
});
