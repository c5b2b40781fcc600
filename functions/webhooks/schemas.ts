import * as z from 'zod/mini';
import { DOMAIN_EVENT_TYPES } from '../../shared/events/types.js';
import { PageQuery } from '../../shared/params.js';
import { pydanticIssue } from '../../shared/pydantic/issues.js';
import { component, doc } from '../../shared/schema.js';
import { webhookUrl } from '../../shared/webhook-url.js';

/** The kinds of endpoint: the API's (POST /api/webhooks), and crew runs' own (E2 `webhook_url`). */
export const ENDPOINT_KINDS = ['admin', 'run'] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

/** The statuses of a delivery (docs/events-and-webhooks.md). */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'retrying', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Every event type, with and without `dpm.`. */
const KNOWN_TYPES = new Set<string>(DOMAIN_EVENT_TYPES);

/**
 * Why an `event_types` entry is not one, or undefined: an event type of docs/events-and-webhooks.md
 * (`decision.version.approved`, `dpm.` may lead), a prefix of some with `.*`
 * (`decision.*`), or `*` for every type.
 */
export function eventTypeEntryError(entry: string): string | undefined {
  if (entry === '*') return undefined;
  const bare = entry.startsWith('dpm.') ? entry.slice(4) : entry;
  if (bare.endsWith('.*')) {
    const prefix = bare.slice(0, -1);
    if (prefix !== '.' && [...KNOWN_TYPES].some((t) => t.startsWith(prefix))) return undefined;
    return `no event type starts with '${prefix}'`;
  }
  if (KNOWN_TYPES.has(bare)) return undefined;
  return `unknown event type '${entry}': use a domain event type (GET /api/domain-events/types lists them), a prefix ending in '.*', or '*'`;
}

const EventTypeEntry = z.string().check(
  z.maxLength(200),
  z.superRefine((entry, ctx) => {
    const error = eventTypeEntryError(entry);
    if (error)
      ctx.addIssue({
        code: 'custom',
        input: entry,
        params: pydanticIssue('value_error', `Value error, ${error}`, { error }),
      });
  }),
);

const EventTypes = doc(
  z.array(EventTypeEntry).check(z.minLength(1), z.maxLength(100)),
  'the event types this endpoint receives: a type (`decision.version.approved`), a prefix with `.*` (`decision.*`), or `*` for every type; `dpm.` may lead',
  { example: ['decision.version.approved', 'crew.run.*'] },
);

const Url = webhookUrl('where deliveries are POSTed');

const Description = doc(z.nullable(z.string().check(z.maxLength(1000))), 'what the endpoint is for', {
  example: 'data catalog sync',
});

export const WebhookCreateRequest = component(
  'WebhookCreateRequest',
  z.strictObject({
    url: Url,
    event_types: z.optional(EventTypes),
    description: z.optional(Description),
    enabled: doc(z.optional(z.boolean()), 'whether deliveries go out (default true)'),
  }),
);
export type WebhookCreateRequest = z.infer<typeof WebhookCreateRequest>;

export const WebhookUpdateRequest = component(
  'WebhookUpdateRequest',
  z.strictObject({
    url: z.optional(Url),
    event_types: z.optional(EventTypes),
    description: z.optional(Description),
    enabled: doc(
      z.optional(z.boolean()),
      'false stops deliveries (the endpoint is disabled); true enables it again and clears `disabled_reason`',
    ),
  }),
);
export type WebhookUpdateRequest = z.infer<typeof WebhookUpdateRequest>;

const endpointFields = {
  id: doc(
    z.string(),
    "the endpoint id: a UUID assigned at creation, or `run-<correlation_id>` for a crew run's own endpoint",
  ),
  url: doc(z.string(), 'where deliveries are POSTed'),
  event_types: doc(z.array(z.string()), 'the event types it receives (`*`: every type)'),
  description: doc(z.nullable(z.string()), 'what the endpoint is for'),
  enabled: doc(z.boolean(), 'whether deliveries go out'),
  disabled_reason: doc(
    z.nullable(z.string()),
    'why the service disabled it (a `410 Gone` answer, five days of failed deliveries); null otherwise',
  ),
  created_by: doc(z.string(), 'the name of who created it'),
  created_at: doc(z.iso.datetime(), 'when it was created (ISO 8601 UTC)'),
  updated_at: doc(z.iso.datetime(), 'when it last changed (ISO 8601 UTC)'),
};

export const WebhookEndpoint = component('WebhookEndpoint', z.object(endpointFields));
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = component(
  'WebhookEndpointWithSecret',
  z.object({
    ...endpointFields,
    secret: doc(
      z.string(),
      '`whsec_` + base64 of 32 random bytes: verifies `webhook-signature` (Standard Webhooks). Shown only here: keep it',
    ),
  }),
);
export type WebhookEndpointWithSecret = z.infer<typeof WebhookEndpointWithSecret>;

export const WebhookDelivery = component(
  'WebhookDelivery',
  z.object({
    id: doc(z.uuid(), 'the delivery id (UUID)'),
    event_id: doc(z.string(), 'the event delivered: `webhook-id` of every attempt'),
    event_type: doc(z.string(), 'its type (`dpm.<type>`)'),
    status: doc(z.enum(DELIVERY_STATUSES), 'pending (not tried yet), retrying, succeeded or failed (for good)'),
    attempts: doc(z.int(), 'attempts of the current series'),
    last_response_status: doc(z.nullable(z.int()), "the last attempt's HTTP status; null when none answered"),
    last_error: doc(z.nullable(z.string()), 'why the last attempt failed; null after a success'),
    last_attempt_at: doc(z.nullable(z.iso.datetime()), 'when the last attempt started'),
    next_attempt_at: doc(z.nullable(z.iso.datetime()), 'when the next attempt is due; null once it is done'),
    duration_ms: doc(z.nullable(z.int()), 'how long the last attempt took, in milliseconds'),
  }),
);
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookParams = z.object({
  webhook_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the endpoint id returned at creation'),
});

export const DeliveryParams = z.object({
  webhook_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the endpoint id returned at creation'),
  delivery_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the delivery id'),
});

export const WebhooksQuery = z.extend(PageQuery, {
  kind: doc(
    z.optional(z.enum(ENDPOINT_KINDS)),
    "`admin` (the default): the endpoints made with POST /api/webhooks; `run`: crew runs' own endpoints (`run-<correlation_id>`, from E2's `webhook_url`)",
  ),
});
export type WebhooksQuery = z.infer<typeof WebhooksQuery>;

export const DeliveriesQuery = z.extend(PageQuery, {
  status: doc(z.optional(z.enum(DELIVERY_STATUSES)), 'only deliveries in this status'),
});
export type DeliveriesQuery = z.infer<typeof DeliveriesQuery>;
