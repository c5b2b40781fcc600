import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type ReceivedHook, WebhookReceiver } from '../support/webhook-receiver.js';
import { eventsOf, settle } from './event-feed.js';
import { REBINDING_SUFFIX } from './global-setup.js';
import { api, db, recordDelivery, table, token } from './helpers.js';

/**
 * Per-run webhooks (API.md §14, E2 `webhook_url`): every E13 event of a run started with a
 * URL is POSTed there, in index order, as a signed `dpm.crew.run.event` envelope whose
 * `data` is the E13 event; the signing secret is in E2's answer only. Same URL rules as
 * endpoints; the run's endpoint is no endpoint of the webhooks API.
 */

let admin: string;
let user: string;
let other: string;
const receiver = new WebhookReceiver(recordDelivery);
const templates: string[] = [];

/** render steps a, b, c: run.queued, run.started, 3 × (step.started, step.completed), run.completed. */
const EVENTS_OF_A_RUN = 9;

beforeAll(async () => {
  await receiver.start();
  admin = await token('run-hook-admin', { roles: ['admin'] });
  user = await token('run-hook-user');
  other = await token('run-hook-other');
});

afterAll(async () => {
  for (const id of templates) await api(`/api/crew-templates/${id}`, { method: 'DELETE', token: admin });
  await receiver.stop();
});

async function template(name: string): Promise<string> {
  const res = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: {
      name,
      variables: [{ name: 'who', required: true }],
      steps: [
        { id: 'a', kind: 'render', template: 'Hello {{who}}' },
        { id: 'b', kind: 'render', template: '{{steps.a.output}}!' },
        { id: 'c', kind: 'render', template: '{{steps.b.output}}?' },
      ],
    },
  });
  expect(res.status, res.text).toBe(201);
  templates.push(res.body.id);
  return res.body.id as string;
}

const run = (templateId: string, body: Record<string, unknown>, as = user) =>
  api(`/api/crew-templates/${templateId}/run`, { method: 'POST', token: as, body });

/** The run's E13 events once it has finished (run.completed or run.failed). */
const finishedEvents = (correlationId: string) =>
  eventually(
    async () => {
      const res = await api(`/api/events/${correlationId}?start=0`, { token: user });
      expect(res.status, res.text).toBe(200);
      const events = res.body as { type: string; timestamp: string }[];
      return events.some((e) => e.type === 'run.completed' || e.type === 'run.failed') ? events : undefined;
    },
    20_000,
    `run ${correlationId} finished`,
  );

/** What reached `path`, each event once (receivers deduplicate on webhook-id), in arrival order. */
const distinctAt = (path: string): ReceivedHook[] => {
  const seen = new Set<string>();
  return receiver.at(path).filter((h) => {
    const id = String(h.headers['webhook-id']);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
};

const arrived = (path: string, count: number, ms = 20_000) =>
  eventually(
    () => {
      const hooks = distinctAt(path);
      return hooks.length >= count ? hooks : undefined;
    },
    ms,
    `${count} deliveries at ${path}`,
  );

const verify = (hook: ReceivedHook, secret: string) =>
  new Webhook(secret).verify(hook.body, {
    'webhook-id': String(hook.headers['webhook-id']),
    'webhook-timestamp': String(hook.headers['webhook-timestamp']),
    'webhook-signature': String(hook.headers['webhook-signature']),
  });

describe('a run started with a webhook_url (E2)', () => {
  it('answers the signing secret and delivers every E13 event there, in index order, signed', async () => {
    const id = await template('run-hook-ok');
    const started = await run(id, { values: { who: 'ada' }, webhook_url: receiver.url('/run-ok') });
    expect(started.status, started.text).toBe(202);
    const correlationId = started.body.correlation_id as string;
    const secret = started.body.webhook_secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(Object.keys(started.body)).toEqual(['correlation_id', 'status', 'message', 'webhook_secret']);

    const events = await finishedEvents(correlationId);
    expect(events).toHaveLength(EVENTS_OF_A_RUN);
    const hooks = await arrived('/run-ok', EVENTS_OF_A_RUN);
    expect(hooks).toHaveLength(EVENTS_OF_A_RUN);
    hooks.forEach((hook, index) => {
      expect(verify(hook, secret)).toEqual(hook.event);
      expect(hook.headers['content-type']).toBe('application/json');
      expect(hook.headers['webhook-id']).toBe(hook.event.id);
      expect(hook.event).toEqual({
        specversion: '1.0',
        id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        source: 'dpm/test',
        type: 'dpm.crew.run.event',
        subject: `crew-runs/${correlationId}`,
        time: events[index]!.timestamp,
        datacontenttype: 'application/json',
        actor: null,
        sequence: index + 1,
        // the E13 event, exactly as GET /api/events answers it
        data: events[index],
      });
    });
    // Signed by this run's secret alone.
    expect(() => verify(hooks[0]!, `whsec_${Buffer.alloc(32, 9).toString('base64')}`)).toThrow();
    expect(new Set(hooks.map((h) => h.event.id)).size).toBe(EVENTS_OF_A_RUN);
  });

  it('keeps the secret out of every other answer, event and delivery', async () => {
    const id = await template('run-hook-secret');
    const started = await run(id, { values: { who: 'bo' }, webhook_url: receiver.url('/run-secret') });
    expect(started.status, started.text).toBe(202);
    const { correlation_id: correlationId, webhook_secret: secret } = started.body as Record<string, string>;
    await finishedEvents(correlationId!);
    await arrived('/run-secret', EVENTS_OF_A_RUN);
    const bare = secret!.slice('whsec_'.length);
    const texts = [
      (await api(`/api/crew-runs/${correlationId}`, { token: user })).text,
      (await api(`/api/events/${correlationId}?start=0`, { token: user })).text,
      JSON.stringify(await eventsOf(`crew-runs/${correlationId}`, 3, admin)),
      (await api('/api/webhooks?limit=1000', { token: admin })).text,
      ...receiver.at('/run-secret').map((h) => h.body),
    ];
    for (const text of texts) {
      expect(text).not.toContain(bare);
      expect(text).not.toContain('webhook_secret');
    }
  });

  it('is not an endpoint of the webhooks API: not listed, 404 to read, change, delete or ping', async () => {
    const id = await template('run-hook-hidden');
    const started = await run(id, { values: { who: 'cy' }, webhook_url: receiver.url('/run-hidden') });
    const endpointId = `run-${started.body.correlation_id}`;
    const list = await api('/api/webhooks?limit=1000', { token: admin });
    expect(list.status).toBe(200);
    expect((list.body as { id: string }[]).some((e) => e.id.startsWith('run-'))).toBe(false);
    expect((await api(`/api/webhooks/${endpointId}`, { token: admin })).status).toBe(404);
    const patched = await api(`/api/webhooks/${endpointId}`, {
      method: 'PATCH',
      token: admin,
      body: { url: receiver.url('/stolen') },
    });
    expect(patched.status).toBe(404);
    expect((await api(`/api/webhooks/${endpointId}/rotate-secret`, { method: 'POST', token: admin })).status).toBe(404);
    expect((await api(`/api/webhooks/${endpointId}/test`, { method: 'POST', token: admin })).status).toBe(404);
    expect((await api(`/api/webhooks/${endpointId}/deliveries`, { token: admin })).status).toBe(404);
    expect((await api(`/api/webhooks/${endpointId}`, { method: 'DELETE', token: admin })).status).toBe(404);
    // ... and the run's deliveries go on, where the run said.
    await arrived('/run-hidden', EVENTS_OF_A_RUN);
    expect(receiver.at('/stolen')).toEqual([]);
  });

  it('delivers nothing for a run without webhook_url, and answers no secret', async () => {
    const id = await template('run-hook-none');
    const started = await run(id, { values: { who: 'di' } });
    expect(started.status).toBe(202);
    expect(started.body).not.toHaveProperty('webhook_secret');
    await finishedEvents(started.body.correlation_id);
    await settle();
    expect(receiver.received.filter((h) => h.event.subject === `crew-runs/${started.body.correlation_id}`)).toEqual([]);
  });

  it('retries a failing receiver and still delivers in index order', async () => {
    const id = await template('run-hook-flaky');
    let refused = 0;
    const previous = receiver.answer;
    receiver.answer = (path) => (path === '/run-flaky' && refused++ < 2 ? 503 : previous(path));
    try {
      const started = await run(id, { values: { who: 'ed' }, webhook_url: receiver.url('/run-flaky') });
      expect(started.status).toBe(202);
      const hooks = await arrived('/run-flaky', EVENTS_OF_A_RUN, 30_000);
      expect(hooks.map((h) => h.event.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // the first was refused twice and sent again: three POSTs of the same event id
      expect(receiver.at('/run-flaky').filter((h) => h.event.sequence === 1)).toHaveLength(3);
    } finally {
      receiver.answer = previous;
    }
  });

  it('stops at a 410 Gone: nothing more is sent, and no domain event is made of it', async () => {
    const id = await template('run-hook-gone');
    const previous = receiver.answer;
    receiver.answer = (path) => (path === '/run-gone' ? 410 : previous(path));
    try {
      const started = await run(id, { values: { who: 'fa' }, webhook_url: receiver.url('/run-gone') });
      await finishedEvents(started.body.correlation_id);
      await arrived('/run-gone', 1);
      await settle();
      await settle();
      expect(receiver.at('/run-gone')).toHaveLength(1);
      const feed = await api(
        `/api/domain-events?subject=${encodeURIComponent(`webhooks/run-${started.body.correlation_id}`)}`,
        { token: admin },
      );
      expect(feed.status).toBe(200);
      expect(feed.body).toEqual([]);
    } finally {
      receiver.answer = previous;
    }
  });

  it('is any user’s: each run’s events go to its own URL, with its own secret', async () => {
    const id = await template('run-hook-two');
    const [a, b] = await Promise.all([
      run(id, { values: { who: 'a' }, webhook_url: receiver.url('/run-two-a') }, user),
      run(id, { values: { who: 'b' }, webhook_url: receiver.url('/run-two-b') }, other),
    ]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.webhook_secret).not.toBe(b.body.webhook_secret);
    const [hooksA, hooksB] = await Promise.all([
      arrived('/run-two-a', EVENTS_OF_A_RUN),
      arrived('/run-two-b', EVENTS_OF_A_RUN),
    ]);
    for (const h of hooksA) expect(h.event.subject).toBe(`crew-runs/${a.body.correlation_id}`);
    for (const h of hooksB) expect(h.event.subject).toBe(`crew-runs/${b.body.correlation_id}`);
    expect(() => verify(hooksA[0]!, b.body.webhook_secret)).toThrow();
    expect(verify(hooksB[0]!, b.body.webhook_secret)).toEqual(hooksB[0]!.event);
  });
});

describe('webhook_url validation (the URL rules of API.md §14)', () => {
  let id: string;
  beforeAll(async () => {
    id = await template('run-hook-invalid');
  });

  /** No run was made: no crew.run.queued event of this template appears. */
  async function noRunSince(since: string): Promise<void> {
    await settle();
    const feed = await api(`/api/domain-events?type=crew.run.queued&since=${encodeURIComponent(since)}&limit=1000`, {
      token: admin,
    });
    expect(feed.status).toBe(200);
    expect((feed.body as { data: { template_id: string } }[]).filter((e) => e.data.template_id === id)).toEqual([]);
  }

  it.each([
    ['not a URL', 'not a url', 'url_parsing'],
    ['another scheme', 'ftp://127.0.0.1/x', 'url_scheme'],
    ['http to a host not in WEBHOOK_ALLOWED_HOSTS', 'http://hooks.example.com/x', 'value_error'],
    ['the metadata address', 'https://169.254.169.254/latest', 'value_error'],
    ['a link-local address', 'https://[fe80::1]/x', 'value_error'],
    ['the unspecified address', 'https://0.0.0.0/x', 'value_error'],
  ])('refuses %s: 422 at body.webhook_url, and starts nothing', async (_what, url, type) => {
    const since = new Date().toISOString();
    const res = await run(id, { values: { who: 'x' }, webhook_url: url });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'webhook_url'], type })]);
    await noRunSince(since);
  });

  it('refuses a URL that is not a string', async () => {
    const res = await run(id, { values: { who: 'x' }, webhook_url: 42 });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'webhook_url'], type: 'string_type' })]);
  });

  it('says everything wrong at once: a missing variable and a refused URL', async () => {
    const since = new Date().toISOString();
    const res = await run(id, { values: {}, webhook_url: 'http://hooks.example.com/x' });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'values', 'who'],
        ['body', 'webhook_url'],
      ]),
    );
    await noRunSince(since);
  });

  it('never echoes the credentials of a refused URL', async () => {
    const res = await run(id, { values: { who: 'x' }, webhook_url: 'http://someone:hunter2@hooks.example.com/x' });
    expect(res.status).toBe(422);
    expect(res.text).not.toContain('hunter2');
  });

  it('accepts a name that only resolves to a refused address, and refuses it when connecting', async () => {
    // Nothing is resolved at creation; the connection is checked (no DNS rebinding).
    const res = await run(id, { values: { who: 'x' }, webhook_url: `https://hooks${REBINDING_SUFFIX}/run` });
    expect(res.status, res.text).toBe(202);
    await finishedEvents(res.body.correlation_id);
    // The run's deliveries are no endpoint's of the API: read where they are kept.
    const refused = await eventually(async () => {
      const out = await db().send(
        new QueryCommand({
          TableName: table('webhookDeliveries'),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': `D#run-${res.body.correlation_id}` },
          ConsistentRead: true,
        }),
      );
      return (out.Items ?? []).find((d) => Number(d.attempts) >= 1);
    }, 20_000);
    expect(refused.last_response_status).toBeNull();
    expect(refused.last_error).toMatch(/169\.254\.169\.254.*link-local, metadata or unspecified/);
  });
});
