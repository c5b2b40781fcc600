import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_IN_FLIGHT } from '../../../functions/webhooks/delivery.js';
import { DynamoDeliveryStore } from '../../../functions/webhooks/delivery-store.js';
import { eventually } from '../../support/eventually.js';
import { HangingReceiver, WebhookReceiver } from '../../support/webhook-receiver.js';
import { adminToken, api, db, recordDelivery, slug, table, token } from '../helpers.js';

/**
 * Webhook deliveries under load (API.md §1 "Fair use", §14): per-run receivers that accept and
 * never answer hold only their own lane; at most 2 deliveries to one endpoint are in flight;
 * redeliveries at once answer 202 or 409, never 5xx. Every receiver is on loopback, and every
 * hanging request is dropped by the test once it has seen what it came for.
 */

let admin: string;
let user: string;
const receiver = new WebhookReceiver(recordDelivery);
const hanging = new HangingReceiver();
const endpoints: string[] = [];
const templates: string[] = [];

beforeAll(async () => {
  await receiver.start();
  await hanging.start();
  admin = await adminToken('fair-admin');
  user = await token('fair-user');
});

afterAll(async () => {
  for (const id of endpoints) await api(`/api/webhooks/${id}`, { method: 'DELETE', token: admin });
  for (const id of templates) await api(`/api/crew-templates/${id}`, { method: 'DELETE', token: admin });
  await hanging.stop();
  await receiver.stop();
});

/** An endpoint of the API at `url`; its id. */
async function endpoint(url: string, eventTypes: string[]): Promise<string> {
  const res = await api('/api/webhooks', { method: 'POST', token: admin, body: { url, event_types: eventTypes } });
  expect(res.status, res.text).toBe(201);
  endpoints.push(res.body.id);
  return res.body.id as string;
}

describe('per-run webhooks have a lane of their own', () => {
  const RUNS = 40;

  it("an admin endpoint's delivery arrives while 40 per-run receivers hang", async () => {
    const created = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: { name: slug('fair'), steps: [{ id: 'a', kind: 'render', template: 'hello' }] },
    });
    expect(created.status, created.text).toBe(201);
    templates.push(created.body.id);
    // A few at a time, each with its Idempotency-Key so that an emulator too slow to answer (503)
    // may be asked again: the point is the receivers that hang, not E2's load.
    const start = async (i: number) => {
      for (let tries = 1; ; tries++) {
        const res = await api(`/api/crew-templates/${created.body.id}/run`, {
          method: 'POST',
          token: user,
          headers: { 'Idempotency-Key': `${created.body.id}-${i}` },
          body: { values: {}, webhook_url: hanging.url(`/fair-${i}`) },
        });
        if (res.status !== 503 || tries === 3) return res;
      }
    };
    const started = [];
    for (let i = 0; i < RUNS; i += 5)
      started.push(...(await Promise.all(Array.from({ length: 5 }, (_, j) => start(i + j)))));
    for (const res of started) expect(res.status, res.text).toBe(202);
    const runEndpoints = started.map((res) => `run-${res.body.correlation_id}`);
    try {
      // Every consumer of a lane (16 locally) holds a hanging attempt; one run's deliveries go one at a time.
      await eventually(() => (hanging.openAt() >= 16 ? true : undefined), 20_000, 'per-run receivers hanging');
      const id = await endpoint(receiver.url('/fair-admin'), ['webhook.endpoint.disabled']);
      const ping = await api(`/api/webhooks/${id}/test`, { method: 'POST', token: admin });
      expect(ping.status, ping.text).toBe(202);
      // A hang guard, not a timing: before the lanes it waited behind them for 20 s and more.
      await eventually(() => (receiver.at('/fair-admin').length > 0 ? true : undefined), 5_000, 'the admin delivery');
      expect(receiver.at('/fair-admin')[0]!.event.type).toBe('dpm.webhook.test');
      // Each per-run endpoint has one delivery in flight at most (its run's events go in order).
      for (let i = 0; i < RUNS; i++) expect(hanging.mostOpenAt(`/fair-${i}`)).toBeLessThanOrEqual(1);
    } finally {
      // The runs' endpoints go first (their deliveries stop), then the hanging requests.
      await Promise.all(runEndpoints.map((id) => api(`/api/webhooks/${id}`, { method: 'DELETE', token: admin })));
      hanging.release();
    }
  }, 120_000);
});

describe('one endpoint', () => {
  it('has at most 2 deliveries in flight, whatever number of subjects it gets events about', async () => {
    const path = `/busy-${slug()}`;
    const workspace = slug('fair');
    const id = await endpoint(hanging.url(path), ['decision.version.created']);
    const subjects = 6;
    try {
      for (let i = 0; i < subjects; i++) {
        const res = await api(`/api/decisions/${workspace}/key-${i}/versions`, {
          method: 'POST',
          token: user,
          body: { content: { i } },
        });
        expect(res.status, res.text).toBe(201);
      }
      // Every version's delivery is made; two hang at the receiver, the others wait their turn.
      await eventually(
        async () => {
          const res = await api(`/api/webhooks/${id}/deliveries?limit=1000`, { token: admin });
          return (res.body as unknown[]).length >= subjects ? true : undefined;
        },
        20_000,
        'the deliveries',
      );
      await eventually(() => (hanging.openAt(path) >= 2 ? true : undefined), 20_000, 'two requests hanging');
      // Watch a while: before the limit every subject had one in flight within a second.
      const until = Date.now() + 2_000;
      while (Date.now() < until) {
        expect(hanging.openAt(path)).toBeLessThanOrEqual(2);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(hanging.mostOpenAt(path)).toBe(2);
      const waiting = await api(`/api/webhooks/${id}/deliveries?status=pending&limit=1000`, { token: admin });
      // Put back without an attempt while the endpoint is at its limit.
      expect((waiting.body as { attempts: number }[]).filter((d) => d.attempts === 0).length).toBeGreaterThanOrEqual(
        subjects - 2,
      );
    } finally {
      await api(`/api/webhooks/${id}`, { method: 'DELETE', token: admin });
      hanging.release();
    }
  });
});

describe("an endpoint's in-flight slots, as stored", () => {
  it('admit MAX_IN_FLIGHT holders at once; only its holder frees one; a dead holder’s lapses with its lease', async () => {
    const store = new DynamoDeliveryStore(db(), table('webhookDeliveries'), 1);
    // an endpoint no worker delivers to: only this test takes its slots
    const endpointId = randomUUID();
    const LEASE = 1_000;
    const take = (holder: string, at: number) => store.takeSlot(endpointId, holder, at, LEASE, MAX_IN_FLIGHT);
    const t0 = Date.now();
    expect(MAX_IN_FLIGHT).toBe(2);
    expect([await take('a', t0), await take('b', t0), await take('c', t0)]).toEqual([0, 1, undefined]);
    // a message handed again to its holder keeps the slot it holds
    expect(await take('b', t0)).toBe(1);
    // freed by its holder, and by no other
    await store.releaseSlot(endpointId, 0, 'c');
    expect(await take('c', t0)).toBeUndefined();
    await store.releaseSlot(endpointId, 0, 'a');
    expect(await take('c', t0)).toBe(0);
    // holders that died: their slots are taken over once their leases are out...
    const later = t0 + LEASE + 1;
    expect([await take('d', later), await take('e', later), await take('f', later)]).toEqual([0, 1, undefined]);
    // ...and a late release by the one before frees nothing of the new holder's
    await store.releaseSlot(endpointId, 1, 'b');
    expect(await take('f', later)).toBeUndefined();
    // a restart lets every slot go (the local platform, before it queues the open deliveries again)
    await store.releaseSlots(endpointId, MAX_IN_FLIGHT);
    expect(await take('f', later)).toBe(0);
  });
});

describe('redelivery', () => {
  it('answers 30 redeliveries of one delivery at once with 202 or 409, never 5xx', async () => {
    const id = await endpoint(receiver.url('/fair-redeliver'), ['webhook.endpoint.disabled']);
    const ping = await api(`/api/webhooks/${id}/test`, { method: 'POST', token: admin });
    expect(ping.status, ping.text).toBe(202);
    const deliveryId = ping.body.id as string;
    await eventually(() => (receiver.at('/fair-redeliver').length === 1 ? true : undefined), 20_000);
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        api(`/api/webhooks/${id}/deliveries/${deliveryId}/redeliver`, { method: 'POST', token: admin }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s !== 202 && s !== 409),
      JSON.stringify(statuses),
    ).toEqual([]);
    for (const a of answers.filter((x) => x.status === 202))
      expect(a.body).toMatchObject({ id: deliveryId, event_id: ping.body.event_id });
    for (const a of answers.filter((x) => x.status === 409))
      expect(a.body).toEqual({ error: expect.any(String), code: 409 });
    expect(statuses).toContain(202);
    // The event goes out again.
    await eventually(() => (receiver.at('/fair-redeliver').length >= 2 ? true : undefined), 20_000);
  });
});
