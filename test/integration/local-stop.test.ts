import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/emulators.js';
import { localUserToken } from '../../infra/local/local-sign-in.js';
import {
  commandLineOf,
  dynamoDbPid,
  LocalProcess,
  localProcessScratch,
  processTree,
  waitForDeath,
} from '../support/local-process.js';
import { kindsOf } from './crew-support.js';

/**
 * Stopping the local platform started as a user starts it, `npm start` (issue 25 #12, #13):
 * `kill <the PID npm start gave>` stops npm, Node and DynamoDB Local's JVM and closes every
 * port; Ctrl-C (SIGINT to the terminal's whole process group) with a crew step running
 * abandons the step, drains and stops the emulators last, without a warning; an idle stop
 * prints none either; after a restart the abandoned run resumes.
 */

const ADMIN_PSK = 'local-stop-admin-key-0123456789abcdef';

const { dataDir, logFile, started, printLogOnFailure } = localProcessScratch('dpm-local-stop-');

/**
 * `npm start` on a data directory of its own for each test (`dir`) and `port` (the same for
 * a restart: the local sign-in's issuer names it, so alice stays alice).
 */
async function npmStart(dir: string, port: number): Promise<LocalProcess> {
  const p = LocalProcess.spawn({
    dataDir: dir,
    logFile,
    npm: true,
    env: {
      STAGE: 'stopping',
      PORT: String(port),
      DPM_ADMIN_PSK: ADMIN_PSK,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    },
  });
  started.push(p);
  await p.waitUntilReady(180_000);
  return p;
}

async function call<T = any>(
  base: string,
  path: string,
  init: { method?: string; body?: unknown; token?: string } = {},
): Promise<{ status: number; body: T; text: string }> {
  const headers: Record<string, string> = init.token
    ? { authorization: `Bearer ${init.token}` }
    : { 'authorization-psk': ADMIN_PSK };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, text };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The ports the platform on `dir` listens on: the API's, and DynamoDB Local's (from its command line). */
function portsOf(p: LocalProcess, dir: string): number[] {
  const api = Number(new URL(p.baseUrl).port);
  const dynamodb = Number(/-port (\d+)/.exec(commandLineOf(dynamoDbPid(dir)))?.[1]);
  expect(dynamodb, 'DynamoDB Local runs').toBeGreaterThan(0);
  return [api, dynamodb];
}

/** Waits until every pid is gone; the ones still there after `ms`. */
async function survivors(pids: readonly number[], ms: number): Promise<string[]> {
  const deadline = Date.now() + ms;
  const left: string[] = [];
  for (const pid of pids) {
    if (!(await waitForDeath(pid, Math.max(0, deadline - Date.now())))) left.push(`${pid} ${commandLineOf(pid)}`);
  }
  return left;
}

/** Warnings and errors of a run's output: structured WARN/ERROR lines, and any ECONNREFUSED. */
const complaints = (output: string) =>
  output.split('\n').filter((l) => /"level":"(WARN|ERROR)"|ECONNREFUSED|warning/i.test(l));

/** Events of a run once its last is of one of `types`. */
async function lastIs(base: string, id: string, types: string[], ms = 60_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await call<{ type: string; step_id?: string; index: number }[]>(base, `/api/events/${id}?start=0`);
    expect(res.status, res.text).toBe(200);
    if (types.includes(res.body.at(-1)?.type ?? '')) return res.body;
    if (Date.now() > deadline) throw new Error(`run ${id}: last event ${res.body.at(-1)?.type}, not ${types}`);
    await sleep(250);
  }
}

describe('stopping the local platform started with npm start', () => {
  it('kill <pid of npm start> stops npm, Node and DynamoDB Local, and closes every port', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-kill`;
    const p = await npmStart(dir, await freePort());
    const tree = processTree(p.pid);
    const java = dynamoDbPid(dir);
    expect(tree, 'DynamoDB Local is among what npm start runs').toContain(java);
    expect(tree.some((pid) => /infra\/local\/main\.ts/.test(commandLineOf(pid)))).toBe(true);
    const ports = portsOf(p, dir);
    for (const port of ports) expect(await listening(port)).toBe(true);

    // What `npm start & ... kill $!` does: SIGTERM to npm's PID alone.
    process.kill(p.pid, 'SIGTERM');
    expect(await survivors(tree, 30_000), 'every process of the tree stopped').toEqual([]);
    for (const port of ports) expect(await listening(port), `port ${port} closed`).toBe(false);
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(complaints(p.output())).toEqual([]);
  }, 300_000);

  it('an idle Ctrl-C stops everything without a warning', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-idle`;
    const p = await npmStart(dir, await freePort());
    const tree = processTree(p.pid);
    const ports = portsOf(p, dir);
    // A terminal's Ctrl-C: SIGINT to its foreground process group, npm and all it started.
    p.killGroup('SIGINT');
    expect(await survivors(tree, 30_000)).toEqual([]);
    for (const port of ports) expect(await listening(port), `port ${port} closed`).toBe(false);
    expect(complaints(p.output())).toEqual([]);
  }, 300_000);

  it('Ctrl-C with a step running abandons it, stops without a warning, and the run resumes after a restart', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-step`;
    const port = await freePort();
    const first = await npmStart(dir, port);
    const alice = await localUserToken(first.baseUrl, 'alice');
    const template = async (name: string, seconds: number) => {
      const res = await call(first.baseUrl, '/api/crew-templates', {
        method: 'POST',
        body: {
          name,
          steps: [
            { id: 'wait', kind: 'wait', seconds },
            { id: 'after', kind: 'render', template: 'after the wait' },
          ],
        },
      });
      expect(res.status, res.text).toBe(201);
      return res.body.id as string;
    };
    const run = async (templateId: string) => {
      const res = await call(first.baseUrl, `/api/crew-templates/${templateId}/run`, {
        method: 'POST',
        body: { values: {} },
        token: alice,
      });
      expect(res.status, res.text).toBe(202);
      return res.body.correlation_id as string;
    };
    const long = await run(await template('minute', 60));
    const short = await run(await template('short', 10));
    for (const id of [long, short]) await lastIs(first.baseUrl, id, ['step.started']);

    const tree = processTree(first.pid);
    const ports = portsOf(first, dir);
    const since = Date.now();
    first.killGroup('SIGINT');
    // Far less than the minute's wait: the step is abandoned, not waited for.
    expect(await survivors(tree, 30_000)).toEqual([]);
    const stopMs = Date.now() - since;
    for (const port of ports) expect(await listening(port), `port ${port} closed`).toBe(false);
    expect(complaints(first.output()), `stopped in ${stopMs} ms`).toEqual([]);

    // After a restart both runs are taken up again: the short one's wait runs again and the
    // run completes; nothing was written for the abandoned steps.
    const second = await npmStart(dir, port);
    expect(second.output()).toMatch(/resumed 2 unfinished crew run/);
    const shortEvents = await lastIs(second.baseUrl, short, ['run.completed', 'run.failed']);
    expect(kindsOf(shortEvents)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'wait'],
      ['step.completed', 'wait'],
      ['step.started', 'after'],
      ['step.completed', 'after'],
      ['run.completed', null],
    ]);
    const resumed = await call(second.baseUrl, `/api/crew-runs/${long}`);
    expect(resumed.body.status, resumed.text).toBe('running');
    expect(
      (await call(second.baseUrl, `/api/crew-runs/${long}/cancel`, { method: 'POST', body: {}, token: alice })).status,
    ).toBe(200);
    expect(kindsOf(await lastIs(second.baseUrl, long, ['run.cancelled']))).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'wait'],
      ['run.cancelled', null],
    ]);

    const secondTree = processTree(second.pid);
    second.killMain('SIGTERM');
    expect(await survivors(secondTree, 30_000)).toEqual([]);
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(complaints(second.output())).toEqual([]);
  }, 500_000);
});
