import { afterEach, describe, expect, it, vi } from 'vitest';
import { AGAIN, backoffMs, retry } from '../../shared/retry.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** A sleep that records each pause and resolves at once. */
const fakeSleep = () => {
  const pauses: number[] = [];
  return { pauses, sleep: async (ms: number) => void pauses.push(ms) };
};

describe('backoffMs', () => {
  it('doubles from the base with each exponent', () => {
    expect([0, 1, 2, 3, 4].map((e) => backoffMs(e, { baseMs: 25 }))).toEqual([25, 50, 100, 200, 400]);
  });

  it('stops at maxMs', () => {
    expect([0, 1, 2, 3, 4, 5, 10, 2000].map((e) => backoffMs(e, { baseMs: 250, maxMs: 5_000 }))).toEqual([
      250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000,
    ]);
  });

  it('with full jitter, is Math.random() times the capped pause', () => {
    const random = vi.spyOn(Math, 'random');
    random.mockReturnValue(0);
    expect(backoffMs(3, { baseMs: 5, maxMs: 200, jitter: 'full' })).toBe(0);
    random.mockReturnValue(0.5);
    expect(backoffMs(3, { baseMs: 5, maxMs: 200, jitter: 'full' })).toBe(20);
    expect(backoffMs(10, { baseMs: 5, maxMs: 200, jitter: 'full' })).toBe(100);
    // Math.random() is below 1: the pause stays below the capped one.
    random.mockReturnValue(0.999_999);
    const top = backoffMs(10, { baseMs: 5, maxMs: 200, jitter: 'full' });
    expect(top).toBeGreaterThanOrEqual(0);
    expect(top).toBeLessThan(200);
    expect(random).toHaveBeenCalledTimes(4);
  });

  it('without jitter, draws no random number', () => {
    const random = vi.spyOn(Math, 'random');
    backoffMs(2, { baseMs: 100 });
    expect(random).not.toHaveBeenCalled();
  });
});

describe('retry', () => {
  it('answers the first try that is not AGAIN, its attempt numbers 1-based', async () => {
    const seen: number[] = [];
    const out = await retry(
      (attempt) => {
        seen.push(attempt);
        return attempt < 3 ? AGAIN : `value ${attempt}`;
      },
      { attempts: 5 },
    );
    expect(out).toEqual({ done: true, value: 'value 3' });
    expect(seen).toEqual([1, 2, 3]);
  });

  it('tries exactly `attempts` times, then answers done: false', async () => {
    const tryOnce = vi.fn(async () => AGAIN);
    expect(await retry(tryOnce, { attempts: 4 })).toEqual({ done: false });
    expect(tryOnce).toHaveBeenCalledTimes(4);
  });

  it('answers an undefined value as done', async () => {
    expect(await retry(async () => undefined, { attempts: 2 })).toEqual({ done: true, value: undefined });
  });

  it('pauses delayMs(attempt) before each try after the first, none after the last', async () => {
    const { pauses, sleep } = fakeSleep();
    const delayMs = vi.fn((attempt: number) => backoffMs(attempt, { baseMs: 25 }));
    const out = await retry(async () => AGAIN, { attempts: 5, delayMs, sleep });
    expect(out).toEqual({ done: false });
    expect(delayMs.mock.calls.map(([attempt]) => attempt)).toEqual([2, 3, 4, 5]);
    expect(pauses).toEqual([100, 200, 400, 800]);
  });

  it('does not pause when the first try answers', async () => {
    const { pauses, sleep } = fakeSleep();
    await retry(async () => 1, { attempts: 3, delayMs: () => 1_000, sleep });
    expect(pauses).toEqual([]);
  });

  it('does not pause without delayMs', async () => {
    const { pauses, sleep } = fakeSleep();
    await retry(async () => AGAIN, { attempts: 3, sleep });
    expect(pauses).toEqual([]);
  });

  it('throws what a try throws, without trying again', async () => {
    const tryOnce = vi.fn(async (attempt: number) => {
      if (attempt === 2) throw new Error('refused');
      return AGAIN;
    });
    await expect(retry(tryOnce, { attempts: 5 })).rejects.toThrow('refused');
    expect(tryOnce).toHaveBeenCalledTimes(2);
  });

  it('waits on a timer when no sleep is given', async () => {
    vi.useFakeTimers();
    let tries = 0;
    const out = retry(async () => (++tries < 2 ? AGAIN : 'ok'), { attempts: 2, delayMs: () => 1_000 });
    await vi.advanceTimersByTimeAsync(999);
    expect(tries).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await out).toEqual({ done: true, value: 'ok' });
    expect(tries).toBe(2);
  });
});
