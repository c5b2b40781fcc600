import type { EventsTable } from '../events/events-table.js';
import type { Change } from '../events/types.js';

/** A column as the metastore knows it. */
export interface ColumnSchema {
  readonly name: string;
  readonly type: string;
  readonly description: string | null;
}

/** Where a table lives. */
export interface TableRef {
  readonly catalog: string;
  readonly schema: string;
  readonly table: string;
}

/** A column as a table is created with or altered to have (docs/sdk.md). */
export interface ColumnDefinition {
  readonly name: string;
  /** A SQL type as the engine spells it, e.g. `varchar`, `decimal(10,2)`. */
  readonly type: string;
  readonly comment: string | null;
  /** Default true; false is `NOT NULL`. */
  readonly nullable: boolean;
}

/**
 * Catalog, schema or table properties (Trino's `WITH (name = value, ...)`): names are
 * identifiers, values strings, numbers or booleans. Names come from users: kept in a Map.
 */
export type Properties = ReadonlyMap<string, string | number | boolean>;

/** A catalog with what its details answer. */
export interface CatalogDetail {
  readonly name: string;
  /** The `catalog_type` it was created with (Trino: its connector); null when unknown. */
  readonly type: string | null;
  readonly schema_count: number;
}

/** A schema with what its details answer. */
export interface SchemaDetail {
  readonly name: string;
  readonly table_count: number;
}

/** The first rows of a table (`SELECT * ... LIMIT n`); the built-in metastore holds no rows. */
export interface TablePreview {
  readonly columns: string[];
  readonly rows: unknown[][];
}

/** One change of `PATCH .../tables/{t}` (docs/sdk.md); all of a request's operations or none. */
export type AlterOperation =
  | { readonly op: 'add_column'; readonly name: string; readonly type: string; readonly comment: string | null }
  | { readonly op: 'drop_column'; readonly name: string }
  | { readonly op: 'rename_column'; readonly name: string; readonly new_name: string }
  | { readonly op: 'set_column_comment'; readonly name: string; readonly comment: string | null }
  | { readonly op: 'set_comment'; readonly comment: string | null }
  | { readonly op: 'set_properties'; readonly properties: Properties };

/**
 * The DDL of the NX1 SDK's metastore (docs/sdk.md). Every method throws the shared errors:
 * `NotFound` for an unknown catalog, schema or table (naming which), `Conflict` for one
 * that exists already or is not empty, `Invalid` (422) for an operation the table refuses
 * (an unknown or duplicate column, dropping the last column), `Unavailable` when the
 * engine cannot be reached. `event` is the change's domain event: built-in, written in
 * the transaction of the change; external, recorded once the engine confirmed it.
 */
export interface MetastoreDdl {
  /** Every catalog with its type and schema count, sorted by name. */
  catalogDetails(): Promise<CatalogDetail[]>;
  /** undefined: unknown catalog. */
  schemaDetails(catalog: string): Promise<SchemaDetail[] | undefined>;
  /** Every table of the schema with its columns, sorted by name; undefined: unknown catalog or schema. */
  tableDetails(catalog: string, schema: string): Promise<TableSchema[] | undefined>;
  /** undefined: unknown table. `limit` is 1–1000. */
  previewTable(ref: TableRef, limit: number): Promise<TablePreview | undefined>;
  createCatalog(name: string, type: string, properties: Properties, event?: OutboxEvent): Promise<void>;
  dropCatalog(name: string, event?: OutboxEvent): Promise<void>;
  createSchema(catalog: string, schema: string, properties: Properties, event?: OutboxEvent): Promise<void>;
  dropSchema(catalog: string, schema: string, event?: OutboxEvent): Promise<void>;
  /** The table as created (its columns' comments as descriptions). */
  createTable(
    ref: TableRef,
    columns: readonly ColumnDefinition[],
    properties: Properties,
    event?: OutboxEvent,
  ): Promise<TableSchema>;
  dropTable(ref: TableRef, event?: OutboxEvent): Promise<void>;
  /** The table after every operation, applied in order; none applied when one is refused. */
  alterTable(ref: TableRef, operations: readonly AlterOperation[], event?: OutboxEvent): Promise<TableSchema>;
}

/** A table's schema: where it lives, what it is, its columns in their order. */
export interface TableSchema {
  readonly catalog: string;
  readonly schema: string;
  readonly table: string;
  readonly description: string | null;
  readonly columns: ColumnSchema[];
}

/**
 * The metastore behind docs/data-and-catalog.md (catalogs → schemas → tables). Built-in: DynamoDB, where
 * tables are registered through this service. Trino: the external system is the source
 * of truth, so nothing can be registered here. Every list is sorted ascending.
 */
export interface Metastore extends MetastoreDdl {
  /** Its name as `GET /api/metastore/engines` answers it (the value of `METASTORE` that chose it). */
  readonly engine: 'builtin' | 'trino';
  /** True when the tables live in an external system (registration is refused there). */
  readonly external: boolean;
  listCatalogs(): Promise<string[]>;
  /** undefined: unknown catalog. */
  listSchemas(catalog: string): Promise<string[] | undefined>;
  /** undefined: unknown catalog or schema. */
  listTables(catalog: string, schema: string): Promise<string[] | undefined>;
  getTable(catalog: string, schema: string, table: string): Promise<TableSchema | undefined>;
  /** The tables among `refs` that exist, in the order of `refs` (missing ones left out). */
  getTables(refs: readonly TableRef[]): Promise<TableSchema[]>;
  /**
   * Creates the catalog and schema when missing and replaces the table. Built-in: `event`
   * (the domain event of the registration, docs/events-and-webhooks.md) is recorded in the transaction
   * that registers, so it exists if and only if the registration was committed. External
   * metastores never register (the service refuses first).
   */
  registerTable(table: TableSchema, event?: OutboxEvent): Promise<void>;
}

/**
 * A change's domain event for a subject whose events are written through the outbox
 * (shared/events/events-table.ts): into the events table, in the transaction that commits the
 * change, with the subject's next sequence. Subjects changed in more than one table (a
 * table's registration in the metastore, its classification in the catalog) are counted
 * this way, so their sequence stays one.
 *
 * The writer reads the subject's last sequence first and the data second, on every
 * attempt: a change of the subject committed after that read takes the sequence, so this
 * write fails and is tried again on fresh data; one committed before it is in the data.
 */
export interface OutboxEvent {
  /** Where events are kept (the runtime's `eventsTable`). */
  readonly events: EventsTable;
  /** The resource path, e.g. `metastore/hive/sales/orders`. */
  readonly subject: string;
  readonly change: Change;
  /**
   * The resource as its GET answers after the change, read now. `after`: the table as the
   * change leaves it, where the metastore computes that before committing (the built-in
   * metastore's alterTable and createTable); read it from the metastore when not given.
   */
  data(after?: TableSchema): Promise<Record<string, unknown>>;
}

/** Ascending by UTF-16 code units, the same for every adapter whatever order its source uses. */
export function sortedNames(names: Iterable<string>): string[] {
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
