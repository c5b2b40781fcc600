import { readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { crewTemplate, kindsOf, runEvents, startRun, type CrewEventSeen } from '../crew-support.js';
import { adminToken, api, approverToken, slug, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * One executor at a time (issue 25, finding 1): a crew-run message that arrives while a
 * step of its run is in flight — the approval's expiry timer, or any second delivery —
 * never executes that step again. An `http` step calls a loopback receiver that holds the
 * request open until the second message has been handled; the receiver counts the POSTs.
 */

let admin: string;
let starter: string;
let approver: string;

/** POSTs received per path, and the answers held back. */
const posts = new Map<string, number>();
const held = new Set<ServerResponse>();
let server: Server;
let port: number;

const answerAll = () => {
  for (const res of held) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  held.clear();
};

const sqs = () =>
  new SQSClient({
    region: 'us-east-1',
    endpoint: provided('sqsEndpoint'),
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

/** Puts a message on the suite's crew-run queue, as the service (or a timer it armed) would. */
async function sendToWorker(body: unknown): Promise<void> {
  const client = sqs();
  try {
    await client.send(
      new SendMessageCommand({ QueueUrl: provided('crewRunQueueUrl'), MessageBody: JSON.stringify(body) }),
    );
  } finally {
    client.destroy();
  }
}

/**
 * Waits until the worker has handled the second message: the service logged `message` for
 * run `id`, or (the defect) the step's POST arrived a second time.
 */
const handled = (id: string, tag: string, message: string) =>
  eventually(
    () =>
      (posts.get(`/hold/${tag}`) ?? 0) > 1 ||
      readFileSync(provided('logFile'), 'utf8')
        .split('\n')
        .some((line) => line.includes(id) && line.includes(message)) ||
      undefined,
    8_000,
    `the second message of run ${id} handled`,
  );

const until = (id: string, done: (events: CrewEventSeen[]) => boolean) =>
  eventually(
    async () => {
      const events = await runEvents(id, admin);
      return done(events) ? events : undefined;
    },
    20_000,
    `events of run ${id}`,
  );

/** A run at an approval step, approved; answers when its `http` step's POST is being held. */
async function approvedAndCalling(tag: string): Promise<{ id: string; expiresAt: string }> {
  const template = await crewTemplate(
    admin,
    [
      { id: 'gate', kind: 'approval', prompt: 'call out?', timeout_seconds: 60 },
      { id: 'call', kind: 'http', method: 'POST', url: `http://127.0.0.1:${port}/hold/${tag}`, body: 'once' },
    ],
    'executor',
  );
  const id = await startRun(template, starter);
  const waiting = await until(id, (events) => events.at(-1)?.type === 'step.waiting');
  const expiresAt = String(waiting.at(-1)!.data!.expires_at);
  const decided = await api(`/api/crew-runs/${id}/steps/gate/decision`, {
    method: 'POST',
    token: approver,
    body: { approve: true },
  });
  expect(decided.status, decided.text).toBe(200);
  await eventually(() => (posts.get(`/hold/${tag}`) ? true : undefined), 10_000, `the POST of run ${id}`);
  return { id, expiresAt };
}

/** Lets the held POST answer; checks the run completed with the step once and the POST once. */
async function completesOnce(id: string, tag: string): Promise<void> {
  answerAll();
  const events = await until(id, (all) => ['run.completed', 'run.failed'].includes(all.at(-1)?.type ?? ''));
  expect(kindsOf(events)).toEqual([
    ['run.queued', null],
    ['run.started', null],
    ['step.started', 'gate'],
    ['step.waiting', 'gate'],
    ['step.completed', 'gate'],
    ['step.started', 'call'],
    ['step.completed', 'call'],
    ['run.completed', null],
  ]);
  expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
  // Anything still on its way from a second execution would have arrived by now.
  await new Promise((r) => setTimeout(r, 500));
  expect(posts.get(`/hold/${tag}`)).toBe(1);
}

beforeAll(async () => {
  admin = await adminToken('executor-admin');
  starter = await token(slug('executor-starter'));
  approver = await approverToken(slug('executor-approver'));
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    req.resume();
    req.on('end', () => {
      posts.set(path, (posts.get(path) ?? 0) + 1);
      held.add(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  answerAll();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('a crew run has one executor at a time', () => {
  it("the approval's expiry timer arriving while the next http step is in flight does nothing: one POST", async () => {
    const tag = slug('timer');
    const { id, expiresAt } = await approvedAndCalling(tag);
    // The delayed message the worker armed for the expiry, arriving now (not in a minute).
    await sendToWorker({ correlation_id: id, timer: { step_id: 'gate', expires_at: expiresAt } });
    await handled(id, tag, 'crew approval timer has nothing to do');
    await completesOnce(id, tag);
  });

  it('a second delivery of the run while its http step is in flight does not execute the step: one POST', async () => {
    const tag = slug('duplicate');
    const { id } = await approvedAndCalling(tag);
    await sendToWorker({ correlation_id: id });
    await handled(id, tag, 'crew run held by another delivery');
    await completesOnce(id, tag);
  });
});
