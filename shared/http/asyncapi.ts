import * as z from 'zod/mini';
import { doc } from '../schema.js';
import { type DocumentInfo, type Json, SchemaSet } from './openapi.js';

/**
 * The AsyncAPI 3.0 document of the domain events (docs/events-and-webhooks.md), made like the OpenAPI
 * document: zod's JSON Schema output of the same schemas, a component a `$ref` to
 * `#/components/schemas/<id>` said exactly as /openapi.json says it (draft-07, the schema
 * dialect AsyncAPI 3.0 reads). One channel, the stage's events, reached on two servers:
 * the EventBridge bus and webhooks; one message per event type, whose payload is the
 * CloudEvents envelope with that type's `data`. Only `npm run openapi`
 * (functions/platform/asyncapi.json, which the platform Lambda serves) and the tests
 * import this module.
 */

type Schema = z.core.$ZodType;

/** One event type: its subject's form, a line on what happened and the schema of its `data`. */
export interface EventSpec {
  readonly subject: string;
  readonly summary: string;
  readonly data: Schema;
}

export interface EventDocumentSpec {
  /** Event type without the `dpm.` prefix → what it carries. */
  readonly events: Readonly<Record<string, EventSpec>>;
  /** The CloudEvents envelope: every message's payload, with its `type`, `subject` and `data` narrowed. */
  readonly envelope: Schema;
  /** The headers of a webhook delivery. */
  readonly headers: Schema;
  /** Schemas named in this document only (`#/components/schemas/<id>`), beside the shared components. */
  readonly named?: Readonly<Record<string, Schema>>;
}

const CHANNEL = 'domainEvents';
const OPERATION = 'sendDomainEvent';
const SCHEMAS = '#/components/schemas/';

/** The AsyncAPI servers: where a consumer meets the channel. */
const SERVERS = {
  eventbridge: {
    host: 'events.{region}.amazonaws.com',
    pathname: '/dpm-{stage}',
    protocol: 'eventbridge',
    title: "The stage's EventBridge bus `dpm-<stage>`",
    description: [
      "On AWS every event is put on the stage's bus `dpm-<stage>`: `Source` `dpm.<stage>`, `DetailType` the",
      'event type (`dpm.<type>`), `Detail` the envelope. The bus keeps an archive to replay from.',
      'Subscribe with an ordinary EventBridge rule, e.g. `{"source": ["dpm.prod"], "detail-type": ["dpm.decision.version.approved"]}`;',
      'another account subscribes through a rule that forwards to its own bus. No bus runs locally.',
    ].join(' '),
    variables: {
      region: { description: "the stage's AWS region", examples: ['eu-central-1'] },
      stage: { description: 'the stage (`STAGE`)', examples: ['dev', 'staging', 'prod'] },
    },
  },
  webhooks: {
    host: '{host}',
    protocol: 'https',
    title: 'Webhooks: the endpoints registered with `POST /api/webhooks`',
    description: [
      'Each enabled endpoint whose `event_types` match receives a `POST` of the envelope',
      '(`content-type: application/json`), signed as Standard Webhooks says (the message headers).',
      'A 2xx answer within 10 s is success; anything else is retried (by default after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: `WEBHOOK_RETRY_SCHEDULE`),',
      'then the delivery is `failed` and can be redelivered. `410 Gone` disables the endpoint.',
      'Delivery is at least once: deduplicate on `webhook-id`. Events about one subject arrive in `sequence` order.',
      '`http` only to hosts listed in `WEBHOOK_ALLOWED_HOSTS`.',
    ].join(' '),
    variables: { host: { description: "the endpoint's host, from its registered `url`" } },
  },
};

/** The schemas `value` refers to, and those they refer to, by `#/components/schemas/<id>`. */
function referenced(value: unknown, schemas: Record<string, Json>, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const v of value) referenced(v, schemas, into);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith(SCHEMAS)) {
        const id = v.slice(SCHEMAS.length);
        if (!into.has(id)) {
          into.add(id);
          referenced(schemas[id], schemas, into);
        }
      } else referenced(v, schemas, into);
    }
  }
  return into;
}

/** The document: every event type a message of the one channel, every schema they use a component. */
export function asyncApiDocument(info: DocumentInfo, spec: EventDocumentSpec) {
  const set = new SchemaSet({ target: 'draft-07', named: spec.named });
  const types = Object.keys(spec.events).sort();
  const headers = set.use(spec.headers);
  const drafts = types.map((type) => {
    const event = spec.events[type]!;
    // The envelope as /openapi.json names it, narrowed to this type: its `type`, its subject's form, its `data`.
    const payload = z.intersection(
      spec.envelope,
      z.object({
        type: doc(z.literal(`dpm.${type}`), `always \`dpm.${type}\``),
        subject: doc(z.string(), `the resource path: \`${event.subject}\``),
        data: event.data,
      }),
    );
    return {
      type,
      message: {
        name: type,
        title: `dpm.${type}`,
        summary: event.summary,
        description: `Subject \`${event.subject}\`. \`data\` is the resource as its GET answers after the change (never a secret), plus what the change was about where the resource alone does not say it.`,
        contentType: 'application/json',
        tags: [{ name: type.split('.')[0]! }],
        headers,
        payload: set.use(payload),
      },
    };
  });
  const { schemas, resolve } = set.generate();
  const messages = Object.fromEntries(drafts.map(({ type, message }) => [type, resolve(message)]));
  const used = referenced(messages, schemas);
  return {
    asyncapi: '3.0.0' as const,
    info,
    defaultContentType: 'application/json',
    servers: SERVERS,
    channels: {
      [CHANNEL]: {
        address: null,
        title: 'Domain events',
        description: [
          'Every state change the service commits, as a CloudEvents 1.0 envelope (JSON structured mode):',
          'an event exists if and only if its change was committed; it is delivered at least once to every',
          'consumer (deduplicate on `id`); events about one subject keep their order (`sequence`: 1, 2, 3... without gaps).',
          "The address is the bus on EventBridge, the endpoint's URL on webhooks.",
          'Admins read the same events with `GET /api/domain-events` (kept `EVENTS_TTL_DAYS`).',
        ].join(' '),
        servers: Object.keys(SERVERS).map((name) => ({ $ref: `#/servers/${name}` })),
        messages: Object.fromEntries(types.map((type) => [type, { $ref: `#/components/messages/${type}` }])),
      },
    },
    operations: {
      [OPERATION]: {
        action: 'send' as const,
        channel: { $ref: `#/channels/${CHANNEL}` },
        title: 'Publish a domain event',
        summary: 'The service sends an event for every change it commits',
        messages: types.map((type) => ({ $ref: `#/channels/${CHANNEL}/messages/${type}` })),
      },
    },
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).filter(([id]) => used.has(id))),
      messages,
    },
  };
}
