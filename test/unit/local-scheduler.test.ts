import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalScheduler } from '../../functions/crews/schedules/local-scheduler.js';
import { ManualClock } from '../../shared/clock.js';
import { logger } from '../../shared/logger.js';
import type { ScheduleFire } from '../../shared/ports/scheduler.js';

/** The local platform's timers (on a ManualClock): the fires EventBridge Scheduler would send, on time. */
describe('LocalScheduler', () => {
  let clock: ManualClock;
  let fires: ScheduleFire[];
  let scheduler: LocalScheduler;
  beforeEach(() => {
    clock = new ManualClock('2026-03-07T23:58:30.000Z');
    fires = [];
    scheduler = new LocalScheduler(async (fire) => void fires.push(fire), clock);
  });
  afterEach(() => {
    scheduler.stop();
  });

  it('fires a rate one period after its anchor, then every period', async () => {
    await scheduler.put({
      id: 's1',
      expression: 'rate(2 minutes)',
      timezone: 'UTC',
      enabled: true,
      anchor: '2026-03-07T23:58:10.000Z',
    });
    await clock.advance(5 * 60_000);
    expect(fires).toEqual([
      { schedule_id: 's1', scheduled_time: '2026-03-08T00:00:10.000Z' },
      { schedule_id: 's1', scheduled_time: '2026-03-08T00:02:10.000Z' },
    ]);
  });

  it('fires a cron at its wall-clock time in the schedule’s time zone, across a daylight-saving change', async () => {
    // 02:30 New York: on 8 March 2026 the clocks jump from 02:00 to 03:00, so that day has no 02:30.
    await scheduler.put({ id: 'ny', expression: 'cron(30 2 * * ? *)', timezone: 'America/New_York', enabled: true });
    await clock.advance(3 * 86_400_000);
    // 9 and 10 March at 02:30 EDT (06:30 UTC); 8 March is skipped.
    expect(fires.map((f) => f.scheduled_time)).toEqual(['2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z']);
  });

  it('a disabled, removed or replaced trigger fires nothing more', async () => {
    await scheduler.put({ id: 'off', expression: 'rate(1 minute)', timezone: 'UTC', enabled: false });
    await scheduler.put({ id: 'gone', expression: 'rate(1 minute)', timezone: 'UTC', enabled: true });
    await scheduler.remove('gone');
    await scheduler.put({ id: 'moved', expression: 'rate(1 minute)', timezone: 'UTC', enabled: true });
    await scheduler.put({ id: 'moved', expression: 'cron(0 12 * * ? *)', timezone: 'UTC', enabled: true });
    expect(scheduler.armed).toBe(1);
    await clock.advance(10 * 60_000);
    expect(fires).toEqual([]);
  });

  it('sends a fire again when its send fails: the fire still arrives, exactly once, logged once', async () => {
    const attempts: ScheduleFire[] = [];
    let failures = 1;
    const flaky = new LocalScheduler(async (fire) => {
      attempts.push(fire);
      if (failures-- > 0) throw new Error('the queue did not answer');
      fires.push(fire);
    }, clock);
    const warned = vi.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const failed = vi.spyOn(logger, 'error').mockImplementation(() => undefined);
    try {
      await flaky.put({ id: 'flaky', expression: 'cron(0 0 * * ? *)', timezone: 'UTC', enabled: true });
      // Due at midnight (90 s away); the retry comes a second after the failed send.
      await clock.advance(90_000);
      expect(attempts).toHaveLength(1);
      expect(fires).toEqual([]);
      await clock.advance(1_000);
      const midnight = { schedule_id: 'flaky', scheduled_time: '2026-03-08T00:00:00.000Z' };
      expect(fires).toEqual([midnight]);
      expect(attempts).toEqual([midnight, midnight]);
      // Nothing more for that fire: the next is tomorrow's.
      await clock.advance(3_600_000);
      expect(attempts).toHaveLength(2);
      expect(warned).toHaveBeenCalledTimes(1);
      expect(warned.mock.calls[0]![0]).toMatch(/could not send a schedule fire; sending it again/);
      expect(failed).not.toHaveBeenCalled();
    } finally {
      flaky.stop();
      warned.mockRestore();
      failed.mockRestore();
    }
  });

  it('retries a failing send with growing pauses for an hour, then gives it up in one error line', async () => {
    const attempts: number[] = [];
    const down = new LocalScheduler(async () => {
      attempts.push(clock.now());
      throw new Error('the queue did not answer');
    }, clock);
    const warned = vi.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const failed = vi.spyOn(logger, 'error').mockImplementation(() => undefined);
    try {
      await down.put({ id: 'down', expression: 'cron(0 0 8 3 ? 2026)', timezone: 'UTC', enabled: true });
      await clock.advance(2 * 3_600_000);
      const pauses = attempts.slice(1).map((t, i) => t - attempts[i]!);
      expect(pauses.slice(0, 7)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000]);
      expect(pauses.every((p) => p <= 60_000)).toBe(true);
      expect(attempts.at(-1)! - attempts[0]!).toBeLessThanOrEqual(3_600_000);
      expect(warned).toHaveBeenCalledTimes(1);
      expect(failed).toHaveBeenCalledTimes(1);
      expect(failed.mock.calls[0]![0]).toMatch(/gave up sending a schedule fire/);
    } finally {
      down.stop();
      warned.mockRestore();
      failed.mockRestore();
    }
  });

  it('keys a resent fire as the first send did: a send that failed but arrived makes no second fire', async () => {
    // The queue took the message but its answer was lost: the scheduler sends it again, with
    // the same schedule id and scheduled time, by which the worker starts one run per fire.
    let answered = false;
    const lossy = new LocalScheduler(async (fire) => {
      fires.push(fire);
      if (!answered) {
        answered = true;
        throw new Error('socket hang up');
      }
    }, clock);
    const warned = vi.spyOn(logger, 'warn').mockImplementation(() => undefined);
    try {
      await lossy.put({ id: 'lossy', expression: 'cron(0 0 * * ? *)', timezone: 'UTC', enabled: true });
      await clock.advance(90_000 + 1_000);
      const midnight = { schedule_id: 'lossy', scheduled_time: '2026-03-08T00:00:00.000Z' };
      expect(fires).toEqual([midnight, midnight]);
    } finally {
      lossy.stop();
      warned.mockRestore();
    }
  });

  it('keeps a failed fire owed across a put of its schedule, and drops it when the platform stops', async () => {
    const attempts: ScheduleFire[] = [];
    const down = new LocalScheduler(async (fire) => {
      attempts.push(fire);
      throw new Error('the queue did not answer');
    }, clock);
    const warned = vi.spyOn(logger, 'warn').mockImplementation(() => undefined);
    try {
      const trigger = { id: 'owed', expression: 'cron(0 0 * * ? *)', timezone: 'UTC', enabled: true };
      await down.put(trigger);
      await clock.advance(90_000);
      expect(attempts).toHaveLength(1);
      // Set again (a PATCH): its next fire is tomorrow's, the one due is still sent again.
      await down.put(trigger);
      await clock.advance(1_000);
      expect(attempts).toHaveLength(2);
      down.stop();
      await clock.advance(3_600_000);
      expect(attempts).toHaveLength(2);
      expect(down.armed).toBe(0);
    } finally {
      down.stop();
      warned.mockRestore();
    }
  });

  it('reaches a fire further away than one timer can wait', async () => {
    await scheduler.put({ id: 'far', expression: 'cron(0 0 1 1 ? 2027)', timezone: 'UTC', enabled: true });
    await clock.advance(300 * 86_400_000);
    expect(fires).toEqual([{ schedule_id: 'far', scheduled_time: '2027-01-01T00:00:00.000Z' }]);
  });
});

describe('LocalScheduler: what it sleeps on', () => {
  it('fires a rate(1 minute) a minute after its anchor, not a moment before, and sleeps no more once stopped', async () => {
    const clock = new ManualClock('2026-03-07T10:00:00.000Z');
    const fires: ScheduleFire[] = [];
    const scheduler = new LocalScheduler(async (fire) => void fires.push(fire), clock);
    await scheduler.put({
      id: 'r',
      expression: 'rate(1 minute)',
      timezone: 'UTC',
      enabled: true,
      anchor: '2026-03-07T10:00:00.000Z',
    });
    expect(clock.nextWake).toBe(Date.parse('2026-03-07T10:01:00.000Z'));
    await clock.advance(59_999);
    expect(fires).toEqual([]);
    await clock.advance(1);
    expect(fires).toEqual([{ schedule_id: 'r', scheduled_time: '2026-03-07T10:01:00.000Z' }]);
    await clock.advance(60_000);
    expect(fires.map((f) => f.scheduled_time)).toEqual(['2026-03-07T10:01:00.000Z', '2026-03-07T10:02:00.000Z']);
    scheduler.stop();
    expect(clock.sleeping).toBe(0);
    await clock.advance(3_600_000);
    expect(fires).toHaveLength(2);
  });
});
