import { setTimeout as timeout } from 'node:timers/promises';

/**
 * The time as the service reads it. Every rule that depends on the time (an approval's
 * expiry, a run's deadline, a `wait` step, a lease, a schedule's next fire, a record's TTL,
 * a change's `at`) reads it from the Clock it was handed: the composition root
 * (functions/composition.ts:createRuntime) chooses one, the system's unless told otherwise,
 * and tests hand in a ManualClock to move time on without waiting for it.
 */
export interface Clock {
  /** Now, in milliseconds since the epoch. */
  now(): number;
  /** Now as the contract writes every timestamp: ISO 8601 UTC with milliseconds and `Z`. */
  iso(): string;
  /**
   * Resolves once `ms` have passed on this clock, or rejects with `signal`'s reason as soon
   * as it aborts. With `ref: false` a pending sleep does not keep the process alive.
   */
  sleep(ms: number, signal?: AbortSignal, options?: { readonly ref?: boolean }): Promise<void>;
}

/**
 * The system's clock: `Date.now()` and node:timers/promises' timer, both read at each call,
 * so a test that fakes them (vi.useFakeTimers; node:timers/promises with `fakeNodeBuiltins`,
 * which the unit project of vitest.config.ts sets) fakes this clock too.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  iso: () => new Date().toISOString(),
  sleep: async (ms, signal, options) => {
    try {
      await timeout(ms, undefined, { signal, ref: options?.ref });
    } catch (err) {
      // node:timers/promises rejects with an AbortError (the reason as its cause): the contract is the reason.
      throw signal?.aborted ? signal.reason : err;
    }
  },
};

interface Sleeper {
  readonly due: number;
  readonly wake: () => void;
}

/** Lets what a wake-up started run on (its promise callbacks and their I/O-free follow-ups). */
const turns = async (count: number) => {
  for (let i = 0; i < count; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/**
 * A clock that moves only when told (tests): `advance` and `set` move it on, and wake each
 * sleeper whose time has come, earliest first, letting what it started run before the next
 * one wakes (so a loop that sleeps a second at a time wakes once per second it was moved on).
 * A sleep of no time resolves at the next turn of the event loop, as a timer of 0 would.
 */
export class ManualClock implements Clock {
  private ms: number;
  private sleepers: Sleeper[] = [];
  private watchers: { readonly count: number; readonly resolve: () => void }[] = [];

  /** Starts at `start`: epoch milliseconds or an ISO 8601 instant. */
  constructor(start: number | string = Date.parse('2026-01-01T00:00:00.000Z')) {
    this.ms = typeof start === 'string' ? Date.parse(start) : start;
  }

  now(): number {
    return this.ms;
  }

  iso(): string {
    return new Date(this.ms).toISOString();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      if (!(ms > 0)) return void setImmediate(resolve);
      const sleeper: Sleeper = {
        due: this.ms + ms,
        wake: () => {
          signal?.removeEventListener('abort', abort);
          resolve();
        },
      };
      const abort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', abort, { once: true });
      this.sleepers.push(sleeper);
      this.notifyWatchers();
    });
  }

  /** How many sleeps are pending. */
  get sleeping(): number {
    return this.sleepers.length;
  }

  /** When the earliest pending sleep ends (epoch ms), or undefined when none is pending. */
  get nextWake(): number | undefined {
    return this.sleepers.length > 0 ? Math.min(...this.sleepers.map((s) => s.due)) : undefined;
  }

  /** Resolves once at least `count` sleeps are pending (what a test waits for before moving time on). */
  whenSleeping(count = 1): Promise<void> {
    if (this.sleepers.length >= count) return Promise.resolve();
    return new Promise<void>((resolve) => this.watchers.push({ count, resolve }));
  }

  /** Moves the clock on by `ms`, waking the sleepers due by then (see the class). */
  advance(ms: number): Promise<void> {
    return this.set(this.ms + ms);
  }

  /**
   * Moves the clock to `instant` (epoch ms or ISO 8601), waking the sleepers due by then
   * (see the class); set back, it wakes none. With no sleeper due the time is `instant` at
   * once, before the answer resolves.
   */
  async set(instant: number | string): Promise<void> {
    const target = typeof instant === 'string' ? Date.parse(instant) : instant;
    if (Number.isNaN(target)) throw new Error(`not an instant: ${String(instant)}`);
    for (;;) {
      const due = this.nextWake;
      if (due === undefined || due > target) break;
      this.ms = Math.max(this.ms, due);
      const woken = this.sleepers.filter((s) => s.due <= this.ms);
      this.sleepers = this.sleepers.filter((s) => s.due > this.ms);
      for (const sleeper of woken) sleeper.wake();
      await turns(5);
    }
    this.ms = target;
  }

  private notifyWatchers(): void {
    const met = this.watchers.filter((w) => this.sleepers.length >= w.count);
    this.watchers = this.watchers.filter((w) => this.sleepers.length < w.count);
    for (const w of met) w.resolve();
  }
}
