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
  /** Creates the catalog and schema when missing and replaces the table. */
  registerTable(table: TableSchema): Promise<void>;
}

/** Ascending by UTF-16 code units, the same for every adapter whatever order its source uses. */
export function sortedNames(names: Iterable<string>): string[] {
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
