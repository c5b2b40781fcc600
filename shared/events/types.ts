/**
 * Domain events (docs/events-and-webhooks.md): every committed change of a domain resource, as a
 * CloudEvents 1.0 envelope. The types below are the contract's table; `dpm.` is added in
 * the envelope.
 */
export const DOMAIN_EVENT_TYPES = [
  'decision.version.created',
  'decision.version.submitted',
  'decision.version.approved',
  'decision.version.rejected',
  'decision.version.retired',
  'crew.template.created',
  'crew.template.updated',
  'crew.template.deleted',
  'crew.run.queued',
  'crew.run.started',
  'crew.run.waiting',
  'crew.run.succeeded',
  'crew.run.failed',
  'crew.run.cancelled',
  'crew.run.retried',
  'crew.schedule.created',
  'crew.schedule.updated',
  'crew.schedule.deleted',
  'crew.schedule.fired',
  'migration.config.updated',
  'migration.connection.updated',
  'migration.connection.deleted',
  'migration.connection.tested',
  'metastore.catalog.created',
  'metastore.catalog.deleted',
  'metastore.schema.created',
  'metastore.schema.deleted',
  'metastore.table.registered',
  'metastore.table.altered',
  'metastore.table.deleted',
  'catalog.classification.accepted',
  'catalog.table.tagged',
  'catalog.table.untagged',
  'catalog.table.domain_set',
  'catalog.table.domain_removed',
  'catalog.domain.created',
  'document.created',
  'document.status_changed',
  'document.suggestions_ready',
  'document.enrichment_confirmed',
  'document.domain_attached',
  'psk.created',
  'psk.extended',
  'psk.deleted',
  'dataproduct.created',
  'dataproduct.deleted',
  'data_share.created',
  'data_share.secret_rotated',
  'data_share.deleted',
  'mcp.server.created',
  'mcp.server.updated',
  'mcp.server.deleted',
  'finetune.dataset.created',
  'finetune.dataset.deleted',
  'webhook.endpoint.disabled',
] as const;

export type DomainEventType = (typeof DOMAIN_EVENT_TYPES)[number];

/** The CloudEvents 1.0 envelope, JSON structured mode, with the contract's extensions. */
export interface DomainEvent {
  readonly specversion: '1.0';
  readonly id: string;
  /** `dpm/<stage>` */
  readonly source: string;
  /** `dpm.<type>` */
  readonly type: string;
  /** The resource path, e.g. `decisions/finance/credit-limit/versions/3`. */
  readonly subject: string;
  readonly time: string;
  readonly datacontenttype: 'application/json';
  /** The caller's name, or null for a change nobody asked for (a worker's, an expiry's). */
  readonly actor: string | null;
  /** Per subject: 1, 2, 3... without gaps. */
  readonly sequence: number;
  readonly data: Record<string, unknown>;
}

/** What makes an envelope: everything but the constants of CloudEvents' JSON structured mode. */
export type EnvelopeFields = Omit<DomainEvent, 'specversion' | 'datacontenttype'>;

/** The one builder of a domain event's envelope (the outbox, the publisher, test pings, runs' webhooks, the feed). */
export function envelope(fields: EnvelopeFields): DomainEvent {
  return {
    specversion: '1.0',
    id: fields.id,
    source: fields.source,
    type: fields.type,
    subject: fields.subject,
    time: fields.time,
    datacontenttype: 'application/json',
    actor: fields.actor,
    sequence: fields.sequence,
    data: fields.data,
  };
}

/** The envelope `type` of a change's type: `dpm.<type>`. */
export const envelopeType = (type: string): string => `dpm.${type}`;

/** One change about to be committed: what its event will say besides the resource. */
export interface Change {
  readonly type: DomainEventType;
  /** The caller's name (docs/events-and-webhooks.md `actor`), never a principal. */
  readonly actor: string | null;
  /** When it happened: the same instant the resource records (its `updated_at`...). */
  readonly at: string;
  /** What the change was about where the resource alone does not say it (merged into `data`). */
  readonly about?: Record<string, unknown>;
}
