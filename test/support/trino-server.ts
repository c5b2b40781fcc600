import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that answers as Trino's client REST protocol documents
 * (trino.io/docs/current/develop/client-protocol.html), for the statements the Trino
 * metastore adapter sends:
 * - `POST /v1/statement` with the SQL as body and `X-Trino-User` (missing: 401) answers a
 *   QUEUED QueryResults with a `nextUri` and no data;
 * - each `GET nextUri` answers the next page: rows (`columns`, `data`, `pageSize` at a
 *   time) with a further `nextUri`, then a FINISHED page without one; a failed query's
 *   page carries `error` (`message`, `errorCode`, `errorName`, `errorType`) and no
 *   `nextUri`; `DELETE nextUri` cancels;
 * - the SQL understood: `SHOW CATALOGS`, `SHOW SCHEMAS FROM c`, `SHOW TABLES FROM c.s`,
 *   `SELECT column_name, data_type, comment FROM c.information_schema.columns WHERE
 *   table_schema = '...' AND table_name = '...' ORDER BY ordinal_position`, with Trino's
 *   identifier rules (quoted: `""` is a `"`; unquoted: lower-cased) and string literals
 *   (`''` is a `'`); anything else is a SYNTAX_ERROR. Rows come in map order (the
 *   adapter must sort).
 * Switches: `down` destroys every connection; `busyOnce` answers the next POST 503.
 */
export interface TrinoColumn {
  readonly name: string;
  readonly type: string;
  readonly comment?: string | null;
}

/** catalog → schema → table → columns. */
export type TrinoModel = Map<string, Map<string, Map<string, TrinoColumn[]>>>;

export interface RecordedTrinoRequest {
  readonly method: string;
  readonly path: string;
  /** Lower-cased names, as Node receives them. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
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
  /** Adds a table (and its catalog and schema). */
  addTable(catalog: string, schema: string, table: string, columns: TrinoColumn[]): void;
  stop(): Promise<void>;
}

interface Result {
  readonly columns: { name: string; type: string }[];
  readonly rows: unknown[][];
}

interface QueryError {
  readonly message: string;
  readonly errorCode: number;
  readonly errorName: string;
  readonly errorType: string;
}

class TrinoUserError extends Error {
  constructor(
    message: string,
    readonly errorName: string,
    readonly errorCode: number,
  ) {
    super(message);
  }
}

const IDENT = String.raw`(?:"(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_]*)`;
const LITERAL = String.raw`'(?:[^']|'')*'`;

const STATEMENTS: { pattern: RegExp; kind: 'catalogs' | 'schemas' | 'tables' | 'columns' }[] = [
  { pattern: /^SHOW\s+CATALOGS$/i, kind: 'catalogs' },
  { pattern: new RegExp(String.raw`^SHOW\s+SCHEMAS\s+FROM\s+(${IDENT})$`, 'i'), kind: 'schemas' },
  { pattern: new RegExp(String.raw`^SHOW\s+TABLES\s+FROM\s+(${IDENT})\.(${IDENT})$`, 'i'), kind: 'tables' },
  {
    pattern: new RegExp(
      String.raw`^SELECT\s+column_name,\s*data_type,\s*comment\s+FROM\s+(${IDENT})\.information_schema\.columns\s+` +
        String.raw`WHERE\s+table_schema\s*=\s*(${LITERAL})\s+AND\s+table_name\s*=\s*(${LITERAL})\s+` +
        String.raw`ORDER\s+BY\s+ordinal_position$`,
      'i',
    ),
    kind: 'columns',
  },
];

/** Trino's identifier: quoted keeps its case (`""` → `"`), unquoted is lower-cased. */
function identifier(text: string): string {
  return text.startsWith('"') ? text.slice(1, -1).replaceAll('""', '"') : text.toLowerCase();
}

const literal = (text: string): string => text.slice(1, -1).replaceAll("''", "'");

const varchar = (name: string) => ({ name, type: 'varchar' });

function execute(model: TrinoModel, sql: string): Result {
  const text = sql.trim().replace(/;$/, '');
  for (const { pattern, kind } of STATEMENTS) {
    const match = pattern.exec(text);
    if (!match) continue;
    const catalogOf = (name: string) => {
      const catalog = model.get(name);
      if (!catalog) throw new TrinoUserError(`line 1:1: Catalog '${name}' not found`, 'CATALOG_NOT_FOUND', 44);
      return catalog;
    };
    switch (kind) {
      case 'catalogs':
        return { columns: [varchar('Catalog')], rows: [...model.keys()].map((c) => [c]) };
      case 'schemas': {
        const catalog = catalogOf(identifier(match[1]!));
        return { columns: [varchar('Schema')], rows: [...catalog.keys(), 'information_schema'].map((s) => [s]) };
      }
      case 'tables': {
        const catalogName = identifier(match[1]!);
        const schemaName = identifier(match[2]!);
        const schema = catalogOf(catalogName).get(schemaName);
        if (!schema)
          throw new TrinoUserError(`line 1:1: Schema '${schemaName}' does not exist`, 'SCHEMA_NOT_FOUND', 45);
        return { columns: [varchar('Table')], rows: [...schema.keys()].map((t) => [t]) };
      }
      case 'columns': {
        const columns = catalogOf(identifier(match[1]!)).get(literal(match[2]!))?.get(literal(match[3]!));
        return {
          columns: [varchar('column_name'), varchar('data_type'), varchar('comment')],
          rows: (columns ?? []).map((c) => [c.name, c.type, c.comment ?? null]),
        };
      }
    }
  }
  throw new TrinoUserError(`line 1:1: mismatched input '${text.split(/\s+/)[0] ?? ''}'`, 'SYNTAX_ERROR', 1);
}

interface Query {
  readonly id: string;
  readonly slug: string;
  readonly result?: Result;
  readonly error?: QueryError;
  /** Pages answered so far (the POST's QUEUED page is 0). */
  token: number;
}

export async function startFakeTrino(): Promise<FakeTrino> {
  let base = '';
  let sequence = 0;
  const queries = new Map<string, Query>();
  const state: Omit<FakeTrino, 'url' | 'stop'> = {
    model: new Map(),
    requests: [],
    pageSize: 2,
    down: false,
    busyOnce: false,
    statements: () => state.requests.filter((r) => r.method === 'POST').map((r) => r.body),
    addTable(catalog, schema, table, columns) {
      const schemas = state.model.get(catalog) ?? new Map<string, Map<string, TrinoColumn[]>>();
      state.model.set(catalog, schemas);
      const tables = schemas.get(schema) ?? new Map<string, TrinoColumn[]>();
      schemas.set(schema, tables);
      tables.set(table, columns);
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
    const { columns, rows } = query.result!;
    const start = (query.token - 1) * state.pageSize;
    if (start < rows.length) {
      const data = rows.slice(start, start + state.pageSize);
      return { ...common, nextUri: uri(query, 'executing'), columns, data, stats: stats('RUNNING') };
    }
    queries.delete(query.id);
    return { ...common, columns, stats: stats('FINISHED') };
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
      let query: Query;
      try {
        query = { id, slug: `y${randomUUID().replaceAll('-', '')}`, result: execute(state.model, raw), token: 0 };
      } catch (err) {
        if (!(err instanceof TrinoUserError)) throw err;
        const error = {
          message: err.message,
          errorCode: err.errorCode,
          errorName: err.errorName,
          errorType: 'USER_ERROR',
        };
        query = { id, slug: `y${randomUUID().replaceAll('-', '')}`, error, token: 0 };
      }
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
