// Drives HTTP load from a worker thread, so the load generator does not share the
// server's event loop. Plain JavaScript: worker threads do not go through tsx.
import { Agent, request } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const { url, method, headers, body, concurrency, total, firstIndex = 1, expectStatus } = workerData;
const agent = new Agent({ keepAlive: true, maxSockets: concurrency });

function call(target) {
  return new Promise((resolve, reject) => {
    const req = request(target, { method, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const latencies = [];
let errors = 0;
let next = 0;
const started = performance.now();
async function loop() {
  while (next < total) {
    const i = next++;
    const t0 = performance.now();
    const status = await call(url.replace('{i}', String(firstIndex + i))).catch(() => 0);
    latencies.push(performance.now() - t0);
    if (status !== expectStatus) errors++;
  }
}
await Promise.all(Array.from({ length: concurrency }, loop));
const elapsed = (performance.now() - started) / 1000;
agent.destroy();
parentPort.postMessage({ latencies, errors, elapsed });
