import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Latency figures of one measured run. */
export interface LoadResult {
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
  /** HTTP loads: CPU time of this (the server's) process per request, in ms. */
  cpuMsPerRequest?: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

function summarize(latencies: number[], errors: number, elapsedSeconds: number): LoadResult {
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    rps: latencies.length / elapsedSeconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/**
 * Runs `op` from `concurrency` workers until `total` operations are done (or the time
 * limit passes), timing each with performance.now(). Used for the bare store calls, in
 * the process that hosts the service, where a handler would make them.
 */
export async function runLoad(
  op: (i: number) => Promise<boolean>,
  options: { concurrency: number; total: number; maxSeconds?: number },
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const deadline = Date.now() + (options.maxSeconds ?? 60) * 1000;
  const started = performance.now();
  const worker = async () => {
    while (next < options.total && Date.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      const ok = await op(i).catch(() => false);
      latencies.push(performance.now() - t0);
      if (!ok) errors++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return summarize(latencies, errors, (performance.now() - started) / 1000);
}

export interface HttpLoad {
  /** `{i}` in the URL is replaced by firstIndex, firstIndex + 1, ... */
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  expectStatus: number;
  concurrency: number;
  total: number;
  firstIndex?: number;
  /** No request is started after this many seconds (a slow endpoint's load stays bounded in time). */
  maxSeconds?: number;
}

/**
 * HTTP load from a child process (test/bench/http-worker.mjs): off the server's event
 * loop, and out of its CPU time, which is measured here (`cpuMsPerRequest`): this process
 * serves the requests, so its CPU time over the run is what answering them cost (with
 * whatever else the local platform does meanwhile, the same for every row).
 */
export function runHttpLoad(load: HttpLoad): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./http-worker.mjs', import.meta.url)), [], { stdio: 'inherit' });
    let cpuBefore: NodeJS.CpuUsage | undefined;
    child.once('spawn', () => {
      cpuBefore = process.cpuUsage();
      child.send(load);
    });
    child.once('message', (m: { latencies: number[]; errors: number; elapsed: number }) => {
      const cpu = process.cpuUsage(cpuBefore);
      const result = summarize(m.latencies, m.errors, m.elapsed);
      resolve({ ...result, cpuMsPerRequest: (cpu.user + cpu.system) / 1000 / Math.max(1, result.requests) });
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the load generator exited with ${code}`));
    });
  });
}
