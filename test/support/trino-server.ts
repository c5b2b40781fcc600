import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that answers as Trino's client REST protocol documents
 * (trino.io/docs/current/develop/client-protocol.html), a small in-memory Trino:
 * - `POST /v1/statement` with the SQL as body and `X-Trino-User` (missing: 401) answers a
 *   QUEUED QueryResults with a `nextUri` and no data; `X-Trino-Catalog` / `X-Trino-Schema`
 *   are the session's catalog and schema for names given without them;
 * - each `GET nextUri` answers the next page: rows (`columns` with `name`/`type`, `data`,
 *   `pageSize` rows at a time) with a further `nextUri`, then a FINISHED page without one
 *   (with `columns` for a query, `updateType` for a statement); a failed query's page
 *   carries `error` (`message`, `errorCode`, `errorName`, `errorType`) and no `nextUri`;
 *   `DELETE nextUri` cancels.
 *
 * The SQL understood follows Trino's grammar (core/trino-grammar SqlBase.g4) and SQL
 * statement pages (docs/src/main/sphinx/sql/*.md), parsed from tokens: identifiers quoted
 * (`""` is a `"`, case kept) or not (lower-cased), string literals (`''` is a `'`), numbers,
 * TRUE/FALSE, `ARRAY[...]`; `--` and `/* *\/` comments. Statements:
 * - `SHOW CATALOGS`, `SHOW SCHEMAS FROM c`, `SHOW TABLES FROM c.s`;
 * - `SELECT items FROM relation [WHERE col = | <> literal [AND ...]] [GROUP BY cols]
 *   [ORDER BY cols] [LIMIT n]` where items are `*`, column names or `count(*)` (named
 *   `_colN` as Trino names unnamed expressions), over `system.metadata.catalogs`
 *   (catalog_name, connector_id, connector_name), `system.metadata.table_comments`,
 *   `c.information_schema.schemata|tables|columns` and any table `c.s.t` (its seeded rows);
 * - `CREATE CATALOG c USING connector [WITH (...)]` (values must be varchar, as
 *   CreateCatalogTask evaluates them), `DROP CATALOG c` (drops regardless of schemas, as
 *   Trino does);
 * - `CREATE SCHEMA [IF NOT EXISTS] c.s [WITH (...)]`, `DROP SCHEMA [IF EXISTS] c.s
 *   [CASCADE | RESTRICT]` (CASCADE is NOT_SUPPORTED, a non-empty schema SCHEMA_NOT_EMPTY);
 * - `CREATE TABLE [IF NOT EXISTS] c.s.t (col type [NOT NULL] [COMMENT '...'], ...)
 *   [COMMENT '...'] [WITH (...)]`, `DROP TABLE [IF EXISTS] c.s.t`;
 * - `ALTER TABLE c.s.t ADD COLUMN [IF NOT EXISTS] col type [NOT NULL] [COMMENT '...']`,
 *   `DROP COLUMN [IF EXISTS] col`, `RENAME COLUMN [IF EXISTS] a TO b`,
 *   `SET PROPERTIES name = value | DEFAULT, ...`;
 * - `COMMENT ON TABLE c.s.t IS '...' | NULL`, `COMMENT ON COLUMN c.s.t.col IS ...`.
 * Failures carry Trino's StandardErrorCode names and numbers (core/trino-spi
 * StandardErrorCode.java): CATALOG_NOT_FOUND, SCHEMA_NOT_FOUND, TABLE_NOT_FOUND,
 * COLUMN_NOT_FOUND, ALREADY_EXISTS (a catalog: CoordinatorDynamicCatalogManager),
 * SCHEMA_ALREADY_EXISTS, TABLE_ALREADY_EXISTS, COLUMN_ALREADY_EXISTS, SCHEMA_NOT_EMPTY,
 * NOT_SUPPORTED (dropping the only column, DropColumnTask), TYPE_NOT_FOUND, SYNTAX_ERROR...
 * Rows come in map order (the adapter must sort).
 *
 * Unlike a real Trino: no `system` catalog is listed (only its `metadata` tables answer),
 * quoted names keep their case (Trino lower-cases schema, table and column names), and any
 * connector name and property is taken.
 *
 * Switches: `down` destroys every connection; `busyOnce` answers the next POST 503;
 * `failStatement(n)` fails the n-th statement from then on (1: the next) without running it.
 */
export interface TrinoColumn {
  readonly name: string;
  readonly type: string;
  readonly comment?: string | null;
  /** Default true. */
  readonly nullable?: boolean;
}

export interface TrinoTable {
  columns: TrinoColumn[];
  comment: string | null;
  readonly properties: Map<string, unknown>;
  /** One value per column, in the columns' order. */
  rows: unknown[][];
}

export interface TrinoSchema {
  readonly properties: Map<string, unknown>;
  readonly tables: Map<string, TrinoTable>;
}

export interface TrinoCatalog {
  /** Its connector's name (`CREATE CATALOG ... USING connector`). */
  readonly connector: string;
  readonly properties: Map<string, string>;
  readonly schemas: Map<string, TrinoSchema>;
}

/** catalog name → catalog. */
export type TrinoModel = Map<string, TrinoCatalog>;

export interface RecordedTrinoRequest {
  readonly method: string;
  readonly path: string;
  /** Lower-cased names, as Node receives them. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export interface TrinoFailure {
  readonly errorName: string;
  readonly errorCode: number;
  readonly errorType: string;
  readonly message: string;
}

export interface FakeTrino {
  readonly url: string;
  readonly model: TrinoModel;
  readonly requests: RecordedTrinoRequest[];
  /** Rows per data page. */
  pageSize: number;
  down: boolean;
  busyOnce: boolean;
  /** The SQL of every POST, in order. */
  statements(): string[];
  /** Adds a catalog (when missing) with its connector. */
  addCatalog(catalog: string, connector?: string): TrinoCatalog;
  /** Adds a schema (and its catalog, connector `memory`, when missing). */
  addSchema(catalog: string, schema: string): TrinoSchema;
  /** Adds a table (and its catalog and schema); `rows` are what `SELECT *` answers. */
  addTable(
    catalog: string,
    schema: string,
    table: string,
    columns: TrinoColumn[],
    more?: { comment?: string | null; rows?: unknown[][]; properties?: Record<string, unknown> },
  ): TrinoTable;
  /** The table as the server holds it now, or undefined. */
  table(catalog: string, schema: string, table: string): TrinoTable | undefined;
  /**
   * The n-th statement POSTed from now on (1: the next) fails with `failure` (default an
   * INTERNAL_ERROR) and changes nothing; later ones run again.
   */
  failStatement(n: number, failure?: Partial<TrinoFailure>): void;
  stop(): Promise<void>;
}

interface Column {
  readonly name: string;
  readonly type: string;
}

interface Result {
  readonly columns: Column[];
  readonly rows: unknown[][];
  /** Set for a statement that is not a query (`CREATE TABLE`...): Trino's `updateType`. */
  readonly updateType?: string;
}

// StandardErrorCode.java (core/trino-spi): name → code; all USER_ERROR.
const ERROR_CODES = {
  SYNTAX_ERROR: 1,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 12,
  NOT_SUPPORTED: 13,
  TYPE_NOT_FOUND: 43,
  CATALOG_NOT_FOUND: 44,
  SCHEMA_NOT_FOUND: 45,
  TABLE_NOT_FOUND: 46,
  COLUMN_NOT_FOUND: 47,
  SCHEMA_ALREADY_EXISTS: 49,
  TABLE_ALREADY_EXISTS: 50,
  COLUMN_ALREADY_EXISTS: 51,
  SCHEMA_NOT_EMPTY: 34,
  DUPLICATE_COLUMN_NAME: 54,
  MISSING_CATALOG_NAME: 56,
  MISSING_SCHEMA_NAME: 57,
  TYPE_MISMATCH: 58,
  DUPLICATE_PROPERTY: 79,
  // Newer than the enum read; the number as Trino's client libraries list it.
  INVALID_CATALOG_PROPERTY: 124,
} as const;

class TrinoUserError extends Error {
  readonly errorCode: number;
  constructor(
    readonly errorName: keyof typeof ERROR_CODES,
    message: string,
  ) {
    super(message);
    this.errorCode = ERROR_CODES[errorName];
  }
}

function fail(name: keyof typeof ERROR_CODES, message: string): never {
  throw new TrinoUserError(name, `line 1:1: ${message}`);
}

// ---------------------------------------------------------------------------- tokens

type Token =
  | { readonly kind: 'ident'; readonly value: string; readonly quoted: boolean; readonly text: string }
  | { readonly kind: 'string'; readonly value: string; readonly text: string }
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'punct'; readonly text: string }
  | { readonly kind: 'end'; readonly text: '<EOF>' };

const PUNCT = ['<>', '!=', '(', ')', ',', '.', '=', '*', ';', '[', ']', '<', '>', '-', '+'];

function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const rest = sql.slice(i);
    const space = /^(?:\s+|--[^\n]*|\/\*[\s\S]*?\*\/)/.exec(rest);
    if (space) {
      i += space[0].length;
      continue;
    }
    if (rest[0] === '"') {
      const m = /^"((?:[^"]|"")*)"/.exec(rest);
      if (!m) fail('SYNTAX_ERROR', `mismatched input '${rest.slice(0, 10)}'`);
      if (m![1] === '') fail('SYNTAX_ERROR', 'Zero-length delimited identifier not allowed');
      tokens.push({ kind: 'ident', value: m![1]!.replaceAll('""', '"'), quoted: true, text: m![0] });
      i += m![0].length;
      continue;
    }
    if (rest[0] === "'") {
      const m = /^'((?:[^']|'')*)'/.exec(rest);
      if (!m) fail('SYNTAX_ERROR', `mismatched input '${rest.slice(0, 10)}'`);
      tokens.push({ kind: 'string', value: m![1]!.replaceAll("''", "'"), text: m![0] });
      i += m![0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
    if (word) {
      tokens.push({ kind: 'ident', value: word[0].toLowerCase(), quoted: false, text: word[0] });
      i += word[0].length;
      continue;
    }
    const number = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(rest);
    if (number) {
      tokens.push({ kind: 'number', text: number[0] });
      i += number[0].length;
      continue;
    }
    const punct = PUNCT.find((p) => rest.startsWith(p));
    if (!punct) fail('SYNTAX_ERROR', `token recognition error at: '${rest[0]}'`);
    tokens.push({ kind: 'punct', text: punct! });
    i += punct!.length;
  }
  tokens.push({ kind: 'end', text: '<EOF>' });
  return tokens;
}

// ---------------------------------------------------------------------------- parser

/** A value as a property takes it: a literal, an array of literals, or DEFAULT. */
type Value = string | number | boolean | null | Value[] | typeof DEFAULT;
const DEFAULT = Symbol('DEFAULT');

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)]!;
  }
  next(): Token {
    return this.tokens[Math.min(this.pos++, this.tokens.length - 1)]!;
  }
  mismatch(): never {
    return fail('SYNTAX_ERROR', `mismatched input '${this.peek().text}'`);
  }
  isKeyword(keyword: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t.kind === 'ident' && !t.quoted && t.value === keyword;
  }
  acceptKeyword(...keywords: string[]): boolean {
    if (!keywords.every((k, i) => this.isKeyword(k, i))) return false;
    this.pos += keywords.length;
    return true;
  }
  keyword(...keywords: string[]): void {
    for (const k of keywords) if (!this.acceptKeyword(k)) this.mismatch();
  }
  acceptPunct(text: string): boolean {
    const t = this.peek();
    if (t.kind !== 'punct' || t.text !== text) return false;
    this.pos += 1;
    return true;
  }
  punct(text: string): void {
    if (!this.acceptPunct(text)) this.mismatch();
  }
  identifier(): string {
    const t = this.next();
    if (t.kind !== 'ident') {
      this.pos -= 1;
      this.mismatch();
    }
    return (t as Extract<Token, { kind: 'ident' }>).value;
  }
  qualifiedName(): string[] {
    const parts = [this.identifier()];
    while (this.acceptPunct('.')) parts.push(this.identifier());
    return parts;
  }
  string(): string {
    const t = this.next();
    if (t.kind !== 'string') {
      this.pos -= 1;
      this.mismatch();
    }
    return (t as Extract<Token, { kind: 'string' }>).value;
  }
  integer(): number {
    const t = this.next();
    if (t.kind !== 'number' || !/^\d+$/.test(t.text)) {
      this.pos -= 1;
      this.mismatch();
    }
    return Number(t.text);
  }
  /** `'text'` or NULL (COMMENT ... IS). */
  stringOrNull(): string | null {
    return this.acceptKeyword('null') ? null : this.string();
  }
  /** A literal: string, number (signed), TRUE/FALSE, NULL, or ARRAY[...]. */
  literal(): Value {
    const t = this.peek();
    if (t.kind === 'string') return this.string();
    if (t.kind === 'punct' && (t.text === '-' || t.text === '+')) {
      this.next();
      const n = this.next();
      if (n.kind !== 'number') this.mismatch();
      return (t.text === '-' ? -1 : 1) * Number(n.text);
    }
    if (t.kind === 'number') return Number(this.next().text);
    if (this.acceptKeyword('true')) return true;
    if (this.acceptKeyword('false')) return false;
    if (this.acceptKeyword('null')) return null;
    if (this.acceptKeyword('array')) {
      this.punct('[');
      const items: Value[] = [];
      if (!this.acceptPunct(']')) {
        do items.push(this.literal());
        while (this.acceptPunct(','));
        this.punct(']');
      }
      return items;
    }
    return this.mismatch();
  }
  /** `name = value, ...` (SqlBase.g4 propertyAssignments); DEFAULT only where allowed. */
  properties(allowDefault: boolean): Map<string, Value> {
    const out = new Map<string, Value>();
    do {
      const name = this.identifier();
      this.punct('=');
      const value = allowDefault && this.acceptKeyword('default') ? DEFAULT : this.literal();
      if (out.has(name)) fail('DUPLICATE_PROPERTY', `Duplicate property: ${name}`);
      out.set(name, value);
    } while (this.acceptPunct(','));
    return out;
  }
  /** `WITH ( properties )` when present. */
  withProperties(): Map<string, Value> {
    if (!this.acceptKeyword('with')) return new Map();
    this.punct('(');
    const props = this.properties(false);
    this.punct(')');
    return props;
  }
  /**
   * A data type (SqlBase.g4 `type`) as Trino displays it: `varchar`, `decimal(10,2)`,
   * `timestamp(3) with time zone`, `array(varchar)`, `row(a bigint,b varchar)`.
   */
  type(): string {
    const base = this.identifier();
    let text = base === 'int' ? 'integer' : base;
    if (!KNOWN_TYPES.has(text)) fail('TYPE_NOT_FOUND', `Unknown type '${text}'`);
    if (this.acceptPunct('(')) {
      const parts: string[] = [];
      let depth = 1;
      let previous: Token | undefined;
      while (depth > 0) {
        const t = this.next();
        if (t.kind === 'end') this.mismatch();
        if (t.kind === 'punct' && t.text === '(') depth += 1;
        if (t.kind === 'punct' && t.text === ')') depth -= 1;
        const piece = t.kind === 'ident' ? (t.quoted ? t.text : t.value) : t.text;
        const words = previous && previous.kind !== 'punct' && t.kind !== 'punct';
        parts.push(words ? ` ${piece}` : piece);
        previous = t;
      }
      text += `(${parts.join('').slice(0, -1)})`;
    }
    if ((base === 'timestamp' || base === 'time') && (this.isKeyword('with') || this.isKeyword('without'))) {
      const w = this.identifier();
      this.keyword('time', 'zone');
      text += ` ${w} time zone`;
    }
    if (base === 'double') this.acceptKeyword('precision');
    if (base === 'interval') {
      const from = this.identifier();
      this.keyword('to');
      text += ` ${from} to ${this.identifier()}`;
    }
    return text;
  }
  end(): void {
    this.acceptPunct(';');
    if (this.peek().kind !== 'end') this.mismatch();
  }
}

/** Base types Trino ships (docs/src/main/sphinx/language/types.md). */
const KNOWN_TYPES = new Set([
  'boolean',
  'tinyint',
  'smallint',
  'integer',
  'bigint',
  'real',
  'double',
  'decimal',
  'varchar',
  'char',
  'varbinary',
  'json',
  'date',
  'time',
  'timestamp',
  'interval',
  'array',
  'map',
  'row',
  'uuid',
  'ipaddress',
]);

// ---------------------------------------------------------------------------- engine

const INFORMATION_SCHEMA = 'information_schema';
/** The tables every catalog's information_schema has (Trino's InformationSchemaTable). */
const INFORMATION_SCHEMA_TABLES = [
  'applicable_roles',
  'columns',
  'enabled_roles',
  'roles',
  'schemata',
  'table_privileges',
  'tables',
  'views',
];

const varchar = (name: string): Column => ({ name, type: 'varchar' });
const bigint = (name: string): Column => ({ name, type: 'bigint' });

interface Session {
  readonly catalog?: string;
  readonly schema?: string;
}

class Engine {
  constructor(
    private readonly model: TrinoModel,
    private readonly session: Session,
  ) {}

  catalog(name: string): TrinoCatalog {
    return this.model.get(name) ?? fail('CATALOG_NOT_FOUND', `Catalog '${name}' not found`);
  }

  schema(catalog: string, name: string): TrinoSchema {
    return this.catalog(catalog).schemas.get(name) ?? fail('SCHEMA_NOT_FOUND', `Schema '${name}' does not exist`);
  }

  table(parts: string[]): { catalog: string; schema: string; name: string; table: TrinoTable } {
    const [catalog, schema, name] = this.qualify(parts, 3) as [string, string, string];
    const table = this.schema(catalog, schema).tables.get(name);
    if (!table) fail('TABLE_NOT_FOUND', `Table '${catalog}.${schema}.${name}' does not exist`);
    return { catalog, schema, name, table: table! };
  }

  /** `parts` completed with the session's catalog and schema to `size` parts. */
  qualify(parts: string[], size: 2 | 3): string[] {
    if (parts.length > size) fail('SYNTAX_ERROR', `Too many dots in name: ${parts.join('.')}`);
    const missing = size - parts.length;
    if (missing === 0) return parts;
    const { catalog, schema } = this.session;
    if (catalog === undefined)
      fail('MISSING_CATALOG_NAME', 'Catalog must be specified when session catalog is not set');
    if (missing === 1) return [catalog!, ...parts];
    if (schema === undefined) fail('MISSING_SCHEMA_NAME', 'Schema must be specified when session schema is not set');
    return [catalog!, schema!, ...parts];
  }

  run(sql: string): Result {
    const p = new Parser(tokenize(sql));
    const result = this.statement(p);
    return result;
  }

  private statement(p: Parser): Result {
    if (p.acceptKeyword('show')) return this.show(p);
    if (p.isKeyword('select')) return this.select(p);
    if (p.acceptKeyword('create')) {
      if (p.acceptKeyword('catalog')) return this.createCatalog(p);
      if (p.acceptKeyword('schema')) return this.createSchema(p);
      if (p.acceptKeyword('table')) return this.createTable(p);
      return p.mismatch();
    }
    if (p.acceptKeyword('drop')) {
      if (p.acceptKeyword('catalog')) return this.dropCatalog(p);
      if (p.acceptKeyword('schema')) return this.dropSchema(p);
      if (p.acceptKeyword('table')) return this.dropTable(p);
      return p.mismatch();
    }
    if (p.acceptKeyword('alter', 'table')) return this.alterTable(p);
    if (p.acceptKeyword('comment', 'on')) return this.comment(p);
    return p.mismatch();
  }

  private show(p: Parser): Result {
    if (p.acceptKeyword('catalogs')) {
      p.end();
      return { columns: [varchar('Catalog')], rows: [...this.model.keys()].map((c) => [c]) };
    }
    if (p.acceptKeyword('schemas')) {
      if (!p.acceptKeyword('from')) p.keyword('in');
      const catalog = p.identifier();
      p.end();
      const schemas = [...this.catalog(catalog).schemas.keys(), INFORMATION_SCHEMA];
      return { columns: [varchar('Schema')], rows: schemas.map((s) => [s]) };
    }
    if (p.acceptKeyword('tables')) {
      if (!p.acceptKeyword('from')) p.keyword('in');
      const [catalog, schema] = this.qualify(p.qualifiedName(), 2) as [string, string];
      p.end();
      const tables =
        schema === INFORMATION_SCHEMA
          ? (this.catalog(catalog), INFORMATION_SCHEMA_TABLES)
          : [...this.schema(catalog, schema).tables.keys()];
      return { columns: [varchar('Table')], rows: tables.map((t) => [t]) };
    }
    return p.mismatch();
  }

  /** The rows a relation holds, with its columns. */
  private relation(parts: string[]): Result {
    const [catalog, schema, name] = this.qualify(parts, 3) as [string, string, string];
    if (catalog === 'system' && schema === 'metadata' && !this.model.has('system')) {
      if (name === 'catalogs') {
        return {
          columns: [varchar('catalog_name'), varchar('connector_id'), varchar('connector_name')],
          rows: [...this.model].map(([c, cat]) => [c, c, cat.connector]),
        };
      }
      if (name === 'table_comments') {
        const rows: unknown[][] = [];
        for (const [c, cat] of this.model)
          for (const [s, sch] of cat.schemas) for (const [t, tab] of sch.tables) rows.push([c, s, t, tab.comment]);
        return {
          columns: [varchar('catalog_name'), varchar('schema_name'), varchar('table_name'), varchar('comment')],
          rows,
        };
      }
      return fail('TABLE_NOT_FOUND', `Table '${catalog}.${schema}.${name}' does not exist`);
    }
    if (schema === INFORMATION_SCHEMA) {
      const cat = this.catalog(catalog);
      const schemas = [...cat.schemas];
      switch (name) {
        case 'schemata':
          return {
            columns: [varchar('catalog_name'), varchar('schema_name')],
            rows: [...schemas.map(([s]) => [catalog, s]), [catalog, INFORMATION_SCHEMA]],
          };
        case 'tables':
          return {
            columns: [varchar('table_catalog'), varchar('table_schema'), varchar('table_name'), varchar('table_type')],
            rows: [
              ...schemas.flatMap(([s, sch]) => [...sch.tables.keys()].map((t) => [catalog, s, t, 'BASE TABLE'])),
              ...INFORMATION_SCHEMA_TABLES.map((t) => [catalog, INFORMATION_SCHEMA, t, 'BASE TABLE']),
            ],
          };
        case 'columns':
          return {
            columns: [
              varchar('table_catalog'),
              varchar('table_schema'),
              varchar('table_name'),
              varchar('column_name'),
              bigint('ordinal_position'),
              varchar('column_default'),
              varchar('is_nullable'),
              varchar('data_type'),
              varchar('comment'),
            ],
            rows: schemas.flatMap(([s, sch]) =>
              [...sch.tables].flatMap(([t, tab]) =>
                tab.columns.map((c, i) => [
                  catalog,
                  s,
                  t,
                  c.name,
                  i + 1,
                  null,
                  c.nullable === false ? 'NO' : 'YES',
                  c.type,
                  c.comment ?? null,
                ]),
              ),
            ),
          };
        default:
          return fail('TABLE_NOT_FOUND', `Table '${catalog}.${schema}.${name}' does not exist`);
      }
    }
    const { table } = this.table([catalog, schema, name]);
    return { columns: table.columns.map((c) => ({ name: c.name, type: c.type })), rows: table.rows };
  }

  /** SELECT items FROM relation [WHERE ...] [GROUP BY ...] [ORDER BY ...] [LIMIT n]. */
  private select(p: Parser): Result {
    p.keyword('select');
    type Item = { kind: 'all' } | { kind: 'column'; name: string } | { kind: 'count' };
    const items: Item[] = [];
    do {
      if (p.acceptPunct('*')) items.push({ kind: 'all' });
      else if (p.isKeyword('count') && p.peek(1).text === '(') {
        p.keyword('count');
        p.punct('(');
        p.punct('*');
        p.punct(')');
        items.push({ kind: 'count' });
      } else items.push({ kind: 'column', name: p.identifier() });
    } while (p.acceptPunct(','));
    p.keyword('from');
    const source = this.relation(p.qualifiedName());
    const index = (name: string): number => {
      const i = source.columns.findIndex((c) => c.name === name);
      return i >= 0 ? i : fail('COLUMN_NOT_FOUND', `Column '${name}' cannot be resolved`);
    };
    let rows = source.rows;
    if (p.acceptKeyword('where')) {
      const conditions: ((row: unknown[]) => boolean)[] = [];
      do {
        const i = index(p.identifier());
        const op = p.next();
        if (op.kind !== 'punct' || !['=', '<>', '!='].includes(op.text)) p.mismatch();
        const value = p.literal();
        conditions.push((row) => (op.text === '=' ? row[i] === value : row[i] !== value && row[i] !== null));
      } while (p.acceptKeyword('and'));
      rows = rows.filter((row) => conditions.every((c) => c(row)));
    }
    const groupBy: number[] = [];
    if (p.acceptKeyword('group', 'by')) {
      do groupBy.push(index(p.identifier()));
      while (p.acceptPunct(','));
    }
    const orderBy: string[] = [];
    if (p.acceptKeyword('order', 'by')) {
      do orderBy.push(p.identifier());
      while (p.acceptPunct(','));
    }
    const limit = p.acceptKeyword('limit') ? p.integer() : undefined;
    p.end();

    const columns: Column[] = [];
    items.forEach((item, i) => {
      if (item.kind === 'all') columns.push(...source.columns);
      else if (item.kind === 'count') columns.push(bigint(`_col${i}`));
      else columns.push(source.columns[index(item.name)]!);
    });
    /** Each output row beside a source row (a group's first), which ORDER BY may also name. */
    let out: { row: unknown[]; source: unknown[] }[];
    const grouped = groupBy.length > 0 || items.some((item) => item.kind === 'count');
    if (grouped) {
      const groups = new Map<string, unknown[][]>();
      for (const row of rows) {
        const key = JSON.stringify(groupBy.map((i) => row[i]));
        groups.set(key, [...(groups.get(key) ?? []), row]);
      }
      if (groupBy.length === 0 && groups.size === 0) groups.set('[]', []);
      out = [...groups.values()].map((group) => ({
        source: group[0] ?? [],
        row: items.map((item) => {
          if (item.kind === 'count') return group.length;
          if (item.kind === 'all' || !groupBy.includes(index(item.name))) {
            const name = item.kind === 'all' ? '*' : item.name;
            return fail('SYNTAX_ERROR', `'${name}' must be an aggregate expression or appear in GROUP BY clause`);
          }
          return group[0]![index(item.name)];
        }),
      }));
    } else {
      out = rows.map((source) => ({
        source,
        row: items.flatMap((item) => (item.kind === 'all' ? source : [source[index((item as { name: string }).name)]])),
      }));
    }
    if (orderBy.length > 0) {
      // An output column by its name first, else a column of the relation (SELECT ... ORDER BY).
      const keys = orderBy.map((name): ((r: (typeof out)[number]) => unknown) => {
        const k = columns.findIndex((c) => c.name === name);
        if (k >= 0) return (r) => r.row[k];
        const i = index(name);
        if (grouped && !groupBy.includes(i)) fail('SYNTAX_ERROR', `'${name}' must appear in GROUP BY clause`);
        return (r) => r.source[i];
      });
      out = [...out].sort((a, b) => {
        for (const key of keys) {
          const x = key(a) as string | number;
          const y = key(b) as string | number;
          if (x < y) return -1;
          if (x > y) return 1;
        }
        return 0;
      });
    }
    const data = out.map((r) => r.row);
    return { columns, rows: limit === undefined ? data : data.slice(0, limit) };
  }

  private createCatalog(p: Parser): Result {
    const ifNotExists = p.acceptKeyword('if', 'not', 'exists');
    const name = p.identifier();
    p.keyword('using');
    const connector = p.identifier();
    const props = p.withProperties();
    p.end();
    const properties = new Map<string, string>();
    for (const [key, value] of props) {
      // CreateCatalogTask evaluates every value as VARCHAR.
      if (typeof value !== 'string')
        fail(
          'INVALID_CATALOG_PROPERTY',
          `Invalid value for catalog property '${key}': Cannot convert [${String(value)}] to varchar`,
        );
      properties.set(key, value as string);
    }
    if (this.model.has(name)) {
      if (ifNotExists) return { columns: [], rows: [], updateType: 'CREATE CATALOG' };
      fail('ALREADY_EXISTS', `Catalog '${name}' already exists`);
    }
    this.model.set(name, { connector, properties, schemas: new Map() });
    return { columns: [], rows: [], updateType: 'CREATE CATALOG' };
  }

  private dropCatalog(p: Parser): Result {
    const ifExists = p.acceptKeyword('if', 'exists');
    const name = p.identifier();
    if (p.acceptKeyword('cascade')) fail('NOT_SUPPORTED', 'CASCADE is not yet supported for DROP CATALOG');
    p.acceptKeyword('restrict');
    p.end();
    // CoordinatorDynamicCatalogManager.dropCatalog: NOT_FOUND, and no check of its schemas.
    if (!this.model.delete(name) && !ifExists) fail('NOT_FOUND', `Catalog '${name}' does not exist`);
    return { columns: [], rows: [], updateType: 'DROP CATALOG' };
  }

  private createSchema(p: Parser): Result {
    const ifNotExists = p.acceptKeyword('if', 'not', 'exists');
    const [catalog, name] = this.qualify(p.qualifiedName(), 2) as [string, string];
    const properties = p.withProperties();
    p.end();
    const cat = this.catalog(catalog);
    if (cat.schemas.has(name) || name === INFORMATION_SCHEMA) {
      if (ifNotExists) return { columns: [], rows: [], updateType: 'CREATE SCHEMA' };
      fail('SCHEMA_ALREADY_EXISTS', `Schema '${catalog}.${name}' already exists`);
    }
    cat.schemas.set(name, { properties: new Map(properties), tables: new Map() });
    return { columns: [], rows: [], updateType: 'CREATE SCHEMA' };
  }

  private dropSchema(p: Parser): Result {
    const ifExists = p.acceptKeyword('if', 'exists');
    const [catalog, name] = this.qualify(p.qualifiedName(), 2) as [string, string];
    const cascade = p.acceptKeyword('cascade');
    if (!cascade) p.acceptKeyword('restrict');
    p.end();
    if (cascade) fail('NOT_SUPPORTED', 'CASCADE is not yet supported for DROP SCHEMA');
    const cat = this.catalog(catalog);
    const schema = cat.schemas.get(name);
    if (!schema) {
      if (ifExists) return { columns: [], rows: [], updateType: 'DROP SCHEMA' };
      fail('SCHEMA_NOT_FOUND', `Schema '${catalog}.${name}' does not exist`);
    }
    if (schema!.tables.size > 0) fail('SCHEMA_NOT_EMPTY', `Cannot drop non-empty schema '${name}'`);
    cat.schemas.delete(name);
    return { columns: [], rows: [], updateType: 'DROP SCHEMA' };
  }

  /** `name type [NOT NULL] [COMMENT '...'] [WITH (...)]` (SqlBase.g4 columnDefinition). */
  private columnDefinition(p: Parser): TrinoColumn {
    const name = p.identifier();
    const type = p.type();
    const nullable = !p.acceptKeyword('not', 'null');
    const comment = p.acceptKeyword('comment') ? p.string() : null;
    p.withProperties();
    return { name, type, comment, nullable };
  }

  private createTable(p: Parser): Result {
    const ifNotExists = p.acceptKeyword('if', 'not', 'exists');
    const [catalog, schema, name] = this.qualify(p.qualifiedName(), 3) as [string, string, string];
    p.punct('(');
    const columns: TrinoColumn[] = [];
    do {
      const column = this.columnDefinition(p);
      if (columns.some((c) => c.name === column.name))
        fail('DUPLICATE_COLUMN_NAME', `Column name '${column.name}' specified more than once`);
      columns.push(column);
    } while (p.acceptPunct(','));
    p.punct(')');
    const comment = p.acceptKeyword('comment') ? p.string() : null;
    const properties = p.withProperties();
    p.end();
    const target = this.schema(catalog, schema);
    if (target.tables.has(name)) {
      if (ifNotExists) return { columns: [], rows: [], updateType: 'CREATE TABLE' };
      fail('TABLE_ALREADY_EXISTS', `Table '${catalog}.${schema}.${name}' already exists`);
    }
    target.tables.set(name, { columns, comment, properties: new Map(properties), rows: [] });
    return { columns: [], rows: [], updateType: 'CREATE TABLE' };
  }

  private dropTable(p: Parser): Result {
    const ifExists = p.acceptKeyword('if', 'exists');
    const [catalog, schema, name] = this.qualify(p.qualifiedName(), 3) as [string, string, string];
    p.end();
    const target = this.schema(catalog, schema);
    if (!target.tables.delete(name) && !ifExists)
      fail('TABLE_NOT_FOUND', `Table '${catalog}.${schema}.${name}' does not exist`);
    return { columns: [], rows: [], updateType: 'DROP TABLE' };
  }

  private alterTable(p: Parser): Result {
    const { table } = this.table(p.qualifiedName());
    const position = (name: string) => table.columns.findIndex((c) => c.name === name);
    if (p.acceptKeyword('add', 'column')) {
      const ifNotExists = p.acceptKeyword('if', 'not', 'exists');
      const column = this.columnDefinition(p);
      p.end();
      if (position(column.name) >= 0) {
        if (ifNotExists) return { columns: [], rows: [], updateType: 'ADD COLUMN' };
        fail('COLUMN_ALREADY_EXISTS', `Column '${column.name}' already exists`);
      }
      if (column.nullable === false && table.rows.length > 0)
        fail('NOT_SUPPORTED', `Unable to add NOT NULL column '${column.name}' for non-empty table`);
      table.columns = [...table.columns, column];
      table.rows = table.rows.map((row) => [...row, null]);
      return { columns: [], rows: [], updateType: 'ADD COLUMN' };
    }
    if (p.acceptKeyword('drop', 'column')) {
      const ifExists = p.acceptKeyword('if', 'exists');
      const name = p.identifier();
      p.end();
      const i = position(name);
      if (i < 0) {
        if (ifExists) return { columns: [], rows: [], updateType: 'DROP COLUMN' };
        fail('COLUMN_NOT_FOUND', `Column '${name}' does not exist`);
      }
      if (table.columns.length <= 1) fail('NOT_SUPPORTED', 'Cannot drop the only column in a table');
      table.columns = table.columns.filter((_, j) => j !== i);
      table.rows = table.rows.map((row) => row.filter((_, j) => j !== i));
      return { columns: [], rows: [], updateType: 'DROP COLUMN' };
    }
    if (p.acceptKeyword('rename', 'column')) {
      const ifExists = p.acceptKeyword('if', 'exists');
      const from = p.identifier();
      p.keyword('to');
      const to = p.identifier();
      p.end();
      const i = position(from);
      if (i < 0) {
        if (ifExists) return { columns: [], rows: [], updateType: 'RENAME COLUMN' };
        fail('COLUMN_NOT_FOUND', `Column '${from}' does not exist`);
      }
      if (position(to) >= 0) fail('COLUMN_ALREADY_EXISTS', `Column '${to}' already exists`);
      table.columns = table.columns.map((c, j) => (j === i ? { ...c, name: to } : c));
      return { columns: [], rows: [], updateType: 'RENAME COLUMN' };
    }
    if (p.acceptKeyword('set', 'properties')) {
      const properties = p.properties(true);
      p.end();
      for (const [key, value] of properties) {
        if (value === DEFAULT) table.properties.delete(key);
        else table.properties.set(key, value);
      }
      return { columns: [], rows: [], updateType: 'SET PROPERTIES' };
    }
    return p.mismatch();
  }

  private comment(p: Parser): Result {
    if (p.acceptKeyword('table')) {
      const { table } = this.table(p.qualifiedName());
      p.keyword('is');
      const comment = p.stringOrNull();
      p.end();
      table.comment = comment;
      return { columns: [], rows: [], updateType: 'COMMENT' };
    }
    if (p.acceptKeyword('column')) {
      const parts = p.qualifiedName();
      if (parts.length < 2) p.mismatch();
      const column = parts.at(-1)!;
      const { table } = this.table(parts.slice(0, -1));
      p.keyword('is');
      const comment = p.stringOrNull();
      p.end();
      const i = table.columns.findIndex((c) => c.name === column);
      if (i < 0) fail('COLUMN_NOT_FOUND', `Column does not exist: ${column}`);
      table.columns = table.columns.map((c, j) => (j === i ? { ...c, comment } : c));
      return { columns: [], rows: [], updateType: 'COMMENT' };
    }
    return p.mismatch();
  }
}

// ---------------------------------------------------------------------------- server

interface Query {
  readonly id: string;
  readonly slug: string;
  readonly result?: Result;
  readonly error?: TrinoFailure;
  /** Pages answered so far (the POST's QUEUED page is 0). */
  token: number;
}

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

export async function startFakeTrino(): Promise<FakeTrino> {
  let base = '';
  let sequence = 0;
  /** Statements counted down to the one that fails (failStatement). */
  let failing: { remaining: number; failure: TrinoFailure } | undefined;
  const queries = new Map<string, Query>();
  const state: Omit<FakeTrino, 'url' | 'stop'> = {
    model: new Map(),
    requests: [],
    pageSize: 2,
    down: false,
    busyOnce: false,
    statements: () => state.requests.filter((r) => r.method === 'POST').map((r) => r.body),
    addCatalog(catalog, connector = 'memory') {
      const existing = state.model.get(catalog);
      if (existing) return existing;
      const created: TrinoCatalog = { connector, properties: new Map(), schemas: new Map() };
      state.model.set(catalog, created);
      return created;
    },
    addSchema(catalog, schema) {
      const schemas = state.addCatalog(catalog).schemas;
      const existing = schemas.get(schema);
      if (existing) return existing;
      const created: TrinoSchema = { properties: new Map(), tables: new Map() };
      schemas.set(schema, created);
      return created;
    },
    addTable(catalog, schema, table, columns, more = {}) {
      const created: TrinoTable = {
        columns,
        comment: more.comment ?? null,
        properties: new Map(Object.entries(more.properties ?? {})),
        rows: more.rows ?? [],
      };
      state.addSchema(catalog, schema).tables.set(table, created);
      return created;
    },
    table: (catalog, schema, table) => state.model.get(catalog)?.schemas.get(schema)?.tables.get(table),
    failStatement(n, failure = {}) {
      failing = {
        remaining: n,
        failure: {
          errorName: failure.errorName ?? 'GENERIC_INTERNAL_ERROR',
          errorCode: failure.errorCode ?? 65536,
          errorType: failure.errorType ?? 'INTERNAL_ERROR',
          message: failure.message ?? 'the statement failed (as the test asked)',
        },
      };
    },
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.statusCode = status;
    if (typeof body === 'string') {
      res.setHeader('content-type', 'text/plain; charset=utf-8');
      res.end(body);
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(body));
  };

  const uri = (query: Query, phase: 'queued' | 'executing') =>
    `${base}/v1/statement/${phase}/${query.id}/${query.slug}/${query.token + 1}`;

  const stats = (state: string) => ({ state, queued: state === 'QUEUED', scheduled: state !== 'QUEUED' });

  /** The page after `query.token`: data pages, then FINISHED (or FAILED right away). */
  function nextPage(query: Query) {
    query.token += 1;
    const common = { id: query.id, infoUri: `${base}/ui/query.html?${query.id}` };
    if (query.error) {
      queries.delete(query.id);
      return { ...common, error: query.error, stats: stats('FAILED') };
    }
    const { columns, rows, updateType } = query.result!;
    // A statement that is not a query has no columns; its pages say what it updated.
    const described = updateType ? { updateType } : { columns };
    const start = (query.token - 1) * state.pageSize;
    if (start < rows.length) {
      const data = rows.slice(start, start + state.pageSize);
      return { ...common, nextUri: uri(query, 'executing'), ...described, data, stats: stats('RUNNING') };
    }
    queries.delete(query.id);
    return { ...common, ...described, stats: stats('FINISHED') };
  }

  /** Runs a statement now (as Trino does by the first page) or fails it as asked. */
  function execute(sql: string, session: Session): { result?: Result; error?: TrinoFailure } {
    if (failing && --failing.remaining === 0) {
      const { failure } = failing;
      failing = undefined;
      return { error: failure };
    }
    try {
      return { result: new Engine(state.model, session).run(sql) };
    } catch (err) {
      if (!(err instanceof TrinoUserError)) throw err;
      return {
        error: { message: err.message, errorCode: err.errorCode, errorName: err.errorName, errorType: 'USER_ERROR' },
      };
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse, raw: string) {
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    state.requests.push({ method, path, headers: { ...req.headers }, body: raw });

    if (path === '/v1/statement') {
      if (method !== 'POST') return send(res, 405, 'Method Not Allowed');
      if (state.busyOnce) {
        state.busyOnce = false;
        return send(res, 503, 'Service Unavailable');
      }
      if (!req.headers['x-trino-user']) return send(res, 401, 'Unauthorized');
      if (!raw.trim()) return send(res, 400, 'SQL statement is empty');
      sequence += 1;
      const id = `20250101_000000_${String(sequence).padStart(5, '0')}_fake0`;
      const session = {
        catalog: header(req.headers['x-trino-catalog']),
        schema: header(req.headers['x-trino-schema']),
      };
      const query: Query = { id, slug: `y${randomUUID().replaceAll('-', '')}`, ...execute(raw, session), token: 0 };
      queries.set(id, query);
      return send(res, 200, {
        id,
        infoUri: `${base}/ui/query.html?${id}`,
        nextUri: uri(query, 'queued'),
        stats: stats('QUEUED'),
      });
    }

    const next = /^\/v1\/statement\/(?:queued|executing)\/([^/]+)\/([^/]+)\/(\d+)$/.exec(path);
    if (next) {
      const query = queries.get(next[1]!);
      if (method === 'DELETE') {
        queries.delete(next[1]!);
        res.statusCode = 204;
        return res.end();
      }
      if (method !== 'GET') return send(res, 405, 'Method Not Allowed');
      if (!query || query.slug !== next[2] || Number(next[3]) !== query.token + 1)
        return send(res, 404, 'Query not found');
      return send(res, 200, nextPage(query));
    }
    return send(res, 404, 'Not Found');
  }

  const server: Server = createServer((req, res) => {
    if (state.down) {
      req.socket.destroy();
      return;
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      try {
        handle(req, res, raw);
      } catch (err) {
        send(res, 500, String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return Object.assign(state, {
    url: base,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
