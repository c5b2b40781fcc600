/**
 * Budgets that count work, not seconds, for the suites over the whole service
 * (test/integration/suites/fuzz.test.ts, authorization-matrix.test.ts): a test does a fixed
 * number of runs or requests and asserts that it made them; its timeout only catches a hang.
 * On a loaded machine the same work takes longer and still passes.
 */

/**
 * A test's (or hook's) timeout: far above what its fixed work takes on the most loaded machine
 * measured (2 cores shared with other test runs), so that it fails only when something hangs.
 */
export const HANG_GUARD_MS = 10 * 60_000;

/**
 * One request's timeout, below a test's so that a hung request fails naming itself rather
 * than the whole test timing out; far above any answer's time on a loaded machine.
 */
export const REQUEST_HANG_GUARD_MS = 3 * 60_000;

/**
 * Maps `items` through `fn`, at most `limit` at a time (results in the items' order). After an
 * error no further item is started; the first error rejects once the started calls have settled.
 */
export async function mapWithConcurrency<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const rejected = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejected) throw rejected.reason;
  return results;
}

/**
 * Runs independent steps, at most `limit` at a time, and answers their results in order: for
 * set-ups whose steps need not wait for each other.
 */
export function inParallel<T extends readonly (() => Promise<unknown>)[]>(
  limit: number,
  steps: T,
): Promise<{ -readonly [K in keyof T]: Awaited<ReturnType<T[K]>> }> {
  return mapWithConcurrency(steps, limit, (step) => step()) as Promise<{
    -readonly [K in keyof T]: Awaited<ReturnType<T[K]>>;
  }>;
}

/**
 * The lifetime of the tokens a file mints once for all its tests (`setExpirationTime`, and in
 * seconds): many times what the whole file takes on the most loaded machine measured, so that no
 * token expires mid-file (the default, 10 minutes, is a time budget of its own: a file that
 * took longer would meet 401s).
 */
export const TOKEN_LIFETIME = '2h';
export const TOKEN_LIFETIME_S = 2 * 60 * 60;
