import { type Clock, systemClock } from '../../../shared/clock.js';

/**
 * Wakes E13 long polls (`wait`) as soon as an event of their run is written in this
 * process: the local platform runs the API and the crew worker together. Where they run
 * apart (two Lambdas on AWS) nothing notifies, and a long poll reads the store every
 * LONG_POLL_INTERVAL_MS instead.
 */
export interface RunSignals {
  /** Resolves when `correlationId` changes in this process, or after `ms`. */
  next(correlationId: string, ms: number): Promise<void>;
  /**
   * Watches `correlationId` for events at index `from` or later for as long as a long poll
   * lasts: a write while the poll reads the store is kept for its next wait, not missed.
   */
  watch(correlationId: string, from: number): RunWatch;
  /** `correlationId` changed; with `end`, its events up to index `end - 1` were written. */
  notify(correlationId: string, end?: number): void;
}

export interface RunWatch {
  /**
   * Resolves at once when such an event was written since the last call (or since the watch
   * began), else at the next one, when `abort` fires or after `ms`.
   */
  next(ms: number, abort?: AbortSignal): Promise<void>;
  /** Stops watching: every watch is closed once its poll ends. */
  close(): void;
}

/**
 * How often a long poll reads the store when nothing wakes it: once a second (fair
 * use), so a waiting poll costs at most one read a second.
 */
export const LONG_POLL_INTERVAL_MS = 1000;

/** What a write is to a waiter: whether it concerns it. */
type Waiter = (end?: number) => void;

/** Waiters by run id: a Map (run ids come from users' requests). A wait of `ms` is on `clock`. */
export class InProcessRunSignals implements RunSignals {
  private readonly waiters = new Map<string, Set<Waiter>>();

  constructor(private readonly clock: Clock = systemClock) {}

  async next(correlationId: string, ms: number): Promise<void> {
    const watch = this.watchAny(correlationId, undefined);
    try {
      await watch.next(ms);
    } finally {
      watch.close();
    }
  }

  watch(correlationId: string, from: number): RunWatch {
    return this.watchAny(correlationId, from);
  }

  notify(correlationId: string, end?: number): void {
    for (const waiter of [...(this.waiters.get(correlationId) ?? [])]) waiter(end);
  }

  /** With `from` undefined, any change of the run (an event or not) counts. */
  private watchAny(correlationId: string, from: number | undefined): RunWatch {
    let written = false;
    let wake: (() => void) | undefined;
    // A change that is no event, or an event before `from`, is nothing a long poll can answer.
    const waiter: Waiter = (end) => {
      if (from !== undefined && (end === undefined || end <= from)) return;
      written = true;
      wake?.();
    };
    let set = this.waiters.get(correlationId);
    if (!set) this.waiters.set(correlationId, (set = new Set()));
    const waiters = set;
    waiters.add(waiter);
    return {
      next: (ms, abort) =>
        new Promise<void>((resolve) => {
          if (written || abort?.aborted) {
            written = false;
            return resolve();
          }
          const timer = new AbortController();
          const done = () => {
            timer.abort();
            abort?.removeEventListener('abort', done);
            wake = undefined;
            written = false;
            resolve();
          };
          this.clock.sleep(ms, timer.signal).then(done, () => undefined);
          wake = done;
          abort?.addEventListener('abort', done);
        }),
      close: () => {
        waiters.delete(waiter);
        if (waiters.size === 0 && this.waiters.get(correlationId) === waiters) this.waiters.delete(correlationId);
      },
    };
  }
}

/** `store` whose successful appends notify `signals` (the composition wraps the run store with it). */
export function notifyingAppends<
  S extends {
    append(
      run: { correlation_id: string },
      written: { index: number } | readonly { index: number }[],
      ...rest: never[]
    ): Promise<boolean>;
  },
>(store: S, signals: RunSignals): S {
  const append: S['append'] = async (run, written, ...rest) => {
    const appended = await store.append(run, written, ...rest);
    const last = Array.isArray(written) ? written.at(-1) : (written as { index: number });
    if (appended) signals.notify(run.correlation_id, last ? last.index + 1 : undefined);
    return appended;
  };
  // The store's other methods as they are (on the prototype chain), `append` over them.
  return Object.assign(Object.create(store) as S, { append });
}
