import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/emulators.js';
import { localUserToken } from '../../../infra/local/local-sign-in.js';
import { eventually, notYet } from '../../support/eventually.js';
import {
  callPlatform,
  commandLineOf,
  dynamoDbPid,
  type LocalProcess,
  localProcessScratch,
  type PlatformCall,
  processTree,
  waitForDeath,
} from '../../support/local-process.js';
import { kindsOf } from '../crew-support.js';

/**
 * Stopping the local platform started as a user starts it, `npm start` (issue 25 #12, #13):
 * `kill <the PID npm start gave>` stops npm, Node and DynamoDB Local's JVM and closes every
 * port; Ctrl-C (SIGINT to the terminal's whole process group) with a crew step running
 * abandons the step, drains and stops the emulators last, without a warning; an idle stop
 * prints none either; after a restart the abandoned run resumes. A long poll still waiting
 * after the drain is cut; a second Ctrl-C a second later exits at once; and should npm be
 * killed (-9), the service stops all the same.
 */

const ADMIN_PSK = 'local-stop-admin-key-0123456789abcdef';

const { dataDir, spawn, printLogOnFailure } = localProcessScratch('dpm-local-stop-');

/**
 * `npm start` on a data directory of its own for each test (`dir`) and `port` (the same for
 * a restart: the local sign-in's issuer names it, so alice stays alice).
 */
async function npmStart(dir: string, port: number): Promise<LocalProcess> {
  const p = spawn({
    dataDir: dir,
    npm: true,
    env: {
      STAGE: 'stopping',
      PORT: String(port),
      DPM_ADMIN_PSK: ADMIN_PSK,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    },
  });
  await p.waitUntilReady(180_000);
  return p;
}

/** A call as `token`, else with the admin key. */
const call = <T = any>(base: string, path: string, init: PlatformCall = {}) =>
  callPlatform<T>(base, path, { psk: ADMIN_PSK, ...init });

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

/**
 * Whether the stopped platform (`tree`, its processes as they were) still listens on `port`.
 * Other tests start platforms on free ports meanwhile, so a listener found there must be one
 * of the tree's to count (its owner from `ss`; without `ss`, any listener counts).
 */
async function stillListening(port: number, tree: readonly number[]): Promise<boolean> {
  // A JVM whose main thread has exited reads as a zombie in /proc (so `survivors` counts it
  // gone) while its other threads are still closing its sockets: a few seconds for that.
  // (listenedByTree throws nothing: a rejection here is the time running out.)
  return eventually(async () => !(await listenedByTree(port, tree)), 5_000, `port ${port} closed`, 250).then(
    () => false,
    () => true,
  );
}

async function listenedByTree(port: number, tree: readonly number[]): Promise<boolean> {
  if (!(await listening(port))) return false;
  let out: string;
  try {
    out = execFileSync('ss', ['-H', '-l', '-t', '-n', '-p', `sport = :${port}`], { encoding: 'utf8' });
  } catch {
    return true;
  }
  const owners = [...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
  return owners.length === 0 || owners.some((pid) => tree.includes(pid));
}

/** The ports the platform on `dir` listens on: the API's (HTTP and HTTPS), and DynamoDB Local's (from its command line). */
function portsOf(p: LocalProcess, dir: string): number[] {
  const api = Number(new URL(p.baseUrl).port);
  const https = Number(new URL(p.httpsBaseUrl).port);
  const dynamodb = Number(/-port (\d+)/.exec(commandLineOf(dynamoDbPid(dir)))?.[1]);
  expect(dynamodb, 'DynamoDB Local runs').toBeGreaterThan(0);
  return [api, https, dynamodb];
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
const lastIs = (base: string, id: string, types: string[], ms = 60_000) =>
  eventually(
    async () => {
      const res = await call<{ type: string; step_id?: string; index: number }[]>(base, `/api/events/${id}?start=0`);
      expect(res.status, res.text).toBe(200);
      return types.includes(res.body.at(-1)?.type ?? '') ? res.body : notYet(`last event ${res.body.at(-1)?.type}`);
    },
    ms,
    `run ${id} ends in ${types.join('/')}`,
    250,
  );

/**
 * An E13 long poll (wait=20) by alice on a run of hers parked at an approval step, which no
 * event ends: what became of it, once it waits ('cut' when its connection closed unanswered).
 */
async function waitingPoll(p: LocalProcess): Promise<{ outcome: Promise<string> }> {
  const template = await call(p.baseUrl, '/api/crew-templates', {
    method: 'POST',
    body: { name: 'gated', steps: [{ id: 'gate', kind: 'approval', prompt: 'go?', timeout_seconds: 3600 }] },
  });
  expect(template.status, template.text).toBe(201);
  const alice = await localUserToken(p.baseUrl, 'alice');
  const run = await call(p.baseUrl, `/api/crew-templates/${template.body.id}/run`, {
    method: 'POST',
    body: { values: {} },
    token: alice,
  });
  expect(run.status, run.text).toBe(202);
  const id = run.body.correlation_id as string;
  const events = await lastIs(p.baseUrl, id, ['step.waiting']);
  const outcome = call(p.baseUrl, `/api/events/${id}?start=${events.length}&wait=20`, { token: alice }).then(
    (res) => `answered ${res.status} ${res.text}`,
    () => 'cut',
  );
  await sleep(1_000);
  return { outcome };
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
    for (const port of ports) expect(await stillListening(port, tree), `port ${port} closed`).toBe(false);
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(complaints(p.output())).toEqual([]);
  }, 300_000);

  it('answers crews with the stand-in model it announced; once idle, a Ctrl-C stops everything without a warning', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-idle`;
    const p = await npmStart(dir, await freePort());
    // No model configured: npm start's own default is the local stand-in, and it says so.
    expect(p.output()).toMatch(
      /^ {2}model: the local stand-in model \(http:\/\/127\.0\.0\.1:\d+\/v1\): replies start with \[local stand-in model\]/m,
    );
    expect(p.output()).toContain('LLM_PROVIDER=bedrock with LLM_MODEL');
    const base = p.baseUrl;
    const started = await call(base, '/api/crews/run', {
      method: 'POST',
      body: { crew_type: 'ask', task_input: { question: 'How many orders shipped?' } },
    });
    expect(started.status, started.text).toBe(202);
    const id = started.body.correlation_id as string;
    const ended = await eventually(
      async () => {
        const run = await call(base, `/api/crew-runs/${id}`);
        return ['succeeded', 'failed'].includes(run.body.status) ? run.body : undefined;
      },
      60_000,
      'the ask crew ended',
      250,
    );
    expect(ended.status).toBe('succeeded');
    const events = await call<{ type: string; step_id?: string; data?: { output?: string; provider?: string } }[]>(
      base,
      `/api/events/${id}?start=0`,
    );
    const answer = events.body.find((e) => e.type === 'step.completed' && e.step_id === 'answer');
    expect(answer?.data?.provider).toBe('local');
    expect(answer?.data?.output).toMatch(
      /^\[local stand-in model\] .*first line is "Question: How many orders shipped\?"/,
    );
    const tree = processTree(p.pid);
    const ports = portsOf(p, dir);
    // A terminal's Ctrl-C: SIGINT to its foreground process group, npm and all it started.
    p.killGroup('SIGINT');
    expect(await survivors(tree, 30_000)).toEqual([]);
    for (const port of ports) expect(await stillListening(port, tree), `port ${port} closed`).toBe(false);
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
    for (const port of ports) expect(await stillListening(port, tree), `port ${port} closed`).toBe(false);
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

  it('Ctrl-C with an E13 long poll waiting: the poll is cut once the drain is over, everything stops without a warning', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-poll`;
    const p = await npmStart(dir, await freePort());
    const poll = await waitingPoll(p);
    const tree = processTree(p.pid);
    const ports = portsOf(p, dir);
    p.killGroup('SIGINT');
    expect(await survivors(tree, 30_000)).toEqual([]);
    // Not answered at the end of its 20 s: the stop waited for it no longer than the drain,
    // then closed its connection before the emulators stopped.
    expect(await poll.outcome).toBe('cut');
    for (const port of ports) expect(await stillListening(port, tree), `port ${port} closed`).toBe(false);
    expect(complaints(p.output())).toEqual([]);
  }, 300_000);

  it('a second Ctrl-C more than a second after the first exits at once, DynamoDB Local with it', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-twice`;
    const p = await npmStart(dir, await freePort());
    // The waiting poll holds the stop in its drain (5 s).
    await waitingPoll(p);
    const tree = processTree(p.pid);
    const ports = portsOf(p, dir);
    p.killGroup('SIGINT');
    await sleep(1_500);
    p.killGroup('SIGINT');
    expect(await survivors(tree, 30_000)).toEqual([]);
    expect(p.output()).toContain('dpm: SIGINT again: exiting without waiting for the stop');
    for (const port of ports) expect(await stillListening(port, tree), `port ${port} closed`).toBe(false);
  }, 300_000);

  it('kill -9 of npm: the service notices and stops the same way, leaving no process and no open port', async () => {
    printLogOnFailure();
    const dir = `${dataDir}-npm-killed`;
    const p = await npmStart(dir, await freePort());
    const tree = processTree(p.pid);
    const ports = portsOf(p, dir);
    process.kill(p.pid, 'SIGKILL');
    expect(await survivors(tree, 30_000)).toEqual([]);
    expect(p.output()).toMatch(/^npm is gone: stopping\.\.\.$/m);
    for (const port of ports) expect(await stillListening(port, tree), `port ${port} closed`).toBe(false);
    expect(complaints(p.output())).toEqual([]);
  }, 300_000);
});
