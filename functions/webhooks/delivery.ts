import { type Clock, systemClock } from '../../shared/clock.js';
import { mapLimit } from '../../shared/concurrency.js';
import { failureText } from '../../shared/failure-text.js';
import { logger } from '../../shared/logger.js';
import type { WebhookDeliveryOutcome } from '../../shared/ports/metrics.js';
import type { SecretBox } from '../../shared/secrets.js';
import {
  currentMessage,
  type DeliveryMessage,
  type DeliveryQueue,
  delayUntil,
  dueNowMessage,
  inLineDelaySeconds,
  laneOf,
  MAX_DELAY_SECONDS,
} from './delivery-queue.js';
import { secretContext, stoppedByCancel } from './run-endpoint.js';
import { signedHeaders } from './signing.js';
import { type StoredEndpoint, type WebhookStore } from './endpoint-store.js';
import { type DeliveryRecord, type DeliveryStore, isOpen, type Settlement } from './delivery-store.js';
import { freeShareSlots, type LaneShare, type ShareEntries } from './lane-share.js';
import { backoffMs } from '../../shared/retry.js';

/** A 2xx answer within this long is a success (docs/events-and-webhooks.md). */
export const ATTEMPT_TIMEOUT_MS = 10_000;

/** An attempt is one message's for this long: longer than the worker may run, shorter than the visibility timeout. */
export const DELIVERY_LEASE_MS = 45_000;

/** An endpoint whose deliveries have all failed for this long is disabled (docs/events-and-webhooks.md). */
export const DISABLE_AFTER_MS = 5 * 86_400_000;

/** At most this many deliveries to one endpoint are in flight at once (the fair-use limits). */
export const MAX_IN_FLIGHT = 2;

/**
 * Attempts the per-run lane makes at once: its consumers (the local platform's poller of
 * QUEUES.runWebhookDeliveries; on AWS the run webhook worker's invocations, each a batch).
 */
export const LANE_CONSUMERS = 16;

/**
 * A starter's fair share of the per-run lane (the fair-use limits, lane-share.ts): the crew
 * runs' own endpoints of one principal have at most this many attempts in flight at once, so
 * that one user's receivers that hang hold a quarter of the lane (each at most
 * ATTEMPT_TIMEOUT_MS) and every other starter's deliveries find consumers free. A delivery
 * whose starter holds its share is parked, no attempt counted, until one of those attempts
 * ends and wakes it: meanwhile it costs the lane and the store nothing.
 */
export const PRINCIPAL_SHARE = LANE_CONSUMERS / 4;

/** A delivery that finds every slot of its endpoint taken looks again after 1, 2, 4, 8, then every 10 s. */
export const busyDelaySeconds = (busy: number): number =>
  backoffMs(busy, { baseMs: 1_000, maxMs: ATTEMPT_TIMEOUT_MS }) / 1000;

/** POSTs a signed body; answers the HTTP status. Throws when nothing answered (refused, timed out). */
export interface WebhookPoster {
  post(url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<number>;
}

export interface DelivererDeps {
  readonly endpoints: Pick<WebhookStore, 'get' | 'disable' | 'noteFailure' | 'noteSuccess'>;
  readonly deliveries: Pick<
    DeliveryStore,
    | 'get'
    | 'claim'
    | 'settle'
    | 'waitsInLine'
    | 'nextInLine'
    | 'open'
    | 'releaseLease'
    | 'takeSlot'
    | 'releaseSlot'
    | 'releaseSlots'
    | 'park'
    | 'unpark'
    | 'wakeParked'
  >;
  readonly queue: DeliveryQueue;
  readonly box: Pick<SecretBox, 'open'>;
  /** Posts to the API's endpoints. */
  readonly poster: WebhookPoster;
  /** Posts to crew runs' own endpoints (any user's URL: nothing internal unless listed). */
  readonly runPoster: WebhookPoster;
  /** Seconds before each retry (WEBHOOK_RETRY_SCHEDULE). */
  readonly retrySchedule: readonly number[];
  /** The time deliveries are due, leased, attempted and recorded at: the system's unless given. */
  readonly clock?: Clock;
}

/**
 * The delivery worker (docs/events-and-webhooks.md): makes the attempt a queue message asks for, once it is
 * due, its endpoint is enabled (and, for a crew run's own, the run was not cancelled since
 * the event), no earlier delivery of the same endpoint and subject is still open and one of
 * the endpoint's MAX_IN_FLIGHT slots is free (for a crew run's own endpoint, one of its
 * starter's PRINCIPAL_SHARE slots of the per-run lane too, taken by the same write, else it is
 * parked until one is let go); records it; queues the retry or, when the delivery is done,
 * wakes the next in line. Every step is safe to repeat: a message handed twice finds its
 * attempt made. `handle` answers what this message settled (for the metrics), or undefined
 * when it settled nothing: not due, waiting in line, parked or for a slot, stale, or handed
 * again after settling.
 */
export class WebhookDeliverer {
  private readonly clock: Clock;

  constructor(private readonly deps: DelivererDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  async handle(m: DeliveryMessage, messageId: string): Promise<WebhookDeliveryOutcome | undefined> {
    const { deliveries, endpoints, queue } = this.deps;
    const d = await deliveries.get(m.endpoint_id, m.delivery_id);
    if (!d || d.series !== m.series) return undefined; // expired, or redelivered since: a new series has its own messages
    if (d.attempts === m.attempt + 1 && d.attempt_message === messageId) {
      // This very message made the attempt and was handed again: what followed may be lost
      // (both steps are safe to repeat).
      const stored = await endpoints.get(d.endpoint_id);
      const status = d.status;
      if (stored && status !== 'pending') await this.account(stored, { ...d, status });
      await this.followUp(d);
      return undefined;
    }
    if (d.attempts !== m.attempt || !isOpen(d.status)) return undefined; // made by another message
    const now = this.clock.now();
    // Not due yet (a wait longer than SQS delays, or a message handed early): wait on.
    if (m.due > now + 250) {
      await queue.send([{ message: m, delaySeconds: delayUntil(m.due, now) }]);
      return undefined;
    }
    if (await deliveries.waitsInLine(d)) {
      // The one before it wakes it when done; this is the fallback should that be lost.
      const waits = (m.waits ?? 0) + 1;
      await queue.send([{ message: { ...m, waits }, delaySeconds: inLineDelaySeconds(waits - 1) }]);
      return undefined;
    }
    // Read once first in line: what the attempt before said of the endpoint (a 410 disables
    // it before that delivery leaves the line) is seen here.
    const stored = await endpoints.get(d.endpoint_id);
    const why = notSent(stored, d);
    const share = shareOf(stored);
    // Looking again after a park: out of the wait list first (a wake may have taken it already).
    if (m.parked !== undefined && share) await deliveries.unpark(share.principal, m.parked);
    const take = () => deliveries.takeSlot(d.endpoint_id, messageId, now, DELIVERY_LEASE_MS, MAX_IN_FLIGHT, share);
    let slot = why === undefined ? await take() : undefined;
    if (why === undefined && slot === undefined && share) {
      // Its starter holds its share of the per-run lane (or its endpoint its slots): parked
      // until an attempt of theirs ends, no attempt counted; the others' deliveries go first.
      const waits = (m.waits ?? 0) + 1;
      const place = await deliveries.park(
        share.principal,
        { ...m, waits, parked: undefined, woken: true },
        now,
        m.parked,
      );
      // One let go between the refusal and the park found none parked to wake: a look once more.
      slot = await take();
      if (slot === undefined) {
        // What looks again should no wake come: one such message per delivery (a woken one has it).
        if (!m.woken)
          await queue.send([
            { message: { ...m, waits, parked: place, woken: undefined }, delaySeconds: inLineDelaySeconds(waits - 1) },
          ]);
        return undefined;
      }
      // Taken after all: out of the wait list (a wake that took it first sent a message that finds the attempt made).
      await deliveries.unpark(share.principal, place);
    }
    if (why === undefined && slot === undefined) {
      // The endpoint has as many in flight as it may: back in a moment, no attempt counted;
      // the consumer is free for others' deliveries meanwhile.
      const busy = (m.busy ?? 0) + 1;
      await queue.send([{ message: { ...m, busy }, delaySeconds: busyDelaySeconds(busy - 1) }]);
      return undefined;
    }
    let settlement: Settlement;
    try {
      if (!(await deliveries.claim(d, messageId, now, DELIVERY_LEASE_MS))) {
        // Another message holds this attempt. Should its worker have died (a killed local
        // platform, whose queue forgets), this one takes it over once the lease is out; if
        // that other one makes it, this one is stale by then and dropped.
        await queue.send([
          { message: m, delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.ceil(DELIVERY_LEASE_MS / 1000) + 1) },
        ]);
        return undefined;
      }
      if (why !== undefined || !stored) {
        // Deleted, disabled or its run cancelled (its deliveries stop): failed without an
        // attempt; the next in line follows.
        const settled = await deliveries.settle(
          d,
          { ...lastAttempt(d), status: 'failed', last_error: why ?? NOT_SENT_DELETED, next_attempt_at: null },
          undefined,
        );
        if (!settled) return undefined;
        await this.wakeNext(d);
        return 'not_sent';
      }
      settlement = await this.attempt(stored, d, await this.secretsOf(stored, now));
    } finally {
      if (slot !== undefined) {
        const left = await deliveries.releaseSlot(d.endpoint_id, slot, messageId, share);
        if (share && left) await this.wakeParked(share, left);
      }
    }
    // What the attempt says of the endpoint comes first: settling frees the line, and after a
    // 410 the next in line must find the endpoint disabled.
    await this.account(stored, settlement);
    if (!(await deliveries.settle(d, settlement, { messageId }))) return undefined; // redelivered meanwhile
    const after: DeliveryRecord = { ...d, ...settlement, attempts: d.attempts + 1, attempt_message: messageId };
    await this.followUp(after);
    return outcomeOf(settlement);
  }

  /**
   * Queues every open delivery's current attempt again: the local platform at start, whose
   * queue forgot its messages, and whose data directory lock says no other worker is making
   * an attempt (the leases of a killed one are let go; its attempts are made again).
   */
  async requeueOpen(): Promise<number> {
    const open = await this.deps.deliveries.open();
    // A few at once: hundreds may be open after a crash under load, and the start waits for this.
    await mapLimit(open, 8, (d) => this.deps.deliveries.releaseLease(d));
    // The API's endpoints' slots; a crew run's endpoint's are in its starter's share, freed once per starter.
    const principals = new Set<string>();
    for (const endpointId of new Set(open.map((d) => d.endpoint_id))) {
      if (laneOf(endpointId) !== 'runs') {
        await this.deps.deliveries.releaseSlots(endpointId, MAX_IN_FLIGHT);
        continue;
      }
      const share = shareOf(await this.deps.endpoints.get(endpointId));
      if (share && !principals.has(share.principal)) {
        principals.add(share.principal);
        await this.deps.deliveries.releaseSlots(endpointId, MAX_IN_FLIGHT, share);
      }
    }
    const now = this.clock.now();
    await this.deps.queue.send(open.map((d) => currentMessage(d, now)));
    return open.length;
  }

  /**
   * After an attempt: the retry, or the next delivery in line. A retry that will not be sent
   * (its endpoint disabled, deleted or its run cancelled meanwhile) is settled at once rather
   * than when it would have been due.
   */
  private async followUp(d: DeliveryRecord): Promise<void> {
    if (!isOpen(d.status)) return this.wakeNext(d);
    const stopped = notSent(await this.deps.endpoints.get(d.endpoint_id), d) !== undefined;
    await this.deps.queue.send([(stopped ? dueNowMessage : currentMessage)(d, this.clock.now())]);
  }

  /**
   * An attempt let its starter's slot go (`left`: the share's entries after): as many parked
   * deliveries as the share has slots free go on. One not woken (a wake that failed) looks
   * again by its own message later.
   */
  private async wakeParked(share: LaneShare, left: ShareEntries): Promise<void> {
    try {
      const woken = await this.deps.deliveries.wakeParked(
        share.principal,
        freeShareSlots(left, this.clock.now(), share.slots),
      );
      if (woken.length > 0) await this.deps.queue.send(woken.map((message) => ({ message, delaySeconds: 0 })));
    } catch (err) {
      logger.warn('parked webhook deliveries not woken; they look again later', { error: err as Error });
    }
  }

  private async wakeNext(d: DeliveryRecord): Promise<void> {
    const next = await this.deps.deliveries.nextInLine(d);
    if (next && isOpen(next.status)) await this.deps.queue.send([currentMessage(next, this.clock.now())]);
  }

  /** The secrets that sign: the current one, and the one before it for a day after a rotation. */
  private async secretsOf(stored: StoredEndpoint, nowMs: number): Promise<string[]> {
    const context = secretContext(stored.endpoint.id);
    const secrets = [await this.deps.box.open(stored.secret, context)];
    const previous = stored.previousSecret;
    if (previous && Date.parse(previous.until) > nowMs)
      secrets.push(await this.deps.box.open(previous.sealed, context));
    return secrets;
  }

  private async attempt(stored: StoredEndpoint, d: DeliveryRecord, secrets: string[]): Promise<Settlement> {
    const started = this.clock.now();
    const at = new Date(started);
    let status: number | undefined;
    let error: string | undefined;
    try {
      const headers = signedHeaders(secrets, d.event_id, at, d.body);
      const poster = stored.forRun ? this.deps.runPoster : this.deps.poster;
      status = await poster.post(stored.endpoint.url, headers, d.body, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS));
    } catch (err) {
      error = failureText(err, ATTEMPT_FAILURE);
    }
    const finished = this.clock.now();
    const base = {
      last_response_status: status ?? null,
      last_attempt_at: at.toISOString(),
      duration_ms: Math.max(0, Math.round(finished - started)),
    };
    if (status !== undefined && status >= 200 && status < 300)
      return { ...base, status: 'succeeded', last_error: null, next_attempt_at: null };
    if (status === 410)
      return {
        ...base,
        status: 'failed',
        last_error: 'the endpoint answered 410 Gone: it is disabled',
        next_attempt_at: null,
      };
    const why = error ?? `the endpoint answered ${status}`;
    const delay = this.deps.retrySchedule[d.attempts];
    if (delay === undefined) return { ...base, status: 'failed', last_error: why, next_attempt_at: null };
    return {
      ...base,
      status: 'retrying',
      last_error: why,
      next_attempt_at: new Date(finished + delay * 1000).toISOString(),
    };
  }

  /** What an attempt says about its endpoint: 410 disables it, as do five days without a success. */
  private async account(stored: StoredEndpoint, s: Settlement): Promise<void> {
    const { endpoints } = this.deps;
    const id = stored.endpoint.id;
    const at = s.last_attempt_at ?? this.clock.iso();
    const change = { type: 'webhook.endpoint.disabled', actor: null, at: this.clock.iso() } as const;
    if (s.status === 'succeeded') {
      if (stored.failingSince !== undefined) await endpoints.noteSuccess(id);
      return;
    }
    if (s.last_response_status === 410) {
      if (await endpoints.disable(id, 'the endpoint answered 410 Gone', change))
        logger.warn('webhook endpoint disabled: it answered 410 Gone', { webhook_id: id });
      return;
    }
    const since = await endpoints.noteFailure(id, at);
    if (since === undefined || Date.parse(at) - Date.parse(since) < DISABLE_AFTER_MS) return;
    const cutoff = new Date(Date.parse(at) - DISABLE_AFTER_MS).toISOString();
    if (await endpoints.disable(id, `every delivery has failed since ${since}`, change, cutoff))
      logger.warn('webhook endpoint disabled: its deliveries have failed for five days', { webhook_id: id, since });
  }
}

const NOT_SENT_DELETED = 'not sent: the endpoint was deleted';

/** A crew run's own endpoint's share of the per-run lane: its starter's; none for the API's endpoints. */
const shareOf = (stored: StoredEndpoint | undefined): LaneShare | undefined =>
  stored?.forRun ? { principal: stored.principal, slots: PRINCIPAL_SHARE } : undefined;

/** Why a delivery that is first in line is settled without an attempt, or undefined when it goes out. */
function notSent(stored: StoredEndpoint | undefined, d: DeliveryRecord): string | undefined {
  if (!stored) return NOT_SENT_DELETED;
  if (!stored.endpoint.enabled) return 'not sent: the endpoint is disabled';
  if (stoppedByCancel(d, stored.stoppedBefore)) return 'not sent: the run was cancelled';
  return undefined;
}

/** What a settled attempt comes to. */
function outcomeOf(s: Settlement): WebhookDeliveryOutcome {
  if (s.status === 'succeeded') return 'delivered';
  if (s.status === 'retrying') return 'failed_attempt';
  return s.last_response_status === 410 ? 'gone' : 'gave_up';
}

/** The delivery's last attempt as it stands (kept when it is settled without one). */
const lastAttempt = (d: DeliveryRecord) => ({
  last_response_status: d.last_response_status,
  last_attempt_at: d.last_attempt_at,
  duration_ms: d.duration_ms,
});

/** Why an attempt got no answer, in words safe to show (shared/failure-text.ts): at most 500 characters. */
const ATTEMPT_FAILURE = {
  timedOut: `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`,
  // The attempt's only abort is its timeout.
  abortIsTimeout: true,
  cap: (text: string) => (text.length > 500 ? `${text.slice(0, 497)}...` : text),
} as const;
