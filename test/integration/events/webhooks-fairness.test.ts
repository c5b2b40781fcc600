import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_IN_FLIGHT, PRINCIPAL_SHARE } from '../../../functions/webhooks/delivery.js';
import { DynamoDeliveryStore } from '../../../functions/webhooks/delivery-store.js';
import { eventually } from '../../support/eventually.js';
import { HangingReceiver, WebhookReceiver } from '../../support/webhook-receiver.js';
import { countingClient } from '../crew-support.js';
import { adminToken, api, db, recordDelivery, slug, table, token } from '../helpers.js';

/**
 * Webhook deliveries under load (the fair-use limits, docs/events-and-webhooks.md): per-run receivers that accept and
 * never answer hold only their own lane; at most 2 deliveries to one endpoint are in flight;
 * redeliveries at once answer 202 or 409, never 5xx. Every receiver is on loopback, and every
 * hanging request is dropped by the test once it has seen what it came for.
 */

let admin: string;
let user: string;
let otherUser: string;
const receiver = new WebhookReceiver(recordDelivery);
const hanging = new HangingReceiver();
const endpoints: string[] = [];
/**
 * How long the other user's per-run delivery and the admin endpoint's are waited for while
 * the first user's receivers hang: a hang guard, not a timing (each takes about a second on a
 * busy machine; before each starter's share the other user's got nothing within 90 s, the
 * admin endpoint's took 36 s and more).
 */
const GUARD_MS = 20_000;
const templates: string[] = [];

beforeAll(async () => {
  await receiver.start();
  await hanging.start();
  admin = await adminToken('fair-admin');
  user = await token('fair-user');
  otherUser = await token('fair-other-user');
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

describe('per-run webhooks have a lane of their own, and each starter a fair share of it', () => {
  const RUNS = 40;

  it("another user's per-run delivery and an admin endpoint's arrive while 40 of one user's receivers hang", async () => {
    const created = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: { name: slug('fair'), steps: [{ id: 'a', kind: 'render', template: 'hello' }] },
    });
    expect(created.status, created.text).toBe(201);
    templates.push(created.body.id);
    // A few at a time, each with its Idempotency-Key so that an emulator too slow to answer (503)
    // may be asked again: the point is the receivers that hang, not E2's load.
    const start = async (caller: string, key: string, webhookUrl: string) => {
      for (let tries = 1; ; tries++) {
        const res = await api(`/api/crew-templates/${created.body.id}/run`, {
          method: 'POST',
          token: caller,
          headers: { 'Idempotency-Key': `${created.body.id}-${key}` },
          body: { values: {}, webhook_url: webhookUrl },
        });
        if (res.status !== 503 || tries === 3) return res;
      }
    };
    // The first user's receivers, on a receiver of their own: what it counts is theirs alone.
    const stalls = await new HangingReceiver().start();
    const started = [];
    for (let i = 0; i < RUNS; i += 5)
      started.push(
        ...(await Promise.all(
          Array.from({ length: 5 }, (_, j) => start(user, String(i + j), stalls.url(`/fair-${i + j}`))),
        )),
      );
    for (const res of started) expect(res.status, res.text).toBe(202);
    const runEndpoints = started.map((res) => `run-${res.body.correlation_id}`);
    try {
      // The first user's share of the lane holds hanging attempts; one run's deliveries go one at a time.
      await eventually(
        () => (stalls.openAt() >= PRINCIPAL_SHARE ? true : undefined),
        20_000,
        "the first user's receivers hanging",
      );
      // Another user's run, its receiver answering at once: its first event (run.queued) goes
      // out beside the hanging attempts. A hang guard, not a timing: before the share it waited
      // for consumers the first user's attempts held (10 s each), and longer.
      const otherPath = `/fair-other-${slug()}`;
      const other = await start(otherUser, slug('other'), receiver.url(otherPath));
      expect(other.status, other.text).toBe(202);
      await eventually(
        () => (receiver.at(otherPath).length > 0 ? true : undefined),
        GUARD_MS,
        "the other user's per-run delivery",
      );
      expect(receiver.at(otherPath)[0]!.event).toMatchObject({
        type: 'dpm.crew.run.event',
        subject: `crew-runs/${other.body.correlation_id}`,
        data: { index: 0, type: 'run.queued' },
      });
      // ...while the first user's receivers still hang.
      expect(stalls.openAt()).toBeGreaterThan(0);
      // An admin endpoint's delivery arrives too (its lane is apart): a hang guard as well.
      const id = await endpoint(receiver.url('/fair-admin'), ['webhook.endpoint.disabled']);
      const ping = await api(`/api/webhooks/${id}/test`, { method: 'POST', token: admin });
      expect(ping.status, ping.text).toBe(202);
      await eventually(
        () => (receiver.at('/fair-admin').length > 0 ? true : undefined),
        GUARD_MS,
        'the admin delivery',
      );
      expect(receiver.at('/fair-admin')[0]!.event.type).toBe('dpm.webhook.test');
      // The first user never held more than its share of the lane's attempts at once (before
      // the share: all 16 consumers), and each of its endpoints one at most (its run's events go in order).
      expect(stalls.mostOpenAt()).toBeLessThanOrEqual(PRINCIPAL_SHARE);
      for (let i = 0; i < RUNS; i++) expect(stalls.mostOpenAt(`/fair-${i}`)).toBeLessThanOrEqual(1);
      // The other user's run's events all arrive, in order, each once (a hang guard: on a
      // loaded machine each of them waits its turn in the share beside the hanging attempts).
      await eventually(
        () => (receiver.at(otherPath).some((h) => h.event.data.type === 'run.completed') ? true : undefined),
        3 * GUARD_MS,
        "the other user's run.completed",
      );
      const indexes = receiver.at(otherPath).map((h) => h.event.data.index);
      expect(indexes).toEqual(indexes.map((_, i) => i));
    } finally {
      // The runs' endpoints go first (their deliveries stop), then the hanging requests.
      await Promise.all(runEndpoints.map((id) => api(`/api/webhooks/${id}`, { method: 'DELETE', token: admin })));
      await stalls.stop();
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

describe("a starter's share of the per-run lane, as stored", () => {
  it("holds a crew run endpoint's slot in its starter's share: one write takes both, the share bounds all its endpoints", async () => {
    const counting = countingClient();
    const store = new DynamoDeliveryStore(counting.db, table('webhookDeliveries'), 1);
    // a starter no worker delivers for: only this test takes its share
    const share = { principal: `["${slug('issuer')}","${randomUUID()}"]`, slots: 2 };
    const LEASE = 1_000;
    const t0 = Date.now();
    const take = (endpointId: string, holder: string, at = t0) =>
      store.takeSlot(endpointId, holder, at, LEASE, MAX_IN_FLIGHT, share);
    /** What `step` answered, and the DynamoDB calls it made. */
    const costOf = async <T>(step: () => Promise<T>) => {
      counting.calls.length = 0;
      const answer = await step();
      return { answer, calls: [...counting.calls] };
    };
    const UPDATE = 'UpdateItemCommand';
    try {
      // The starter's first attempt: the write finds no share item, which is made with it.
      expect(await costOf(() => take('run-a', 'a'))).toEqual({ answer: 0, calls: [UPDATE, 'PutItemCommand'] });
      // Then one write, whether it takes a slot or finds the share held.
      expect(await costOf(() => take('run-b', 'b'))).toEqual({ answer: 0, calls: [UPDATE] });
      expect(await costOf(() => take('run-c', 'c'))).toEqual({ answer: undefined, calls: [UPDATE] });
      // Another endpoint's slot of a run endpoint already in flight: the share still bounds it.
      expect(await costOf(() => take('run-a', 'a2'))).toEqual({ answer: undefined, calls: [UPDATE] });
      // A message handed again to its holder keeps the slot it holds.
      expect(await costOf(() => take('run-b', 'b'))).toEqual({ answer: 0, calls: [UPDATE] });
      // Another starter's deliveries are not held by this one's.
      const other = { principal: `["${slug('issuer')}","${randomUUID()}"]`, slots: 2 };
      expect(await store.takeSlot('run-d', 'd', t0, LEASE, MAX_IN_FLIGHT, other)).toBe(0);
      // Freed by its holder (one write), and by no other.
      expect(await costOf(() => store.releaseSlot('run-a', 0, 'c', share))).toEqual({
        answer: undefined,
        calls: [UPDATE],
      });
      expect(await take('run-c', 'c')).toBeUndefined();
      // Its release answers the entries left (the worker wakes as many parked as are free).
      expect(await store.releaseSlot('run-a', 0, 'a', share)).toEqual({
        'run-b#0': { holder: 'b', until: t0 + LEASE },
      });
      expect(await take('run-c', 'c')).toBe(0);
      // Holders that died: their entries lapse with their leases and are dropped by the next
      // taker (a second write, conditioned on them unchanged).
      const later = t0 + LEASE + 1;
      expect(await costOf(() => take('run-e', 'e', later))).toEqual({ answer: 0, calls: [UPDATE, UPDATE] });
      expect(await costOf(() => take('run-f', 'f', later))).toEqual({ answer: 0, calls: [UPDATE] });
      expect(await take('run-g', 'g', later)).toBeUndefined();
      // ...and a late release by one before frees nothing of the new holders'.
      await store.releaseSlot('run-b', 0, 'b', share);
      expect(await take('run-g', 'g', later)).toBeUndefined();
      // A restart lets the whole share go (the local platform, before it queues the open deliveries again).
      await store.releaseSlots('run-e', MAX_IN_FLIGHT, share);
      expect(await take('run-g', 'g', later)).toBe(0);
      // The API's endpoints' slots are apart from any share.
      expect(await store.takeSlot('run-g', 'g2', later, LEASE, MAX_IN_FLIGHT)).toBe(0);
    } finally {
      counting.destroy();
    }
  });

  it("parks a starter's deliveries in its wait list, wakes the oldest first, each once; a parked one taken out is no longer woken", async () => {
    const store = new DynamoDeliveryStore(db(), table('webhookDeliveries'), 1);
    const principal = `["${slug('issuer')}","${randomUUID()}"]`;
    const message = (id: string) => ({ endpoint_id: `run-${id}`, delivery_id: id, series: 0, attempt: 0, due: 1 });
    const t0 = Date.now();
    const first = await store.park(principal, message('a'), t0);
    const second = await store.park(principal, message('b'), t0 + 1);
    const third = await store.park(principal, message('c'), t0 + 2);
    // One parked again keeps its time in line: before those parked after it first.
    await store.unpark(principal, first);
    const again = await store.park(principal, message('a'), t0 + 3, first);
    expect(again).not.toBe(first);
    // Taken out by its own message (it looks again): not woken, and a second take finds it gone.
    expect(await store.unpark(principal, second)).toBe(true);
    expect(await store.unpark(principal, second)).toBe(false);
    // Two wakes at once: each parked message goes to one of them.
    const woken = await Promise.all([store.wakeParked(principal, 1), store.wakeParked(principal, 1)]);
    expect(woken.flat().map((m) => m.delivery_id)).toEqual(expect.arrayContaining(['a']));
    const rest = await store.wakeParked(principal, 5);
    expect([...woken.flat(), ...rest].map((m) => m.delivery_id).sort()).toEqual(['a', 'c']);
    expect(await store.wakeParked(principal, 5)).toEqual([]);
    expect(await store.unpark(principal, third)).toBe(false);
    // Another starter's wait list is its own; none wakes for a count of 0.
    const other = `["${slug('issuer')}","${randomUUID()}"]`;
    await store.park(other, message('d'), t0);
    expect(await store.wakeParked(other, 0)).toEqual([]);
    expect((await store.wakeParked(other, 1)).map((m) => m.delivery_id)).toEqual(['d']);
    // Parked messages are no deliveries: the endpoint lists none.
    expect((await store.list('run-a', undefined, 10, undefined)).items).toEqual([]);
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
