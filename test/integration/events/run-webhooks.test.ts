import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, notYet } from '../../support/eventually.js';
import { HangingReceiver, type ReceivedHook, WebhookReceiver } from '../../support/webhook-receiver.js';
import { eventsOf, storedEvents, storedItem, storedItems } from '../event-feed.js';
import { LOOPBACK_SUFFIX, REBINDING_SUFFIX } from '../global-setup.js';
import { adminToken, api, db, recordDelivery, table, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * Per-run webhooks (docs/events-and-webhooks.md, E2 `webhook_url`): every E13 event of a run started with a
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
  admin = await adminToken('run-hook-admin');
  user = await token('run-hook-user');
  other = await token('run-hook-other');
});

afterAll(async () => {
  for (const id of templates) await api(`/api/crew-templates/${id}`, { method: 'DELETE', token: admin });
  await receiver.stop();
});

/** Render steps a, b, c, with `between` after a. */
async function template(name: string, between: Record<string, unknown>[] = []): Promise<string> {
  const res = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: {
      name,
      variables: [{ name: 'who', required: true }],
      steps: [
        { id: 'a', kind: 'render', template: 'Hello {{who}}' },
        ...between,
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

/** The first delivery of a run's webhook with an attempt made, read where the deliveries are kept. */
const firstAttempted = (correlationId: string) =>
  eventually(
    async () => {
      const out = await db().send(
        new QueryCommand({
          TableName: table('webhookDeliveries'),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': `D#run-${correlationId}` },
          ConsistentRead: true,
        }),
      );
      return (out.Items ?? []).find((d) => Number(d.attempts) >= 1);
    },
    20_000,
    `an attempt of run ${correlationId}'s webhook`,
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

/** A run endpoint's deliveries, as GET /api/webhooks/{id}/deliveries answers them. */
const deliveriesOf = async (endpointId: string) => {
  const res = await api(`/api/webhooks/${endpointId}/deliveries?limit=1000`, { token: admin });
  expect(res.status, res.text).toBe(200);
  return res.body as { event_id: string; status: string; attempts: number; last_error: string | null }[];
};

/**
 * An endpoint's deliveries once each is settled (succeeded, or failed for good): the store's
 * own record that none will be tried again, so what its receiver got is all it will get of them.
 */
const allSettled = (endpointId: string) =>
  eventually(
    async () => {
      const all = await deliveriesOf(endpointId);
      return all.every((d) => d.status === 'succeeded' || d.status === 'failed') ? all : notYet(all);
    },
    20_000,
    `every delivery of ${endpointId} settled`,
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
        source: `dpm/${provided('stage')}`,
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

  it("is an admin's to see (GET /api/webhooks?kind=run), read, disable and delete; no one else's", async () => {
    const id = await template('run-hook-admin', [{ id: 'w', kind: 'wait', seconds: 5 }]);
    const started = await run(id, { values: { who: 'cy' }, webhook_url: receiver.url('/run-admin') });
    expect(started.status, started.text).toBe(202);
    const correlationId = started.body.correlation_id as string;
    const endpointId = `run-${correlationId}`;
    // Listed apart from the API's endpoints, as the run made it, without its secret.
    const runs = await api('/api/webhooks?kind=run&limit=1000', { token: admin });
    expect(runs.status, runs.text).toBe(200);
    const listed = (runs.body as { id: string }[]).find((e) => e.id === endpointId);
    expect(listed).toEqual({
      id: endpointId,
      url: receiver.url('/run-admin'),
      event_types: ['dpm.crew.run.event'],
      description: `crew run ${correlationId}`,
      enabled: true,
      disabled_reason: null,
      created_by: 'run-hook-user',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((runs.body as { id: string }[]).every((e) => e.id.startsWith('run-'))).toBe(true);
    for (const path of ['/api/webhooks?limit=1000', '/api/webhooks?kind=admin&limit=1000']) {
      const endpoints = await api(path, { token: admin });
      expect(endpoints.status, path).toBe(200);
      expect(
        (endpoints.body as { id: string }[]).some((e) => e.id.startsWith('run-')),
        path,
      ).toBe(false);
    }
    expect((await api(`/api/webhooks/${endpointId}`, { token: admin })).body).toEqual(listed);
    expect(runs.text).not.toContain(started.body.webhook_secret.slice('whsec_'.length));
    // Disabled while the run waits: nothing written after goes out (run.completed among it).
    const disabled = await api(`/api/webhooks/${endpointId}`, {
      method: 'PATCH',
      token: admin,
      body: { enabled: false },
    });
    expect(disabled.status, disabled.text).toBe(200);
    expect(disabled.body).toMatchObject({ id: endpointId, enabled: false });
    // Not the run's starter's, nor anyone's without the role.
    for (const as of [user, other]) {
      expect((await api('/api/webhooks?kind=run', { token: as })).status).toBe(403);
      expect((await api(`/api/webhooks/${endpointId}`, { token: as })).status).toBe(403);
      const patch = await api(`/api/webhooks/${endpointId}`, { method: 'PATCH', token: as, body: { enabled: false } });
      expect(patch.status).toBe(403);
      expect((await api(`/api/webhooks/${endpointId}`, { method: 'DELETE', token: as })).status).toBe(403);
    }
    // kind is one of two.
    const bad = await api('/api/webhooks?kind=runs', { token: admin });
    expect(bad.status, bad.text).toBe(422);
    expect(bad.body.detail).toEqual([
      expect.objectContaining({
        type: 'enum',
        loc: ['query', 'kind'],
        input: 'runs',
        ctx: { expected: "'admin' or 'run'" },
      }),
    ]);
    // Its URL and event types are the run's.
    for (const body of [{ url: receiver.url('/stolen') }, { event_types: ['*'] }]) {
      const res = await api(`/api/webhooks/${endpointId}`, { method: 'PATCH', token: admin, body });
      expect(res.status, res.text).toBe(409);
    }
    const events = await finishedEvents(correlationId);
    expect(events.at(-1)!.type).toBe('run.completed');
    // The store's own record: the endpoint stays disabled, so the fan-out of what the run
    // wrote after records no delivery for it; and every delivery recorded before is settled,
    // so none will be tried again. What the receiver got is all it will get.
    expect(await storedItem('webhooks', { id: endpointId })).toMatchObject({ enabled: false });
    await allSettled(endpointId);
    const sent = distinctAt('/run-admin').map((h) => (h.event.data as { type: string }).type);
    expect(sent.length).toBeLessThan(events.length);
    expect(sent).not.toContain('run.completed');
    expect(receiver.at('/stolen')).toEqual([]);
    // Deleted: gone from the list and from reads.
    expect((await api(`/api/webhooks/${endpointId}`, { method: 'DELETE', token: admin })).status).toBe(204);
    expect((await api(`/api/webhooks/${endpointId}`, { token: admin })).status).toBe(404);
    const after = await api('/api/webhooks?kind=run&limit=1000', { token: admin });
    expect((after.body as { id: string }[]).some((e) => e.id === endpointId)).toBe(false);
  });

  it('stops its undelivered deliveries when the run is cancelled; run.cancelled itself is delivered', async () => {
    const id = await template('run-hook-cancel', [{ id: 'w', kind: 'wait', seconds: 30 }]);
    const hanging = await new HangingReceiver().start();
    // The first delivery (run.queued) hangs; whatever comes later is answered.
    hanging.hangs = (hook) => hook.event.sequence === 1 && hanging.received.length === 1;
    try {
      const started = await run(id, { values: { who: 'cz' }, webhook_url: hanging.url('/run-cancel') });
      expect(started.status, started.text).toBe(202);
      const correlationId = started.body.correlation_id as string;
      const endpointId = `run-${correlationId}`;
      await eventually(() => (hanging.openAt('/run-cancel') === 1 ? true : undefined), 20_000, 'run.queued hanging');
      // The run waits in its `wait` step, events 1..8 queued behind the hanging one.
      const before = await eventually(async () => {
        const res = await api(`/api/events/${correlationId}?start=0`, { token: user });
        const events = res.body as { type: string; step_id?: string }[];
        return events.some((e) => e.type === 'step.started' && e.step_id === 'w') ? events : undefined;
      }, 20_000);
      const cancelled = await api(`/api/crew-runs/${correlationId}/cancel`, { method: 'POST', token: user, body: {} });
      expect(cancelled.status, cancelled.text).toBe(200);
      const events = await eventually(async () => {
        const res = await api(`/api/events/${correlationId}?start=0`, { token: user });
        const all = res.body as { type: string }[];
        return all.at(-1)?.type === 'run.cancelled' ? all : undefined;
      }, 20_000);
      const deliveries = () => deliveriesOf(endpointId);
      // Every event, run.cancelled included, has its delivery: the run's endpoint is marked by then.
      await eventually(async () => ((await deliveries()).length === events.length ? true : undefined), 20_000);
      // The hanging attempt ends (the receiver drops it): it is not tried again, nor is anything before run.cancelled.
      hanging.release();
      await eventually(
        () => (hanging.received.some((h) => h.event.sequence === events.length) ? true : undefined),
        20_000,
        'run.cancelled delivered',
      );
      // The store's own record: every delivery settled, so none will be tried again.
      await allSettled(endpointId);
      expect(hanging.received.map((h) => h.event.sequence)).toEqual([1, events.length]);
      const byStatus = (await deliveries()).map((d) => [d.status, d.last_error]);
      expect(byStatus.filter(([status]) => status === 'succeeded')).toHaveLength(1);
      expect(byStatus.filter(([, error]) => error === 'not sent: the run was cancelled')).toHaveLength(
        events.length - 1,
      );
      expect(before.length).toBeGreaterThan(2);
    } finally {
      await hanging.stop();
    }
  });

  it('delivers nothing for a run without webhook_url, and answers no secret', async () => {
    const id = await template('run-hook-none');
    const started = await run(id, { values: { who: 'di' } });
    expect(started.status).toBe(202);
    expect(started.body).not.toHaveProperty('webhook_secret');
    const correlationId = started.body.correlation_id as string;
    await finishedEvents(correlationId);
    // The store's own record: the run has no endpoint (it would have been written with the
    // run), and a delivery is recorded for an endpoint before it is sent: none is, nor can be.
    expect(await storedItem('webhooks', { id: `run-${correlationId}` })).toBeUndefined();
    const recorded = await db().send(
      new QueryCommand({
        TableName: table('webhookDeliveries'),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `D#run-${correlationId}` },
        ConsistentRead: true,
      }),
    );
    expect(recorded.Items ?? []).toEqual([]);
    expect(receiver.received.filter((h) => h.event.subject === `crew-runs/${correlationId}`)).toEqual([]);
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
      const endpointId = `run-${started.body.correlation_id}`;
      await finishedEvents(started.body.correlation_id);
      await arrived('/run-gone', 1);
      // The store's own record: the 410 disabled the endpoint, so the fan-out of what the run
      // wrote after records no delivery for it; and every delivery recorded is settled, so
      // none will be tried again.
      const endpoint = await eventually(async () => {
        const item = await storedItem('webhooks', { id: endpointId });
        return item?.enabled === false ? item : notYet(item);
      });
      await allSettled(endpointId);
      expect(receiver.at('/run-gone')).toHaveLength(1);
      // Nor is its disabling an event: none was written into the events table with it, and the
      // endpoint whose item it changed is a run's, which is no subject of events.
      expect(endpoint).toMatchObject({ kind: 'run' });
      expect(await storedEvents(`webhooks/${endpointId}`)).toEqual([]);
      const feed = await api(`/api/domain-events?subject=${encodeURIComponent(`webhooks/${endpointId}`)}`, {
        token: admin,
      });
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

describe('webhook_url validation (the webhook URL rules)', () => {
  let id: string;
  beforeAll(async () => {
    id = await template('run-hook-invalid');
  });

  /**
   * No run was made: by the store's own record, read at once, no run of this template was
   * stored (a run is written with its `crew.run.queued` event, in one transaction, before
   * its request answers); nor is such an event in the feed.
   */
  async function noRunSince(since: string): Promise<void> {
    expect(await storedItems('crewRuns', (r) => r.template_id === id && r.created_at >= since)).toEqual([]);
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

  /**
   * Loopback addresses in the spellings a URL may carry (docs/events-and-webhooks.md: refused for a per-run webhook
   * unless listed). None is 127.0.0.1 or localhost as the URL parser reads it: those are the
   * test platform's WEBHOOK_ALLOWED_HOSTS. Only loopback here, so that even a refusal that
   * regressed could connect nowhere else; the other ranges (private, carrier-grade NAT,
   * link-local, multicast, unspecified) are checked host by host in test/unit/address-guard.test.ts,
   * and so are the IPv4-compatible `::127.0.0.1` (no loopback address) and the expanded and
   * hex spellings of IPv6 loopback (`0:0:0:0:0:0:0:1`, `::ffff:7f00:1`, `::FFFF:7F00:1`),
   * which E2 refuses through the same guard.
   */
  const REFUSED = [
    'https://127.0.0.2/x',
    'https://127.2/x',
    'https://2130706434/x',
    'https://017700000002/x',
    'https://0177.0.0.2/x',
    'https://0x7f.0.0.2/x',
    'https://0X7F.0.0.2/x',
    'https://127.0.0.2./x',
    'https://127.255.255.254/x',
    'https://[::1]/x',
    'https://[::ffff:127.0.0.1]/x',
    'https://localhost./x',
    'https://LOCALHOST./x',
    'https://hooks.localhost/x',
    'http://127.0.0.2/x',
  ];

  it.each(REFUSED)('refuses %s at body.webhook_url (listed with the other errors)', async (url) => {
    // A missing variable too: whatever the URL check says, no run is made here.
    const res = await run(id, { values: {}, webhook_url: url });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ['body', 'values', 'who'], type: 'missing' }),
        expect.objectContaining({ loc: ['body', 'webhook_url'], type: 'value_error' }),
      ]),
    );
  });

  describe('on a loopback port of the test', () => {
    let listener: Server;
    const connections = new Set<Socket>();
    let accepted = 0;
    let port: number;
    beforeAll(async () => {
      listener = createServer((socket) => {
        accepted++;
        connections.add(socket);
        socket.on('close', () => connections.delete(socket));
        socket.destroy();
      });
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      port = (listener.address() as AddressInfo).port;
    });
    afterAll(async () => {
      for (const socket of connections) socket.destroy();
      await new Promise((resolve) => listener.close(resolve));
    });

    it('refuses loopback spellings with nothing else wrong: 422, no run, no connection', async () => {
      const since = new Date().toISOString();
      for (const host of ['127.0.0.2', '[::1]', '2130706434', '0x7f.2', '[::ffff:127.0.0.1]', 'localhost.']) {
        const url = `https://${host}:${port}/x`;
        const res = await run(id, { values: { who: 'x' }, webhook_url: url });
        expect(res.status, `${url}: ${res.text}`).toBe(422);
        expect(res.body.detail, url).toEqual([
          expect.objectContaining({
            loc: ['body', 'webhook_url'],
            type: 'value_error',
            msg: expect.stringMatching(/loopback, private, carrier-grade NAT or multicast address/),
          }),
        ]);
      }
      await noRunSince(since);
      expect(accepted).toBe(0);
    });

    it('refuses, when connecting, a name that resolves to loopback (not listed): no connection is made', async () => {
      const res = await run(id, { values: { who: 'x' }, webhook_url: `https://hooks${LOOPBACK_SUFFIX}:${port}/run` });
      expect(res.status, res.text).toBe(202);
      await finishedEvents(res.body.correlation_id);
      const tried = await firstAttempted(res.body.correlation_id);
      expect(tried.last_error).toMatch(
        /resolves to 127\.0\.0\.1, a loopback, private, carrier-grade NAT, link-local, multicast or unspecified address/,
      );
      expect(accepted).toBe(0);
    });
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
    const refused = await firstAttempted(res.body.correlation_id);
    expect(refused.last_response_status).toBeNull();
    expect(refused.last_error).toMatch(/169\.254\.169\.254.*link-local, metadata or unspecified/);
  });
});
