import { Conflict, Unavailable } from '../errors.js';
import { logger } from '../logger.js';
import { sortedNames, type Metastore, type TableRef, type TableSchema } from '../ports/metastore.js';
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
  data?: unknown[][];
  error?: { message?: string; errorName?: string; errorType?: string };
  stats?: { state?: string };
}

/** Gateways in front of Trino answer these for a moment's trouble; the protocol says try again. */
const RETRY_STATUSES = new Set([502, 503, 504]);
const RETRY_ATTEMPTS = 3;
/** Table lookups run concurrently against Trino. */
const TABLE_LOOKUPS_IN_FLIGHT = 8;

/**
 * The metastore is Trino, read over its client REST protocol: `POST /v1/statement` with
 * the SQL as body, then `GET nextUri` until a page has none; rows (`data`) may come on any
 * page and a failed query carries `error`. Trino not answering, or answering other than
 * 200, is `Unavailable`; a query Trino refused is a `TrinoQueryError`.
 */
export class TrinoMetastore implements Metastore {
  readonly external = true;
  private readonly statementUrl: string;
  private readonly timeoutMs: number;

  constructor(
    private readonly settings: TrinoSettings,
    options: TrinoOptions = {},
  ) {
    this.statementUrl = `${settings.url.replace(/\/+$/, '')}/v1/statement`;
    this.timeoutMs = options.timeoutMs ?? 6_000;
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

  async getTable(catalog: string, schema: string, table: string): Promise<TableSchema | undefined> {
    const rows = await notFoundAsUndefined(
      this.query(
        `SELECT column_name, data_type, comment FROM ${quoteIdentifier(catalog)}.information_schema.columns` +
          ` WHERE table_schema = ${quoteLiteral(schema)} AND table_name = ${quoteLiteral(table)}` +
          ' ORDER BY ordinal_position',
      ),
    );
    if (!rows || rows.length === 0) return undefined;
    return {
      catalog,
      schema,
      table,
      // information_schema.columns has no table comment; the metadata catalog adds descriptions.
      description: null,
      columns: rows.map(([name, type, comment]) => ({
        name: String(name),
        type: String(type),
        description: typeof comment === 'string' ? comment : null,
      })),
    };
  }

  /** One information_schema query per table, a few at a time (Trino has no multi-table lookup that is cheaper). */
  async getTables(refs: readonly TableRef[]): Promise<TableSchema[]> {
    const tables = await mapLimit(refs, TABLE_LOOKUPS_IN_FLIGHT, (r) => this.getTable(r.catalog, r.schema, r.table));
    return tables.filter((t): t is TableSchema => t !== undefined);
  }

  registerTable(_table: TableSchema): Promise<void> {
    return Promise.reject(new Conflict('tables are registered in the external metastore'));
  }

  /** Runs one statement and gathers the rows of every page. */
  async query(sql: string, catalog?: string, schema?: string): Promise<unknown[][]> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    const rows: unknown[][] = [];
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
      if (Array.isArray(page.data)) rows.push(...page.data);
      if (page.error) {
        logger.debug('Trino refused a query', { errorName: page.error.errorName, queryId: page.id });
        throw new TrinoQueryError(
          page.error.message ?? 'Trino query failed',
          page.error.errorName,
          page.error.errorType,
        );
      }
      if (!page.nextUri) return rows;
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

/** Trino's names for "no such catalog/schema": an unknown name, not a failure. */
const NOT_FOUND = new Set(['CATALOG_NOT_FOUND', 'SCHEMA_NOT_FOUND']);

async function notFoundAsUndefined<T>(query: Promise<T>): Promise<T | undefined> {
  try {
    return await query;
  } catch (err) {
    if (err instanceof TrinoQueryError && err.errorName && NOT_FOUND.has(err.errorName)) return undefined;
    throw err;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    // An expired deadline ends the wait; the next fetch then fails as a timeout.
    const stop = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    signal.addEventListener('abort', stop, { once: true });
  });
}
