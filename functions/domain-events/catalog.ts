import * as z from 'zod/mini';
import type { DomainEventType } from '../../shared/events/types.js';
import { PROBE_TYPES } from '../../shared/ports/workflow.js';
import { doc } from '../../shared/schema.js';
import { RunLogEntry, CrewRun } from '../crews/runs/run-schemas.js';
import { CrewSchedule } from '../crews/schedules/schedule-schemas.js';
import { CrewTemplate } from '../crews/templates/template-schemas.js';
import { SharedClient } from '../data-shares/schemas.js';
import { DataProduct, KeyInfo } from '../dataproduct/schemas.js';
import { VersionDetail } from '../decisions/schemas.js';
import { Document } from '../documents/schemas.js';
import { FinetuneJob } from '../finetune/schemas.js';
import { McpServer } from '../mcps/schemas.js';
import {
  AcceptanceResult,
  CatalogDetailSchema,
  Domain,
  SchemaDetailSchema,
  TableMetadata,
} from '../metastore/schemas.js';
import { CONFIG_FIELDS, Connection, ConnectionTestResult, InfrastructureConfig } from '../migration/schemas.js';
import { WebhookEndpoint } from '../webhooks/schemas.js';

/**
 * What each domain event (docs/events-and-webhooks.md) carries: its subject and the schema of its `data`,
 * the resource as its group's GET answers it, plus what the change was about where the
 * resource alone does not say it. Only the AsyncAPI generator (shared/http/asyncapi.ts,
 * via `npm run openapi`) and the tests import this module: it reaches every group's
 * schemas, which no Lambda needs together.
 */

type Schema = z.core.$ZodType;

export interface EventDescription {
  /** The subject's form, as the table of docs/events-and-webhooks.md gives it. */
  readonly subject: string;
  /** What happened, in a line. */
  readonly summary: string;
  readonly data: Schema;
}

/**
 * The Standard Webhooks headers of a webhook delivery (docs/events-and-webhooks.md). EventBridge carries
 * none: there the envelope is the event's `Detail`.
 */
export const WebhookHeaders = doc(
  z.object({
    'webhook-id': doc(z.string(), "the event id (the envelope's `id`): receivers deduplicate on it"),
    'webhook-timestamp': doc(
      z.string().check(z.regex(/^[0-9]+$/)),
      'when the attempt was signed, in Unix seconds: refuse one too far from now',
      { example: '1795255200' },
    ),
    'webhook-signature': doc(
      z.string().check(z.regex(/^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$/)),
      'one `v1,<signature>` per signing secret, space-separated (two for 24 h after a rotation): the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` keyed with the base64-decoded secret after its `whsec_` prefix',
      { example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' },
    ),
  }),
  'Sent with every webhook delivery (Standard Webhooks), beside `content-type: application/json`; absent on EventBridge',
);

/** The schemas this catalog names beside the shared components (`#/components/schemas/<id>`). */
export const EVENT_SCHEMAS: Readonly<Record<string, Schema>> = { WebhookHeaders };

/** `resource` plus the fields of `about` (the change's own: merged into `data` after the resource's). */
const withAbout = (resource: Schema, about: Schema) => z.intersection(resource, about);

/** A schema's events say which catalog it is in (its details do not). */
const schemaData = withAbout(SchemaDetailSchema, z.object({ catalog: doc(z.string(), 'the catalog of the schema') }));

const decision = (summary: string): EventDescription => ({
  subject: 'decisions/{ws}/{key}/versions/{v}',
  summary,
  data: VersionDetail,
});
const template = (summary: string): EventDescription => ({
  subject: 'crew-templates/{id}',
  summary,
  data: CrewTemplate,
});
const run = (summary: string): EventDescription => ({ subject: 'crew-runs/{correlation_id}', summary, data: CrewRun });
const schedule = (summary: string): EventDescription => ({
  subject: 'crew-schedules/{id}',
  summary,
  data: CrewSchedule,
});
const connection = (summary: string, data: Schema = Connection): EventDescription => ({
  subject: 'migration/connections/{conn_id}',
  summary,
  data,
});
const document = (summary: string, data: Schema = Document): EventDescription => ({
  subject: 'documents/{id}',
  summary,
  data,
});
const psk = (summary: string): EventDescription => ({ subject: 'psks/{psk}', summary, data: KeyInfo });
const product = (summary: string): EventDescription => ({
  subject: 'dataproducts/{id}',
  summary,
  data: DataProduct,
});
/** A share's secret is never in an event: `secret` is always null there. */
const shareData = withAbout(
  SharedClient,
  z.object({ secret: doc(z.null(), "always null: a share's secret is never in an event") }),
);
const share = (summary: string): EventDescription => ({ subject: 'data-shares/{name}', summary, data: shareData });
const mcp = (summary: string): EventDescription => ({ subject: 'mcps/{id}', summary, data: McpServer });
const dataset = (summary: string): EventDescription => ({
  subject: 'finetune/datasets/{id}',
  summary,
  data: FinetuneJob,
});

/** Every event type of docs/events-and-webhooks.md, with its subject and its `data`. */
export const EVENT_CATALOG: Readonly<Record<DomainEventType, EventDescription>> = {
  'decision.version.created': decision('A decision version was created, as a `draft`'),
  'decision.version.submitted': decision('A draft version was submitted for approval'),
  'decision.version.approved': decision('A submitted version was approved (E1): it is published'),
  'decision.version.rejected': decision('A submitted version was rejected: it is a `draft` again'),
  'decision.version.retired': decision('An approved version was retired'),
  'crew.template.created': template('A crew template was declared'),
  'crew.template.updated': template('A crew template was replaced'),
  'crew.template.deleted': template('A crew template was deleted (data: the template as it was)'),
  'crew.run.queued': run(
    'A crew run was queued (E2), or is `pending` again: approved while every slot of its concurrency limit was taken',
  ),
  'crew.run.started': run('A worker started a crew run'),
  'crew.run.waiting': run('A crew run is waiting'),
  'crew.run.succeeded': run('A crew run succeeded'),
  'crew.run.failed': run('A crew run failed (data `error` says why)'),
  'crew.run.cancelled': run('A crew run was cancelled'),
  'crew.run.retried': run('A crew run was retried'),
  'crew.schedule.created': schedule('A crew schedule was created'),
  'crew.schedule.updated': schedule('A crew schedule was changed (also: disabled because its template was deleted)'),
  'crew.schedule.deleted': schedule('A crew schedule was deleted (data: the schedule as it was)'),
  'crew.schedule.fired': {
    subject: 'crew-schedules/{id}',
    summary:
      'A crew schedule fired: data `correlation_id` is the run it started, or `skipped: true` with a `reason` when it started none',
    data: withAbout(
      CrewSchedule,
      z.object({
        correlation_id: z.optional(doc(z.string(), 'the run the fire started')),
        skipped: z.optional(doc(z.boolean(), 'true when the fire started no run')),
        reason: z.optional(doc(z.string(), 'why it started none')),
      }),
    ),
  },
  'migration.config.updated': {
    subject: 'migration/config',
    summary: 'The migration infrastructure configuration was updated (E3)',
    data: withAbout(
      InfrastructureConfig,
      z.object({
        changed_fields: doc(
          z.array(z.enum(CONFIG_FIELDS as [string, ...string[]])),
          'every field the update gave (a write-only one by its name only: never its value)',
        ),
      }),
    ),
  },
  'migration.connection.updated': connection('A connection was created or replaced'),
  'migration.connection.deleted': connection('A connection was deleted (data: the connection as it was)'),
  'migration.connection.tested': connection(
    'A connection of the registry was probed (E4)',
    withAbout(
      Connection,
      z.extend(ConnectionTestResult, {
        probe: doc(z.enum(PROBE_TYPES), 'the probe that was run (`conn_type` of the test request)'),
      }),
    ),
  ),
  'metastore.catalog.created': {
    subject: 'metastore/{c}',
    summary: 'A metastore catalog was created (§17)',
    data: CatalogDetailSchema,
  },
  'metastore.catalog.deleted': {
    subject: 'metastore/{c}',
    summary: 'An empty metastore catalog was dropped (data: the catalog as it was)',
    data: CatalogDetailSchema,
  },
  'metastore.schema.created': {
    subject: 'metastore/{c}/{s}',
    summary: 'A schema was created in a metastore catalog (§17)',
    data: schemaData,
  },
  'metastore.schema.deleted': {
    subject: 'metastore/{c}/{s}',
    summary: 'An empty schema was dropped (data: the schema as it was)',
    data: schemaData,
  },
  'metastore.table.registered': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: 'A table was registered (or replaced) in the built-in metastore, or created (§17)',
    data: TableMetadata,
  },
  'metastore.table.altered': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: "A table's columns, comments or properties were altered, all of a request's operations at once (§17)",
    data: TableMetadata,
  },
  'metastore.table.deleted': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: 'A table was dropped (data: the table as it was)',
    data: TableMetadata,
  },
  'catalog.table.tagged': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: 'A table was tagged (§17; the tag is created in the catalog first when missing)',
    data: withAbout(TableMetadata, z.object({ tag: doc(z.string(), 'the tag applied') })),
  },
  'catalog.table.untagged': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: 'A tag was taken off a table (§17)',
    data: withAbout(TableMetadata, z.object({ tag: doc(z.string(), 'the tag taken off') })),
  },
  'catalog.table.domain_set': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: "A table's catalog domain was set (§17)",
    data: TableMetadata,
  },
  'catalog.table.domain_removed': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: 'A table was taken out of its catalog domain (§17)',
    data: withAbout(
      TableMetadata,
      z.object({ removed_domain: doc(z.string(), 'the domain the table was taken out of') }),
    ),
  },
  'catalog.classification.accepted': {
    subject: 'metastore/{c}/{s}/{t}',
    summary: "A table's classification was accepted (E5)",
    data: withAbout(TableMetadata, z.omit(AcceptanceResult, { success: true })),
  },
  'catalog.domain.created': {
    subject: 'catalog/domains/{name}',
    summary: 'A catalog domain was created',
    data: Domain,
  },
  'document.created': document('A document was registered'),
  'document.status_changed': document("A document's ingestion status changed"),
  'document.suggestions_ready': document("A document's enrichment suggestions were stored: it awaits review"),
  'document.enrichment_confirmed': document(
    "A document's enrichment was confirmed (E6)",
    withAbout(
      Document,
      z.object({
        pending_domain: doc(
          z.nullable(z.string()),
          'the chosen domain when it does not exist yet (the document waits for it); null otherwise',
        ),
      }),
    ),
  ),
  'document.domain_attached': document('A document was attached to the domain it waited for, once that was created'),
  'psk.created': psk('A pre-shared key was created (never its secret)'),
  'psk.extended': psk("A pre-shared key's validity was extended (E7)"),
  'psk.deleted': psk('A pre-shared key was deleted'),
  'dataproduct.created': product('A data product was created'),
  'dataproduct.deleted': product('A data product was deleted: its keys stop working (data: the product as it was)'),
  'data_share.created': share('A data share was created'),
  'data_share.secret_rotated': share("A data share's client secret was rotated (never the secret)"),
  'data_share.deleted': share('A data share was deleted'),
  'mcp.server.created': mcp('An MCP server configuration was created'),
  'mcp.server.updated': mcp('An MCP server configuration was replaced'),
  'mcp.server.deleted': mcp('An MCP server configuration was deleted (data: the server as it was)'),
  'finetune.dataset.created': dataset('A fine-tuning dataset job was created'),
  'finetune.dataset.deleted': dataset('A fine-tuning dataset job was deleted (E11; data: the job as it was)'),
  'webhook.endpoint.disabled': {
    subject: 'webhooks/{id}',
    summary:
      'A webhook endpoint was disabled: by a `410 Gone`, after 5 days of failed deliveries, or by an admin (`enabled: false`)',
    data: WebhookEndpoint,
  },
};

/**
 * What only webhooks receive (docs/events-and-webhooks.md): no domain event, so neither in the feed nor on
 * EventBridge, but a receiver meets it like one.
 */
export const WEBHOOK_ONLY_EVENTS: Readonly<Record<string, EventDescription>> = {
  'webhook.test': {
    subject: 'webhooks/{id}/test',
    summary:
      'A test delivery (`POST /api/webhooks/{webhook_id}/test`) to that endpoint alone: never on EventBridge nor in the feed',
    data: WebhookEndpoint,
  },
  'crew.run.event': {
    subject: 'crew-runs/{correlation_id}',
    summary:
      "One E13 event of a crew run started with a `webhook_url` (E2), to that URL alone, in index order (`sequence` = index + 1), signed with the run's `webhook_secret`: never on EventBridge, in the feed or to other endpoints",
    data: RunLogEntry,
  },
};
