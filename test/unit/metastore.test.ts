import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TrinoMetastore, TrinoQueryError } from '../../shared/adapters/trino.js';
import { quoteIdentifier, quoteLiteral } from '../../shared/sql.js';
import { Conflict, Unavailable } from '../../shared/errors.js';
import { statusOf } from '../../shared/http/errors.js';
import { type FakeTrino, startFakeTrino } from '../support/trino-server.js';
import { rejection } from '../support/rejection.js';

let trino: FakeTrino;

beforeAll(async () => {
  trino = await startFakeTrino();
});

afterAll(async () => {
  await trino.stop();
});

beforeEach(() => {
  trino.model.clear();
  trino.requests.length = 0;
  trino.addTable('hive', 'sales', 'orders', [
    { name: 'id', type: 'bigint', comment: 'order id' },
    { name: 'customer', type: 'varchar' },
    { name: 'total', type: 'decimal(12,2)', comment: null },
  ]);
  for (const table of ['zebra', 'apple', 'mango', 'kiwi', 'banana']) trino.addTable('hive', 'sales', table, []);
  trino.addTable('hive', 'hr', 'people', [{ name: 'name', type: 'varchar' }]);
  trino.addTable('iceberg', 'lake', 'events', [{ name: 'ts', type: 'timestamp(6)' }]);
  trino.addTable('delta', 'gold', 'kpis', [{ name: 'k', type: 'varchar' }]);
});

afterEach(() => {
  trino.down = false;
  trino.busyOnce = false;
  trino.pageSize = 2;
});

const metastore = (timeoutMs?: number) =>
  new TrinoMetastore({ url: `${trino.url}/`, user: 'dpm-service' }, timeoutMs ? { timeoutMs } : {});

describe('quoting', () => {
  it('doubles the quote character inside the quotes', () => {
    expect(quoteIdentifier('plain')).toBe('"plain"');
    expect(quoteIdentifier('we"ird')).toBe('"we""ird"');
    expect(quoteLiteral("o'brien")).toBe("'o''brien'");
    expect(quoteLiteral("'; DROP TABLE x; --")).toBe("'''; DROP TABLE x; --'");
  });
});

describe('TrinoMetastore', () => {
  it('is external', () => {
    expect(metastore().external).toBe(true);
  });

  it('lists catalogs, schemas and tables sorted', async () => {
    const m = metastore();
    expect(await m.listCatalogs()).toEqual(['delta', 'hive', 'iceberg']);
    expect(await m.listSchemas('hive')).toEqual(['hr', 'information_schema', 'sales']);
    expect(await m.listTables('hive', 'sales')).toEqual(['apple', 'banana', 'kiwi', 'mango', 'orders', 'zebra']);
    expect(trino.statements()).toEqual([
      'SHOW CATALOGS',
      'SHOW SCHEMAS FROM "hive"',
      'SHOW TABLES FROM "hive"."sales"',
    ]);
  });

  it('follows nextUri through several pages and gathers the data of each', async () => {
    trino.pageSize = 1;
    expect(await metastore().listTables('hive', 'sales')).toHaveLength(6);
    const gets = trino.requests.filter((r) => r.method === 'GET');
    // One page per row after the QUEUED one, then the FINISHED page.
    expect(gets).toHaveLength(7);
    expect(gets.every((r) => r.path.startsWith('/v1/statement/'))).toBe(true);
    expect(trino.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('sends the user on the statement, and the SQL as the body', async () => {
    await metastore().listCatalogs();
    const post = trino.requests.find((r) => r.method === 'POST')!;
    expect(post.path).toBe('/v1/statement');
    expect(post.headers['x-trino-user']).toBe('dpm-service');
    expect(post.body).toBe('SHOW CATALOGS');
  });

  it('sends the session catalog and schema when asked', async () => {
    expect(await metastore().query('SHOW CATALOGS', 'hive', 'sales')).toHaveLength(3);
    const post = trino.requests.find((r) => r.method === 'POST')!;
    expect(post.headers['x-trino-catalog']).toBe('hive');
    expect(post.headers['x-trino-schema']).toBe('sales');
  });

  it('answers undefined for an unknown catalog or schema', async () => {
    const m = metastore();
    expect(await m.listSchemas('nope')).toBeUndefined();
    expect(await m.listTables('nope', 'sales')).toBeUndefined();
    expect(await m.listTables('hive', 'nope')).toBeUndefined();
    expect(await m.getTable('nope', 'sales', 'orders')).toBeUndefined();
  });

  it('reads a table with its columns in order', async () => {
    expect(await metastore().getTable('hive', 'sales', 'orders')).toEqual({
      catalog: 'hive',
      schema: 'sales',
      table: 'orders',
      description: null,
      columns: [
        { name: 'id', type: 'bigint', description: 'order id' },
        { name: 'customer', type: 'varchar', description: null },
        { name: 'total', type: 'decimal(12,2)', description: null },
      ],
    });
    // The columns and the table's comment, asked at the same time (in either order).
    expect([...trino.statements()].sort()).toEqual([
      `SELECT column_name, data_type, comment FROM "hive".information_schema.columns WHERE table_schema = 'sales' AND table_name = 'orders' ORDER BY ordinal_position`,
      `SELECT comment FROM system.metadata.table_comments WHERE catalog_name = 'hive' AND schema_name = 'sales' AND table_name = 'orders'`,
    ]);
  });

  it('reads several tables, leaving out the missing ones, in the order asked', async () => {
    const tables = await metastore().getTables([
      { catalog: 'iceberg', schema: 'lake', table: 'events' },
      { catalog: 'hive', schema: 'sales', table: 'missing' },
      { catalog: 'hive', schema: 'hr', table: 'people' },
      { catalog: 'nope', schema: 'x', table: 'y' },
    ]);
    expect(tables.map((t) => `${t.catalog}.${t.schema}.${t.table}`)).toEqual(['iceberg.lake.events', 'hive.hr.people']);
    expect(tables[1]!.columns).toEqual([{ name: 'name', type: 'varchar', description: null }]);
  });

  it('answers undefined for a table without columns (unknown)', async () => {
    expect(await metastore().getTable('hive', 'sales', 'missing')).toBeUndefined();
    expect(await metastore().getTable('hive', 'nope', 'orders')).toBeUndefined();
  });

  it('quotes names so that odd ones reach Trino as valid, escaped SQL', async () => {
    trino.addTable('hive', 'we"ird', "o'brien", [{ name: 'c', type: 'integer', comment: "it's" }]);
    const m = metastore();
    expect(await m.listTables('hive', 'we"ird')).toEqual(["o'brien"]);
    const table = await m.getTable('hive', 'we"ird', "o'brien");
    expect(table?.columns).toEqual([{ name: 'c', type: 'integer', description: "it's" }]);
    expect(await m.getTable('hive', 'we"ird', "o' OR '1'='1")).toBeUndefined();
    expect(trino.statements().filter((sql) => !sql.includes('table_comments'))).toEqual([
      'SHOW TABLES FROM "hive"."we""ird"',
      `SELECT column_name, data_type, comment FROM "hive".information_schema.columns WHERE table_schema = 'we"ird' AND table_name = 'o''brien' ORDER BY ordinal_position`,
      `SELECT column_name, data_type, comment FROM "hive".information_schema.columns WHERE table_schema = 'we"ird' AND table_name = 'o'' OR ''1''=''1' ORDER BY ordinal_position`,
    ]);
    expect(trino.statements()).toContain(
      `SELECT comment FROM system.metadata.table_comments WHERE catalog_name = 'hive' AND schema_name = 'we"ird' AND table_name = 'o''brien'`,
    );
  });

  it('quotes a catalog name with a double quote', async () => {
    trino.addTable('odd"cat', 's', 't', [{ name: 'c', type: 'integer' }]);
    expect(await metastore().listSchemas('odd"cat')).toEqual(['information_schema', 's']);
    expect(trino.statements()).toEqual(['SHOW SCHEMAS FROM "odd""cat"']);
  });

  it('tries a 503 from the coordinator again', async () => {
    trino.busyOnce = true;
    expect(await metastore().listCatalogs()).toEqual(['delta', 'hive', 'iceberg']);
    expect(trino.requests.filter((r) => r.method === 'POST')).toHaveLength(2);
  });

  it('maps a query Trino refused to an error with its message', async () => {
    const err = await rejection(metastore().query('SELEKT 1'));
    expect(err).toBeInstanceOf(TrinoQueryError);
    expect(err.message).toMatch(/mismatched input 'SELEKT'/);
    expect((err as TrinoQueryError).errorName).toBe('SYNTAX_ERROR');
    expect(err).not.toBeInstanceOf(Unavailable);
  });

  it('is Unavailable when Trino is down', async () => {
    trino.down = true;
    const err = await rejection(metastore().listCatalogs());
    expect(err).toBeInstanceOf(Unavailable);
    expect(statusOf(err)).toBe(503);
    expect(err.message).toMatch(/not reachable/);
  });

  it('is Unavailable when nothing listens', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const err = await rejection(new TrinoMetastore({ url: `http://127.0.0.1:${port}`, user: 'u' }).listCatalogs());
    expect(err).toBeInstanceOf(Unavailable);
  });

  it('is Unavailable when the coordinator keeps answering 503', async () => {
    const busy = createHttpServer((_req, res) => {
      res.statusCode = 503;
      res.end('Service Unavailable');
    });
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      const port = (busy.address() as AddressInfo).port;
      const err = await rejection(new TrinoMetastore({ url: `http://127.0.0.1:${port}`, user: 'u' }).listCatalogs());
      expect(err).toBeInstanceOf(Unavailable);
      expect(err.message).toMatch(/HTTP 503/);
    } finally {
      busy.closeAllConnections();
      await new Promise<void>((resolve) => busy.close(() => resolve()));
    }
  });

  it('is Unavailable when Trino does not answer in time', async () => {
    const hang = createHttpServer(() => undefined);
    await new Promise<void>((resolve) => hang.listen(0, '127.0.0.1', resolve));
    try {
      const port = (hang.address() as AddressInfo).port;
      const m = new TrinoMetastore({ url: `http://127.0.0.1:${port}`, user: 'u' }, { timeoutMs: 200 });
      const err = await rejection(m.listCatalogs());
      expect(err).toBeInstanceOf(Unavailable);
      expect(err.message).toMatch(/within 0.2 s/);
    } finally {
      hang.closeAllConnections();
      await new Promise<void>((resolve) => hang.close(() => resolve()));
    }
  });

  it('refuses to register a table', async () => {
    const err = await rejection(
      metastore().registerTable({ catalog: 'hive', schema: 'sales', table: 't', description: null, columns: [] }),
    );
    expect(err).toBeInstanceOf(Conflict);
    expect(statusOf(err)).toBe(409);
    expect(err.message).toBe('tables are registered in the external metastore');
    expect(trino.requests).toHaveLength(0);
  });
});
