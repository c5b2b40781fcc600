import type { EventsTable } from '../events/outbox.js';
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

/** A table's schema: where it lives, what it is, its columns in their order. */
export interface TableSchema {
  readonly catalog: string;
  readonly schema: string;
  readonly table: string;
  readonly description: string | null;
  readonly columns: ColumnSchema[];
}

/**
 * The metastore behind API.md §6 (catalogs → schemas → tables). Built-in: DynamoDB, where
 * tables are registered through this service. Trino: the external system is the source
 * of truth, so nothing can be registered here. Every list is sorted ascending.
 */
export interface Metastore {
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
   * (the domain event of the registration, API.md §13) is recorded in the transaction
   * that registers, so it exists if and only if the registration was committed. External
   * metastores never register (the service refuses first).
   */
  registerTable(table: TableSchema, event?: OutboxEvent): Promise<void>;
}

/**
 * A change's domain event for a subject whose events are written through the outbox
 * (shared/events/outbox.ts): into the events table, in the transaction that commits the
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
  /** The resource as its GET answers after the change, read now. */
  data(): Promise<Record<string, unknown>>;
}

/** Ascending by UTF-16 code units, the same for every adapter whatever order its source uses. */
export function sortedNames(names: Iterable<string>): string[] {
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
