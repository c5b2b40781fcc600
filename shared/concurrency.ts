/**
 * `fn` over `items` with at most `limit` calls in flight; results in the items' order.
 * The first rejection rejects the whole (calls already started run to their end).
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * Waits until every one of `promises` has settled, or `ms` has passed (undefined: no
 * limit). What is still under way after `ms` is left running.
 */
export async function settledWithin(promises: readonly Promise<unknown>[], ms?: number): Promise<void> {
  const all = Promise.allSettled(promises);
  if (ms === undefined) {
    await all;
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const out = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([all, out]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A gate that lets at most `slots` calls of `work` run at once in this process; the others
 * wait their turn, first come first served (a slot passes straight to the next waiter).
 */
export function gate(slots: number): <T>(work: () => Promise<T>) => Promise<T> {
  let free = slots;
  const waiting: (() => void)[] = [];
  return async (work) => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}
