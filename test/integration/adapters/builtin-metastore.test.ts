import { randomUUID } from 'node:crypto';
import { QueryCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { BuiltinMetastore } from '../../../shared/adapters/builtin-metastore.js';
import { documentClient } from '../../../shared/aws/clients.js';
import { mapLimit } from '../../../shared/concurrency.js';
import type { TableSchema } from '../../../shared/ports/metastore.js';
import { provided } from '../provided.js';

let db: DynamoDBDocumentClient;
let metastore: BuiltinMetastore;

beforeAll(() => {
  db = documentClient({
    region: 'us-east-1',
    endpoints: { dynamodb: provided('dynamodbEndpoint'), sqs: undefined, s3: undefined },
  });
  metastore = new BuiltinMetastore(db, physicalTableName(provided('stage'), TABLES.metastore));
});

/** Each test its own catalog: the table is shared by the whole suite. */
const uniqueCatalog = () => `cat_${randomUUID().slice(0, 8)}`;

const table = (catalog: string, schema: string, name: string, over: Partial<TableSchema> = {}): TableSchema => ({
  catalog,
  schema,
  table: name,
  description: `the ${name} table`,
  columns: [
    { name: 'id', type: 'bigint', description: 'identifier' },
    { name: 'note', type: 'varchar', description: null },
  ],
  ...over,
});

describe('BuiltinMetastore', () => {
  it('is not external', () => {
    expect(metastore.external).toBe(false);
  });

  it('registers tables and lists catalogs, schemas and tables sorted', async () => {
    const catalog = uniqueCatalog();
    const other = uniqueCatalog();
    for (const [schema, name] of [
      ['sales', 'orders'],
      ['sales', 'Accounts'],
      ['sales', 'accounts'],
      ['hr', 'people'],
      ['finance', 'ledger'],
    ] as const)
      await metastore.registerTable(table(catalog, schema, name));
    await metastore.registerTable(table(other, 'x', 'y'));

    const catalogs = await metastore.listCatalogs();
    expect(catalogs).toEqual([...catalogs].sort());
    expect(catalogs).toEqual(expect.arrayContaining([catalog, other]));
    expect(await metastore.listSchemas(catalog)).toEqual(['finance', 'hr', 'sales']);
    expect(await metastore.listTables(catalog, 'sales')).toEqual(['Accounts', 'accounts', 'orders']);
    expect(await metastore.listTables(other, 'x')).toEqual(['y']);
    expect(await metastore.getTable(catalog, 'sales', 'orders')).toEqual(table(catalog, 'sales', 'orders'));
  });

  it('answers undefined for an unknown catalog, schema or table', async () => {
    const catalog = uniqueCatalog();
    await metastore.registerTable(table(catalog, 'sales', 'orders'));
    expect(await metastore.listSchemas(uniqueCatalog())).toBeUndefined();
    expect(await metastore.listTables(uniqueCatalog(), 'sales')).toBeUndefined();
    expect(await metastore.listTables(catalog, 'nope')).toBeUndefined();
    expect(await metastore.getTable(catalog, 'sales', 'nope')).toBeUndefined();
    expect(await metastore.getTable(catalog, 'nope', 'orders')).toBeUndefined();
  });

  it('re-registering replaces the table and keeps one catalog and schema', async () => {
    const catalog = uniqueCatalog();
    await metastore.registerTable(table(catalog, 'sales', 'orders'));
    const replaced = table(catalog, 'sales', 'orders', {
      description: null,
      columns: [{ name: 'order_id', type: 'varchar', description: 'new' }],
    });
    await metastore.registerTable(replaced);
    expect(await metastore.getTable(catalog, 'sales', 'orders')).toEqual(replaced);
    expect((await metastore.listCatalogs()).filter((c) => c === catalog)).toHaveLength(1);
    expect(await metastore.listSchemas(catalog)).toEqual(['sales']);
    expect(await metastore.listTables(catalog, 'sales')).toEqual(['orders']);
  });

  it('never lets a name holding the key separator alias another table', async () => {
    const catalog = uniqueCatalog();
    await metastore.registerTable(table(catalog, 'b#c', 't'));
    expect(await metastore.getTable(catalog, 'b#c', 't')).toMatchObject({ catalog, schema: 'b#c', table: 't' });
    expect(await metastore.getTable(`${catalog}#b`, 'c', 't')).toBeUndefined();
    expect(await metastore.getTables([{ catalog: `${catalog}#b`, schema: 'c', table: 't' }])).toEqual([]);
    expect(await metastore.listTables(`${catalog}#b`, 'c')).toBeUndefined();
  });

  it('registers concurrently into one schema', async () => {
    const catalog = uniqueCatalog();
    const names = Array.from({ length: 12 }, (_, i) => `t${String(i).padStart(2, '0')}`);
    await Promise.all(names.map((name) => metastore.registerTable(table(catalog, 'sales', name))));
    expect(await metastore.listTables(catalog, 'sales')).toEqual(names);
  });

  it('reads 250 tables in batches of 100, leaving out the missing ones, in the order asked', async () => {
    const catalog = uniqueCatalog();
    await mapLimit(
      Array.from({ length: 250 }, (_, i) => i),
      8,
      (i) => metastore.registerTable(table(catalog, 's', `t${i}`)),
    );
    const refs = [
      { catalog, schema: 's', table: 'missing' },
      ...Array.from({ length: 250 }, (_, i) => ({ catalog, schema: 's', table: `t${249 - i}` })),
      { catalog, schema: 's', table: 't7' },
    ];
    const send = vi.spyOn(db, 'send');
    try {
      const tables = await metastore.getTables(refs);
      expect(tables.map((t) => t.table)).toEqual([...refs.slice(1).map((r) => r.table)]);
      expect(tables[0]).toEqual(table(catalog, 's', 't249'));
      expect(send.mock.calls.map(([command]) => command.constructor.name)).toEqual([
        'BatchGetCommand',
        'BatchGetCommand',
        'BatchGetCommand',
      ]);
    } finally {
      send.mockRestore();
    }
    expect(await metastore.getTables([])).toEqual([]);
  });

  it('lists 1,050 tables of one schema completely with one paginated Query', async () => {
    const catalog = uniqueCatalog();
    // Wide items so that the listing spans several 1 MB Query pages.
    const wide = Array.from({ length: 20 }, (_, i) => ({
      name: `column_${i}`,
      type: 'varchar',
      description: 'x'.repeat(150),
    }));
    const names = Array.from({ length: 1050 }, (_, i) => `table_${String(i).padStart(4, '0')}`);
    for (let i = 0; i < names.length; i += 50)
      await Promise.all(
        names.slice(i, i + 50).map((name) => metastore.registerTable(table(catalog, 'big', name, { columns: wide }))),
      );

    const send = vi.spyOn(db, 'send');
    try {
      const listed = await metastore.listTables(catalog, 'big');
      expect(listed).toEqual(names);
      const commands = send.mock.calls.map(([command]) => command);
      expect(commands.some((c) => c instanceof ScanCommand)).toBe(false);
      // Nothing but the Query's pages: a schema with tables needs no existence check.
      expect(commands.every((c) => c instanceof QueryCommand)).toBe(true);
      const queries = commands.filter((c) => c instanceof QueryCommand);
      // A Query reads at most 1 MB of items (before projection): about 3.7 MB takes several pages,
      // each continuing the previous one on the same partition.
      expect(queries.length).toBeGreaterThan(1);
      for (const [index, query] of queries.entries())
        expect(query.input.ExclusiveStartKey === undefined).toBe(index === 0);
    } finally {
      send.mockRestore();
    }
  }, 120_000);
});
