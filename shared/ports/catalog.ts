import { Invalid, valueError } from '../errors.js';
import type { EventsTable } from '../events/events-table.js';
import type { Change } from '../events/types.js';

/** A catalog definition: a tag, a glossary term or a domain (docs/data-and-catalog.md). */
export interface CatalogItem {
  readonly name: string;
  readonly urn: string;
  readonly description: string | null;
}

/** Per-column annotations of an entity (a table's columns). */
export interface ColumnAnnotations {
  readonly description: string | null;
  /** Tag names, sorted. */
  readonly tags: string[];
  /** Glossary term names, sorted. */
  readonly glossary_terms: string[];
}

/**
 * What the catalog holds about one entity (a table or a document). Column names come from
 * users: they are keys of a Map, never of a plain object (`constructor`, `__proto__`...).
 */
export interface EntityAnnotations {
  readonly urn: string;
  readonly description: string | null;
  /** The domain's name. */
  readonly domain: string | null;
  /** Tag names, sorted. */
  readonly tags: string[];
  /** Glossary term names, sorted. */
  readonly glossary_terms: string[];
  /** By column name, sorted by name. */
  readonly columns: ReadonlyMap<string, ColumnAnnotations>;
}

/** Annotations to add to one column (see EntityChange). */
export interface ColumnChange {
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly glossaryTerms?: readonly string[];
}

/**
 * Annotations to add to an entity. Tags and terms are added to what the entity (or
 * column) already has, and removed only as `removeTags` says; a description or domain
 * given replaces the old one.
 */
export interface EntityChange {
  readonly description?: string;
  /** A domain name; the domain must exist. */
  readonly domain?: string;
  /** Takes the entity out of this domain when it is the entity's domain (else no change). */
  readonly removeDomain?: string;
  readonly tags?: readonly string[];
  /** Tags to take off the entity itself (not its columns); one it does not have is no change. */
  readonly removeTags?: readonly string[];
  readonly glossaryTerms?: readonly string[];
  /** By column name. */
  readonly columns?: ReadonlyMap<string, ColumnChange>;
}

/**
 * The entity with a change applied would be larger than the catalog can store (the
 * built-in catalog keeps an entity in one DynamoDB item of at most 400 KB). Thrown before
 * anything is written; the request asked for too much, so its body is invalid.
 */
export class AnnotationTooLarge extends Invalid {
  constructor(
    readonly urn: string,
    /** The size the entity would have, in bytes. */
    readonly bytes: number,
    /** The most the catalog stores for one entity, in bytes. */
    readonly limit: number,
  ) {
    const error = `the annotations would take ${bytes} bytes; the catalog stores at most ${limit} for one entity`;
    super([valueError(['body'], error, null)]);
  }
}

export interface Created {
  readonly item: CatalogItem;
  /** False when it existed already (then `item` is the existing one). */
  readonly created: boolean;
}

/**
 * The metadata catalog (tags, glossary terms, domains and the annotations of tables and
 * documents). Built-in: DynamoDB. DataHub: its GMS GraphQL API. Both use DataHub's urns
 * (`urn:li:tag:<name>`, `urn:li:glossaryTerm:<name>`, `urn:li:domain:<name>`, datasets
 * `urn:li:dataset:(urn:li:dataPlatform:<platform>,<catalog>.<schema>.<table>,PROD)`, each
 * name escaped: see datasetUrnOf).
 */
export interface MetadataCatalog {
  /** The urn of a table (the platform is the adapter's: `dpm` built-in, `trino` for DataHub by default). */
  datasetUrn(catalog: string, schema: string, table: string): string;
  /** Sorted by name. */
  listTags(): Promise<CatalogItem[]>;
  /** Sorted by name. */
  listGlossaryTerms(): Promise<CatalogItem[]>;
  /** Sorted by name. */
  listDomains(): Promise<CatalogItem[]>;
  getTag(name: string): Promise<CatalogItem | undefined>;
  getGlossaryTerm(name: string): Promise<CatalogItem | undefined>;
  getDomain(name: string): Promise<CatalogItem | undefined>;
  /** Idempotent: an existing one is returned with `created: false` (its description unchanged). */
  createTag(name: string, description?: string): Promise<Created>;
  createGlossaryTerm(name: string, description?: string): Promise<Created>;
  /**
   * Idempotent as createTag. `change` (`catalog.domain.created`, docs/events-and-webhooks.md) is stamped on
   * the domain's item by a creation where the catalog keeps domains in DynamoDB (built-in),
   * in the write that creates it; an existing domain is not stamped. DataHub creates the
   * domain in DataHub, which no DynamoDB write can join: no event there.
   */
  createDomain(name: string, description?: string, change?: Change): Promise<Created>;
  /** An entity never annotated has empty annotations. */
  getEntity(urn: string): Promise<EntityAnnotations>;
  /**
   * The annotations of each of `urns`, in their order (one never annotated: empty).
   * Built-in: BatchGetItem, 100 a call; DataHub: one entity a request, a few at a time.
   */
  getEntities(urns: readonly string[]): Promise<EntityAnnotations[]>;
  /**
   * Every entity (tables and, where the catalog holds them, documents) whose domain is
   * `domain`, with its annotations, sorted by urn. Built-in: one paginated Query on the
   * `by_domain` index; DataHub: a search filtered on the domain.
   */
  listDomainEntities(domain: string): Promise<EntityAnnotations[]>;
  /**
   * Throws AnnotationTooLarge when the entity with `change` applied would be larger than
   * the catalog stores, so a caller can refuse a request before writing anything.
   */
  checkAnnotation(urn: string, change: EntityChange): Promise<void>;
  /**
   * Adds annotations (see EntityChange). The tags, terms and domain named must exist:
   * the caller creates them first (DataHub refuses unknown ones). Throws AnnotationTooLarge,
   * having written nothing, when the result would not fit.
   *
   * `event`: the domain event of the change (docs/events-and-webhooks.md), recorded where the catalog keeps
   * entities in DynamoDB (built-in) in the transaction that writes the annotations, so it
   * exists if and only if they were committed; a change the entity holds already writes
   * nothing and records no event. DataHub writes in DataHub, which no DynamoDB write can
   * join: no event there.
   */
  annotate(urn: string, change: EntityChange, event?: AnnotationEvent): Promise<void>;
  /**
   * Makes the document's entity exist in the catalog, so that it can be annotated (E6) and
   * read back. Called when a document is registered, before its item is written.
   * Idempotent: registering an entity the catalog has already succeeds and changes nothing.
   * Built-in: writes nothing (an entity item is written by its first annotation); DataHub:
   * `createDocument` with the document's id.
   */
  registerDocument(document: DocumentEntity): Promise<void>;
  /**
   * Undoes registerDocument when the document's item could not be written (compensation).
   * Removing an entity the catalog does not have succeeds.
   */
  unregisterDocument(urn: string): Promise<void>;
}

/**
 * The domain event of an annotation, written through the outbox (shared/events/events-table.ts)
 * with the subject's next sequence: its data depends on the annotations the write leaves.
 * As with the metastore's OutboxEvent, the last sequence is read before the data on every
 * attempt.
 */
export interface AnnotationEvent {
  /** Where events are kept (the runtime's `eventsTable`). */
  readonly events: EventsTable;
  /** The resource path, e.g. `metastore/hive/sales/orders`. */
  readonly subject: string;
  readonly change: Change;
  /** The event's data: the resource as its GET answers, read now, with the entity's annotations `after` the change. */
  data(after: EntityAnnotations): Promise<Record<string, unknown>>;
}

/** What the catalog records about a document when it is registered. */
export interface DocumentEntity {
  /** `documentUrnOf(id)`. */
  readonly urn: string;
  /** The document's id (the urn's last part). */
  readonly id: string;
  /** Shown as the entity's title: the file name. */
  readonly title: string;
  /** The document's subtype, if it has one. */
  readonly subtype: string | null;
}

/** DataHub's urns, shared by both adapters. */
export const tagUrn = (name: string): string => `urn:li:tag:${name}`;
export const glossaryTermUrn = (name: string): string => `urn:li:glossaryTerm:${name}`;
export const domainUrn = (name: string): string => `urn:li:domain:${name}`;
export const documentUrnOf = (id: string): string => `urn:li:document:${id}`;
export const isDocumentUrn = (urn: string): boolean => urn.startsWith('urn:li:document:');

/**
 * What a name may not hold verbatim inside a dataset urn: `.` separates catalog, schema and
 * table; `,` `(` `)` delimit the urn's tuple (DataHub percent-encodes those too); `%` is the
 * escape itself. Names without them (the usual ones) appear unchanged.
 */
const URN_RESERVED = /[%.,()]/g;
const escapeUrnPart = (name: string): string =>
  name.replace(URN_RESERVED, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The one way to build a table's urn: `sales.eu` / `core` / `orders` and `sales` / `eu.core`
 * / `orders` get different urns (`sales%2Eeu.core.orders` and `sales.eu%2Ecore.orders`).
 */
export const datasetUrnOf = (platform: string, catalog: string, schema: string, table: string): string =>
  `urn:li:dataset:(urn:li:dataPlatform:${platform},${[catalog, schema, table].map(escapeUrnPart).join('.')},PROD)`;

/** A table's place as a dataset urn names it. */
export interface DatasetRef {
  readonly platform: string;
  readonly catalog: string;
  readonly schema: string;
  readonly table: string;
}

/**
 * The one way to read a table's urn back: the table datasetUrnOf built it from, or
 * undefined for anything datasetUrnOf does not build (another entity type, not three
 * parts, a malformed or non-canonical escape), so each urn names at most one table.
 */
export function parseDatasetUrn(urn: string): DatasetRef | undefined {
  const match = /^urn:li:dataset:\(urn:li:dataPlatform:([^,()]+),([^,()]+),PROD\)$/.exec(urn);
  if (!match) return undefined;
  const [, platform, name] = match as unknown as [string, string, string];
  const parts = name.split('.');
  if (parts.length !== 3) return undefined;
  let names: string[];
  try {
    names = parts.map((part) => decodeURIComponent(part));
  } catch {
    return undefined;
  }
  const [catalog, schema, table] = names as [string, string, string];
  if (!catalog || !schema || !table) return undefined;
  return datasetUrnOf(platform, catalog, schema, table) === urn ? { platform, catalog, schema, table } : undefined;
}

export const byUrn = (a: { urn: string }, b: { urn: string }): number => (a.urn < b.urn ? -1 : a.urn > b.urn ? 1 : 0);

export const byName = (a: { name: string }, b: { name: string }): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

export const emptyAnnotations = (urn: string): EntityAnnotations => ({
  urn,
  description: null,
  domain: null,
  tags: [],
  glossary_terms: [],
  columns: new Map(),
});
