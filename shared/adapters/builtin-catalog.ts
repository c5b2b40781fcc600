import { isDeepStrictEqual } from 'node:util';
import { GetCommand, PutCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../aws/errors.js';
import { Unavailable } from '../errors.js';
import { batchGetAll } from '../aws/batch-get.js';
import { queryAll } from '../aws/pagination.js';
import { AGAIN, backoffMs, retry } from '../retry.js';
import { outboxEvent, eventPut, lastSequence } from '../events/events-table.js';
import { stampNew } from '../events/stamp.js';
import type { Change } from '../events/types.js';
import {
  AnnotationTooLarge,
  byName,
  byUrn,
  datasetUrnOf,
  domainUrn,
  emptyAnnotations,
  glossaryTermUrn,
  tagUrn,
  type AnnotationEvent,
  type CatalogItem,
  type ColumnAnnotations,
  type Created,
  type EntityAnnotations,
  type EntityChange,
  type MetadataCatalog,
} from '../ports/catalog.js';

type Kind = 'TAG' | 'TERM' | 'DOMAIN';

/** The sparse index of entity items by their `domain` (infra/tables.ts). */
const BY_DOMAIN = 'by_domain';

const URNS: Record<Kind, (name: string) => string> = { TAG: tagUrn, TERM: glossaryTermUrn, DOMAIN: domainUrn };

/**
 * The entity item's attribute names. Column attributes are top-level: `col:<column>:<field>`;
 * the field never holds a `:`, so the last `:` splits the name back whatever the column
 * name holds, and the fixed prefix keeps a column name from ever being an attribute name
 * of its own (`__proto__`, `urn`...).
 */
const COLUMN_PREFIX = 'col:';
const FIELDS = { description: 'description', tags: 'tags', terms: 'terms' } as const;
const columnAttribute = (column: string, field: keyof typeof FIELDS) => `${COLUMN_PREFIX}${column}:${FIELDS[field]}`;
/** Bumped by every write: an annotation is written only over the version it was computed from. */
const VERSION = 'version';

/** DynamoDB's item size limit. */
export const MAX_ENTITY_BYTES = 400 * 1024;
/** Concurrent annotations of one entity each retry on a fresh read until written. */
const ANNOTATE_ATTEMPTS = 16;

/**
 * The built-in metadata catalog on the `catalog` table (infra/tables.ts):
 * - definitions are items `TAG` | `TERM` | `DOMAIN` / name with `{name, urn, description}`;
 *   creating one is a conditional put, so concurrent creates agree on who created it;
 * - an entity's annotations are one item `ENTITY#<urn>` / `META`: `description`, `domain`,
 *   the string sets `tags` and `terms`, and per column the top-level attributes
 *   `col:<column>:tags|terms|description`. A change is applied to the item as read,
 *   its size checked against DynamoDB's 400 KB (AnnotationTooLarge, nothing written), and
 *   written whole by one PutItem conditional on the `version` it was read at: all or
 *   nothing however many columns it touches, and of two annotate calls racing the loser
 *   reads again and adds its change to the winner's, so both survive;
 * - domain events (docs/events-and-webhooks.md): a domain's creation is stamped on its item
 *   (`catalog.domain.created`); an annotation's event (E5's `catalog.classification.accepted`,
 *   whose subject is the table's, also counted by the metastore's registrations) goes into
 *   the events table in a transaction with the entity's PutItem (shared/events/events-table.ts).
 */
export class BuiltinCatalog implements MetadataCatalog {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  datasetUrn(catalog: string, schema: string, table: string): string {
    return datasetUrnOf('dpm', catalog, schema, table);
  }

  listTags(): Promise<CatalogItem[]> {
    return this.list('TAG');
  }

  listGlossaryTerms(): Promise<CatalogItem[]> {
    return this.list('TERM');
  }

  listDomains(): Promise<CatalogItem[]> {
    return this.list('DOMAIN');
  }

  getTag(name: string): Promise<CatalogItem | undefined> {
    return this.get('TAG', name);
  }

  getGlossaryTerm(name: string): Promise<CatalogItem | undefined> {
    return this.get('TERM', name);
  }

  getDomain(name: string): Promise<CatalogItem | undefined> {
    return this.get('DOMAIN', name);
  }

  createTag(name: string, description?: string): Promise<Created> {
    return this.create('TAG', name, description);
  }

  createGlossaryTerm(name: string, description?: string): Promise<Created> {
    return this.create('TERM', name, description);
  }

  /** `change` is stamped on the new domain's item (its subject's first event: domains are never deleted). */
  createDomain(name: string, description?: string, change?: Change): Promise<Created> {
    return this.create('DOMAIN', name, description, change);
  }

  async getEntity(urn: string): Promise<EntityAnnotations> {
    const item = await this.readEntity(urn);
    return item ? toAnnotations(urn, item) : emptyAnnotations(urn);
  }

  /** BatchGetItem, 100 keys a call (eventually consistent: a list, not a read before a write). */
  async getEntities(urns: readonly string[]): Promise<EntityAnnotations[]> {
    const unique = [...new Set(urns)];
    const items = await batchGetAll(this.db, this.tableName, unique.map(entityKey));
    const found = new Map(items.flatMap((item) => (typeof item.urn === 'string' ? [[item.urn, item] as const] : [])));
    return urns.map((urn) => {
      const item = found.get(urn);
      return item ? toAnnotations(urn, item) : emptyAnnotations(urn);
    });
  }

  /** One Query on the sparse `by_domain` index (eventually consistent), followed through its pages. */
  async listDomainEntities(domain: string): Promise<EntityAnnotations[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      IndexName: BY_DOMAIN,
      KeyConditionExpression: '#domain = :domain',
      ExpressionAttributeNames: { '#domain': 'domain' },
      ExpressionAttributeValues: { ':domain': domain },
    });
    return items.flatMap((item) => (typeof item.urn === 'string' ? [toAnnotations(item.urn, item)] : [])).sort(byUrn);
  }

  /**
   * Nothing to write: the built-in catalog holds every entity implicitly (one never
   * annotated reads as empty annotations; its item is written by its first annotation).
   */
  async registerDocument(): Promise<void> {}

  /** Registration wrote nothing, so neither does its undoing. */
  async unregisterDocument(): Promise<void> {}

  async checkAnnotation(urn: string, change: EntityChange): Promise<void> {
    assertFits(urn, applied(urn, await this.readEntity(urn), change));
  }

  /**
   * With `event`, the entity's PutItem and the event's put into the events table (with the
   * subject's next sequence, read before the entity) are one transaction: either condition
   * failing (the entity changed, or another writer took the sequence) cancels both, and
   * the change is computed again on a fresh read.
   */
  async annotate(urn: string, change: EntityChange, event?: AnnotationEvent): Promise<void> {
    const annotated = await retry<void>(
      async () => {
        // The sequence first, the entity and the data second (see AnnotationEvent).
        const last = event ? await lastSequence(this.db, event.events, event.subject) : 0;
        const current = await this.readEntity(urn);
        const next = applied(urn, current, change);
        assertFits(urn, next);
        const version = current?.[VERSION];
        // A change the entity already holds (a repeated acceptance) writes nothing.
        if (current !== undefined && isDeepStrictEqual(next, withoutVersion(current))) return;
        // Nor does a removal from an entity never annotated: there is nothing to remove.
        if (current === undefined && isRemovalOnly(change)) return;
        const put = {
          TableName: this.tableName,
          Item: { ...next, [VERSION]: typeof version === 'number' ? version + 1 : 1 },
          ConditionExpression:
            current === undefined
              ? 'attribute_not_exists(pk)'
              : typeof version === 'number'
                ? '#version = :version'
                : 'attribute_exists(pk) AND attribute_not_exists(#version)',
          ...(current !== undefined ? { ExpressionAttributeNames: { '#version': VERSION } } : {}),
          ...(typeof version === 'number' ? { ExpressionAttributeValues: { ':version': version } } : {}),
        };
        // A transaction refused (the entity changed, or another writer took the sequence): try again.
        const written = event
          ? await conditionally(
              this.db.send(
                new TransactWriteCommand({
                  TransactItems: [
                    { Put: put },
                    eventPut(
                      event.events,
                      outboxEvent(
                        event.events,
                        event.subject,
                        event.change,
                        last,
                        await event.data(toAnnotations(urn, next)),
                      ),
                    ),
                  ],
                }),
              ),
            )
          : await conditionally(this.db.send(new PutCommand(put)));
        return written ? undefined : AGAIN;
      },
      {
        attempts: ANNOTATE_ATTEMPTS,
        // A random pause of up to 10, 20, 40 … 200 ms before the 2nd, 3rd, 4th … try.
        delayMs: (attempt) => backoffMs(attempt - 1, { baseMs: 5, maxMs: 200, jitter: 'full' }),
      },
    );
    if (!annotated.done)
      throw new Unavailable('the catalog is busy with concurrent annotations of one entity; try again');
  }

  private async readEntity(urn: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: entityKey(urn), ConsistentRead: true }),
    );
    return Item;
  }

  private async list(kind: Kind): Promise<CatalogItem[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': kind },
    });
    // The sort key orders by UTF-8 bytes; sort by the same comparison as the DataHub adapter.
    return items.map((item) => toItem(kind, item)).sort(byName);
  }

  private async get(kind: Kind, name: string): Promise<CatalogItem | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: kind, sk: name }, ConsistentRead: true }),
    );
    return Item ? toItem(kind, Item) : undefined;
  }

  private async create(kind: Kind, name: string, description: string | undefined, change?: Change): Promise<Created> {
    const item: CatalogItem = { name, urn: URNS[kind](name), description: description ?? null };
    const created = await conditionally(
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: kind, sk: name, ...item, ...(change ? stampNew(change) : {}) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (created) return { item, created: true };
    return { item: (await this.get(kind, name)) ?? item, created: false };
  }
}

const entityKey = (urn: string) => ({ pk: `ENTITY#${urn}`, sk: 'META' });

/**
 * The entity item with `change` applied (without its version): descriptions and the domain
 * replaced, tags and terms added to the sets. Attribute names are built here, never taken
 * from a user as they are, and the item is a Map until the end so no name is a property
 * lookup on a plain object.
 */
function applied(urn: string, current: Record<string, unknown> | undefined, change: EntityChange) {
  const item = new Map<string, unknown>(Object.entries(current ?? {}));
  item.delete(VERSION);
  for (const [attribute, value] of Object.entries(entityKey(urn))) item.set(attribute, value);
  item.set('urn', urn);
  const add = (attribute: string, names: readonly string[] | undefined) => {
    if (!names || names.length === 0) return;
    const existing = item.get(attribute);
    item.set(attribute, new Set([...(existing instanceof Set ? (existing as Set<string>) : []), ...names]));
  };
  if (change.description !== undefined) item.set('description', change.description);
  if (change.domain !== undefined) item.set('domain', change.domain);
  add('tags', change.tags);
  add('terms', change.glossaryTerms);
  const tags = item.get('tags');
  if (change.removeTags?.length && tags instanceof Set) {
    const left = [...(tags as Set<string>)].filter((tag) => !change.removeTags!.includes(tag));
    // DynamoDB keeps no empty set: the attribute goes.
    if (left.length > 0) item.set('tags', new Set(left));
    else item.delete('tags');
  }
  // Without the attribute the entity leaves the sparse by_domain index.
  if (change.removeDomain !== undefined && item.get('domain') === change.removeDomain) item.delete('domain');
  for (const [name, col] of change.columns ?? []) {
    if (col.description !== undefined) item.set(columnAttribute(name, 'description'), col.description);
    add(columnAttribute(name, 'tags'), col.tags);
    add(columnAttribute(name, 'terms'), col.glossaryTerms);
  }
  return Object.fromEntries(item) as Record<string, unknown>;
}

function assertFits(urn: string, item: Record<string, unknown>): void {
  // The version number the write adds: at most 21 bytes.
  const bytes = itemSize(item) + Buffer.byteLength(VERSION) + 21;
  if (bytes > MAX_ENTITY_BYTES) throw new AnnotationTooLarge(urn, bytes, MAX_ENTITY_BYTES);
}

/**
 * An item's size as DynamoDB counts it against 400 KB: per attribute its name's UTF-8
 * bytes plus its value's (strings and set members by UTF-8 bytes, a number at most 21,
 * lists and maps 3 bytes plus 1 per element).
 */
export function itemSize(item: Record<string, unknown>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name) + valueSize(value);
  return bytes;
}

function valueSize(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return 21;
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (value instanceof Set) return [...(value as Set<unknown>)].reduce<number>((n, v) => n + valueSize(v), 0);
  if (Array.isArray(value)) return value.reduce<number>((n, v) => n + 1 + valueSize(v), 3);
  if (typeof value === 'object')
    return Object.entries(value).reduce<number>((n, [k, v]) => n + Buffer.byteLength(k) + 1 + valueSize(v), 3);
  return 0;
}

/** The stored entity item as the port's annotations (columns sorted by name). */
function toAnnotations(urn: string, item: Record<string, unknown>): EntityAnnotations {
  const columns = new Map<string, { description: string | null; tags: string[]; glossary_terms: string[] }>();
  const column = (name: string) => {
    let found = columns.get(name);
    if (!found) columns.set(name, (found = { description: null, tags: [], glossary_terms: [] }));
    return found;
  };
  for (const [attribute, value] of Object.entries(item)) {
    if (!attribute.startsWith(COLUMN_PREFIX)) continue;
    const colon = attribute.lastIndexOf(':');
    const name = attribute.slice(COLUMN_PREFIX.length, colon);
    const field = attribute.slice(colon + 1);
    if (field === FIELDS.description) column(name).description = typeof value === 'string' ? value : null;
    else if (field === FIELDS.tags) column(name).tags = sorted(value);
    else if (field === FIELDS.terms) column(name).glossary_terms = sorted(value);
  }
  return {
    urn,
    description: typeof item.description === 'string' ? item.description : null,
    domain: typeof item.domain === 'string' ? item.domain : null,
    tags: sorted(item.tags),
    glossary_terms: sorted(item.terms),
    columns: new Map<string, ColumnAnnotations>([...columns].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
  };
}

function toItem(kind: Kind, item: Record<string, unknown>): CatalogItem {
  const name = String(item.sk);
  return {
    name,
    urn: typeof item.urn === 'string' ? item.urn : URNS[kind](name),
    description: typeof item.description === 'string' ? item.description : null,
  };
}

/** A string set as read back (a Set), sorted. */
function sorted(value: unknown): string[] {
  if (value instanceof Set) return [...(value as Set<string>)].sort();
  if (Array.isArray(value)) return [...(value as string[])].sort();
  return [];
}

/** A change that only takes annotations off (untagging, leaving a domain). */
function isRemovalOnly(change: EntityChange): boolean {
  const { removeTags, removeDomain, ...adds } = change;
  return (removeTags !== undefined || removeDomain !== undefined) && Object.keys(adds).length === 0;
}

function withoutVersion(item: Record<string, unknown>): Record<string, unknown> {
  const { [VERSION]: _version, ...rest } = item;
  return rest;
}
