import { Agent, request } from 'node:http';

/** Latency figures of one measured run. */
export interface LoadResult {
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/**
 * Runs `op` from `concurrency` workers until `total` operations are done (or the time
 * limit passes), timing each with performance.now(). The same loop drives both the HTTP
 * endpoints and the bare store calls, so their figures compare like with like.
 */
export async function runLoad(
  op: (i: number) => Promise<boolean>,
  options: { concurrency: number; total: number; maxSeconds?: number },
): Promise<LoadResult> {
  return (await runInterleaved([op], options))[0]!;
}

/**
 * Like runLoad, but alternates between `ops` (operation i runs ops[i % n]) and reports
 * each separately: what both see of the machine's load is the same, so they compare fairly.
 */
export async function runInterleaved(
  ops: readonly ((i: number) => Promise<boolean>)[],
  options: { concurrency: number; total: number; maxSeconds?: number },
): Promise<LoadResult[]> {
  const latencies = ops.map(() => [] as number[]);
  const errors = ops.map(() => 0);
  let next = 0;
  const deadline = Date.now() + (options.maxSeconds ?? 60) * 1000;
  const started = performance.now();
  const worker = async () => {
    while (next < options.total && Date.now() < deadline) {
      const i = next++;
      const k = i % ops.length;
      const t0 = performance.now();
      const ok = await ops[k]!(i).catch(() => false);
      latencies[k]!.push(performance.now() - t0);
      if (!ok) errors[k]!++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  return latencies.map((l, k) => {
    l.sort((a, b) => a - b);
    return {
      requests: l.length,
      errors: errors[k]!,
      rps: l.length / elapsed,
      p50: percentile(l, 50),
      p99: percentile(l, 99),
    };
  });
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** One HTTP request over a keep-alive connection; resolves with the status code. */
export function httpCall(url: string, method: string, headers: Record<string, string>, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
