import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../shared/clock.js';

/** The clock the service reads (shared/clock.ts): the system's, and the ManualClock tests move on. */

describe('ManualClock', () => {
  it('reads the time it was set to, as epoch ms and as the contract writes timestamps', async () => {
    const clock = new ManualClock('2026-05-04T09:00:00.250Z');
    expect(clock.now()).toBe(Date.parse('2026-05-04T09:00:00.250Z'));
    expect(clock.iso()).toBe('2026-05-04T09:00:00.250Z');
    await clock.advance(1_000);
    expect(clock.iso()).toBe('2026-05-04T09:00:01.250Z');
    await clock.set('2026-05-04T08:00:00.000Z');
    expect(clock.iso()).toBe('2026-05-04T08:00:00.000Z');
    expect(new ManualClock(0).iso()).toBe('1970-01-01T00:00:00.000Z');
  });

  it('wakes a sleeper once the time is moved past its end, not before, earliest first', async () => {
    const clock = new ManualClock(0);
    const woken: string[] = [];
    void clock.sleep(3_000).then(() => woken.push(`3 s at ${clock.now()}`));
    void clock.sleep(1_000).then(() => woken.push(`1 s at ${clock.now()}`));
    await clock.whenSleeping(2);
    expect(clock.nextWake).toBe(1_000);
    await clock.advance(999);
    expect(woken).toEqual([]);
    await clock.advance(5_000);
    // each woke at its own time, though the clock was moved past both at once
    expect(woken).toEqual(['1 s at 1000', '3 s at 3000']);
    expect(clock.now()).toBe(5_999);
    expect(clock.sleeping).toBe(0);
  });

  it('wakes a loop that sleeps a second at a time once for every second it is moved on', async () => {
    const clock = new ManualClock(0);
    const ticks: number[] = [];
    const stop = new AbortController();
    void (async () => {
      while (!stop.signal.aborted) {
        await clock.sleep(1_000, stop.signal).catch(() => undefined);
        if (!stop.signal.aborted) ticks.push(clock.now());
      }
    })();
    await clock.whenSleeping();
    await clock.advance(3_500);
    expect(ticks).toEqual([1_000, 2_000, 3_000]);
    stop.abort();
  });

  it('rejects a sleep with its signal’s reason when it aborts, and forgets it', async () => {
    const clock = new ManualClock(0);
    const abort = new AbortController();
    const sleeping = clock.sleep(60_000, abort.signal);
    expect(clock.sleeping).toBe(1);
    abort.abort(new Error('cancelled'));
    await expect(sleeping).rejects.toThrow('cancelled');
    expect(clock.sleeping).toBe(0);
    await expect(clock.sleep(1, abort.signal)).rejects.toThrow('cancelled');
  });

  it('ends a sleep of no time at the next turn, without being moved on', async () => {
    const clock = new ManualClock(0);
    await clock.sleep(0);
    await clock.sleep(-5);
    expect(clock.now()).toBe(0);
    expect(clock.sleeping).toBe(0);
  });
});

describe('systemClock', () => {
  it('reads the system time', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(Date.parse(systemClock.iso())).toBeGreaterThanOrEqual(now);
    expect(systemClock.iso()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('sleeps on a timer, and rejects with the signal’s reason when it aborts', async () => {
    await systemClock.sleep(1);
    const abort = new AbortController();
    const sleeping = systemClock.sleep(60_000, abort.signal);
    abort.abort(new Error('stopping'));
    await expect(sleeping).rejects.toThrow('stopping');
    await expect(systemClock.sleep(1, abort.signal)).rejects.toThrow('stopping');
  });
});
