import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { eventsOf } from '../event-feed.js';
import { crewTemplate, runEvents, startRun } from '../crew-support.js';
import { adminToken, api, slug, token } from '../helpers.js';
import { runAtRest } from '../run-at-rest.js';

/**
 * Cancelling a crew run (docs/crews.md): `run.cancelled` is the last event, exactly once,
 * whatever the run was doing; a step under way is abandoned within a second; a finished
 * run is 409.
 */

let admin: string;
let user: string;
let stranger: string;

type Event = { index: number; type: string; step_id?: string; data?: Record<string, unknown> };
type Run = { status: string; finished_at: string | null; event_count: number; progress: Record<string, unknown> };

/** An HTTP server that never answers: what it was asked, and when each request was given up. */
const hanging: { server?: Server; asked: IncomingMessage[]; closedAt: number[] } = { asked: [], closedAt: [] };

const template = (steps: unknown[]) => crewTemplate(admin, steps, 'cancel');
const start = (templateId: string, as = user) => startRun(templateId, as);
const events = (id: string): Promise<Event[]> => runEvents(id, admin);

const eventOf = (id: string, type: string) =>
  eventually(async () => ((await events(id)).some((e) => e.type === type) ? true : undefined), 20_000, `${type}`);

const cancel = (id: string, body: unknown = {}, as = user) =>
  api<Run>(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: as, body });

beforeAll(async () => {
  admin = await adminToken('cancel-admin');
  user = await token(slug('cancel-user'));
  stranger = await token(slug('cancel-stranger'));
  hanging.server = createServer((req) => {
    hanging.asked.push(req);
    req.on('close', () => hanging.closedAt.push(Date.now()));
  });
  await new Promise<void>((resolve) => hanging.server!.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  hanging.server?.closeAllConnections();
  await new Promise((resolve) => hanging.server?.close(resolve));
});

describe('POST /api/crew-runs/{id}/cancel', () => {
  it('ends a run inside a 60 s wait: run.cancelled last, and nothing after it', async () => {
    const id = await start(
      await template([
        { id: 'long', kind: 'wait', seconds: 60 },
        { id: 'after', kind: 'render', template: 'never' },
      ]),
    );
    await eventOf(id, 'step.started');
    const res = await cancel(id, { reason: 'wrong input' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', finished_at: expect.any(String) });
    // Once the worker is done with the run, its log is all there will be.
    await runAtRest(id);
    const tail = await events(id);
    expect(tail.map((e) => [e.type, e.step_id ?? null])).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'long'],
      ['run.cancelled', null],
    ]);
    expect(tail.at(-1)!.data).toEqual({ by: expect.stringContaining('cancel-user'), reason: 'wrong input' });
    const run = await api<Run>(`/api/crew-runs/${id}`, { token: user });
    expect(run.body).toEqual(res.body);
    expect(run.body.event_count).toBe(4);
    // The worker gave the wait up: the local queue poller takes no message while a batch is
    // under way, so a run started now would otherwise wait out the minute.
    const quick = await start(await template([{ id: 'a', kind: 'render', template: 'x' }]));
    const begun = Date.now();
    await eventOf(quick, 'run.completed');
    expect(Date.now() - begun).toBeLessThan(10_000);
  });

  it('abandons an http step under way within a second', async () => {
    const port = (hanging.server!.address() as AddressInfo).port;
    const id = await start(
      await template([{ id: 'call', kind: 'http', method: 'GET', url: `http://127.0.0.1:${port}/slow` }]),
    );
    await eventually(() => (hanging.asked.length > 0 ? true : undefined), 20_000, 'the call');
    const before = hanging.closedAt.length;
    const cancelledAt = Date.now();
    expect((await cancel(id)).status).toBe(200);
    await eventually(() => (hanging.closedAt.length > before ? true : undefined), 5_000, 'the call given up');
    expect(hanging.closedAt.at(-1)! - cancelledAt).toBeLessThan(1_500);
    await runAtRest(id);
    expect((await events(id)).map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
      'run.cancelled',
    ]);
  });

  it('ends a run cancelled as soon as it is queued, before or while the worker takes it', async () => {
    const id = await start(
      await template([
        { id: 'a', kind: 'render', template: 'x' },
        { id: 'b', kind: 'wait', seconds: 2 },
      ]),
    );
    expect((await cancel(id)).status).toBe(200);
    // Whether the worker had taken the run or not: once it is done with it (or dropped its
    // message), the log is all there will be.
    await runAtRest(id);
    const all = await events(id);
    expect(all.at(-1)!.type).toBe('run.cancelled');
    expect(all.filter((e) => e.type === 'run.cancelled')).toHaveLength(1);
    expect(all.map((e) => e.index)).toEqual(all.map((_, i) => i));
  });

  it('answers 409 for a finished run, and one of concurrent cancels wins', async () => {
    const quick = await start(await template([{ id: 'a', kind: 'render', template: 'x' }]));
    await eventOf(quick, 'run.completed');
    const late = await cancel(quick);
    expect(late.status).toBe(409);
    expect((await api<Run>(`/api/crew-runs/${quick}`, { token: user })).body.status).toBe('succeeded');

    const id = await start(await template([{ id: 'long', kind: 'wait', seconds: 60 }]));
    await eventOf(id, 'step.started');
    const statuses = (await Promise.all(Array.from({ length: 5 }, () => cancel(id)))).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409]);
    expect((await events(id)).filter((e) => e.type === 'run.cancelled')).toHaveLength(1);
  });

  it('is the starter’s or an admin’s; 404 for an unknown run', async () => {
    const id = await start(await template([{ id: 'long', kind: 'wait', seconds: 60 }]));
    expect((await cancel(id, {}, stranger)).status).toBe(403);
    expect((await api(`/api/crew-runs/${id}/cancel`, { method: 'POST', body: {} })).status).toBe(401);
    expect((await cancel('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await cancel(id, {}, admin)).status).toBe(200);
  });

  it('validates the reason', async () => {
    const id = await start(await template([{ id: 'long', kind: 'wait', seconds: 60 }]));
    const cases: [unknown, string][] = [
      [{ reason: 'x'.repeat(1001) }, 'string_too_long'],
      [{ reason: 7 }, 'string_type'],
      [{ why: 'x' }, 'extra_forbidden'],
    ];
    for (const [body, type] of cases) {
      const res = await cancel(id, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body as unknown as { detail: { type: string }[] }).toMatchObject({ detail: [{ type }] });
    }
    // nothing of it was written
    expect((await api<Run>(`/api/crew-runs/${id}`, { token: user })).body.status).not.toBe('cancelled');
    expect((await cancel(id)).status).toBe(200);
  });

  it('is the domain event crew.run.cancelled, with the canceller as actor', async () => {
    const id = await start(await template([{ id: 'long', kind: 'wait', seconds: 60 }]));
    await eventOf(id, 'step.started');
    await cancel(id);
    const feed = await eventsOf(`crew-runs/${id}`, 3, admin);
    expect(feed.map((e) => e.type)).toEqual(['dpm.crew.run.queued', 'dpm.crew.run.started', 'dpm.crew.run.cancelled']);
    expect(feed[2]!.actor).toContain('cancel-user');
    expect(feed[2]!.data).toEqual((await api(`/api/crew-runs/${id}`, { token: user })).body);
  });
});
