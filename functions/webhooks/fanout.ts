import { type Clock, systemClock } from '../../shared/clock.js';
import type { DomainEvent } from '../../shared/events/types.js';
import { logger } from '../../shared/logger.js';
import { currentMessage, type DeliveryQueue, dueNowMessage, inLineDelaySeconds } from './delivery-queue.js';
import { runEndpointId, stoppedByCancel } from './run-endpoint.js';
import { type WebhookStore } from './endpoint-store.js';
import type { WebhookEndpoint } from './schemas.js';
import { type DeliveryRecord, type DeliveryStore, newDelivery } from './delivery-store.js';

/** Whether an endpoint taking `eventTypes` (types, `prefix.*`, `*`; `dpm.` may lead) takes events of `type`. */
export function takes(eventTypes: readonly string[], type: string): boolean {
  const bare = (t: string) => (t.startsWith('dpm.') ? t.slice(4) : t);
  const wanted = bare(type);
  return eventTypes.some((entry) => {
    if (entry === '*') return true;
    const e = bare(entry);
    return e.endsWith('.*') ? wanted.startsWith(e.slice(0, -1)) : e === wanted;
  });
}

export interface FanoutDeps {
  readonly endpoints: Pick<WebhookStore, 'enabled' | 'get' | 'stopBefore'>;
  readonly deliveries: Pick<DeliveryStore, 'create' | 'openOf'>;
  readonly queue: DeliveryQueue;
  /** The time deliveries are due, leased, attempted and recorded at: the system's unless given. */
  readonly clock?: Clock;
  /** How long the endpoints read are used (ENDPOINTS_FRESH_MS unless given). */
  readonly endpointsFreshMs?: number;
}

/**
 * How long a dispatcher uses the enabled endpoints it read before reading them again: an
 * event costs no read of them (one Query per 10 s per dispatcher instead of one per batch).
 * An endpoint created, changed or disabled takes effect in every dispatcher within this
 * time, and at once in one that sees its change: the local platform's (its writes of the
 * webhooks table, endpointsChanged) and one handed a `webhook.endpoint.*` event.
 */
export const ENDPOINTS_FRESH_MS = 10_000;

/** Event types whose arrival means the endpoints changed (read them again before fanning out). */
const ENDPOINT_EVENT_PREFIX = 'dpm.webhook.endpoint.';

/**
 * The dispatcher's webhook half (docs/events-and-webhooks.md): each recorded event becomes one delivery per
 * enabled endpoint that takes its type, queued for the delivery worker. Handed the same
 * event again (a batch retried after a failure), it finds the deliveries it made (one per
 * endpoint and event) and queues again any that may not have been queued. One subject's
 * events are fanned out in their order, so its deliveries take their places in line in
 * sequence order.
 */
export class WebhookFanout {
  private readonly clock: Clock;

  constructor(private readonly deps: FanoutDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /** The enabled endpoints as last read, and when; a failed read is not kept. */
  private endpointsRead?: { readonly at: number; readonly endpoints: Promise<WebhookEndpoint[]> };

  /** The endpoints changed (a write of this process, or their event): the next fan-out reads them. */
  endpointsChanged(): void {
    this.endpointsRead = undefined;
  }

  /** The enabled endpoints: read at most once per ENDPOINTS_FRESH_MS (concurrent fan-outs share one read). */
  private enabledEndpoints(): Promise<WebhookEndpoint[]> {
    const now = this.clock.now();
    const read = this.endpointsRead;
    if (read && now - read.at < (this.deps.endpointsFreshMs ?? ENDPOINTS_FRESH_MS)) return read.endpoints;
    const endpoints = this.deps.endpoints.enabled();
    const entry = { at: now, endpoints };
    this.endpointsRead = entry;
    endpoints.catch(() => {
      if (this.endpointsRead === entry) this.endpointsRead = undefined;
    });
    return endpoints;
  }

  /** The ids of the events not fanned out (with every later one of their subject): hand them again. */
  async fanOut(events: readonly DomainEvent[]): Promise<ReadonlySet<string>> {
    const failed = new Set<string>();
    if (events.length === 0) return failed;
    if (events.some((e) => e.type.startsWith(ENDPOINT_EVENT_PREFIX))) this.endpointsChanged();
    let endpoints;
    try {
      endpoints = await this.enabledEndpoints();
    } catch (err) {
      logger.warn('webhook endpoints not read; events handed again', { count: events.length, error: err as Error });
      return new Set(events.map((e) => e.id));
    }
    if (endpoints.length === 0) return failed;
    const bySubject = new Map<string, DomainEvent[]>();
    for (const e of events) bySubject.set(e.subject, [...(bySubject.get(e.subject) ?? []), e]);
    await Promise.all(
      [...bySubject.values()].map(async (list) => {
        for (const [i, event] of list.entries()) {
          const takers = endpoints.filter((endpoint) => takes(endpoint.event_types, event.type));
          try {
            await this.deliver(
              event,
              takers.map((t) => t.id),
            );
          } catch (err) {
            logger.warn('event not fanned out to webhooks; handed again', { event_id: event.id, error: err as Error });
            for (const later of list.slice(i)) failed.add(later.id);
            return;
          }
        }
      }),
    );
    return failed;
  }

  /**
   * A crew run's E13 events (as `dpm.crew.run.event` envelopes, in index order) to the run's
   * own endpoint, when it has one that is enabled (docs/events-and-webhooks.md, per-run webhooks). Answers
   * the ids not fanned out: that one and every later one, handed again in order.
   *
   * Cancelling a run stops its undelivered deliveries: at `run.cancelled` the endpoint is
   * marked stopped before that event, so the worker settles each earlier delivery that has
   * not gone out `failed` (an attempt under way finishes, and is not retried), and the first
   * of them still open is woken now rather than at its retry. `run.cancelled` itself, and
   * what a retried run writes after it, are delivered.
   *
   * The batch's deliveries are all recorded before any is queued: only the first goes now,
   * those after it are behind it in line (one run, one subject), woken one by one as each
   * before is done. Each is queued too, to look again much later should that wake be lost,
   * not to be handed at once only to find itself waiting: a run of many events whose
   * receiver hangs costs the per-run lane one message now, not one per event.
   */
  async fanOutToRun(correlationId: string, events: readonly DomainEvent[]): Promise<ReadonlySet<string>> {
    const failed = new Set<string>();
    let stored;
    try {
      stored = await this.deps.endpoints.get(runEndpointId(correlationId));
    } catch (err) {
      logger.warn("crew run's webhook not read; events handed again", {
        correlation_id: correlationId,
        error: err as Error,
      });
      return new Set(events.map((e) => e.id));
    }
    if (!stored?.forRun || !stored.endpoint.enabled) return failed;
    const ordered = [...events].sort((a, b) => a.sequence - b.sequence);
    const made: DeliveryRecord[] = [];
    for (const [i, event] of ordered.entries()) {
      try {
        if ((event.data as { type?: unknown }).type === 'run.cancelled')
          await this.stopBefore(stored.endpoint.id, event.sequence);
        made.push(...(await this.record(event, [stored.endpoint.id])));
      } catch (err) {
        logger.warn("crew run event not fanned out to the run's webhook; handed again", {
          correlation_id: correlationId,
          event_id: event.id,
          error: err as Error,
        });
        for (const later of ordered.slice(i)) failed.add(later.id);
        break;
      }
    }
    const now = this.clock.now();
    try {
      await this.deps.queue.send(
        made.map((d, i) => {
          if (i === 0) return currentMessage(d, now);
          const { message } = currentMessage(d, now);
          return { message: { ...message, waits: 1 }, delaySeconds: inLineDelaySeconds(0) };
        }),
      );
    } catch (err) {
      // Recorded and not queued: handed again, they are found and queued then.
      logger.warn("crew run events' deliveries not queued; handed again", {
        correlation_id: correlationId,
        error: err as Error,
      });
      return new Set(ordered.map((e) => e.id));
    }
    return failed;
  }

  /** Marks the run's endpoint stopped before `sequence` and wakes its first open delivery before it. */
  private async stopBefore(endpointId: string, sequence: number): Promise<void> {
    await this.deps.endpoints.stopBefore(endpointId, sequence);
    const first = (await this.deps.deliveries.openOf(endpointId))
      .filter((d) => stoppedByCancel(d, sequence))
      .sort((a, b) => a.sequence - b.sequence)[0];
    if (!first) return;
    // Due now: the worker settles it (or, when an attempt of it is under way, leaves it to that one).
    await this.deps.queue.send([dueNowMessage(first, this.clock.now())]);
  }

  private async deliver(event: DomainEvent, endpointIds: readonly string[]): Promise<void> {
    const toQueue = await this.record(event, endpointIds);
    await this.deps.queue.send(toQueue.map((d) => currentMessage(d, this.clock.now())));
  }

  /** The event's deliveries to those endpoints, recorded: those to queue (new ones, and earlier ones never tried). */
  private async record(event: DomainEvent, endpointIds: readonly string[]): Promise<DeliveryRecord[]> {
    if (endpointIds.length === 0) return [];
    const at = this.clock.iso();
    const made = await Promise.all(endpointIds.map((id) => this.deps.deliveries.create(newDelivery(id, event, at))));
    // Earlier ones never tried may have lost their message.
    return made
      .map(({ delivery }) => delivery)
      .filter(
        (d): d is DeliveryRecord => d !== undefined && d.status === 'pending' && d.attempts === 0 && d.series === 0,
      );
  }
}
