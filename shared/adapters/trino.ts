import { setTimeout as timeout } from 'node:timers/promises';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Conflict, Invalid, NotFound, Unavailable, valueError, type ValidationIssue } from '../errors.js';
import { recordEvent } from '../events/events-table.js';
import { logger } from '../logger.js';
import {
  sortedNames,
  type AlterOperation,
  type CatalogDetail,
  type ColumnDefinition,
  type Metastore,
  type OutboxEvent,
  type Properties,
  type SchemaDetail,
  type TablePreview,
  type TableRef,
  type TableSchema,
} from '../ports/metastore.js';
import { mapLimit } from '../concurrency.js';
import { quoteIdentifier, quoteLiteral } from '../sql.js';

export interface TrinoSettings {
  /** The coordinator's base URL (`/v1/statement` is appended). */
  readonly url: string;
  /** Sent as `X-Trino-User`. */
  readonly user: string;
}

export interface TrinoOptions {
  /**
   * For a whole statement, every page and retry included (default 6 s): a slow Trino becomes a
   * 503 within the API's 10 s.
   */
  readonly timeoutMs?: number;
  /**
   * Where the domain events of DDL changes are recorded once Trino confirmed them (the
   * runtime's document client); needed only when a change carries its event.
   */
  readonly db?: DynamoDBDocumentClient;
}

/** A statement's answer: its columns' names (QueryResults `columns`) and every page's rows. */
export interface QueryAnswer {
  readonly columns: string[];
  readonly rows: unknown[][];
}

/** Trino's QueryError (client protocol): why a query failed. */
export class TrinoQueryError extends Error {
  constructor(
    message: string,
    readonly errorName: string | undefined,
    readonly errorType: string | undefined,
  ) {
    super(message);
    this.name = 'TrinoQueryError';
  }
}

/** QueryResults, the document every statement page is (client protocol). */
interface QueryResults {
  id?: string;
  nextUri?: string;
  /** Present once Trino knows the result's shape (client protocol: `name`, `type`). */
  columns?: { name?: string; type?: string }[];
  data?: unknown[][];
  error?: { message?: string; errorName?: string; errorType?: string };
  stats?: { state?: string };
}

/** Gateways in front of Trino answer these for a moment's trouble; the protocol says try again. */
const RETRY_STATUSES = new Set([502, 503, 504]);
const RETRY_ATTEMPTS = 3;
/** Table lookups run concurrently against Trino. */
const TABLE_LOOKUPS_IN_FLIGHT = 8;
/** Per-catalog schema counts run concurrently against Trino. */
const CATALOG_COUNTS_IN_FLIGHT = 4;
/** Every catalog has it; Trino makes it, so it is neither counted nor a reason to keep a catalog. */
const INFORMATION_SCHEMA = 'information_schema';

/**
 * The metastore is Trino, read over its client REST protocol: `POST /v1/statement` with
 * the SQL as body, then `GET nextUri` until a page has none; rows (`data`) may come on any
 * page and a failed query carries `error`. Trino not answering, or answering other than
 * 200, is `Unavailable`; a query Trino refused is a `TrinoQueryError`.
 */
export class TrinoMetastore implements Metastore {
  readonly engine = 'trino';
  readonly external = true;
  private readonly statementUrl: string;
  private readonly timeoutMs: number;
  private readonly db: DynamoDBDocumentClient | undefined;

  constructor(
    private readonly settings: TrinoSettings,
    options: TrinoOptions = {},
  ) {
    this.statementUrl = `${settings.url.replace(/\/+$/, '')}/v1/statement`;
    this.timeoutMs = options.timeoutMs ?? 6_000;
    this.db = options.db;
  }

  async listCatalogs(): Promise<string[]> {
    return sortedNames((await this.query('SHOW CATALOGS')).map((row) => String(row[0])));
  }

  async listSchemas(catalog: string): Promise<string[] | undefined> {
    const rows = await notFoundAsUndefined(this.query(`SHOW SCHEMAS FROM ${quoteIdentifier(catalog)}`));
    return rows && sortedNames(rows.map((row) => String(row[0])));
  }

  async listTables(catalog: string, schema: string): Promise<string[] | undefined> {
    const rows = await notFoundAsUndefined(
      this.query(`SHOW TABLES FROM ${quoteIdentifier(catalog)}.${quoteIdentifier(schema)}`),
    );
    return rows && sortedNames(rows.map((row) => String(row[0])));
  }

  /**
   * The columns from information_schema.columns and the table's comment from
   * system.metadata.table_comments (Trino's system connector), asked at the same time.
   */
  async getTable(catalog: string, schema: string, table: string): Promise<TableSchema | undefined> {
    const [rows, comments] = await Promise.all([
      notFoundAsUndefined(
        this.query(
          `SELECT column_name, data_type, comment FROM ${quoteIdentifier(catalog)}.information_schema.columns` +
            ` WHERE table_schema = ${quoteLiteral(schema)} AND table_name = ${quoteLiteral(table)}` +
            ' ORDER BY ordinal_position',
        ),
      ),
      this.query(
        `SELECT comment FROM system.metadata.table_comments WHERE catalog_name = ${quoteLiteral(catalog)}` +
          ` AND schema_name = ${quoteLiteral(schema)} AND table_name = ${quoteLiteral(table)}`,
      ),
    ]);
    if (!rows || rows.length === 0) return undefined;
    return { catalog, schema, table, description: text(comments[0]?.[0]), columns: rows.map(columnOf) };
  }

  /** One information_schema query per table, a few at a time (Trino has no multi-table lookup that is cheaper). */
  async getTables(refs: readonly TableRef[]): Promise<TableSchema[]> {
    const tables = await mapLimit(refs, TABLE_LOOKUPS_IN_FLIGHT, (r) => this.getTable(r.catalog, r.schema, r.table));
    return tables.filter((t): t is TableSchema => t !== undefined);
  }

  registerTable(_table: TableSchema): Promise<void> {
    return Promise.reject(new Conflict('tables are registered in the external metastore'));
  }

  /**
   * The catalogs and their connectors from system.metadata.catalogs (catalog_name,
   * connector_id, connector_name: Trino's CatalogSystemTable), then one count of
   * `<c>.information_schema.schemata` per catalog, a few at a time: Trino has no table
   * that counts every catalog's schemas at once. A catalog dropped meanwhile is left out.
   */
  async catalogDetails(): Promise<CatalogDetail[]> {
    const catalogs = await this.query('SELECT catalog_name, connector_name FROM system.metadata.catalogs');
    const connectors = new Map(catalogs.map(([name, connector]) => [String(name), text(connector)]));
    const names = sortedNames(connectors.keys());
    const counts = await mapLimit(names, CATALOG_COUNTS_IN_FLIGHT, (catalog) =>
      notFoundAsUndefined(
        this.query(
          `SELECT count(*) FROM ${quoteIdentifier(catalog)}.information_schema.schemata` +
            ` WHERE schema_name <> ${quoteLiteral(INFORMATION_SCHEMA)}`,
        ),
      ),
    );
    return names.flatMap((name, i) => {
      const count = counts[i];
      return count ? [{ name, type: connectors.get(name) ?? null, schema_count: Number(count[0]?.[0] ?? 0) }] : [];
    });
  }

  /**
   * `SHOW SCHEMAS` (which also tells an unknown catalog) beside one count of
   * `<c>.information_schema.tables` grouped by schema, so empty schemas appear with 0.
   * information_schema is left out of both, as it is of `schema_count` and of the check
   * before DROP CATALOG.
   */
  async schemaDetails(catalog: string): Promise<SchemaDetail[] | undefined> {
    const [schemas, counts] = await Promise.all([
      notFoundAsUndefined(this.query(`SHOW SCHEMAS FROM ${quoteIdentifier(catalog)}`)),
      notFoundAsUndefined(
        this.query(
          `SELECT table_schema, count(*) FROM ${quoteIdentifier(catalog)}.information_schema.tables` +
            ` WHERE table_schema <> ${quoteLiteral(INFORMATION_SCHEMA)} GROUP BY table_schema`,
        ),
      ),
    ]);
    if (!schemas) return undefined;
    const tableCounts = new Map((counts ?? []).map(([schema, count]) => [String(schema), Number(count)]));
    const names = sortedNames(schemas.map((row) => String(row[0])).filter((name) => name !== INFORMATION_SCHEMA));
    return names.map((name) => ({ name, table_count: tableCounts.get(name) ?? 0 }));
  }

  /**
   * Three statements at once: `SHOW TABLES` (which also tells an unknown schema), one
   * information_schema.columns query for the whole schema (grouped here by table, in
   * ordinal order) and the schema's table comments.
   */
  async tableDetails(catalog: string, schema: string): Promise<TableSchema[] | undefined> {
    const [tables, columns, comments] = await Promise.all([
      notFoundAsUndefined(this.query(`SHOW TABLES FROM ${quoteIdentifier(catalog)}.${quoteIdentifier(schema)}`)),
      notFoundAsUndefined(
        this.query(
          `SELECT table_name, column_name, data_type, comment FROM ${quoteIdentifier(catalog)}.information_schema.columns` +
            ` WHERE table_schema = ${quoteLiteral(schema)} ORDER BY table_name, ordinal_position`,
        ),
      ),
      this.query(
        `SELECT table_name, comment FROM system.metadata.table_comments WHERE catalog_name = ${quoteLiteral(catalog)}` +
          ` AND schema_name = ${quoteLiteral(schema)}`,
      ),
    ]);
    if (!tables) return undefined;
    const columnsOf = new Map<string, TableSchema['columns']>();
    for (const [table, ...column] of columns ?? []) {
      const name = String(table);
      columnsOf.set(name, [...(columnsOf.get(name) ?? []), columnOf(column)]);
    }
    const descriptions = new Map(comments.map(([table, comment]) => [String(table), text(comment)]));
    return sortedNames(tables.map((row) => String(row[0]))).map((table) => ({
      catalog,
      schema,
      table,
      description: descriptions.get(table) ?? null,
      columns: columnsOf.get(table) ?? [],
    }));
  }

  /** `SELECT * ... LIMIT n`: the names from QueryResults' `columns`, the rows as Trino encodes them. */
  async previewTable(ref: TableRef, limit: number): Promise<TablePreview | undefined> {
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RangeError(`limit ${limit} is not 1-1000`);
    const answer = await notFoundAsUndefined(this.execute(`SELECT * FROM ${qualifiedTable(ref)} LIMIT ${limit}`));
    return answer && { columns: answer.columns, rows: answer.rows };
  }

  /**
   * `CREATE CATALOG c USING connector WITH (...)` (Trino's dynamic catalogs). The connector
   * is sent as the plain identifier the statement's synopsis shows (`USING memory`), so it
   * must be one (Trino's Identifier NAME_PATTERN); property values as string literals, since
   * CreateCatalogTask evaluates every one as VARCHAR (the docs: "All property values must be
   * varchars (single quoted), including numbers and boolean values").
   */
  async createCatalog(name: string, type: string, properties: Properties, event?: OutboxEvent): Promise<void> {
    const issues: ValidationIssue[] = [];
    if (!PLAIN_IDENTIFIER.test(type)) {
      issues.push(valueError(['body', 'catalog_type'], `'${type}' is not a connector name`, type));
    }
    const assignments = propertyAssignments(properties, ['body', 'properties'], issues, 'varchar');
    if (issues.length > 0) throw new Invalid(issues);
    await this.change(`CREATE CATALOG ${quoteIdentifier(name)} USING ${type}${withClause(assignments)}`, {
      catalog: name,
    });
    await this.record(event);
  }

  /**
   * Trino drops a catalog whatever it holds (DropCatalogTask checks nothing), so its schemas
   * are looked at first: any besides information_schema keep it (409).
   */
  async dropCatalog(name: string, event?: OutboxEvent): Promise<void> {
    const schemas = await this.change(`SHOW SCHEMAS FROM ${quoteIdentifier(name)}`, { catalog: name });
    if (schemas.some((row) => String(row[0]) !== INFORMATION_SCHEMA)) {
      throw new Conflict(`Catalog ${name} has schemas; drop them first`);
    }
    await this.change(`DROP CATALOG ${quoteIdentifier(name)}`, { catalog: name });
    await this.record(event);
  }

  async createSchema(catalog: string, schema: string, properties: Properties, event?: OutboxEvent): Promise<void> {
    const issues: ValidationIssue[] = [];
    const assignments = propertyAssignments(properties, ['body', 'properties'], issues, 'typed');
    if (issues.length > 0) throw new Invalid(issues);
    await this.change(
      `CREATE SCHEMA ${quoteIdentifier(catalog)}.${quoteIdentifier(schema)}${withClause(assignments)}`,
      { catalog, schema },
    );
    await this.record(event);
  }

  /** RESTRICT (Trino's default, said aloud): a schema with tables is SCHEMA_NOT_EMPTY, a 409. */
  async dropSchema(catalog: string, schema: string, event?: OutboxEvent): Promise<void> {
    await this.change(`DROP SCHEMA ${quoteIdentifier(catalog)}.${quoteIdentifier(schema)} RESTRICT`, {
      catalog,
      schema,
    });
    await this.record(event);
  }

  /** `CREATE TABLE t (col type [NOT NULL] [COMMENT '...'], ...) [WITH (...)]`, then the table as Trino holds it. */
  async createTable(
    ref: TableRef,
    columns: readonly ColumnDefinition[],
    properties: Properties,
    event?: OutboxEvent,
  ): Promise<TableSchema> {
    const issues: ValidationIssue[] = [];
    const seen = new Set<string>();
    columns.forEach((column, i) => {
      if (seen.has(column.name)) {
        issues.push(valueError(['body', 'columns', i, 'name'], `duplicate column name '${column.name}'`, column.name));
      }
      seen.add(column.name);
      checkType(column.type, ['body', 'columns', i, 'type'], issues);
    });
    const assignments = propertyAssignments(properties, ['body', 'properties'], issues, 'typed');
    if (issues.length > 0) throw new Invalid(issues);
    const definitions = columns.map(
      (c) => `${quoteIdentifier(c.name)} ${c.type}${c.nullable ? '' : ' NOT NULL'}${commentClause(c.comment)}`,
    );
    await this.change(`CREATE TABLE ${qualifiedTable(ref)} (${definitions.join(', ')})${withClause(assignments)}`, ref);
    const created = (await this.getTable(ref.catalog, ref.schema, ref.table)) ?? {
      ...ref,
      description: null,
      columns: columns.map((c) => ({ name: c.name, type: c.type, description: c.comment })),
    };
    await this.record(event, created);
    return created;
  }

  async dropTable(ref: TableRef, event?: OutboxEvent): Promise<void> {
    await this.change(`DROP TABLE ${qualifiedTable(ref)}`, ref);
    await this.record(event);
  }

  /**
   * All operations or none. Trino runs each DDL statement on its own (no transaction spans
   * them), so: every operation is checked against the table's columns first, and a refused
   * one (unknown or duplicate column, the last column dropped) runs no statement; then the
   * statements run in order and, when one fails, those applied are undone in reverse by
   * their inverse (rename back, the previous comment, a dropped column added again with its
   * type and comment — its data cannot come back and it comes back as the last column) before
   * the failure is thrown. Properties have no inverse (Trino has no connector-independent way
   * to read a table's properties back), so they are set last, in one statement: a failure of
   * theirs needs only the others undone, and nothing after them can fail.
   */
  async alterTable(ref: TableRef, operations: readonly AlterOperation[], event?: OutboxEvent): Promise<TableSchema> {
    const before = await this.getTable(ref.catalog, ref.schema, ref.table);
    if (!before) throw new NotFound(`No table ${ref.catalog}.${ref.schema}.${ref.table}`);
    const steps = alterSteps(ref, before, operations);
    const applied: AlterStep[] = [];
    for (const step of steps) {
      try {
        await this.execute(step.sql);
      } catch (err) {
        await this.undo(applied);
        throw domainError(err, { ...ref, column: step.column });
      }
      applied.push(step);
    }
    const after = (await this.getTable(ref.catalog, ref.schema, ref.table)) ?? before;
    await this.record(event, after);
    return after;
  }

  /** The inverse of each applied step, last first; one that fails is logged and the rest still tried. */
  private async undo(applied: readonly AlterStep[]): Promise<void> {
    for (const step of [...applied].reverse()) {
      if (step.undo === undefined) continue;
      try {
        await this.execute(step.undo);
      } catch (err) {
        logger.warn('could not undo an ALTER TABLE step', {
          error: err instanceof TrinoQueryError ? err.errorName : (err as Error)?.name,
        });
      }
    }
  }

  /** A DDL statement (or a lookup before one), Trino's refusals as the port's errors. */
  private async change(sql: string, names: ErrorNames): Promise<unknown[][]> {
    try {
      return await this.query(sql);
    } catch (err) {
      throw domainError(err, names);
    }
  }

  /** The change's event, recorded once Trino confirmed the change (shared/events/events-table.ts recordEvent). */
  private async record(event: OutboxEvent | undefined, after?: TableSchema): Promise<void> {
    if (!event) return;
    if (!this.db) throw new Error('TrinoMetastore records events only with a db (TrinoOptions.db)');
    await recordEvent(this.db, event.events, event.subject, event.change, () => event.data(after));
  }

  /** Runs one statement and gathers the rows of every page. */
  async query(sql: string, catalog?: string, schema?: string): Promise<unknown[][]> {
    return (await this.execute(sql, catalog, schema)).rows;
  }

  /** Runs one statement and gathers its columns' names and the rows of every page. */
  async execute(sql: string, catalog?: string, schema?: string): Promise<QueryAnswer> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    const rows: unknown[][] = [];
    let columns: string[] | undefined;
    let page = await this.fetchPage(signal, this.statementUrl, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain; charset=utf-8',
        'x-trino-user': this.settings.user,
        ...(catalog !== undefined ? { 'x-trino-catalog': catalog } : {}),
        ...(schema !== undefined ? { 'x-trino-schema': schema } : {}),
      },
      body: sql,
    });
    for (;;) {
      if (columns === undefined && Array.isArray(page.columns)) columns = page.columns.map((c) => String(c.name));
      if (Array.isArray(page.data)) rows.push(...page.data);
      if (page.error) {
        logger.debug('Trino refused a query', { errorName: page.error.errorName, queryId: page.id });
        throw new TrinoQueryError(
          page.error.message ?? 'Trino query failed',
          page.error.errorName,
          page.error.errorType,
        );
      }
      if (!page.nextUri) return { columns: columns ?? [], rows };
      const nextUri = page.nextUri;
      try {
        page = await this.fetchPage(signal, nextUri, { method: 'GET' });
      } catch (err) {
        // Let the coordinator drop the query rather than keep it for an abandoned client.
        void fetch(nextUri, { method: 'DELETE', signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
        throw err;
      }
    }
  }

  /** One page; 502/503/504 are tried again after 50-100 ms, as the protocol asks. */
  private async fetchPage(signal: AbortSignal, url: string, init: RequestInit): Promise<QueryResults> {
    const call = `${init.method} ${url === this.statementUrl ? '/v1/statement' : 'nextUri'}`;
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      let text: string;
      try {
        res = await fetch(url, { ...init, redirect: 'manual', signal });
        text = await res.text();
      } catch (err) {
        const timedOut = signal.aborted;
        logger.warn('Trino did not answer', {
          call,
          origin: new URL(this.statementUrl).origin,
          error: (err as Error)?.name,
        });
        throw new Unavailable(
          timedOut ? `Trino did not answer within ${this.timeoutMs / 1000} s` : 'Trino is not reachable', // where: in the log, not in the answer
        );
      }
      if (RETRY_STATUSES.has(res.status) && attempt < RETRY_ATTEMPTS) {
        await sleep(50 + Math.random() * 50, signal);
        continue;
      }
      if (res.status !== 200) {
        logger.warn('unexpected answer from Trino', { call, status: res.status });
        throw new Unavailable(`Trino answered HTTP ${res.status} to ${call}`);
      }
      try {
        const body: unknown = JSON.parse(text);
        if (body && typeof body === 'object' && !Array.isArray(body)) return body as QueryResults;
      } catch {
        // reported below
      }
      throw new Unavailable(`Trino answered ${call} with something other than QueryResults`);
    }
  }
}

/** Trino's names for "no such catalog/schema/table": an unknown name, not a failure. */
const NOT_FOUND = new Set(['CATALOG_NOT_FOUND', 'SCHEMA_NOT_FOUND', 'TABLE_NOT_FOUND']);

async function notFoundAsUndefined<T>(query: Promise<T>): Promise<T | undefined> {
  try {
    return await query;
  } catch (err) {
    if (err instanceof TrinoQueryError && err.errorName && NOT_FOUND.has(err.errorName)) return undefined;
    throw err;
  }
}

/** Waits `ms`, or less: an expired deadline ends the wait; the next fetch then fails as a timeout. */
const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  timeout(ms, undefined, { signal }).catch(() => undefined);

/** A varchar cell: its text, or null. */
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** `[column_name, data_type, comment]` as the port's column. */
const columnOf = ([name, type, comment]: unknown[]): TableSchema['columns'][number] => ({
  name: String(name),
  type: String(type),
  description: text(comment),
});

const qualifiedTable = (ref: TableRef): string =>
  `${quoteIdentifier(ref.catalog)}.${quoteIdentifier(ref.schema)}.${quoteIdentifier(ref.table)}`;

/** Trino's unquoted identifier (io.trino.sql.tree.Identifier NAME_PATTERN). */
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `"name" = value` for each property: a name is a quoted identifier (the docs: "Property names
 * can be double quoted, which is required if they contain special characters"); a value a
 * string literal, a finite number or TRUE/FALSE — or, for a catalog (`varchar`), always a
 * string literal. A name or value that cannot be written is an issue at `loc` + name.
 */
function propertyAssignments(
  properties: Properties,
  loc: (string | number)[],
  issues: ValidationIssue[],
  values: 'typed' | 'varchar',
): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, value] of properties) {
    if (name === '') {
      issues.push(valueError([...loc, name], 'a property name cannot be empty', name));
      continue;
    }
    if (typeof value === 'number' && !Number.isFinite(value)) {
      issues.push(valueError([...loc, name], `property '${name}' must be a finite number`, value));
      continue;
    }
    const literal =
      values === 'varchar' || typeof value === 'string'
        ? quoteLiteral(String(value))
        : typeof value === 'boolean'
          ? value
            ? 'TRUE'
            : 'FALSE'
          : String(value);
    out.set(name, `${quoteIdentifier(name)} = ${literal}`);
  }
  return out;
}

const withClause = (assignments: ReadonlyMap<string, string>): string =>
  assignments.size > 0 ? ` WITH (${[...assignments.values()].join(', ')})` : '';

const commentClause = (comment: string | null): string => (comment === null ? '' : ` COMMENT ${quoteLiteral(comment)}`);

const commentValue = (comment: string | null): string => (comment === null ? 'NULL' : quoteLiteral(comment));

/**
 * A column type goes into the statement as written (`decimal(10,2)`, `timestamp(3) with time
 * zone`, `array(row(a bigint, b varchar))`), so it is held to what Trino's `type` rule needs
 * and nothing that could end it: letters, digits, `_`, spaces, brackets, and commas only
 * inside brackets — no quote, no comment, no `;`.
 */
function checkType(type: string, loc: (string | number)[], issues: ValidationIssue[]): void {
  let depth = 0;
  let ok = /^[A-Za-z][A-Za-z0-9_ ,()<>[\]]*$/.test(type) && type.length <= 200;
  for (const c of ok ? type : '') {
    if (c === '(' || c === '<' || c === '[') depth += 1;
    if (c === ')' || c === '>' || c === ']') depth -= 1;
    if (depth < 0 || (c === ',' && depth === 0)) ok = false;
  }
  if (!ok || depth !== 0) issues.push(valueError(loc, `'${type}' is not a SQL type`, type));
}

/** What a statement was about, to name it when Trino refuses. */
interface ErrorNames {
  readonly catalog: string;
  readonly schema?: string;
  readonly table?: string;
  readonly column?: string;
}

/**
 * Trino's refusals as the port's errors (StandardErrorCode names): an unknown object is
 * NotFound naming it; one that exists already (ALREADY_EXISTS is what CREATE CATALOG answers,
 * CoordinatorDynamicCatalogManager) or a non-empty schema is a Conflict; another USER_ERROR is
 * the request's (422), any other failure Trino's (503); not a TrinoQueryError: as it was.
 */
function domainError(err: unknown, names: ErrorNames): unknown {
  if (!(err instanceof TrinoQueryError)) return err;
  const schema = `${names.catalog}.${names.schema}`;
  const table = `${schema}.${names.table}`;
  switch (err.errorName) {
    case 'CATALOG_NOT_FOUND':
      return new NotFound(`No catalog ${names.catalog}`);
    case 'SCHEMA_NOT_FOUND':
      return new NotFound(`No schema ${schema}`);
    case 'TABLE_NOT_FOUND':
      return new NotFound(`No table ${table}`);
    case 'COLUMN_NOT_FOUND':
      return new NotFound(`No column ${names.column ?? ''} in table ${table}`);
    case 'NOT_FOUND': // DROP CATALOG of an unknown one
      return new NotFound(
        names.table ? `No table ${table}` : names.schema ? `No schema ${schema}` : `No catalog ${names.catalog}`,
      );
    case 'ALREADY_EXISTS':
    case 'CATALOG_ALREADY_EXISTS':
      return new Conflict(`Catalog ${names.catalog} exists already`);
    case 'SCHEMA_ALREADY_EXISTS':
      return new Conflict(`Schema ${schema} exists already`);
    case 'TABLE_ALREADY_EXISTS':
      return new Conflict(`Table ${table} exists already`);
    case 'COLUMN_ALREADY_EXISTS':
      return new Conflict(`Column ${names.column ?? ''} exists already in table ${table}`);
    case 'SCHEMA_NOT_EMPTY':
      return new Conflict(`Schema ${schema} is not empty; drop its tables first`);
    default:
      // Another refusal of the statement as written (an unknown connector, property or type):
      // the request's to mend, 422. Trino's own trouble (INTERNAL_ERROR, INSUFFICIENT_RESOURCES,
      // EXTERNAL) is a dependency failure, 503, its message kept for the log only.
      if (err.errorType === 'USER_ERROR')
        return new Invalid([valueError(['body'], `Trino refused the change: ${err.message}`, null)]);
      logger.warn('Trino failed a change', { errorName: err.errorName, errorType: err.errorType });
      return new Unavailable('Trino could not make the change; try again');
  }
}

/** One ALTER statement and the statement that undoes it (none: it cannot be undone). */
interface AlterStep {
  readonly sql: string;
  readonly undo?: string;
  /** The column it is about, to name it when Trino refuses. */
  readonly column?: string;
}

/**
 * The statements of `operations` over `before`, each checked against the columns the
 * operations before it leave; every refusal found is reported at once (422, at
 * `body.operations.<i>`), before anything runs.
 */
function alterSteps(ref: TableRef, before: TableSchema, operations: readonly AlterOperation[]): AlterStep[] {
  const table = qualifiedTable(ref);
  const columns = before.columns.map((c) => ({ ...c }));
  let tableComment = before.description;
  const issues: ValidationIssue[] = [];
  const steps: AlterStep[] = [];
  // A name set twice keeps its last value (one statement may not name it twice: DUPLICATE_PROPERTY).
  const properties = new Map<string, string>();
  const find = (name: string) => columns.findIndex((c) => c.name === name);
  const column = (c: { name: string; type: string; description: string | null }) =>
    `${quoteIdentifier(c.name)} ${c.type}${commentClause(c.description)}`;
  const columnComment = (name: string, comment: string | null) =>
    `COMMENT ON COLUMN ${table}.${quoteIdentifier(name)} IS ${commentValue(comment)}`;

  operations.forEach((op, i) => {
    const loc = (field: string) => ['body', 'operations', i, field];
    const missing = (name: string) =>
      issues.push(valueError(loc('name'), `operation ${i}: table ${ref.table} has no column '${name}'`, name));
    switch (op.op) {
      case 'add_column': {
        const added = { name: op.name, type: op.type, description: op.comment };
        const before = issues.length;
        if (find(op.name) >= 0) {
          issues.push(valueError(loc('name'), `operation ${i}: column '${op.name}' exists already`, op.name));
        }
        checkType(op.type, loc('type'), issues);
        if (issues.length > before) return;
        steps.push({
          sql: `ALTER TABLE ${table} ADD COLUMN ${column(added)}`,
          undo: `ALTER TABLE ${table} DROP COLUMN ${quoteIdentifier(op.name)}`,
          column: op.name,
        });
        columns.push(added);
        return;
      }
      case 'drop_column': {
        const at = find(op.name);
        if (at < 0) return void missing(op.name);
        if (columns.length === 1) {
          issues.push(valueError(loc('name'), `operation ${i}: '${op.name}' is the table's last column`, op.name));
          return;
        }
        steps.push({
          sql: `ALTER TABLE ${table} DROP COLUMN ${quoteIdentifier(op.name)}`,
          // Its data is gone with it: the column comes back empty, and last.
          undo: `ALTER TABLE ${table} ADD COLUMN ${column(columns[at]!)}`,
          column: op.name,
        });
        columns.splice(at, 1);
        return;
      }
      case 'rename_column': {
        const at = find(op.name);
        if (at < 0) return void missing(op.name);
        if (find(op.new_name) >= 0) {
          issues.push(
            valueError(loc('new_name'), `operation ${i}: column '${op.new_name}' exists already`, op.new_name),
          );
          return;
        }
        steps.push({
          sql: `ALTER TABLE ${table} RENAME COLUMN ${quoteIdentifier(op.name)} TO ${quoteIdentifier(op.new_name)}`,
          undo: `ALTER TABLE ${table} RENAME COLUMN ${quoteIdentifier(op.new_name)} TO ${quoteIdentifier(op.name)}`,
          column: op.name,
        });
        columns[at] = { ...columns[at]!, name: op.new_name };
        return;
      }
      case 'set_column_comment': {
        const at = find(op.name);
        if (at < 0) return void missing(op.name);
        steps.push({
          sql: columnComment(op.name, op.comment),
          undo: columnComment(op.name, columns[at]!.description),
          column: op.name,
        });
        columns[at] = { ...columns[at]!, description: op.comment };
        return;
      }
      case 'set_comment':
        steps.push({
          sql: `COMMENT ON TABLE ${table} IS ${commentValue(op.comment)}`,
          undo: `COMMENT ON TABLE ${table} IS ${commentValue(tableComment)}`,
        });
        tableComment = op.comment;
        return;
      case 'set_properties':
        for (const [name, assignment] of propertyAssignments(op.properties, loc('properties'), issues, 'typed')) {
          properties.delete(name);
          properties.set(name, assignment);
        }
        return;
    }
  });
  if (issues.length > 0) throw new Invalid(issues);
  if (properties.size > 0) {
    steps.push({ sql: `ALTER TABLE ${table} SET PROPERTIES ${[...properties.values()].join(', ')}` });
  }
  return steps;
}
