import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadLetterQueueName, QUEUES } from '../../../infra/tables.js';
import { eventually } from '../../support/eventually.js';
import { storeUnqueuedRun } from '../../support/pending-run.js';
import { eventsBefore } from '../event-feed.js';
import { crewTemplate, kindsOf as typesOf, runEvents, startRun } from '../crew-support.js';
import { adminToken, api, db, principalOf, slug, table, token } from '../helpers.js';
import { provided } from '../provided.js';
import { runAtRest } from '../run-at-rest.js';

/**
 * Retrying a crew run (docs/crews.md): a failed or cancelled run continues under the same
 * correlation id; completed steps keep their outputs, the failed (or next) step runs again,
 * and the event log goes on without gaps after `run.retried`.
 */

let admin: string;
let userName: string;
let user: string;
let stranger: string;

type Event = { index: number; type: string; step_id?: string; data?: Record<string, any> };
type Run = {
  status: string;
  finished_at: string | null;
  error: string | null;
  event_count: number;
  progress: Record<string, unknown>;
};

/** Answers 500 to its first request of each path, then 200 with JSON: what it was asked, in order. */
const flaky: { server?: Server; asked: string[] } = { asked: [] };

const template = (steps: unknown[]) => crewTemplate(admin, steps, 'retry');
const start = (templateId: string, as = user) => startRun(templateId, as);
const events = (id: string): Promise<Event[]> => runEvents(id, admin);
const runOf = async (id: string) => (await api<Run>(`/api/crew-runs/${id}`, { token: admin })).body;

const finished = (id: string, count = 1) =>
  eventually(
    async () => {
      const all = await events(id);
      const ends = all.filter((e) => ['run.completed', 'run.failed', 'run.cancelled'].includes(e.type));
      return ends.length >= count ? all : undefined;
    },
    30_000,
    `run ${id} finished ${count} time(s)`,
  );

const retry = (id: string, as = user) => api<Run>(`/api/crew-runs/${id}/retry`, { method: 'POST', token: as });

beforeAll(async () => {
  admin = await adminToken('retry-admin');
  userName = slug('retry-user');
  user = await token(userName);
  stranger = await token(slug('retry-stranger'));
  flaky.server = createServer((req, res) => {
    const first = !flaky.asked.includes(req.url!);
    flaky.asked.push(req.url!);
    res.writeHead(first ? 500 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(first ? { error: 'try again' } : { shipped: true, path: req.url }));
  });
  await new Promise<void>((resolve) => flaky.server!.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  flaky.server?.closeAllConnections();
  await new Promise((resolve) => flaky.server?.close(resolve));
});

describe('POST /api/crew-runs/{id}/retry', () => {
  it('continues a run that failed at an http step: outputs kept, indexes without gaps', async () => {
    const port = (flaky.server!.address() as AddressInfo).port;
    const path = `/orders/${slug('o')}`;
    const id = await start(
      await template([
        { id: 'brief', kind: 'render', template: 'brief at noon' },
        { id: 'call', kind: 'http', method: 'GET', url: `http://127.0.0.1:${port}${path}` },
        { id: 'reply', kind: 'render', template: '{{steps.brief.output}} / {{steps.call.output}}' },
      ]),
    );
    const failed = await finished(id);
    expect(typesOf(failed)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'brief'],
      ['step.completed', 'brief'],
      ['step.started', 'call'],
      ['step.failed', 'call'],
      ['run.failed', null],
    ]);
    expect((await runOf(id)).status).toBe('failed');

    const res = await retry(id);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({
      status: 'pending',
      finished_at: null,
      error: null,
      event_count: 8,
      progress: { completed_steps: 1, total_steps: 3, current_step: null },
    });
    const all = await finished(id, 2);
    expect(typesOf(all.slice(failed.length))).toEqual([
      ['run.retried', null],
      ['step.started', 'call'],
      ['step.completed', 'call'],
      ['step.started', 'reply'],
      ['step.completed', 'reply'],
      ['run.completed', null],
    ]);
    expect(all.map((e) => e.index)).toEqual(all.map((_, i) => i));
    expect(all[failed.length]!.data).toEqual({ by: expect.stringContaining(userName), previous_status: 'failed' });
    // the render step before the failure ran once; the http step twice (failed, then answered)
    expect(all.filter((e) => e.type === 'step.started' && e.step_id === 'brief')).toHaveLength(1);
    expect(flaky.asked.filter((p) => p === path)).toHaveLength(2);
    const outputs = all.at(-1)!.data!.outputs;
    expect(outputs).toEqual({
      brief: 'brief at noon',
      call: { status: 200, body: { shipped: true, path } },
      reply: `brief at noon / ${JSON.stringify({ status: 200, body: { shipped: true, path } })}`,
    });
    const run = await runOf(id);
    expect(run).toMatchObject({
      status: 'succeeded',
      error: null,
      event_count: all.length,
      progress: { completed_steps: 3, total_steps: 3, current_step: null },
    });
  });

  it('continues a cancelled run from the step it was cancelled in', async () => {
    const id = await start(
      await template([
        { id: 'a', kind: 'render', template: 'A' },
        { id: 'pause', kind: 'wait', seconds: 1.5 },
        { id: 'b', kind: 'render', template: '{{steps.a.output}}B' },
      ]),
    );
    await eventually(
      async () =>
        (await events(id)).some((e) => e.type === 'step.started' && e.step_id === 'pause') ? true : undefined,
      20_000,
      'the wait under way',
    );
    expect((await api(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: user, body: {} })).status).toBe(200);
    const cancelled = await finished(id);
    expect(cancelled.at(-1)!.type).toBe('run.cancelled');
    expect((await retry(id)).status).toBe(202);
    const all = await finished(id, 2);
    expect(typesOf(all.slice(cancelled.length))).toEqual([
      ['run.retried', null],
      ['step.started', 'pause'],
      ['step.completed', 'pause'],
      ['step.started', 'b'],
      ['step.completed', 'b'],
      ['run.completed', null],
    ]);
    expect(all.map((e) => e.index)).toEqual(all.map((_, i) => i));
    expect(all.at(-1)!.data!.outputs).toEqual({ a: 'A', pause: null, b: 'AB' });
  });

  it('answers 409 for a run that is not failed or cancelled, and one of concurrent retries wins', async () => {
    const done = await start(await template([{ id: 'a', kind: 'render', template: 'x' }]));
    await finished(done);
    expect((await retry(done)).status).toBe(409);

    const waiting = await start(await template([{ id: 'long', kind: 'wait', seconds: 60 }]));
    expect((await retry(waiting)).status).toBe(409);
    expect((await api(`/api/crew-runs/${waiting}/cancel`, { method: 'POST', token: user, body: {} })).status).toBe(200);
    await finished(waiting);
    // retried at once, the run is in its minute's wait again: cancel it to leave nothing behind
    const statuses = (await Promise.all(Array.from({ length: 5 }, () => retry(waiting)))).map((r) => r.status).sort();
    expect(statuses).toEqual([202, 409, 409, 409, 409]);
    expect((await events(waiting)).filter((e) => e.type === 'run.retried')).toHaveLength(1);
    expect((await api(`/api/crew-runs/${waiting}/cancel`, { method: 'POST', token: user, body: {} })).status).toBe(200);
  });

  it('is the starter’s or an admin’s; 404 for an unknown run; 422 for a malformed id', async () => {
    const id = await start(
      await template([{ id: 'boom', kind: 'http', method: 'GET', url: 'http://not-allowed.invalid/' }]),
    );
    await finished(id);
    expect((await retry(id, stranger)).status).toBe(403);
    expect((await api(`/api/crew-runs/${id}/retry`, { method: 'POST' })).status).toBe(401);
    expect((await retry('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const bad = await retry('short');
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ detail: [{ type: 'string_too_short', loc: ['path', 'correlation_id'] }] });
    expect((await runOf(id)).status).toBe('failed');
    const byAdmin = await retry(id, admin);
    expect(byAdmin.status).toBe(202);
    // the step fails again (the host is still not allowed): a second failed attempt
    const all = await finished(id, 2);
    expect(all.filter((e) => e.type === 'run.failed')).toHaveLength(2);
    expect(all.map((e) => e.index)).toEqual(all.map((_, i) => i));
  });

  it('retries a run whose message landed in the dead-letter queue', async () => {
    const id = await storeUnqueuedRun(
      db(),
      { crewRuns: table('crewRuns'), runLog: table('runLog') },
      { name: userName, principal: principalOf(userName) },
      [{ id: 'only', kind: 'render', template: 'done' }],
    );
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: provided('sqsEndpoint'),
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const { QueueUrl } = await sqs.send(
      new GetQueueUrlCommand({ QueueName: deadLetterQueueName(provided('stage'), QUEUES.crewRuns) }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify({ correlation_id: id }) }));
    sqs.destroy();
    const abandoned = await finished(id);
    expect(abandoned.at(-1)).toMatchObject({ type: 'run.failed', data: { error: expect.stringMatching(/abandoned/) } });
    expect((await retry(id)).status).toBe(202);
    const all = await finished(id, 2);
    // abandoned before it started: the retried run starts now
    expect(typesOf(all.slice(abandoned.length))).toEqual([
      ['run.retried', null],
      ['run.started', null],
      ['step.started', 'only'],
      ['step.completed', 'only'],
      ['run.completed', null],
    ]);
  });

  it('is the domain event crew.run.retried, with the retrier as actor; then the run starts again', async () => {
    const id = await start(
      await template([{ id: 'boom', kind: 'http', method: 'GET', url: 'http://not-allowed.invalid/' }]),
    );
    await finished(id);
    expect((await retry(id)).status).toBe(202);
    await finished(id, 2);
    // Once the worker is done with the run, nothing changes it by itself; the marker is one
    // more change of it (a retry of the admin's): every event before it comes before its own.
    await runAtRest(id);
    expect((await retry(id, admin)).status).toBe(202);
    const { before: feed, marker } = await eventsBefore(
      `crew-runs/${id}`,
      (e) => e.type === 'dpm.crew.run.retried' && e.actor === 'retry-admin',
      admin,
    );
    expect(feed.map((e) => e.type)).toEqual([
      'dpm.crew.run.queued',
      'dpm.crew.run.started',
      'dpm.crew.run.failed',
      'dpm.crew.run.retried',
      'dpm.crew.run.started',
      'dpm.crew.run.failed',
    ]);
    expect(feed[3]!.actor).toContain(userName);
    expect(feed[3]!.data).toMatchObject({ status: 'pending', error: null, finished_at: null });
    expect(marker.sequence).toBe(7);
    // the marker's attempt fails as the others did; nothing of it is left running
    await finished(id, 3);
    await runAtRest(id);
  });
});
