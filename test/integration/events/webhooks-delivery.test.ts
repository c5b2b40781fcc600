import { readFileSync } from 'node:fs';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { type ReceivedHook, WebhookReceiver } from '../../support/webhook-receiver.js';
import { REBINDING_SUFFIX, WEBHOOK_RETRY_SCHEDULE } from '../global-setup.js';
import { adminToken, api, approverToken, db, recordDelivery, slug, table, token, serviceLog } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * Webhook deliveries (docs/events-and-webhooks.md) end to end: the test platform's dispatcher fans recorded
 * domain events out to the endpoints, its worker POSTs them to a receiver here (node:http),
 * signed as Standard Webhooks says (checked with the `standardwebhooks` package), retried on
 * the test platform's short WEBHOOK_RETRY_SCHEDULE, in sequence order per subject.
 */

let admin: string;
let author: string;
let approver: string;
const receiver = new WebhookReceiver(recordDelivery);
const made: string[] = [];
const secrets: string[] = [];

/** Attempts of a delivery that never succeeds: the first and one per retry. */
const ATTEMPTS = WEBHOOK_RETRY_SCHEDULE.length + 1;

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'retrying' | 'failed';
  attempts: number;
  last_response_status: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  duration_ms: number | null;
}

beforeAll(async () => {
  await receiver.start();
  admin = await adminToken('hook-admin');
  author = await token('hook-author');
  approver = await approverToken('hook-approver');
});

afterAll(async () => {
  for (const id of made) await api(`/api/webhooks/${id}`, { method: 'DELETE', token: admin });
  await receiver.stop();
});

/** An endpoint at `path` of the receiver; answers it with its secret. */
async function endpoint(path: string, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  const res = await api('/api/webhooks', { method: 'POST', token: admin, body: { url: receiver.url(path), ...body } });
  expect(res.status, res.text).toBe(201);
  made.push(res.body.id);
  secrets.push(res.body.secret);
  return { id: res.body.id, secret: res.body.secret };
}

const deliveries = async (id: string, query = '') => {
  const res = await api<Delivery[]>(`/api/webhooks/${id}/deliveries${query}`, { token: admin });
  expect(res.status, res.text).toBe(200);
  return res.body;
};

/** The delivery `deliveryId` of endpoint `id` once `done` holds for it. */
const deliveryWhen = (id: string, deliveryId: string, done: (d: Delivery) => boolean, ms = 20_000) =>
  eventually(
    async () => (await deliveries(id, '?limit=1000')).find((d) => d.id === deliveryId && done(d)),
    ms,
    `delivery ${deliveryId}`,
  );

const ping = async (id: string) => {
  const res = await api<Delivery>(`/api/webhooks/${id}/test`, { method: 'POST', token: admin });
  expect(res.status, res.text).toBe(202);
  return res.body;
};

/** The Standard Webhooks headers a receiver verifies, as `Webhook.verify` takes them. */
const headersOf = (hook: ReceivedHook) => ({
  'webhook-id': String(hook.headers['webhook-id']),
  'webhook-timestamp': String(hook.headers['webhook-timestamp']),
  'webhook-signature': String(hook.headers['webhook-signature']),
});

/** Verifies a delivery with `secret`: the envelope it carries, or a thrown WebhookVerificationError. */
const verified = (hook: ReceivedHook, secret: string) => new Webhook(secret).verify(hook.body, headersOf(hook));

/** A decision version moved through `steps` (created, then submit, approve...): its subject. */
async function decision(steps: ('submit' | 'approve' | 'reject' | 'retire')[]): Promise<string> {
  const ws = slug('hooks');
  const key = slug('k');
  const base = `/api/decisions/${ws}/${key}/versions`;
  const created = await api(base, { method: 'POST', token: author, body: { content: { limit: 1 } } });
  expect(created.status, created.text).toBe(201);
  for (const step of steps) {
    const res = await api(`${base}/1/${step}`, { method: 'POST', token: step === 'submit' ? author : approver });
    expect(res.status, `${step}: ${res.text}`).toBe(200);
  }
  return `decisions/${ws}/${key}/versions/1`;
}

/** The events a receiver path got about `subject`, once there are `count`. */
const hooksAbout = (path: string, subject: string, count: number, ms = 20_000) =>
  eventually(
    () => {
      const hooks = receiver.at(path).filter((h) => h.event.subject === subject);
      return hooks.length >= count ? hooks : undefined;
    },
    ms,
    `${count} deliveries about ${subject} at ${path}`,
  );

/** The webhook's own domain events (webhook.endpoint.disabled), once there are `count`. */
const endpointEvents = (id: string, count: number) =>
  eventually(
    async () => {
      const res = await api(`/api/domain-events?subject=${encodeURIComponent(`webhooks/${id}`)}`, { token: admin });
      return res.body.length >= count ? (res.body as any[]) : undefined;
    },
    10_000,
    `events of webhooks/${id}`,
  );

describe('delivery of domain events', () => {
  it('POSTs each event of the types an endpoint takes, signed, in sequence order per subject', async () => {
    const hook = await endpoint('/ordered', { event_types: ['decision.version.*'] });
    const other = await endpoint('/others', { event_types: ['crew.template.created'] });
    const subject = await decision(['submit', 'approve']);
    const hooks = await hooksAbout('/ordered', subject, 3);
    expect(hooks.map((h) => [h.event.type, h.event.sequence])).toEqual([
      ['dpm.decision.version.created', 1],
      ['dpm.decision.version.submitted', 2],
      ['dpm.decision.version.approved', 3],
    ]);
    const feed = await api(`/api/domain-events?subject=${encodeURIComponent(subject)}`, { token: admin });
    for (const [i, h] of hooks.entries()) {
      // The envelope as the feed has it, signed over the exact body sent.
      expect(verified(h, hook.secret)).toEqual(feed.body[i]);
      expect(h.headers['webhook-id']).toBe(h.event.id);
      expect(h.headers['content-type']).toBe('application/json');
      expect(Math.abs(Number(h.headers['webhook-timestamp']) - h.at / 1000)).toBeLessThan(30);
      expect(String(h.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(() => verified(h, other.secret)).toThrow(/No matching signature/);
    }
    // The other endpoint takes none of these types.
    expect(receiver.at('/others').filter((h) => h.event.subject === subject)).toEqual([]);
    const list = await deliveries(hook.id);
    const ours = list.filter((d) => hooks.some((h) => h.event.id === d.event_id));
    expect(ours).toHaveLength(3);
    for (const d of ours) {
      expect(Object.keys(d).sort()).toEqual(
        [
          'attempts',
          'duration_ms',
          'event_id',
          'event_type',
          'id',
          'last_attempt_at',
          'last_error',
          'last_response_status',
          'next_attempt_at',
          'status',
        ].sort(),
      );
      expect(d).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        last_response_status: 204,
        last_error: null,
        next_attempt_at: null,
        duration_ms: expect.any(Number),
        last_attempt_at: expect.stringMatching(/Z$/),
      });
    }
    // Newest first.
    expect(ours.map((d) => d.event_type)).toEqual([
      'dpm.decision.version.approved',
      'dpm.decision.version.submitted',
      'dpm.decision.version.created',
    ]);
  });

  it('sends a test event to the endpoint alone, numbered per endpoint', async () => {
    const hook = await endpoint('/ping', { event_types: ['psk.deleted'] });
    const bystander = await endpoint('/bystander');
    const first = await ping(hook.id);
    expect(first).toMatchObject({ event_type: 'dpm.webhook.test', status: 'pending', attempts: 0 });
    await ping(hook.id);
    const hooks = await hooksAbout('/ping', `webhooks/${hook.id}/test`, 2);
    expect(hooks.map((h) => h.event.sequence)).toEqual([1, 2]);
    const envelope = verified(hooks[0]!, hook.secret) as Record<string, any>;
    expect(envelope).toMatchObject({
      specversion: '1.0',
      id: first.event_id,
      source: `dpm/${provided('stage')}`,
      type: 'dpm.webhook.test',
      subject: `webhooks/${hook.id}/test`,
      datacontenttype: 'application/json',
      actor: 'hook-admin',
      sequence: 1,
      data: { id: hook.id, url: receiver.url('/ping'), enabled: true },
    });
    expect(hooks[0]!.body).not.toContain(hook.secret);
    await deliveryWhen(hook.id, first.id, (d) => d.status === 'succeeded');
    expect(receiver.at('/bystander').filter((h) => h.event.type === 'dpm.webhook.test')).toEqual([]);
    expect(bystander.id).not.toBe(hook.id);
  });

  it('retries a failing delivery on the schedule, then fails it; a redelivery is a new series', async () => {
    receiver.answer = (path) => (path === '/flaky' ? 500 : 204);
    const hook = await endpoint('/flaky', { event_types: ['psk.deleted'] });
    const queued = await ping(hook.id);
    const retrying = await deliveryWhen(hook.id, queued.id, (d) => d.status === 'retrying');
    expect(retrying).toMatchObject({ last_response_status: 500, last_error: 'the endpoint answered 500' });
    expect(Date.parse(retrying.next_attempt_at!)).toBeGreaterThan(Date.parse(retrying.last_attempt_at!));
    const failed = await deliveryWhen(hook.id, queued.id, (d) => d.status === 'failed', 30_000);
    expect(failed).toMatchObject({ attempts: ATTEMPTS, last_response_status: 500, next_attempt_at: null });
    const attempts = receiver.at('/flaky');
    expect(attempts).toHaveLength(ATTEMPTS);
    // The same event every time (receivers deduplicate on webhook-id), freshly signed.
    expect(new Set(attempts.map((a) => a.headers['webhook-id']))).toEqual(new Set([queued.event_id]));
    for (const a of attempts) expect(verified(a, hook.secret)).toMatchObject({ id: queued.event_id });
    // Waits between attempts follow the schedule (each at least its delay, minus rounding).
    for (const [i, delay] of WEBHOOK_RETRY_SCHEDULE.entries())
      expect(attempts[i + 1]!.at - attempts[i]!.at, `wait ${i}`).toBeGreaterThanOrEqual(delay * 1000 - 100);
    expect((await deliveries(hook.id, '?status=failed')).map((d) => d.id)).toEqual([queued.id]);

    receiver.answer = () => 204;
    const again = await api<Delivery>(`/api/webhooks/${hook.id}/deliveries/${queued.id}/redeliver`, {
      method: 'POST',
      token: admin,
    });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ id: queued.id, event_id: queued.event_id, status: 'pending', attempts: 0 });
    const done = await deliveryWhen(hook.id, queued.id, (d) => d.status === 'succeeded');
    expect(done).toMatchObject({ attempts: 1, last_response_status: 204, last_error: null });
    expect(receiver.at('/flaky')).toHaveLength(ATTEMPTS + 1);
    expect(await deliveries(hook.id, '?status=failed')).toEqual([]);
    expect((await deliveries(hook.id, '?status=succeeded')).map((d) => d.id)).toEqual([queued.id]);
  }, 60_000);

  it('disables an endpoint that answers 410 Gone at once: webhook.endpoint.disabled', async () => {
    receiver.answer = (path) => (path === '/gone' ? 410 : 204);
    const hook = await endpoint('/gone', { event_types: ['psk.deleted'] });
    const queued = await ping(hook.id);
    const failed = await deliveryWhen(hook.id, queued.id, (d) => d.status === 'failed');
    expect(failed).toMatchObject({ attempts: 1, last_response_status: 410 });
    const now = await api(`/api/webhooks/${hook.id}`, { token: admin });
    expect(now.body).toMatchObject({ enabled: false, disabled_reason: expect.stringMatching(/410 Gone/) });
    const [event] = await endpointEvents(hook.id, 1);
    expect(event).toMatchObject({
      type: 'dpm.webhook.endpoint.disabled',
      subject: `webhooks/${hook.id}`,
      sequence: 1,
      actor: null,
      data: now.body,
    });
    expect(JSON.stringify(event)).not.toContain(hook.secret);
    expect(receiver.at('/gone')).toHaveLength(1);
    // Disabled: no test, no redelivery (409) until it is enabled again.
    expect((await api(`/api/webhooks/${hook.id}/test`, { method: 'POST', token: admin })).status).toBe(409);
    const redeliver = await api(`/api/webhooks/${hook.id}/deliveries/${queued.id}/redeliver`, {
      method: 'POST',
      token: admin,
    });
    expect(redeliver.status).toBe(409);
    receiver.answer = () => 204;
    const enabled = await api(`/api/webhooks/${hook.id}`, { method: 'PATCH', token: admin, body: { enabled: true } });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null });
    await ping(hook.id);
    await hooksAbout('/gone', `webhooks/${hook.id}/test`, 2);
  });

  it('disables an endpoint whose deliveries have all failed for five days', async () => {
    receiver.answer = (path) => (path === '/failing' ? 503 : 204);
    const hook = await endpoint('/failing', { event_types: ['psk.deleted'] });
    // Five days cannot pass in a test: the endpoint's record says its failures began six days ago.
    const sixDaysAgo = new Date(Date.now() - 6 * 86_400_000).toISOString();
    await db().send(
      new UpdateCommand({
        TableName: table('webhooks'),
        Key: { id: hook.id },
        UpdateExpression: 'SET failing_since = :t',
        ExpressionAttributeValues: { ':t': sixDaysAgo },
      }),
    );
    await ping(hook.id);
    const [event] = await endpointEvents(hook.id, 1);
    expect(event).toMatchObject({ type: 'dpm.webhook.endpoint.disabled', actor: null });
    expect(event.data).toMatchObject({
      enabled: false,
      disabled_reason: expect.stringContaining(`every delivery has failed since ${sixDaysAgo}`),
    });
    const endpointNow = (await api(`/api/webhooks/${hook.id}`, { token: admin })).body;
    expect(endpointNow).toEqual(event.data);
    expect(endpointNow).not.toHaveProperty('failing_since');
  });

  it('one recent failure does not disable an endpoint; a success resets the count', async () => {
    receiver.answer = (path) => (path === '/recovering' ? 500 : 204);
    const hook = await endpoint('/recovering', { event_types: ['psk.deleted'] });
    const queued = await ping(hook.id);
    await deliveryWhen(hook.id, queued.id, (d) => d.status === 'retrying');
    const failingSince = () =>
      db()
        .send(new GetCommand({ TableName: table('webhooks'), Key: { id: hook.id }, ConsistentRead: true }))
        .then((out) => out.Item?.failing_since as string | undefined);
    expect(await eventually(failingSince, 5_000, 'the failure counted')).toMatch(/Z$/);
    receiver.answer = () => 204;
    await deliveryWhen(hook.id, queued.id, (d) => d.status === 'succeeded');
    const stored = await api(`/api/webhooks/${hook.id}`, { token: admin });
    expect(stored.body).toMatchObject({ enabled: true, disabled_reason: null });
    // The success cleared the count.
    expect(await eventually(async () => ((await failingSince()) === undefined ? true : undefined), 5_000)).toBe(true);
  });

  it('signs with both secrets for a day after a rotation: each verifies', async () => {
    const hook = await endpoint('/rotated', { event_types: ['psk.deleted'] });
    const rotated = await api(`/api/webhooks/${hook.id}/rotate-secret`, { method: 'POST', token: admin });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.secret as string;
    secrets.push(fresh);
    await ping(hook.id);
    const [delivered] = await hooksAbout('/rotated', `webhooks/${hook.id}/test`, 1);
    const signatures = String(delivered!.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    for (const s of signatures) expect(s).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    // Each secret verifies on its own: a receiver that knows either one accepts the delivery.
    expect(verified(delivered!, fresh)).toMatchObject({ type: 'dpm.webhook.test' });
    expect(verified(delivered!, hook.secret)).toMatchObject({ type: 'dpm.webhook.test' });
    for (const secret of [fresh, hook.secret]) {
      const alone = signatures.find((s) => {
        try {
          new Webhook(secret).verify(delivered!.body, { ...headersOf(delivered!), 'webhook-signature': s });
          return true;
        } catch {
          return false;
        }
      });
      expect(alone, 'one signature per secret').toBeDefined();
    }
    expect(() => verified(delivered!, `whsec_${Buffer.alloc(32, 7).toString('base64')}`)).toThrow();
  });

  it('refuses at connect time a name that resolves to the metadata address', async () => {
    // Accepted at creation: the name is not an address, and nothing is resolved then.
    const res = await api('/api/webhooks', {
      method: 'POST',
      token: admin,
      body: { url: `https://hooks${REBINDING_SUFFIX}/x`, event_types: ['psk.deleted'] },
    });
    expect(res.status, res.text).toBe(201);
    made.push(res.body.id);
    secrets.push(res.body.secret);
    const queued = await ping(res.body.id);
    const refused = await deliveryWhen(res.body.id, queued.id, (d) => d.attempts >= 1);
    expect(refused).toMatchObject({ last_response_status: null });
    expect(refused.last_error).toMatch(/169\.254\.169\.254.*link-local, metadata or unspecified/);
    await api(`/api/webhooks/${res.body.id}`, { method: 'DELETE', token: admin });
  });

  it('delivers everything, in order, once a receiver that was down is back', async () => {
    const hook = await endpoint('/comeback', { event_types: ['decision.*'] });
    await receiver.stop();
    try {
      const [first, second] = await Promise.all([
        decision(['submit', 'reject']),
        decision(['submit', 'approve', 'retire']),
      ]);
      // Retries meet a closed port for a while.
      await eventually(
        async () => {
          const list = await deliveries(hook.id);
          return list.some((d) => d.status === 'retrying' && d.attempts >= 2) ? true : undefined;
        },
        15_000,
        'a delivery retried twice',
      );
      await receiver.start();
      const a = await hooksAbout('/comeback', first, 3, 30_000);
      const b = await hooksAbout('/comeback', second, 4, 30_000);
      // Each subject's events in sequence order, each event once it arrived (at least once).
      const firstArrivals = (hooks: ReceivedHook[]) => [...new Map(hooks.map((h) => [h.event.id, h])).values()];
      expect(firstArrivals(a).map((h) => h.event.sequence)).toEqual([1, 2, 3]);
      expect(firstArrivals(b).map((h) => h.event.sequence)).toEqual([1, 2, 3, 4]);
      for (const h of [...a, ...b]) expect(verified(h, hook.secret)).toMatchObject({ id: h.event.id });
    } finally {
      await receiver.start().catch(() => undefined);
    }
  }, 60_000);

  it('stops the pending deliveries of a deleted endpoint', async () => {
    receiver.answer = (path) => (path === '/deleted' ? 500 : 204);
    const hook = await endpoint('/deleted', { event_types: ['psk.deleted'] });
    const queued = await ping(hook.id);
    await deliveryWhen(hook.id, queued.id, (d) => d.status === 'retrying');
    expect((await api(`/api/webhooks/${hook.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    const attempts = receiver.at('/deleted').length;
    // Longer than the rest of the schedule would take to make another attempt.
    await new Promise((r) => setTimeout(r, (WEBHOOK_RETRY_SCHEDULE[1] + WEBHOOK_RETRY_SCHEDULE[2]) * 1000 + 1500));
    expect(receiver.at('/deleted').length).toBeLessThanOrEqual(attempts + 1);
    expect(receiver.at('/deleted').length).toBeLessThan(ATTEMPTS);
    expect((await api(`/api/webhooks/${hook.id}/deliveries`, { token: admin })).status).toBe(404);
    receiver.answer = () => 204;
  }, 30_000);

  it('pages deliveries newest first and filters them by status', async () => {
    const hook = await endpoint('/paged', { event_types: ['psk.deleted'] });
    const sent = [];
    for (let i = 0; i < 3; i++) sent.push(await ping(hook.id));
    for (const d of sent) await deliveryWhen(hook.id, d.id, (x) => x.status === 'succeeded');
    const first = await api<Delivery[]>(`/api/webhooks/${hook.id}/deliveries?limit=2`, { token: admin });
    expect(first.body.map((d) => d.id)).toEqual([sent[2]!.id, sent[1]!.id]);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toBeTruthy();
    const rest = await api<Delivery[]>(
      `/api/webhooks/${hook.id}/deliveries?limit=2&cursor=${encodeURIComponent(cursor!)}`,
      { token: admin },
    );
    expect(rest.body.map((d) => d.id)).toEqual([sent[0]!.id]);
    expect(rest.headers.get('x-next-cursor')).toBeNull();
    expect((await deliveries(hook.id, '?status=succeeded&limit=2')).map((d) => d.id)).toEqual([
      sent[2]!.id,
      sent[1]!.id,
    ]);
    expect(await deliveries(hook.id, '?status=retrying')).toEqual([]);
  });

  it('never shows a signing secret in the service log', async () => {
    const log = await serviceLog();
    for (const secret of secrets) expect(log.includes(secret)).toBe(false);
    expect(secrets.length).toBeGreaterThan(5);
  });
});
