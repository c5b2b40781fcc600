import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startSqs, type RunningEmulator } from '../../../infra/local/emulators.js';
import { localUserToken } from '../../../infra/local/local-sign-in.js';
import { eventually, notYet } from '../../support/eventually.js';
import {
  callPlatform,
  dynamoDbPid,
  listAllOf,
  type LocalProcess,
  localProcessScratch,
  type PlatformAnswer,
  type PlatformCall,
  processAlive,
  processTree,
  waitForDeath,
} from '../../support/local-process.js';
import { WebhookReceiver } from '../../support/webhook-receiver.js';

/**
 * Restart of the local platform (`npm start`) after a kill -9 under load (issue 25 #5): the
 * open webhook deliveries and unfinished crew runs are queued again in one batched pass
 * before any consumer starts, so the start succeeds and loses nothing; and a start that
 * cannot finish says so in one line, exits non-zero, and leaves no process behind.
 */

const ADMIN_PSK = 'local-restart-admin-key-0123456789abcdef';
/** Open webhook deliveries at the kill (one per MCP server created, each answered 503). */
const DELIVERIES = 200;
/** Crew runs inside a `wait` at the kill. */
const RUNS = 24;
const WRITERS = 8;

const { dataDir, spawn, printLogOnFailure } = localProcessScratch('dpm-local-restart-');

/** Answers 503 to every delivery: each stays open (pending, or retrying minutes later: the default schedule). */
const receiver = new WebhookReceiver();
receiver.answer = () => 503;
afterAll(() => receiver.stop());

/** One port for every start: the local sign-in's issuer names it, so alice stays alice. */
let port: number | undefined;

async function start(): Promise<LocalProcess> {
  port ??= await freePort();
  return spawn({
    env: {
      STAGE: 'restart',
      PORT: String(port),
      DPM_ADMIN_PSK: ADMIN_PSK,
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    },
  });
}

/** A call as `token`, else with the admin key. */
const call = <T = any>(base: string, path: string, init: PlatformCall = {}) =>
  callPlatform<T>(base, path, { psk: ADMIN_PSK, ...init });

/**
 * A setup call (not what is tested): a 503 of a platform that a loaded machine keeps busy
 * (a dependency did not answer in time) is tried again, a few times.
 */
async function setup<T = any>(base: string, path: string, init: PlatformCall): Promise<PlatformAnswer<T>> {
  for (let attempt = 1; ; attempt++) {
    const res = await call<T>(base, path, init);
    if (res.status !== 503 || attempt === 5) return res;
    await sleep(1_000);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Lines of this run's output that tell of a rejection nobody handled (Node's own report, or a stack). */
const unhandled = (output: string) =>
  output.split('\n').filter((l) => /unhandled|UnhandledPromiseRejection|^\s+at /i.test(l) && !l.startsWith('{'));

describe('restart of the local platform (npm start) after a kill -9 under load', () => {
  it('starts again and loses nothing: acknowledged writes read back, open runs and deliveries resume', async () => {
    printLogOnFailure();
    await receiver.start();
    const first = await start();
    await first.waitUntilReady(180_000);
    const base = first.baseUrl;

    const hook = await setup(base, '/api/webhooks', {
      method: 'POST',
      body: { url: receiver.url('/hooks'), description: 'restart under load' },
    });
    expect(hook.status, hook.text).toBe(201);

    // One event, so one delivery, per MCP server; each delivery fails (503) and stays open.
    const acked = new Set<string>();
    /** Answers other than 201 (not this test's subject: logged, and another server made). */
    const unexpected: string[] = [];
    let made = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (acked.size < DELIVERIES && made < 2 * DELIVERIES) {
          const i = made++;
          const res = await call(base, '/api/mcps', {
            method: 'POST',
            body: { name: `before ${i}`, command: 'npx', args: ['-y', `server-${i}`] },
          });
          if (res.status === 201) acked.add(res.body.id as string);
          else unexpected.push(`${res.status} ${res.text}`);
        }
      }),
    );
    expect(acked.size).toBeGreaterThanOrEqual(DELIVERIES);
    /** The endpoint's open deliveries (none counted while the platform, busy, answers 503: `lenient`). */
    const open = async (base: string, lenient = false) =>
      (
        await listAllOf<{ status: string }>(base, `/api/webhooks/${hook.body.id}/deliveries`, {
          psk: ADMIN_PSK,
          lenient,
        })
      ).filter((d) => ['pending', 'retrying'].includes(d.status)).length;
    await eventually(
      async () => {
        const n = await open(base, true);
        return n >= DELIVERIES || notYet(`${n} open`);
      },
      180_000,
      `${DELIVERIES} deliveries open`,
      250,
    );

    // Runs parked in waits (ten minutes of them), each holding a worker.
    const template = await setup(base, '/api/crew-templates', {
      method: 'POST',
      body: {
        name: 'restart-wait',
        steps: Array.from({ length: 10 }, (_, i) => ({ id: `wait-${i}`, kind: 'wait', seconds: 60 })),
      },
    });
    expect(template.status, template.text).toBe(201);
    const alice = await localUserToken(base, 'alice');
    const runs: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const res = await setup(base, `/api/crew-templates/${template.body.id}/run`, {
        method: 'POST',
        body: { values: {} },
        token: alice,
      });
      expect(res.status, res.text).toBe(202);
      runs.push(res.body.correlation_id as string);
    }
    for (const id of runs) {
      await eventually(
        async () => {
          const res = await call<any[]>(base, `/api/events/${id}?start=0`);
          return (res.status === 200 && res.body.at(-1)?.type === 'step.started') || notYet(res.text.slice(-300));
        },
        120_000,
        `run ${id} in its wait`,
        250,
      );
    }

    // Under load (writers with requests in flight), the whole group is killed.
    let stop = false;
    let unanswered = 0;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let n = 0; !stop; n++) {
        try {
          const res = await call(base, '/api/mcps', {
            method: 'POST',
            body: { name: `load ${w}-${n}`, command: 'npx', args: ['-y', `load-${n}`] },
          });
          if (res.status === 201) acked.add(res.body.id as string);
          else unexpected.push(`${res.status} ${res.text}`);
        } catch {
          unanswered++;
          return;
        }
      }
    });
    const before = acked.size;
    const acknowledged = () => acked.size - before;
    await eventually(
      () => acknowledged() >= 60 || notYet(acknowledged()),
      30_000,
      '60 writes acknowledged under load',
      250,
    );
    first.killGroup('SIGKILL');
    await first.exited;
    stop = true;
    await Promise.all(writers);
    if (unexpected.length > 0) console.log(`answers other than 201 before the kill: ${unexpected.join('; ')}`);
    expect(unanswered, 'the kill hit requests in flight').toBeGreaterThan(0);

    // The restart succeeds: the backlog is queued again before any consumer takes work.
    const second = await start();
    await second.waitUntilReady(180_000);
    const output = second.output();
    expect(unhandled(output), output).toEqual([]);
    const resumedRuns = Number(/resumed (\d+) unfinished crew run/.exec(output)?.[1]);
    const resumedDeliveries = Number(/resumed (\d+) unfinished webhook deliver/.exec(output)?.[1]);
    expect(resumedRuns, output).toBeGreaterThanOrEqual(RUNS);
    expect(resumedDeliveries, output).toBeGreaterThanOrEqual(DELIVERIES);

    // Nothing acknowledged is lost, and each open run is resumed: its wait runs again.
    const listed = new Set(
      (await listAllOf<{ id: string }>(second.baseUrl, '/api/mcps', { psk: ADMIN_PSK })).map((s) => s.id),
    );
    expect([...acked].filter((id) => !listed.has(id))).toEqual([]);
    for (const id of runs) {
      const run = await call(second.baseUrl, `/api/crew-runs/${id}`);
      expect(run.body.status, run.text).toBe('running');
    }
    expect(await open(second.baseUrl), 'no delivery lost or given up').toBeGreaterThanOrEqual(DELIVERIES);

    second.killMain('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(unhandled(second.output())).toEqual([]);
  }, 600_000);
});

/**
 * A fauxqs in this process behind an HTTP proxy that never answers a SendMessage (or
 * SendMessageBatch): what the platform is pointed at, so that its start gets as far as
 * the requeue and no further.
 */
async function sqsThatHangsOnSend(): Promise<{ url: string; close(): Promise<void> }> {
  const sqs: RunningEmulator = await startSqs();
  const target = new URL(sqs.endpoint);
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const action = String(req.headers['x-amz-target'] ?? '') + body.toString('utf8').slice(0, 200);
      if (/SendMessage/.test(action)) {
        hanging.add(res);
        return;
      }
      try {
        const answer = await fetch(new URL(req.url ?? '/', target), {
          method: req.method,
          headers: Object.fromEntries(
            Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
          ) as Record<string, string>,
          body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
        });
        res.writeHead(answer.status, Object.fromEntries(answer.headers));
        res.end(Buffer.from(await answer.arrayBuffer()));
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await sqs.stop();
    },
  };
}

describe('a start of the local platform (npm start) that cannot finish', () => {
  it('prints one line, exits non-zero, leaves no process and no unhandled rejection', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-requeue`;
    // An unfinished run in the data directory, so that the start has something to queue again.
    const first = spawn({
      dataDir: dir,
      env: { STAGE: 'restartfail', DPM_ADMIN_PSK: ADMIN_PSK, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    });
    await first.waitUntilReady(180_000);
    const template = await call(first.baseUrl, '/api/crew-templates', {
      method: 'POST',
      body: { name: 'fail-wait', steps: [{ id: 'long', kind: 'wait', seconds: 60 }] },
    });
    expect(template.status, template.text).toBe(201);
    const run = await call(first.baseUrl, `/api/crew-templates/${template.body.id}/run`, {
      method: 'POST',
      body: { values: {} },
      token: await localUserToken(first.baseUrl, 'alice'),
    });
    expect(run.status, run.text).toBe(202);
    first.killGroup('SIGKILL');
    await first.exited;

    const sqs = await sqsThatHangsOnSend();
    try {
      const second = spawn({
        dataDir: dir,
        env: {
          STAGE: 'restartfail',
          DPM_ADMIN_PSK: ADMIN_PSK,
          SQS_ENDPOINT: sqs.url,
          S3_ENDPOINT: sqs.url,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        },
      });
      // Its DynamoDB Local, and everything else it started, as long as it runs.
      let seen: number[] = [];
      let java = 0;
      let watching = true;
      const watch = (async () => {
        while (watching && second.running) {
          seen = [...new Set([...seen, ...processTree(second.pid).slice(1)])];
          java ||= dynamoDbPid(dir);
          await sleep(100);
        }
      })();
      const exit = await Promise.race([second.exited, sleep(90_000).then(() => undefined)]);
      watching = false;
      await watch;
      expect(exit, `exited:\n${second.output()}`).toBeDefined();
      const output = second.output().trim();
      expect(output.split('\n'), output).toHaveLength(1);
      expect(output).toMatch(/^dpm: could not queue the unfinished crew runs and webhook deliveries again: \w+/);
      expect(exit!.code).not.toBe(0);
      expect(exit!.code).not.toBeNull();
      expect(java, 'DynamoDB Local was started').toBeGreaterThan(0);
      for (const pid of [...seen, java]) expect(await waitForDeath(pid, 5_000), `pid ${pid} is gone`).toBe(true);
      expect(processAlive(java)).toBe(false);
    } finally {
      await sqs.close();
    }
  }, 400_000);
});
