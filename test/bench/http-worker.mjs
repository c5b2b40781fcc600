// Drives HTTP load from a child process, so neither the load generator's event loop nor
// its CPU time is the server's: the server process's CPU time is then what serving cost.
// Plain JavaScript: the child does not go through tsx.
import { Agent, request } from 'node:http';

process.once('message', async (load) => {
  const { url, method, headers, body, concurrency, total, firstIndex = 1, expectStatus, maxSeconds } = load;
  const deadline = maxSeconds === undefined ? Infinity : Date.now() + maxSeconds * 1000;
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const call = (target) =>
    new Promise((resolve, reject) => {
      const req = request(target, { method, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('error', reject);
      if (body !== undefined) req.write(body);
      req.end();
    });
  const latencies = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const loop = async () => {
    while (next < total && Date.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      const status = await call(url.replace('{i}', String(firstIndex + i))).catch(() => 0);
      latencies.push(performance.now() - t0);
      if (status !== expectStatus) errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  process.send({ latencies, errors, elapsed }, () => process.exit(0));
});
