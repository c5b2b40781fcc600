import * as sqsSdk from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { DeliveryMessage } from '../../functions/webhooks/delivery-queue.js';
import {
  delayUntil,
  inLineDelaySeconds,
  laneOf,
  MAX_DELAY_SECONDS,
  SqsDeliveryQueue,
} from '../../functions/webhooks/delivery-queue.js';
import {
  busyDelaySeconds,
  type DelivererDeps,
  DISABLE_AFTER_MS,
  LANE_CONSUMERS,
  DELIVERY_LEASE_MS,
  MAX_IN_FLIGHT,
  PRINCIPAL_SHARE,
  WebhookDeliverer,
} from '../../functions/webhooks/delivery.js';
import { takes } from '../../functions/webhooks/fanout.js';
import { createWebhookWorkerHandler } from '../../functions/webhooks/worker.js';
import { eventTypeEntryError } from '../../functions/webhooks/schemas.js';
import { type StoredEndpoint } from '../../functions/webhooks/endpoint-store.js';
import { type DeliveryRecord, isOpen, type Settlement } from '../../functions/webhooks/delivery-store.js';
import {
  freeShareSlots,
  type LaneShare,
  nextShareTry,
  type ShareEntries,
} from '../../functions/webhooks/lane-share.js';
import { ManualClock } from '../../shared/clock.js';
import type { Change } from '../../shared/events/types.js';
import type { BusinessMetrics, WebhookDeliveryOutcome } from '../../shared/ports/metrics.js';
import type { Sealed } from '../../shared/secrets.js';

/** The delivery worker's decisions (docs/events-and-webhooks.md) over fakes of its stores, queue and poster. */

const SEALED: Sealed = { v: 1, key: 'k', iv: 'i', tag: 't', data: 'd' };
const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const T0 = Date.parse('2026-11-21T10:00:00.000Z');

function world(
  options: {
    status?: number;
    schedule?: number[];
    failingSince?: string;
    enabled?: boolean;
    /** Another message's lease on the attempt, until then (epoch ms). */
    leasedUntil?: number;
    /** A crew run's own endpoint, its run cancelled before this sequence when given. */
    forRun?: { stoppedBefore?: number };
    /** In-flight slots of the endpoint held by other messages. */
    slotsHeld?: number;
    /** Slots of a crew run endpoint's starter's share of the per-run lane held by its other runs' attempts. */
    shareHeld?: number;
    /** Messages of the starter's other deliveries parked in its wait list, oldest first. */
    parked?: DeliveryMessage[];
    /** What happens elsewhere right after a delivery is parked. */
    onPark?: () => void;
    /** What happens elsewhere while a POST is under way. */
    meanwhile?: () => void;
  } = {},
) {
  const clock = new ManualClock(T0);
  // A crew run's own endpoint has a run's endpoint id (its deliveries take the per-run lane).
  const endpointId = options.forRun ? 'run-c1' : 'ep';
  let endpoint: StoredEndpoint = {
    endpoint: {
      id: endpointId,
      url: 'https://hooks.example.com/x',
      event_types: ['*'],
      description: null,
      enabled: options.enabled ?? true,
      disabled_reason: null,
      created_by: 'admin',
      created_at: '2026-11-01T00:00:00.000Z',
      updated_at: '2026-11-01T00:00:00.000Z',
    },
    principal: 'p',
    secret: SEALED,
    previousSecret: undefined,
    failingSince: options.failingSince,
    forRun: options.forRun !== undefined,
    stoppedBefore: options.forRun?.stoppedBefore,
  };
  let delivery: DeliveryRecord = {
    id: 'd1',
    endpoint_id: endpointId,
    event_id: 'e1',
    event_type: options.forRun ? 'dpm.crew.run.event' : 'dpm.psk.deleted',
    subject: 'psks/x',
    sequence: 1,
    body: '{"id":"e1"}',
    series: 0,
    status: 'pending',
    attempts: 0,
    last_response_status: null,
    last_error: null,
    last_attempt_at: null,
    next_attempt_at: new Date(T0).toISOString(),
    duration_ms: null,
    created_at: new Date(T0).toISOString(),
    attempt_message: undefined,
  };
  const sent: { message: DeliveryMessage; delaySeconds: number }[] = [];
  const posts: { url: string; headers: Record<string, string>; run: boolean }[] = [];
  /** The slots held, by holder: the others' first (an attempt holds one while it posts). */
  const slots = new Map<number, string>(
    Array.from({ length: options.slotsHeld ?? 0 }, (_, i) => [i, `other-${i}`] as const),
  );
  const slotsDuringPosts: number[] = [];
  /** The holders of the starter's share (a crew run's own endpoint): its other runs' first. */
  const shareHolders = new Set<string>(Array.from({ length: options.shareHeld ?? 0 }, (_, i) => `other-run-${i}`));
  const sharesDuringPosts: number[] = [];
  /** The share each takeSlot, releaseSlot and releaseSlots named. */
  const shares: { call: string; share: LaneShare | undefined }[] = [];
  /** The starter's wait list, oldest first: each place and its message (`keep`: the place it kept). */
  let parkedNo = 0;
  const parked: { place: string; message: DeliveryMessage; keep?: string }[] = (options.parked ?? []).map(
    (message) => ({ place: `p${parkedNo++}`, message }),
  );
  const unparked: string[] = [];
  const post =
    (run: boolean) =>
    async (url: string, headers: Record<string, string>): Promise<number> => {
      posts.push({ url, headers, run });
      slotsDuringPosts.push(slots.size);
      sharesDuringPosts.push(shareHolders.size);
      options.meanwhile?.();
      await clock.advance(20);
      return options.status ?? 204;
    };
  const disabled: { reason: string; change: Change; cutoff?: string }[] = [];
  const deps: DelivererDeps = {
    endpoints: {
      get: async () => endpoint,
      disable: async (_id, reason, change, cutoff) => {
        disabled.push({ reason, change, cutoff });
        return true;
      },
      noteFailure: async (_id, at) => options.failingSince ?? at,
      noteSuccess: async () => undefined,
    },
    deliveries: {
      get: async () => delivery,
      claim: async (d, messageId, nowMs) => {
        if (d.attempts !== delivery.attempts || !isOpen(delivery.status)) return false;
        if (options.leasedUntil !== undefined && nowMs <= options.leasedUntil) return false;
        delivery = { ...delivery, attempt_message: messageId };
        return true;
      },
      settle: async (d, s: Settlement, attempted) => {
        if (d.attempts !== delivery.attempts || d.series !== delivery.series) return false;
        delivery = { ...delivery, ...s, attempts: d.attempts + (attempted ? 1 : 0) };
        return true;
      },
      waitsInLine: async () => false,
      nextInLine: async () => undefined,
      open: async () => [delivery],
      releaseLease: async () => undefined,
      // The endpoint's slot and its starter's share are taken by one write: both, or neither.
      takeSlot: async (_id, holder, _now, _lease, max, share) => {
        shares.push({ call: 'takeSlot', share });
        if (share && shareHolders.size >= share.slots) return undefined;
        for (let slot = 0; slot < max; slot++)
          if (!slots.has(slot)) {
            slots.set(slot, holder);
            if (share) shareHolders.add(holder);
            return slot;
          }
        return undefined;
      },
      releaseSlot: async (_id, slot, holder, share) => {
        shares.push({ call: 'releaseSlot', share });
        if (slots.get(slot) === holder) slots.delete(slot);
        if (!share || !shareHolders.delete(holder)) return undefined;
        // The entries left, each live: one endpoint's slot 0 per holder.
        return Object.fromEntries(
          [...shareHolders].map((h) => [`run-${h}#0`, { holder: h, until: clock.now() + DELIVERY_LEASE_MS }]),
        ) as ShareEntries;
      },
      park: async (_principal, message, _now, keep) => {
        const place = `p${parkedNo++}`;
        parked.push({ place, message, ...(keep ? { keep } : {}) });
        options.onPark?.();
        return place;
      },
      unpark: async (_principal, place) => {
        unparked.push(place);
        const i = parked.findIndex((p) => p.place === place);
        if (i >= 0) parked.splice(i, 1);
        return i >= 0;
      },
      wakeParked: async (_principal, count) => parked.splice(0, count).map((p) => p.message),
      releaseSlots: async (_id, _max, share) => {
        shares.push({ call: 'releaseSlots', share });
        slots.clear();
        if (share) shareHolders.clear();
      },
    },
    queue: { send: async (messages) => void sent.push(...messages) },
    box: { open: async () => SECRET },
    poster: { post: post(false) },
    runPoster: { post: post(true) },
    retrySchedule: options.schedule ?? [5, 300, 1800, 7200, 18_000, 36_000, 36_000],
    clock,
  };
  const message = (attempt: number, due = clock.now()): DeliveryMessage => ({
    endpoint_id: endpointId,
    delivery_id: 'd1',
    series: 0,
    attempt,
    due,
  });
  return {
    deliverer: new WebhookDeliverer(deps),
    delivery: () => delivery,
    sent,
    posts,
    disabled,
    slots,
    slotsDuringPosts,
    shareHolders,
    sharesDuringPosts,
    shares,
    parked,
    unparked,
    message,
    at: (ms: number) => clock.set(ms),
    /** The run of a crew run's own endpoint is cancelled at event `sequence` (fanout.ts marks it). */
    cancelRunAt: (sequence: number) => (endpoint = { ...endpoint, stoppedBefore: sequence }),
  };
}

describe('the webhook delivery worker', () => {
  it('sends again, after the lease, a message whose attempt another one holds (its worker may have died)', async () => {
    const w = world({ leasedUntil: T0 + DELIVERY_LEASE_MS });
    await w.deliverer.handle(w.message(0), 'after-restart');
    expect(w.posts).toEqual([]);
    expect(w.sent).toEqual([{ message: w.message(0), delaySeconds: DELIVERY_LEASE_MS / 1000 + 1 }]);
    // Once the lease is out, the message makes the attempt nobody made.
    await w.at(T0 + DELIVERY_LEASE_MS + 1000);
    await w.deliverer.handle(w.sent[0]!.message, 'after-restart');
    expect(w.posts).toHaveLength(1);
    expect(w.delivery()).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('waits out a delay longer than SQS allows in steps of at most 15 minutes, attempting nothing', async () => {
    const w = world();
    const due = T0 + 2 * 3600_000;
    await w.deliverer.handle(w.message(0, due), 'm1');
    expect(w.posts).toEqual([]);
    expect(w.sent).toEqual([{ message: w.message(0, due), delaySeconds: MAX_DELAY_SECONDS }]);
    expect(delayUntil(due, due - 1500)).toBe(2);
    expect(delayUntil(due, due + 10)).toBe(0);
  });

  it('retries on the schedule (§14: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), then fails for good', async () => {
    const w = world({ status: 502 });
    const schedule = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];
    for (const [attempt, delay] of [...schedule, undefined].entries()) {
      const started = T0 + attempt * 100_000_000;
      await w.at(started);
      await w.deliverer.handle(w.message(attempt, started), `m${attempt}`);
      const d = w.delivery();
      expect(d.attempts).toBe(attempt + 1);
      expect(d.last_response_status).toBe(502);
      expect(d.last_error).toBe('the endpoint answered 502');
      if (delay === undefined) {
        expect(d.status).toBe('failed');
        expect(d.next_attempt_at).toBeNull();
      } else {
        expect(d.status).toBe('retrying');
        expect(Date.parse(d.next_attempt_at!) - (started + 20)).toBe(delay * 1000);
        const retry = w.sent.at(-1)!;
        expect(retry.message).toMatchObject({ attempt: attempt + 1, due: Date.parse(d.next_attempt_at!) });
        expect(retry.delaySeconds).toBe(Math.min(delay, MAX_DELAY_SECONDS));
      }
    }
    expect(w.posts).toHaveLength(schedule.length + 1);
    expect(w.disabled).toEqual([]);
  });

  it('signs with the Standard Webhooks headers and succeeds on 2xx', async () => {
    const w = world({ status: 200 });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.delivery()).toMatchObject({ status: 'succeeded', attempts: 1, last_error: null, duration_ms: 20 });
    expect(w.posts[0]!.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'e1',
      'webhook-timestamp': String(T0 / 1000),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
    });
  });

  it('disables the endpoint on 410 Gone, at once and without retrying', async () => {
    const w = world({ status: 410 });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.delivery()).toMatchObject({ status: 'failed', attempts: 1, last_response_status: 410 });
    expect(w.disabled).toEqual([
      {
        reason: 'the endpoint answered 410 Gone',
        change: expect.objectContaining({ type: 'webhook.endpoint.disabled', actor: null }),
        cutoff: undefined,
      },
    ]);
    expect(w.sent).toEqual([]);
  });

  it('disables the endpoint once its deliveries have all failed for five days, not before', async () => {
    const recent = world({ status: 500, failingSince: new Date(T0 - DISABLE_AFTER_MS + 60_000).toISOString() });
    await recent.deliverer.handle(recent.message(0), 'm1');
    expect(recent.disabled).toEqual([]);
    const old = world({ status: 500, failingSince: new Date(T0 - DISABLE_AFTER_MS - 1).toISOString() });
    await old.deliverer.handle(old.message(0), 'm1');
    expect(old.disabled).toHaveLength(1);
    expect(old.disabled[0]!.cutoff).toBe(new Date(T0 - DISABLE_AFTER_MS).toISOString());
  });

  it('drops a stale message, and queues the follow-up again when its own attempt was made', async () => {
    const w = world({ status: 500 });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.sent).toHaveLength(1);
    // Another message of attempt 0: made already, by m1.
    await w.deliverer.handle(w.message(0), 'other');
    expect(w.sent).toHaveLength(1);
    expect(w.posts).toHaveLength(1);
    // m1 handed again (its follow-up may have been lost): the retry is queued again, nothing sent.
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.sent).toHaveLength(2);
    expect(w.sent[1]).toEqual(w.sent[0]);
    expect(w.posts).toHaveLength(1);
  });

  it("holds one of the endpoint's slots while it posts, and frees it after", async () => {
    const w = world({ slotsHeld: MAX_IN_FLIGHT - 1 });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toHaveLength(1);
    expect(w.slotsDuringPosts).toEqual([MAX_IN_FLIGHT]);
    expect([...w.slots.values()]).toEqual(['other-0']);
  });

  it('puts a delivery back, unattempted and uncounted, while its endpoint has MAX_IN_FLIGHT in flight', async () => {
    const w = world({ slotsHeld: MAX_IN_FLIGHT });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toEqual([]);
    expect(w.delivery()).toMatchObject({ status: 'pending', attempts: 0, attempt_message: undefined });
    expect(w.sent).toEqual([{ message: { ...w.message(0), busy: 1 }, delaySeconds: busyDelaySeconds(0) }]);
    // Still busy: later each time, up to the attempt timeout.
    await w.deliverer.handle(w.sent[0]!.message, 'm2');
    expect(w.sent[1]).toEqual({ message: { ...w.message(0), busy: 2 }, delaySeconds: 2 });
    expect([1, 2, 4, 8, 10, 10].map((_, i) => busyDelaySeconds(i))).toEqual([1, 2, 4, 8, 10, 10]);
    // A slot frees: the attempt is made.
    w.slots.delete(0);
    await w.deliverer.handle(w.sent[1]!.message, 'm3');
    expect(w.posts).toHaveLength(1);
    expect(w.delivery()).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it("holds, for a crew run's own endpoint, one of its starter's PRINCIPAL_SHARE slots while it posts; the API's endpoints take none", async () => {
    const w = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE - 1 });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toHaveLength(1);
    expect(w.sharesDuringPosts).toEqual([PRINCIPAL_SHARE]);
    expect([...w.shareHolders]).toEqual(Array.from({ length: PRINCIPAL_SHARE - 1 }, (_, i) => `other-run-${i}`));
    // The run's starter (its endpoint's created_by_principal), in the slot's take and its release alike.
    const share = { principal: 'p', slots: PRINCIPAL_SHARE };
    expect(w.shares).toEqual([
      { call: 'takeSlot', share },
      { call: 'releaseSlot', share },
    ]);
    const api = world();
    await api.deliverer.handle(api.message(0), 'm1');
    expect(api.shares).toEqual([
      { call: 'takeSlot', share: undefined },
      { call: 'releaseSlot', share: undefined },
    ]);
  });

  it("parks a crew run's delivery, unattempted and uncounted, while its starter holds its share of the per-run lane", async () => {
    // A quarter of the lane's consumers: the other starters keep three quarters.
    expect(PRINCIPAL_SHARE).toBe(LANE_CONSUMERS / 4);
    const w = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toEqual([]);
    expect(w.delivery()).toMatchObject({ status: 'pending', attempts: 0, attempt_message: undefined });
    expect(w.slots.size).toBe(0);
    // In its starter's wait list (a wake sends it as it is there), and not lost: one message
    // looks again much later, should no wake come; nothing comes back every few seconds.
    expect(w.parked).toEqual([{ place: 'p0', message: { ...w.message(0), waits: 1, woken: true } }]);
    expect(w.sent).toEqual([
      { message: { ...w.message(0), waits: 1, parked: 'p0' }, delaySeconds: inLineDelaySeconds(0) },
    ]);
    // One of the starter's other attempts ends and wakes it: this one is made.
    w.shareHolders.delete('other-run-0');
    const woken = w.parked.splice(0, 1)[0]!.message;
    await w.deliverer.handle(woken, 'm2');
    expect(w.posts).toHaveLength(1);
    expect(w.delivery()).toMatchObject({ status: 'succeeded', attempts: 1 });
    // The message that was to look again finds the attempt made: dropped, nothing sent.
    const sent = w.sent.length;
    await w.deliverer.handle(w.sent[0]!.message, 'm3');
    expect(w.posts).toHaveLength(1);
    expect(w.sent).toHaveLength(sent);
  });

  it('wakes, when an attempt lets its starter’s slot go, as many parked deliveries as the share has slots free', async () => {
    const others = ['d2', 'd3', 'd4'].map((id): DeliveryMessage => ({
      endpoint_id: `run-${id}`,
      delivery_id: id,
      series: 0,
      attempt: 0,
      due: T0,
      woken: true,
    }));
    // The starter's other runs hold all but this one's slot: once it is let go, one is free.
    const w = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE - 1, parked: others });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toHaveLength(1);
    expect(w.sent).toContainEqual({ message: others[0], delaySeconds: 0 });
    expect(w.sent.filter((m) => m.message.woken)).toHaveLength(1);
    expect(w.parked.map((p) => p.message)).toEqual(others.slice(1));
    // Two of those other runs' attempts had ended meanwhile, their wakes spent on deliveries
    // that took no slot: the next attempt that ends wakes three.
    const spent = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE - 3, parked: others });
    await spent.deliverer.handle(spent.message(0), 'm1');
    expect(spent.sent.filter((m) => m.message.woken).map((m) => m.message)).toEqual(others);
    // An API endpoint's attempt wakes none.
    const api = world({ parked: others });
    await api.deliverer.handle(api.message(0), 'm1');
    expect(api.parked).toHaveLength(others.length);
  });

  it('parks a woken delivery that finds the share held again without a message of its own (it has one)', async () => {
    const w = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE });
    await w.deliverer.handle({ ...w.message(0), waits: 1, woken: true }, 'm2');
    expect(w.posts).toEqual([]);
    expect(w.parked).toEqual([{ place: 'p0', message: { ...w.message(0), waits: 2, woken: true } }]);
    expect(w.sent).toEqual([]);
  });

  it('looks again, after a park, out of the wait list first; parked again, it keeps its time in line', async () => {
    const w = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE, parked: [] });
    const look = { ...w.message(0), waits: 1, parked: 'p-first' };
    await w.deliverer.handle(look, 'm2');
    expect(w.unparked).toEqual(['p-first']);
    expect(w.parked).toEqual([{ place: 'p0', message: { ...w.message(0), waits: 2, woken: true }, keep: 'p-first' }]);
    expect(w.sent).toEqual([
      { message: { ...w.message(0), waits: 2, parked: 'p0' }, delaySeconds: inLineDelaySeconds(1) },
    ]);
  });

  it('takes the slot let go between the refusal and the park, and leaves the wait list', async () => {
    const w = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE });
    // An attempt of the starter's ends right after the park: it found none parked to wake.
    const w2 = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE, onPark: () => w2.shareHolders.delete('other-run-0') });
    await w2.deliverer.handle(w2.message(0), 'm1');
    expect(w2.posts).toHaveLength(1);
    expect(w2.unparked).toEqual(['p0']);
    expect(w2.parked).toEqual([]);
    expect(w2.delivery()).toMatchObject({ status: 'succeeded', attempts: 1 });
    // Without it, parked.
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toEqual([]);
  });

  it('lets go, at a restart, of each starter’s share of the per-run lane with its endpoints’ slots', async () => {
    const run = world({ forRun: {}, shareHeld: PRINCIPAL_SHARE });
    expect(await run.deliverer.requeueOpen()).toBe(1);
    expect(run.shares).toEqual([{ call: 'releaseSlots', share: { principal: 'p', slots: PRINCIPAL_SHARE } }]);
    expect(run.shareHolders.size).toBe(0);
    const api = world({ slotsHeld: MAX_IN_FLIGHT });
    await api.deliverer.requeueOpen();
    expect(api.shares).toEqual([{ call: 'releaseSlots', share: undefined }]);
  });

  it('waits in line rarely: the one before wakes it, and it looks again only after 16, 32, 64 s… (a lost wake)', async () => {
    expect([0, 1, 2, 3, 5, 6, 7].map(inLineDelaySeconds)).toEqual([16, 32, 64, 128, 512, 900, 900]);
    expect(inLineDelaySeconds(6)).toBe(MAX_DELAY_SECONDS);
  });

  it("posts to a crew run's own endpoint through the per-run rules' poster", async () => {
    const w = world({ forRun: {} });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts.map((p) => p.run)).toEqual([true]);
    const api = world();
    await api.deliverer.handle(api.message(0), 'm1');
    expect(api.posts.map((p) => p.run)).toEqual([false]);
  });

  it.each([
    [
      "a run's delivery of an event from before the run was cancelled",
      { forRun: { stoppedBefore: 2 } },
      'the run was cancelled',
    ],
    ['a delivery to a disabled endpoint', { enabled: false }, 'the endpoint is disabled'],
  ] as const)('fails, without attempting it, %s', async (_what, options, why) => {
    const w = world(options);
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toEqual([]);
    expect(w.delivery()).toMatchObject({ status: 'failed', attempts: 0, last_error: `not sent: ${why}` });
  });

  it('settles at once, rather than at its retry, a failed attempt whose run was cancelled meanwhile', async () => {
    const w = world({ forRun: {}, status: 503, meanwhile: () => w.cancelRunAt(2) });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.delivery()).toMatchObject({ status: 'retrying', attempts: 1 });
    // The retry is due now, not in 5 s: the worker settles it without an attempt.
    expect(w.sent).toEqual([{ message: { ...w.message(1), due: T0 + 20 }, delaySeconds: 0 }]);
    await w.deliverer.handle(w.sent[0]!.message, 'm2');
    expect(w.posts).toHaveLength(1);
    expect(w.delivery()).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: 'not sent: the run was cancelled',
    });
  });

  it("sends a run's delivery of run.cancelled itself and of what follows", async () => {
    const w = world({ forRun: { stoppedBefore: 1 } });
    await w.deliverer.handle(w.message(0), 'm1');
    expect(w.posts).toHaveLength(1);
  });
});

describe("a starter's share of the per-run lane (what a refused write's item says to try next)", () => {
  const NOW = 1_000_000;
  const entry = (holder: string, until = NOW + 1) => ({ holder, until });

  it("takes the endpoint's first free slot while the starter holds fewer than its share", () => {
    expect(nextShareTry({}, 'run-a', 'm', NOW, MAX_IN_FLIGHT, 4)).toEqual({ slot: 0, dropping: [] });
    expect(nextShareTry({ 'run-a#0': entry('x') }, 'run-a', 'm', NOW, MAX_IN_FLIGHT, 4)).toEqual({
      slot: 1,
      dropping: [],
    });
  });

  it('keeps the slot a message handed again holds', () => {
    const entries = { 'run-a#1': entry('m'), 'run-b#0': entry('x'), 'run-c#0': entry('y') };
    expect(nextShareTry(entries, 'run-a', 'm', NOW, MAX_IN_FLIGHT, 3)).toEqual({ slot: 1, dropping: [] });
  });

  it("waits when the endpoint's slots are held, or the starter holds its share", () => {
    const endpointBusy = { 'run-a#0': entry('x'), 'run-a#1': entry('y') };
    expect(nextShareTry(endpointBusy, 'run-a', 'm', NOW, MAX_IN_FLIGHT, 4)).toBeUndefined();
    const shareHeld = { 'run-b#0': entry('x'), 'run-c#0': entry('y') };
    expect(nextShareTry(shareHeld, 'run-a', 'm', NOW, MAX_IN_FLIGHT, 2)).toBeUndefined();
  });

  it('drops the entries whose holders died (their leases ran out) and takes a lapsed slot over', () => {
    const entries = { 'run-a#0': entry('dead', NOW - 1), 'run-b#0': entry('gone', NOW - 5), 'run-c#0': entry('y') };
    expect(nextShareTry(entries, 'run-a', 'm', NOW, MAX_IN_FLIGHT, 2)).toEqual({
      slot: 0,
      dropping: [['run-b#0', NOW - 5]],
    });
    // Only live holders count against the share.
    expect(nextShareTry(entries, 'run-d', 'm', NOW, MAX_IN_FLIGHT, 2)).toEqual({
      slot: 0,
      dropping: [
        ['run-a#0', NOW - 1],
        ['run-b#0', NOW - 5],
      ],
    });
  });

  it('wakes, when an attempt ends, as many parked deliveries as the share has live slots free', () => {
    expect(freeShareSlots({}, NOW, 4)).toBe(4);
    expect(freeShareSlots({ 'run-a#0': entry('x'), 'run-b#0': entry('y'), 'run-c#0': entry('z') }, NOW, 4)).toBe(1);
    // A holder that died frees its slot with its lease.
    expect(freeShareSlots({ 'run-a#0': entry('x'), 'run-b#0': entry('dead', NOW - 1) }, NOW, 2)).toBe(1);
    expect(freeShareSlots({ 'run-a#0': entry('x'), 'run-b#0': entry('y') }, NOW, 2)).toBe(0);
  });
});

describe('the webhook worker’s metrics', () => {
  const sqsRecord = (body: unknown, messageId: string): SQSRecord => ({
    messageId,
    receiptHandle: messageId,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(T0),
      SenderId: 's',
      ApproximateFirstReceiveTimestamp: String(T0),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:dpm-test-webhook-deliveries',
    awsRegion: 'us-east-1',
  });

  function countingMetrics() {
    const outcomes: string[] = [];
    let flushes = 0;
    const metrics: BusinessMetrics = {
      count: (metric, dimensions, value = 1) => {
        expect(metric).toBe('WebhookDeliveries');
        for (let i = 0; i < value; i++) outcomes.push((dimensions as { outcome: WebhookDeliveryOutcome }).outcome);
      },
      flush: async () => void (flushes += 1),
    };
    return { metrics, outcomes, flushes: () => flushes };
  }

  it('counts each outcome an attempt settles, once, and flushes once a batch', async () => {
    const m = countingMetrics();
    const cases: [Parameters<typeof world>[0], WebhookDeliveryOutcome][] = [
      [{ status: 204 }, 'delivered'],
      [{ status: 502 }, 'failed_attempt'],
      [{ status: 502, schedule: [] }, 'gave_up'],
      [{ status: 410 }, 'gone'],
      [{ enabled: false }, 'not_sent'],
    ];
    for (const [options, outcome] of cases) {
      const w = world(options);
      const handler = createWebhookWorkerHandler(w.deliverer, m.metrics);
      expect(await handler({ Records: [sqsRecord(w.message(0), 'm1')] })).toEqual({ batchItemFailures: [] });
      expect(m.outcomes.at(-1)).toBe(outcome);
      // The same message handed again, and another one for the attempt made: nothing more is counted.
      await handler({ Records: [sqsRecord(w.message(0), 'm1'), sqsRecord(w.message(0), 'm2')] });
    }
    expect(m.outcomes).toEqual(['delivered', 'failed_attempt', 'gave_up', 'gone', 'not_sent']);
    expect(m.flushes()).toBe(cases.length * 2);
  });

  it('counts nothing for a message not understood or not due, and flushes also when every record fails', async () => {
    const m = countingMetrics();
    const w = world();
    const handler = createWebhookWorkerHandler(w.deliverer, m.metrics);
    await handler({ Records: [sqsRecord('not json', 'm1'), sqsRecord(w.message(0, T0 + 3600_000), 'm2')] });
    expect(m.outcomes).toEqual([]);
    expect(m.flushes()).toBe(1);
    const failing = createWebhookWorkerHandler(
      new WebhookDeliverer({
        ...({} as DelivererDeps),
        deliveries: {
          get: async () => {
            throw new Error('throttled');
          },
        } as unknown as DelivererDeps['deliveries'],
      }),
      m.metrics,
    );
    await expect(failing({ Records: [sqsRecord(w.message(0), 'm3')] })).rejects.toThrow();
    expect(m.outcomes).toEqual([]);
    expect(m.flushes()).toBe(2);
  });
});

describe('the delivery lanes', () => {
  it("queues each message in its endpoint's lane: the API's endpoints, or crew runs' own", async () => {
    const sent: { queue: string; endpoints: string[] }[] = [];
    const client = {
      send: async (command: InstanceType<typeof sqsSdk.SendMessageBatchCommand>) => {
        sent.push({
          queue: command.input.QueueUrl!,
          endpoints: command.input.Entries!.map((e) => (JSON.parse(e.MessageBody!) as DeliveryMessage).endpoint_id),
        });
        return { Successful: [], Failed: [] };
      },
    } as unknown as InstanceType<typeof sqsSdk.SQSClient>;
    const queue = new SqsDeliveryQueue(async () => ({ sdk: sqsSdk, client }), { endpoints: 'q-api', runs: 'q-runs' });
    const message = (endpoint_id: string) => ({
      message: { endpoint_id, delivery_id: 'd', series: 0, attempt: 0, due: T0 },
      delaySeconds: 0,
    });
    const api = '7b0f4c1e-1f53-4c5e-9d56-0f1f5b8e2a11';
    const run = 'run-2c9d1e7a-3b4f-4a6e-8c1d-5e6f7a8b9c0d';
    await queue.send([message(api), message(run), message(api)]);
    expect(sent).toEqual([
      { queue: 'q-api', endpoints: [api, api] },
      { queue: 'q-runs', endpoints: [run] },
    ]);
    expect([laneOf(api), laneOf(run)]).toEqual(['endpoints', 'runs']);
    // A lane without its queue is a broken dependency (503), not a message sent elsewhere.
    const half = new SqsDeliveryQueue(async () => ({ sdk: sqsSdk, client }), { endpoints: 'q-api', runs: undefined });
    await expect(half.send([message(run)])).rejects.toMatchObject({ name: 'QueueDoesNotExist' });
  });
});

describe('event types of an endpoint', () => {
  it('match exactly, by prefix with .*, or all with *; dpm. may lead on either side', () => {
    expect(takes(['decision.version.approved'], 'dpm.decision.version.approved')).toBe(true);
    expect(takes(['dpm.decision.*'], 'dpm.decision.version.created')).toBe(true);
    expect(takes(['decision.*'], 'dpm.decisions.x')).toBe(false);
    expect(takes(['crew.run.*'], 'dpm.crew.template.created')).toBe(false);
    expect(takes(['*'], 'dpm.anything')).toBe(true);
    expect(takes(['psk.deleted'], 'dpm.psk.created')).toBe(false);
  });

  it('are types of the domain events table, their prefixes, or *', () => {
    for (const ok of ['*', 'decision.*', 'dpm.decision.version.*', 'webhook.endpoint.disabled', 'dpm.psk.deleted'])
      expect(eventTypeEntryError(ok), ok).toBeUndefined();
    for (const bad of ['decision.made', 'nothing.*', '.*', 'dpm.*x', ''])
      expect(eventTypeEntryError(bad), bad).toBeDefined();
  });
});
