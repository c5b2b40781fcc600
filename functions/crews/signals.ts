/**
 * Wakes E13 long polls (`wait`) as soon as an event of their run is written in this
 * process: the local platform runs the API and the crew worker together. Where they run
 * apart (two Lambdas on AWS) nothing notifies, and a long poll reads the store every
 * LONG_POLL_INTERVAL_MS instead (a few reads a second, never a spin).
 */
export interface RunSignals {
  /** Resolves when `correlationId` gets an event in this process, or after `ms`. */
  next(correlationId: string, ms: number): Promise<void>;
  /** An event of `correlationId` was written. */
  notify(correlationId: string): void;
}

/** How often a long poll reads the store when nothing wakes it. */
export const LONG_POLL_INTERVAL_MS = 250;

/** Waiters by run id: a Map (run ids come from users' requests). */
export class InProcessRunSignals implements RunSignals {
  private readonly waiters = new Map<string, Set<() => void>>();

  next(correlationId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(correlationId);
      if (!set) this.waiters.set(correlationId, (set = new Set()));
      const waiters = set;
      const wake = () => {
        clearTimeout(timer);
        waiters.delete(wake);
        if (waiters.size === 0 && this.waiters.get(correlationId) === waiters) this.waiters.delete(correlationId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      waiters.add(wake);
    });
  }

  notify(correlationId: string): void {
    for (const wake of [...(this.waiters.get(correlationId) ?? [])]) wake();
  }
}

/** `store` whose successful appends notify `signals` (the composition wraps the run store with it). */
export function notifyingAppends<
  S extends { append(run: { correlation_id: string }, ...rest: never[]): Promise<boolean> },
>(store: S, signals: RunSignals): S {
  const append: S['append'] = async (run, ...rest) => {
    const appended = await store.append(run, ...rest);
    if (appended) signals.notify(run.correlation_id);
    return appended;
  };
  // The store's other methods as they are (on the prototype chain), `append` over them.
  return Object.assign(Object.create(store) as S, { append });
}
