import { createHash, randomBytes } from 'node:crypto';
import { listAttributes } from '../../shared/aws/listing.js';
import { type DomainEvent, envelope } from '../../shared/events/types.js';
import type { SecretBox, Sealed } from '../../shared/secrets.js';

/*
 * Per-run webhooks (docs/events-and-webhooks.md, E2's `webhook_url`): a crew run started with a URL gets an
 * endpoint of its own in the webhooks table, written in the run's creating transaction.
 * It takes only its run's E13 events (as `dpm.crew.run.event` envelopes), is listed apart
 * from the API's endpoints (`GET /api/webhooks?kind=run`, its own `list_pk`), and expires
 * with the run. Delivery, signing, retries, ordering and 410 are those of every endpoint;
 * its deliveries have a lane of their own (delivery-queue.ts), and cancelling the run
 * stops those not made yet (fanout.ts). Below the service and the stores, it also holds what
 * every endpoint has: its signing secret's making and seal context, and the URL rules' port.
 */

/**
 * Which URLs an endpoint may have (the API's endpoints, WebhookService; a run's, RunEndpoints):
 * why one is refused, or undefined (nothing is resolved).
 */
export interface UrlRules {
  refusal(url: string): string | undefined;
}

/** A new signing secret (docs/events-and-webhooks.md): `whsec_` + base64 of 32 random bytes. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** What the seal of an endpoint's secret is bound to: it cannot be moved to another endpoint. */
export const secretContext = (id: string) => `webhook:${id}`;

/** The endpoint id of a run's webhook. */
export const runEndpointId = (correlationId: string): string => `run-${correlationId}`;

/** Whether an endpoint id is a run's (the API's endpoints have UUIDs). */
export const isRunEndpointId = (id: string): boolean => id.startsWith('run-');

/** What marks a run's endpoint in the webhooks table. */
export const RUN_ENDPOINT_KIND = 'run';

/** The `list_pk` of runs' endpoints (the API's endpoints have `webhook`). */
export const RUN_ENDPOINT_LIST_PK = 'webhook-run';

/** The envelope type of a run's E13 events. */
export const RUN_EVENT_TYPE = 'dpm.crew.run.event';

/**
 * Whether a delivery is of a run's event from before the run was cancelled: `stoppedBefore`
 * is the sequence of its `run.cancelled` (fanout.ts marks the endpoint); such a delivery is
 * not sent.
 */
export const stoppedByCancel = (
  d: { readonly event_type: string; readonly sequence: number },
  stoppedBefore: number | undefined,
): boolean => stoppedBefore !== undefined && d.event_type === RUN_EVENT_TYPE && d.sequence < stoppedBefore;

export interface RunEndpoint {
  readonly correlationId: string;
  readonly url: string;
  readonly createdBy: string;
  readonly principal: string;
  readonly createdAt: string;
  readonly secret: Sealed;
  /** Epoch seconds: the run's own expiry. */
  readonly expiresAt: number;
}

/**
 * Per-run endpoints as crews starts runs with them (crews' RunWebhooks port, wired by its
 * composition): the URL under the per-run rules, a new secret sealed to the endpoint.
 */
export class RunEndpoints {
  constructor(
    private readonly urls: UrlRules,
    private readonly box: Pick<SecretBox, 'seal'>,
  ) {}

  refusal(url: string): string | undefined {
    return this.urls.refusal(url);
  }

  async endpoint(run: Omit<RunEndpoint, 'secret'>): Promise<{ item: Record<string, unknown>; secret: string }> {
    const secret = newWebhookSecret();
    const sealed = await this.box.seal(secret, secretContext(runEndpointId(run.correlationId)));
    return { item: runEndpointItem({ ...run, secret: sealed }), secret };
  }
}

/** The webhooks-table item of a run's endpoint. */
export function runEndpointItem(e: RunEndpoint): Record<string, unknown> {
  return {
    id: runEndpointId(e.correlationId),
    kind: RUN_ENDPOINT_KIND,
    url: e.url,
    event_types: [RUN_EVENT_TYPE],
    description: `crew run ${e.correlationId}`,
    enabled: true,
    disabled_reason: null,
    created_by: e.createdBy,
    created_by_principal: e.principal,
    created_at: e.createdAt,
    updated_at: e.createdAt,
    secret: e.secret,
    expires_at: e.expiresAt,
    ...listAttributes(RUN_ENDPOINT_LIST_PK, e.createdAt, runEndpointId(e.correlationId)),
  };
}

/** Crew events are named in this namespace (a fixed, random UUID) for their envelope ids. */
const RUN_EVENT_NAMESPACE = Buffer.from('4f3a2d0e8b6c4b1a9e5d7c2f1a0b3c4d', 'hex');

/**
 * The envelope id of a run's event `index`: a name-based UUID (RFC 9562 version 5), so the
 * same event handed again is the same delivery, and receivers deduplicate on it.
 */
export function runEventId(correlationId: string, index: number): string {
  const hash = createHash('sha1').update(RUN_EVENT_NAMESPACE).update(`${correlationId}#${index}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A run's E13 event as the envelope its webhook receives (`sequence` = index + 1). */
export function runEventEnvelope(
  event: { readonly correlation_id: string; readonly index: number; readonly timestamp: string },
  origin: string,
): DomainEvent {
  return envelope({
    id: runEventId(event.correlation_id, event.index),
    source: origin,
    type: RUN_EVENT_TYPE,
    subject: `crew-runs/${event.correlation_id}`,
    time: event.timestamp,
    actor: null,
    sequence: event.index + 1,
    data: { ...event },
  });
}
