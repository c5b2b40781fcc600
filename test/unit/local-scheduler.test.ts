import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalScheduler } from '../../functions/crews/local-scheduler.js';
import type { ScheduleFire } from '../../shared/ports/scheduler.js';

/** The local platform's timers (a fake clock): the fires EventBridge Scheduler would send, on time. */
describe('LocalScheduler', () => {
  let fires: ScheduleFire[];
  let scheduler: LocalScheduler;
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse('2026-03-07T23:58:30.000Z') });
    fires = [];
    scheduler = new LocalScheduler(async (fire) => void fires.push(fire));
  });
  afterEach(() => {
    scheduler.stop();
    vi.useRealTimers();
  });

  it('fires a rate from its anchor, every period', async () => {
    await scheduler.put({
      id: 's1',
      expression: 'rate(2 minutes)',
      timezone: 'UTC',
      enabled: true,
      anchor: '2026-03-07T23:58:10.000Z',
    });
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    expect(fires).toEqual([
      { schedule_id: 's1', scheduled_time: '2026-03-07T23:59:00.000Z' },
      { schedule_id: 's1', scheduled_time: '2026-03-08T00:01:00.000Z' },
      { schedule_id: 's1', scheduled_time: '2026-03-08T00:03:00.000Z' },
    ]);
  });

  it('fires a cron at its wall-clock time in the schedule’s time zone, across a daylight-saving change', async () => {
    // 02:30 New York: on 8 March 2026 the clocks jump from 02:00 to 03:00, so that day has no 02:30.
    await scheduler.put({ id: 'ny', expression: 'cron(30 2 * * ? *)', timezone: 'America/New_York', enabled: true });
    await vi.advanceTimersByTimeAsync(3 * 86_400_000);
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
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(fires).toEqual([]);
  });

  it('reaches a fire further away than one timer can wait', async () => {
    await scheduler.put({ id: 'far', expression: 'cron(0 0 1 1 ? 2027)', timezone: 'UTC', enabled: true });
    await vi.advanceTimersByTimeAsync(300 * 86_400_000);
    expect(fires).toEqual([{ schedule_id: 'far', scheduled_time: '2027-01-01T00:00:00.000Z' }]);
  });
});
