import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod/mini';

vi.hoisted(() => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
});

import { EVENT_CATALOG, WEBHOOK_ONLY_EVENTS } from '../../functions/domain-events/catalog.js';
import {
  ASYNCAPI_FILE,
  fileText,
  generatedAsyncApiDocument,
  OPENAPI_FILE,
} from '../../functions/platform/generate-openapi.js';
import { DOMAIN_EVENT_TYPES } from '../../shared/events/types.js';
import { components } from '../../shared/schema.js';

/**
 * What /asyncapi.json must say (docs/events-and-webhooks.md): an AsyncAPI 3.0 document with a message for
 * every event type, whose payload is the CloudEvents envelope and whose `data` is the
 * resource as its group's GET answers it, said with the very component schemas of
 * /openapi.json.
 */

const STALE =
  'functions/platform/asyncapi.json is out of date with the code: run `npm run openapi` and commit the result';

type Json = Record<string, any>;
const doc = JSON.parse(readFileSync(ASYNCAPI_FILE, 'utf8')) as Json;
const openapi = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Json;

/** The value a local `$ref` (`#/a/b/c`) points at, or undefined. */
const pointer = (ref: string): unknown =>
  ref
    .slice(2)
    .split('/')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<any>((node, part) => node?.[part], doc);
const deref = (schema: Json): Json => (schema?.$ref ? deref(pointer(schema.$ref) as Json) : schema);

/** Every `$ref` anywhere in `value`. */
function refs(value: unknown, into: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => refs(v, into));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') into.push(v);
      else refs(v, into);
    }
  }
  return into;
}

/** The properties a schema gives its instances: its own and those of every `allOf` part (references followed). */
function properties(schema: Json): Record<string, Json> {
  const s = deref(schema);
  return Object.assign({}, ...(s.allOf ?? []).map((part: Json) => properties(part)), s.properties ?? {});
}
function required(schema: Json): string[] {
  const s = deref(schema);
  return [...(s.required ?? []), ...(s.allOf ?? []).flatMap((part: Json) => required(part))];
}

const message = (type: string): Json => doc.components.messages[type];
/** A message's payload part that narrows the envelope to its type. */
const narrowing = (type: string): Json => message(type).payload.allOf[1];
const dataOf = (type: string): Json => narrowing(type).properties.data;

describe('the committed AsyncAPI document', () => {
  it('is the document `npm run openapi` writes from the code', () => {
    expect(readFileSync(ASYNCAPI_FILE, 'utf8'), STALE).toBe(fileText(generatedAsyncApiDocument()));
  });

  it('is AsyncAPI 3.0.0 with info, servers, one channel, its operation and components', () => {
    expect(doc.asyncapi).toBe('3.0.0');
    expect(Object.keys(doc).sort()).toEqual(
      ['asyncapi', 'channels', 'components', 'defaultContentType', 'info', 'operations', 'servers'].sort(),
    );
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.defaultContentType).toBe('application/json');
    for (const server of Object.values<Json>(doc.servers)) {
      expect(server).toMatchObject({ host: expect.any(String), protocol: expect.any(String) });
      // Every `{variable}` of host and pathname is declared.
      const used = `${server.host}${server.pathname ?? ''}`.match(/\{(\w+)\}/g) ?? [];
      for (const v of used) expect(Object.keys(server.variables ?? {}), v).toContain(v.slice(1, -1));
    }
    expect(Object.keys(doc.channels)).toHaveLength(1);
    expect(Object.keys(doc.operations)).toHaveLength(1);
  });

  it('names the stage’s EventBridge bus and webhooks as its servers, both carrying the channel', () => {
    const { eventbridge, webhooks } = doc.servers;
    expect(`${eventbridge.host}${eventbridge.pathname}`).toContain('dpm-{stage}');
    expect(eventbridge.description).toContain('`Source` `dpm.<stage>`');
    expect(webhooks.protocol).toBe('https');
    const channel = Object.values<Json>(doc.channels)[0]!;
    expect(channel.servers.map((s: Json) => s.$ref).sort()).toEqual(['#/servers/eventbridge', '#/servers/webhooks']);
  });

  it('has every reference resolve inside the document, and component keys AsyncAPI allows', () => {
    const all = refs(doc);
    expect(all.length).toBeGreaterThan(DOMAIN_EVENT_TYPES.length * 3);
    expect(all.filter((r) => !r.startsWith('#/') || pointer(r) === undefined)).toEqual([]);
    for (const kind of Object.keys(doc.components)) {
      for (const key of Object.keys(doc.components[kind])) expect(key, kind).toMatch(/^[a-zA-Z0-9.\-_]+$/);
    }
    // Every component schema is used: none left over from /openapi.json's requests.
    const reached = new Set(all.filter((r) => r.startsWith('#/components/schemas/')));
    expect(Object.keys(doc.components.schemas).filter((id) => !reached.has(`#/components/schemas/${id}`))).toEqual([]);
  });

  it('has one message per event type of the catalogue, on the channel and on its send operation', () => {
    expect(Object.keys(EVENT_CATALOG).sort()).toEqual([...DOMAIN_EVENT_TYPES].sort());
    // and the webhooks' own test delivery (docs/events-and-webhooks.md), which no domain event is
    const types = [...DOMAIN_EVENT_TYPES, ...Object.keys(WEBHOOK_ONLY_EVENTS)];
    expect(Object.keys(WEBHOOK_ONLY_EVENTS)).toEqual(['webhook.test', 'crew.run.event']);
    expect(Object.keys(doc.components.messages).sort()).toEqual(types.sort());
    const [channelName, channel] = Object.entries<Json>(doc.channels)[0]!;
    const operation = Object.values<Json>(doc.operations)[0]!;
    expect(operation.action).toBe('send');
    expect(operation.channel).toEqual({ $ref: `#/channels/${channelName}` });
    for (const type of DOMAIN_EVENT_TYPES) {
      expect(channel.messages[type], type).toEqual({ $ref: `#/components/messages/${type}` });
      // An operation's messages are the channel's (AsyncAPI 3.0: never the components' directly).
      expect(operation.messages, type).toContainEqual({ $ref: `#/channels/${channelName}/messages/${type}` });
    }
    expect(operation.messages).toHaveLength(types.length);
    expect(dataOf('webhook.test')).toEqual({ $ref: '#/components/schemas/WebhookEndpoint' });
    expect(narrowing('webhook.test').properties.type.enum).toEqual(['dpm.webhook.test']);
    // per-run webhooks (E2 `webhook_url`): the E13 event is the data
    expect(dataOf('crew.run.event')).toEqual({ $ref: '#/components/schemas/CrewEvent' });
    expect(narrowing('crew.run.event').properties.type.enum).toEqual(['dpm.crew.run.event']);
  });

  it('gives every message the CloudEvents envelope as payload, narrowed to its own type, subject and data', () => {
    for (const type of DOMAIN_EVENT_TYPES) {
      const m = message(type);
      expect(m, type).toMatchObject({ name: type, title: `dpm.${type}`, contentType: 'application/json' });
      expect(m.payload.allOf[0], type).toEqual({ $ref: '#/components/schemas/DomainEvent' });
      const envelope = properties(m.payload);
      expect(Object.keys(envelope).sort(), type).toEqual([
        'actor',
        'data',
        'datacontenttype',
        'id',
        'sequence',
        'source',
        'specversion',
        'subject',
        'time',
        'type',
      ]);
      expect(required(m.payload), type).toEqual(expect.arrayContaining(Object.keys(envelope)));
      // `type` is this one alone, so a message is valid against one message of the channel only.
      expect(narrowing(type).properties.type.enum, type).toEqual([`dpm.${type}`]);
      expect(narrowing(type).properties.subject.description, type).toContain(EVENT_CATALOG[type].subject);
    }
  });

  it("documents every message's data as its resource's GET answer schema", () => {
    for (const type of DOMAIN_EVENT_TYPES) {
      const schema = EVENT_CATALOG[type].data;
      const id = components.get(schema)?.id;
      const data = dataOf(type);
      // A component is the component; a resource with more fields is that component and the fields.
      if (id) expect(data, type).toEqual({ $ref: `#/components/schemas/${id}` });
      else expect(data.allOf?.[0]?.$ref ?? data.$ref, type).toMatch(/^#\/components\/schemas\/\w+$/);
      expect(Object.keys(properties(data)).length, type).toBeGreaterThan(2);
    }
    const approved = properties(dataOf('decision.version.approved'));
    expect(Object.keys(approved)).toEqual(expect.arrayContaining(['status', 'content', 'approved_by', 'content_sha']));
    expect(deref(approved.status!).enum).toContain('approved');
    expect(dataOf('decision.version.approved')).toEqual({ $ref: '#/components/schemas/VersionDetail' });
    expect(dataOf('crew.template.updated')).toEqual({ $ref: '#/components/schemas/CrewTemplate' });
    expect(dataOf('crew.run.succeeded')).toEqual({ $ref: '#/components/schemas/CrewRun' });
    expect(dataOf('mcp.server.deleted')).toEqual({ $ref: '#/components/schemas/McpServer' });
    expect(dataOf('psk.extended')).toEqual({ $ref: '#/components/schemas/PskInfo' });
    expect(dataOf('finetune.dataset.created')).toEqual({ $ref: '#/components/schemas/FinetuneJob' });
    expect(dataOf('document.status_changed')).toEqual({ $ref: '#/components/schemas/Document' });
    expect(dataOf('metastore.table.registered')).toEqual({ $ref: '#/components/schemas/TableMetadata' });
    expect(dataOf('catalog.domain.created')).toEqual({ $ref: '#/components/schemas/Domain' });
    expect(dataOf('migration.connection.updated')).toEqual({ $ref: '#/components/schemas/Connection' });
    expect(dataOf('webhook.endpoint.disabled')).toEqual({ $ref: '#/components/schemas/WebhookEndpoint' });
  });

  it('adds what a change was about where the catalogue and the services say so', () => {
    const config = dataOf('migration.config.updated');
    expect(config.allOf[0]).toEqual({ $ref: '#/components/schemas/InfrastructureConfig' });
    expect(required(config)).toContain('changed_fields');
    const changed = properties(config).changed_fields!;
    expect(changed.type).toBe('array');
    // A write-only field is named, never valued: the names are the update's fields.
    expect(changed.items.enum).toEqual(expect.arrayContaining(['objstore_source_secret_key', 'copy_mappers']));
    expect(Object.keys(properties(config))).not.toContain('objstore_source_secret_key');

    const tested = dataOf('migration.connection.tested');
    expect(tested.allOf[0]).toEqual({ $ref: '#/components/schemas/Connection' });
    expect(required(tested)).toEqual(expect.arrayContaining(['conn_id', 'probe', 'ok', 'message']));

    const accepted = dataOf('catalog.classification.accepted');
    expect(accepted.allOf[0]).toEqual({ $ref: '#/components/schemas/TableMetadata' });
    expect(Object.keys(properties(accepted))).toEqual(
      expect.arrayContaining(['columns', 'table_tags_applied', 'column_tags_applied', 'glossary_terms_linked']),
    );
    expect(Object.keys(properties(accepted))).not.toContain('success');

    expect(Object.keys(properties(dataOf('document.enrichment_confirmed')))).toContain('pending_domain');
    // A share's secret is never in an event: null there, whatever its GET may answer.
    const share = dataOf('data_share.secret_rotated');
    expect(share.allOf[0]).toEqual({ $ref: '#/components/schemas/SharedClient' });
    expect(share.allOf[1].properties.secret.type).toBe('null');
  });

  it('carries no secret in any data: no password, secret key or key secret field', () => {
    const forbidden = /password|secret_key|_hash$|client_secret/;
    for (const type of DOMAIN_EVENT_TYPES) {
      expect(
        Object.keys(properties(dataOf(type))).filter((p) => forbidden.test(p)),
        type,
      ).toEqual([]);
    }
    // A key's secret is its creation answer's `key`: never a key event's.
    for (const type of DOMAIN_EVENT_TYPES.filter((t) => t.startsWith('psk.')))
      expect(Object.keys(properties(dataOf(type))), type).not.toContain('key');
  });

  it('documents the Standard Webhooks headers on every message', () => {
    for (const type of DOMAIN_EVENT_TYPES)
      expect(message(type).headers, type).toEqual(message(DOMAIN_EVENT_TYPES[0]).headers);
    const headers = deref(message(DOMAIN_EVENT_TYPES[0]).headers);
    expect(headers.type).toBe('object');
    expect(Object.keys(headers.properties).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(headers.required.sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    const signature = new RegExp(headers.properties['webhook-signature'].pattern);
    expect(signature.test('v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=')).toBe(true);
    expect(signature.test('v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,bm9wZQ==')).toBe(true);
    expect(signature.test('v2,abc')).toBe(false);
  });

  it('says every component as /openapi.json says it: the same zod schemas, the same output', () => {
    const shared = Object.keys(doc.components.schemas).filter((id) => id in openapi.components.schemas);
    expect(shared).toEqual(expect.arrayContaining(['DomainEvent', 'VersionDetail', 'CrewRun', 'Document']));
    for (const id of shared) expect(doc.components.schemas[id], id).toEqual(openapi.components.schemas[id]);
  });
});

describe('the event catalog', () => {
  it('reads real resources as their events carry them: a resource plus its change’s fields', () => {
    const connection = {
      conn_id: 'edge',
      conn_type: 'ssh',
      host: 'edge.example',
      port: 22,
      schema: null,
      login: null,
      extra: null,
      created_at: '2026-11-21T10:00:00.000Z',
      updated_at: '2026-11-21T10:00:00.000Z',
    };
    const tested = EVENT_CATALOG['migration.connection.tested'].data;
    expect(z.safeParse(tested, { ...connection, probe: 'ssh', ok: true, message: 'SSH-2.0' }).success).toBe(true);
    expect(z.safeParse(tested, { ...connection, ok: true, message: 'SSH-2.0' }).success).toBe(false);
    expect(z.safeParse(tested, { ...connection, probe: 'telnet', ok: true, message: '' }).success).toBe(false);
  });
});

describe('docs/events-and-webhooks.md', () => {
  it('lists every event type in its Domain events section', () => {
    const guide = readFileSync(new URL('../../docs/events-and-webhooks.md', import.meta.url), 'utf8');
    const section = guide.slice(guide.indexOf('## Domain events'));
    expect(section.length).toBeLessThan(guide.length);
    expect(DOMAIN_EVENT_TYPES.filter((type) => !section.includes(`\`dpm.${type}\``))).toEqual([]);
    for (const subject of new Set(Object.values(EVENT_CATALOG).map((e) => e.subject)))
      expect(section, subject).toContain(`\`${subject}\``);
  });
});
