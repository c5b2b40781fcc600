import { randomUUID } from 'node:crypto';
import type { Caller } from '../../shared/auth/caller.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import type { Page } from '../../shared/page.js';
import { Conflict, Invalid, NotFound, valueError } from '../../shared/errors.js';
import { type Change, type DomainEvent, envelope, envelopeType } from '../../shared/events/types.js';
import type { SecretBox } from '../../shared/secrets.js';
import { redactUrl } from '../../shared/redact.js';
import { AGAIN, retry } from '../../shared/retry.js';
import { currentMessage, type DeliveryQueue } from './delivery-queue.js';
import { newWebhookSecret, secretContext, type UrlRules } from './run-endpoint.js';
import type {
  DeliveriesQuery,
  EndpointKind,
  WebhookCreateRequest,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookUpdateRequest,
} from './schemas.js';
import { type EndpointFields, type StoredEndpoint, type WebhookStore } from './endpoint-store.js';
import { type DeliveryStore, newDelivery, toDelivery } from './delivery-store.js';

/** A rotated-out secret keeps signing this long (docs/events-and-webhooks.md). */
export const PREVIOUS_SECRET_MS = 86_400_000;

export interface WebhookServiceDeps {
  readonly endpoints: WebhookStore;
  readonly deliveries: DeliveryStore;
  readonly queue: DeliveryQueue;
  readonly box: Pick<SecretBox, 'seal'>;
  readonly urls: UrlRules;
  /** `dpm/<stage>`: the `source` of test events. */
  readonly source: string;
  /** The time the service reads: the system's unless given. */
  readonly clock?: Clock;
}

/** Up to this many tries when an endpoint changes between read and write. */
const ROUNDS = 5;

/**
 * Webhook endpoints and their deliveries (docs/events-and-webhooks.md): admins only (the app says so). A
 * crew run's own endpoint (`run-<correlation_id>`) is read, disabled, deleted, pinged and
 * redelivered like any; its URL and event types are the run's.
 */
export class WebhookService {
  private readonly clock: Clock;

  constructor(private readonly deps: WebhookServiceDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  async create(req: WebhookCreateRequest, caller: Caller): Promise<WebhookEndpointWithSecret> {
    this.checkUrl(req.url);
    const id = randomUUID();
    const at = this.clock.iso();
    const secret = newWebhookSecret();
    const endpoint: WebhookEndpoint = {
      id,
      url: req.url,
      event_types: distinct(req.event_types ?? ['*']),
      description: req.description ?? null,
      enabled: req.enabled ?? true,
      disabled_reason: null,
      created_by: caller.name,
      created_at: at,
      updated_at: at,
    };
    await this.deps.endpoints.create(endpoint, caller.principal, await this.deps.box.seal(secret, secretContext(id)));
    return { ...endpoint, secret };
  }

  list(kind: EndpointKind, limit: number, cursor: string | undefined): Promise<Page<WebhookEndpoint>> {
    return this.deps.endpoints.list(kind, limit, cursor);
  }

  async get(id: string): Promise<WebhookEndpoint> {
    return (await this.stored(id)).endpoint;
  }

  /**
   * Sets the fields given. Disabling an enabled endpoint is its `webhook.endpoint.disabled`
   * event; enabling it clears `disabled_reason` and the failures counted so far.
   */
  async update(id: string, req: WebhookUpdateRequest, caller: Caller): Promise<WebhookEndpoint> {
    if (req.url !== undefined) this.checkUrl(req.url);
    const written = await retry(
      async () => {
        const stored = await this.stored(id);
        if (stored.forRun && (req.url !== undefined || req.event_types !== undefined))
          throw new Conflict(`Webhook ${id} is a crew run's own: its URL and event types are the run's`);
        const current = stored.endpoint;
        const at = this.clock.iso();
        const fields: EndpointFields = {
          updated_at: at,
          ...(req.url !== undefined ? { url: req.url } : {}),
          ...(req.event_types !== undefined ? { event_types: distinct(req.event_types) } : {}),
          ...(req.description !== undefined ? { description: req.description } : {}),
          ...(req.enabled !== undefined ? { enabled: req.enabled } : {}),
          ...(req.enabled === true && !current.enabled ? { disabled_reason: null } : {}),
        };
        const change: Change | undefined =
          req.enabled === false && current.enabled
            ? { type: 'webhook.endpoint.disabled', actor: caller.name, at }
            : undefined;
        const updated = await this.deps.endpoints.update(id, fields, current.enabled, change);
        if (updated === undefined) throw new NotFound(`No webhook ${id}`);
        return updated === 'changed' ? AGAIN : updated;
      },
      { attempts: ROUNDS },
    );
    if (written.done) return written.value;
    throw new Conflict(`Webhook ${id} changed concurrently; try again`);
  }

  async delete(id: string): Promise<void> {
    if (!(await this.deps.endpoints.delete(id))) throw new NotFound(`No webhook ${id}`);
  }

  /** A new secret, shown once; the old one keeps signing for a day. */
  async rotateSecret(id: string): Promise<WebhookEndpointWithSecret> {
    const written = await retry(
      async () => {
        const current = await this.stored(id);
        const secret = newWebhookSecret();
        const sealed = await this.deps.box.seal(secret, secretContext(id));
        const now = this.clock.now();
        const until = new Date(now + PREVIOUS_SECRET_MS).toISOString();
        const rotated = await this.deps.endpoints.rotate(
          id,
          current.secret,
          sealed,
          until,
          new Date(now).toISOString(),
        );
        if (rotated === undefined) throw new NotFound(`No webhook ${id}`);
        return rotated === 'changed' ? AGAIN : { ...rotated, secret };
      },
      { attempts: ROUNDS },
    );
    if (written.done) return written.value;
    throw new Conflict(`Webhook ${id} changed concurrently; try again`);
  }

  /**
   * A `dpm.webhook.test` event to this endpoint alone (subject `webhooks/{id}/test`, its own
   * sequence), delivered like any other.
   */
  async test(id: string, caller: Caller): Promise<WebhookDelivery> {
    const { endpoint } = await this.enabled(id);
    const sequence = await this.deps.endpoints.nextTestSequence(id);
    if (sequence === undefined) throw new NotFound(`No webhook ${id}`);
    const at = this.clock.iso();
    const event = envelope({
      id: randomUUID(),
      source: this.deps.source,
      type: envelopeType('webhook.test'),
      subject: `webhooks/${id}/test`,
      time: at,
      actor: caller.name,
      sequence,
      data: { ...endpoint },
    });
    const delivery = newDelivery(id, event, at);
    await this.deps.deliveries.create(delivery);
    try {
      await this.deps.queue.send([currentMessage(delivery, this.clock.now())]);
    } catch (err) {
      // Never queued: nothing of it stays behind (it would wait in line forever).
      await this.deps.deliveries.remove(delivery).catch(() => undefined);
      throw err;
    }
    return toDelivery(delivery);
  }

  /** Newest first. */
  async deliveries(id: string, query: DeliveriesQuery): Promise<Page<WebhookDelivery>> {
    await this.stored(id);
    const page = await this.deps.deliveries.list(id, query.status, query.limit, query.cursor);
    return { items: page.items.map(toDelivery), nextCursor: page.nextCursor };
  }

  /**
   * A new attempt series of a delivery, whatever its status. Redeliveries of one delivery
   * at once make one series: each answers it (only the one that started it queues it).
   */
  async redeliver(id: string, deliveryId: string): Promise<WebhookDelivery> {
    await this.enabled(id);
    const redelivered = await this.deps.deliveries.redeliver(id, deliveryId, this.clock.iso());
    if (!redelivered) throw new NotFound(`No delivery ${deliveryId} of webhook ${id}`);
    if (redelivered === 'contended')
      throw new Conflict(`Delivery ${deliveryId} of webhook ${id} changed concurrently; try again`);
    const { started, delivery } = redelivered;
    if (!started) return toDelivery(delivery);
    try {
      await this.deps.queue.send([currentMessage(delivery, this.clock.now())]);
    } catch (err) {
      // Not queued: say so on the delivery rather than leave it pending for ever.
      await this.deps.deliveries
        .settle(
          delivery,
          {
            status: 'failed',
            last_response_status: null,
            last_error: 'not queued: the delivery queue did not answer; redeliver it',
            last_attempt_at: null,
            next_attempt_at: null,
            duration_ms: null,
          },
          undefined,
        )
        .catch(() => undefined);
      throw err;
    }
    return toDelivery(delivery);
  }

  private async stored(id: string): Promise<StoredEndpoint> {
    const stored = await this.deps.endpoints.get(id);
    if (!stored) throw new NotFound(`No webhook ${id}`);
    return stored;
  }

  private async enabled(id: string): Promise<StoredEndpoint> {
    const stored = await this.stored(id);
    if (!stored.endpoint.enabled)
      throw new Conflict(`Webhook ${id} is disabled: enable it first (PATCH enabled: true)`);
    return stored;
  }

  private checkUrl(url: string): void {
    const refusal = this.deps.urls.refusal(url);
    // The input is echoed without the URL's credentials, if it carries any.
    if (refusal) throw new Invalid([valueError(['body', 'url'], refusal, redactUrl(url))]);
  }
}

const distinct = (values: readonly string[]): string[] => [...new Set(values)];
