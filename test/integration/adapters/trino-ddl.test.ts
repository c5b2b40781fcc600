import { randomUUID } from 'node:crypto';
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { TrinoMetastore } from '../../../shared/adapters/trino.js';
import { documentClient } from '../../../shared/aws/clients.js';
import { Conflict, Invalid, NotFound, Unavailable } from '../../../shared/errors.js';
import type { EventsTable } from '../../../shared/events/events-table.js';
import { storedEvent } from '../../../shared/events/events-table.js';
import type { AlterOperation, OutboxEvent, TableRef, TableSchema } from '../../../shared/ports/metastore.js';
import { type FakeTrino, startFakeTrino } from '../../support/trino-server.js';
import { rejection } from '../../support/rejection.js';
import { provided } from '../provided.js';

/**
 * The Trino metastore's DDL (docs/sdk.md) against the local Trino-protocol server: the exact
 * SQL sent, Trino's refusals as the port's errors, ALTER all-or-none with its undo, previews
 * over several pages, and each change's event recorded once Trino confirmed it.
 */
let trino: FakeTrino;
let db: DynamoDBDocumentClient;
let events: EventsTable;

beforeAll(async () => {
  trino = await startFakeTrino();
  db = documentClient({
    region: 'us-east-1',
    endpoints: { dynamodb: provided('dynamodbEndpoint'), sqs: undefined, s3: undefined },
  });
  events = { tableName: physicalTableName(provided('stage'), TABLES.domainEvents), ttlDays: 1, source: 'dpm/test' };
});

afterAll(async () => {
  await trino.stop();
});

beforeEach(() => {
  trino.model.clear();
  trino.requests.length = 0;
  trino.addTable('hive', 'sales', 'orders', [
    { name: 'id', type: 'bigint', comment: 'order id', nullable: false },
    { name: 'customer', type: 'varchar' },
    { name: 'total', type: 'decimal(12,2)', comment: "it's the total" },
  ]);
  trino.addTable('hive', 'sales', 'accounts', [{ name: 'k', type: 'varchar' }], { comment: 'the accounts' });
  trino.addSchema('hive', 'empty');
  trino.addCatalog('lake', 'iceberg');
});

afterEach(() => {
  trino.down = false;
  trino.pageSize = 2;
});

const metastore = (timeoutMs?: number) =>
  new TrinoMetastore({ url: trino.url, user: 'dpm-service' }, { db, ...(timeoutMs ? { timeoutMs } : {}) });

const ORDERS: TableRef = { catalog: 'hive', schema: 'sales', table: 'orders' };
const none = new Map<string, string | number | boolean>();
const sorted = (statements: string[]) => [...statements].sort();

/** The events recorded for `subject`, oldest first. */
async function eventsOf(subject: string) {
  const out = await db.send(
    new QueryCommand({
      TableName: events.tableName,
      KeyConditionExpression: 'subject = :s',
      ExpressionAttributeValues: { ':s': subject },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map(storedEvent);
}

/**
 * The change's event, its data shaped as the service makes it (the suite's events table is
 * shared: asyncapi.test.ts checks every event it holds against the documented schemas).
 */
const event = (
  subject: string,
  type: 'metastore.schema.created' | 'metastore.schema.deleted' | 'metastore.table.altered',
): OutboxEvent => ({
  events,
  subject,
  change: { type, actor: 'dana', at: new Date().toISOString() },
  data: async (after?: TableSchema) => {
    const [, catalog, schema] = subject.split('/') as [string, string, string];
    if (type !== 'metastore.table.altered') return { name: schema, table_count: 0, catalog };
    const annotations = { tags: [], classifications: [], glossary_terms: [] };
    return {
      catalog: after!.catalog,
      schema: after!.schema,
      table: after!.table,
      urn: `urn:li:dataset:(urn:li:dataPlatform:trino,${after!.catalog}.${after!.schema}.${after!.table},PROD)`,
      description: after!.description,
      domain: null,
      ...annotations,
      columns: after!.columns.map((c) => ({ ...c, ...annotations })),
    };
  },
});

describe('details', () => {
  it('catalogDetails: connectors from system.metadata.catalogs, schema counts without information_schema', async () => {
    expect(await metastore().catalogDetails()).toEqual([
      { name: 'hive', type: 'memory', schema_count: 2 },
      { name: 'lake', type: 'iceberg', schema_count: 0 },
    ]);
    const [first, ...counts] = trino.statements();
    expect(first).toBe('SELECT catalog_name, connector_name FROM system.metadata.catalogs');
    expect(sorted(counts)).toEqual([
      `SELECT count(*) FROM "hive".information_schema.schemata WHERE schema_name <> 'information_schema'`,
      `SELECT count(*) FROM "lake".information_schema.schemata WHERE schema_name <> 'information_schema'`,
    ]);
  });

  it('schemaDetails: table counts grouped by schema, empty schemas with 0; unknown catalog undefined', async () => {
    trino.addTable('hive', 'we"ird', 't', [{ name: 'c', type: 'integer' }]);
    expect(await metastore().schemaDetails('hive')).toEqual([
      { name: 'empty', table_count: 0 },
      { name: 'sales', table_count: 2 },
      { name: 'we"ird', table_count: 1 },
    ]);
    expect(sorted(trino.statements())).toEqual([
      `SELECT table_schema, count(*) FROM "hive".information_schema.tables WHERE table_schema <> 'information_schema' GROUP BY table_schema`,
      'SHOW SCHEMAS FROM "hive"',
    ]);
    expect(await metastore().schemaDetails('nope')).toBeUndefined();
  });

  it('tableDetails: one columns query for the schema, grouped by table in ordinal order, with table comments', async () => {
    trino.addTable('hive', 'sales', 'zeta', [
      { name: 'b', type: 'integer' },
      { name: 'a', type: 'integer' },
    ]);
    const tables = await metastore().tableDetails('hive', 'sales');
    expect(tables).toEqual([
      {
        catalog: 'hive',
        schema: 'sales',
        table: 'accounts',
        description: 'the accounts',
        columns: [{ name: 'k', type: 'varchar', description: null }],
      },
      {
        catalog: 'hive',
        schema: 'sales',
        table: 'orders',
        description: null,
        columns: [
          { name: 'id', type: 'bigint', description: 'order id' },
          { name: 'customer', type: 'varchar', description: null },
          { name: 'total', type: 'decimal(12,2)', description: "it's the total" },
        ],
      },
      {
        catalog: 'hive',
        schema: 'sales',
        table: 'zeta',
        description: null,
        columns: [
          { name: 'b', type: 'integer', description: null },
          { name: 'a', type: 'integer', description: null },
        ],
      },
    ]);
    expect(sorted(trino.statements())).toEqual([
      `SELECT table_name, column_name, data_type, comment FROM "hive".information_schema.columns WHERE table_schema = 'sales' ORDER BY table_name, ordinal_position`,
      `SELECT table_name, comment FROM system.metadata.table_comments WHERE catalog_name = 'hive' AND schema_name = 'sales'`,
      'SHOW TABLES FROM "hive"."sales"',
    ]);
    expect(await metastore().tableDetails('hive', 'empty')).toEqual([]);
    expect(await metastore().tableDetails('hive', 'nope')).toBeUndefined();
    expect(await metastore().tableDetails('nope', 'sales')).toBeUndefined();
  });

  it('getTable reads the table comment too', async () => {
    expect((await metastore().getTable('hive', 'sales', 'accounts'))?.description).toBe('the accounts');
  });
});

describe('previewTable', () => {
  it('SELECT * ... LIMIT n over several pages; column names from QueryResults columns', async () => {
    const rows = [1, 2, 3, 4, 5].map((i) => [i, `c${i}`, `${i}.50`]);
    trino.addTable(
      'sales.eu',
      'co"re',
      "or'ders",
      [
        { name: 'id', type: 'bigint' },
        { name: 'who', type: 'varchar' },
        { name: 'amount', type: 'decimal(10,2)' },
      ],
      { rows },
    );
    trino.pageSize = 1;
    const preview = await metastore().previewTable({ catalog: 'sales.eu', schema: 'co"re', table: "or'ders" }, 3);
    expect(preview).toEqual({ columns: ['id', 'who', 'amount'], rows: rows.slice(0, 3) });
    expect(trino.statements()).toEqual([`SELECT * FROM "sales.eu"."co""re"."or'ders" LIMIT 3`]);
    // After the POST's QUEUED page: one page per row, then FINISHED.
    expect(trino.requests.filter((r) => r.method === 'GET')).toHaveLength(4);
  });

  it('an empty table: its columns, no rows; an unknown table, schema or catalog: undefined', async () => {
    expect(await metastore().previewTable(ORDERS, 20)).toEqual({ columns: ['id', 'customer', 'total'], rows: [] });
    expect(await metastore().previewTable({ ...ORDERS, table: 'nope' }, 20)).toBeUndefined();
    expect(await metastore().previewTable({ ...ORDERS, schema: 'nope' }, 20)).toBeUndefined();
    expect(await metastore().previewTable({ ...ORDERS, catalog: 'nope' }, 20)).toBeUndefined();
  });
});

describe('catalogs', () => {
  it('CREATE CATALOG ... USING connector WITH properties, every value a varchar literal', async () => {
    const props = new Map<string, string | number | boolean>([
      ['memory.max-data-per-node', '128MB'],
      ['x.count', 5],
      ['x.flag', true],
      ["it's", "o'brien"],
    ]);
    await metastore().createCatalog('br"ain.x', 'memory', props);
    expect(trino.statements()).toEqual([
      `CREATE CATALOG "br""ain.x" USING memory WITH ("memory.max-data-per-node" = '128MB', "x.count" = '5', "x.flag" = 'true', "it's" = 'o''brien')`,
    ]);
    const made = trino.model.get('br"ain.x')!;
    expect(made.connector).toBe('memory');
    expect([...made.properties]).toEqual([
      ['memory.max-data-per-node', '128MB'],
      ['x.count', '5'],
      ['x.flag', 'true'],
      ["it's", "o'brien"],
    ]);
    const again = await rejection(metastore().createCatalog('br"ain.x', 'memory', none));
    expect(again).toBeInstanceOf(Conflict);
    expect(again.message).toBe('Catalog br"ain.x exists already');
  });

  it('refuses a connector name that is no plain identifier, and a non-finite number, sending nothing', async () => {
    const err = await rejection(
      metastore().createCatalog('c', 'memory WITH ("a" = \'b\')', new Map([['n', Number.NaN]])),
    );
    expect(err).toBeInstanceOf(Invalid);
    expect((err as Invalid).issues.map((i) => i.loc)).toEqual([
      ['body', 'catalog_type'],
      ['body', 'properties', 'n'],
    ]);
    expect(trino.statements()).toEqual([]);
  });

  it('DROP CATALOG only when it has no schema but information_schema (Trino would drop regardless)', async () => {
    const full = await rejection(metastore().dropCatalog('hive'));
    expect(full).toBeInstanceOf(Conflict);
    expect(full.message).toBe('Catalog hive has schemas; drop them first');
    expect(trino.model.has('hive')).toBe(true);

    await metastore().dropCatalog('lake');
    expect(trino.model.has('lake')).toBe(false);
    const missing = await rejection(metastore().dropCatalog('lake'));
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing.message).toBe('No catalog lake');
    expect(trino.statements()).toEqual([
      'SHOW SCHEMAS FROM "hive"',
      'SHOW SCHEMAS FROM "lake"',
      'DROP CATALOG "lake"',
      'SHOW SCHEMAS FROM "lake"',
    ]);
  });
});

describe('schemas', () => {
  it('CREATE SCHEMA with typed properties; an existing one 409, an unknown catalog 404', async () => {
    const props = new Map<string, string | number | boolean>([
      ['location', 's3://bucket/x'],
      ['n', -2.5],
      ['flag', false],
    ]);
    await metastore().createSchema('hive', 'we"ird.s', props);
    expect(trino.statements()).toEqual([
      `CREATE SCHEMA "hive"."we""ird.s" WITH ("location" = 's3://bucket/x', "n" = -2.5, "flag" = FALSE)`,
    ]);
    expect([...trino.model.get('hive')!.schemas.get('we"ird.s')!.properties]).toEqual([...props]);

    const again = await rejection(metastore().createSchema('hive', 'sales', none));
    expect(again).toBeInstanceOf(Conflict);
    expect(again.message).toBe('Schema hive.sales exists already');
    const unknown = await rejection(metastore().createSchema('nope', 's', none));
    expect(unknown).toBeInstanceOf(NotFound);
    expect(unknown.message).toBe('No catalog nope');
  });

  it('DROP SCHEMA ... RESTRICT: a schema with tables 409, an unknown one 404', async () => {
    const full = await rejection(metastore().dropSchema('hive', 'sales'));
    expect(full).toBeInstanceOf(Conflict);
    expect(full.message).toBe('Schema hive.sales is not empty; drop its tables first');
    await metastore().dropSchema('hive', 'empty');
    expect(trino.model.get('hive')!.schemas.has('empty')).toBe(false);
    const missing = await rejection(metastore().dropSchema('hive', 'empty'));
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing.message).toBe('No schema hive.empty');
    expect(trino.statements()).toEqual([
      'DROP SCHEMA "hive"."sales" RESTRICT',
      'DROP SCHEMA "hive"."empty" RESTRICT',
      'DROP SCHEMA "hive"."empty" RESTRICT',
    ]);
  });
});

describe('tables', () => {
  it('CREATE TABLE with NOT NULL, comments and properties; answers the table as Trino holds it', async () => {
    const ref = { catalog: 'hive', schema: 'empty', table: 'we"ird.t' };
    const created = await metastore().createTable(
      ref,
      [
        { name: 'id', type: 'bigint', comment: "the 'id'", nullable: false },
        { name: 'amount', type: 'decimal(10,2)', comment: null, nullable: true },
        { name: 'at', type: 'timestamp(3) with time zone', comment: null, nullable: true },
      ],
      new Map<string, string | number | boolean>([['format', 'ORC']]),
    );
    expect(trino.statements()[0]).toBe(
      `CREATE TABLE "hive"."empty"."we""ird.t" ("id" bigint NOT NULL COMMENT 'the ''id''', "amount" decimal(10,2), "at" timestamp(3) with time zone) WITH ("format" = 'ORC')`,
    );
    expect(created).toEqual({
      ...ref,
      description: null,
      columns: [
        { name: 'id', type: 'bigint', description: "the 'id'" },
        { name: 'amount', type: 'decimal(10,2)', description: null },
        { name: 'at', type: 'timestamp(3) with time zone', description: null },
      ],
    });
    expect(trino.table('hive', 'empty', 'we"ird.t')!.columns[0]).toMatchObject({ nullable: false });
  });

  it('refuses a type that is not one, or a repeated column, before sending anything', async () => {
    const err = await rejection(
      metastore().createTable(
        { catalog: 'hive', schema: 'empty', table: 't' },
        [
          { name: 'a', type: 'bigint, "b" varchar', comment: null, nullable: true },
          { name: 'c', type: "varchar) WITH (x = '1'); DROP TABLE y; --", comment: null, nullable: true },
          { name: 'a', type: 'bigint', comment: null, nullable: true },
        ],
        none,
      ),
    );
    expect(err).toBeInstanceOf(Invalid);
    expect((err as Invalid).issues.map((i) => i.loc)).toEqual([
      ['body', 'columns', 0, 'type'],
      ['body', 'columns', 1, 'type'],
      ['body', 'columns', 2, 'name'],
    ]);
    expect(trino.statements()).toEqual([]);
  });

  it('an existing table 409, a missing schema 404; a type Trino does not know is 422 with its message', async () => {
    const column = [{ name: 'a', type: 'bigint', comment: null, nullable: true }];
    expect(await rejection(metastore().createTable(ORDERS, column, none))).toBeInstanceOf(Conflict);
    const missing = await rejection(metastore().createTable({ ...ORDERS, schema: 'nope' }, column, none));
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing.message).toBe('No schema hive.nope');
    const unknownType = await rejection(
      metastore().createTable({ ...ORDERS, table: 'x' }, [{ ...column[0]!, type: 'strng' }], none),
    );
    expect(unknownType).toBeInstanceOf(Invalid);
    expect((unknownType as Invalid).issues).toEqual([
      expect.objectContaining({
        type: 'value_error',
        loc: ['body'],
        msg: expect.stringMatching(/^Value error, Trino refused the change: .*strng/),
      }),
    ]);
  });

  it('DROP TABLE; an unknown one 404', async () => {
    await metastore().dropTable(ORDERS);
    expect(trino.table('hive', 'sales', 'orders')).toBeUndefined();
    const missing = await rejection(metastore().dropTable(ORDERS));
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing.message).toBe('No table hive.sales.orders');
    expect(trino.statements()).toEqual(['DROP TABLE "hive"."sales"."orders"', 'DROP TABLE "hive"."sales"."orders"']);
  });

  it('is Unavailable when Trino is down', async () => {
    trino.down = true;
    expect(await rejection(metastore().dropTable(ORDERS))).toBeInstanceOf(Unavailable);
  });
});

describe('alterTable', () => {
  /** The statements after the table is read (its columns and comment, asked at once). */
  const alterStatements = () => trino.statements().slice(2);

  it('applies every operation in order, properties last in one statement, and answers the table', async () => {
    const ops: AlterOperation[] = [
      { op: 'set_properties', properties: new Map<string, string | number | boolean>([['format', 'ORC']]) },
      { op: 'add_column', name: 'note "x"', type: 'varchar(20)', comment: "it's new" },
      { op: 'rename_column', name: 'customer', new_name: 'client' },
      { op: 'drop_column', name: 'total' },
      { op: 'set_column_comment', name: 'client', comment: 'who' },
      { op: 'set_comment', comment: "o'rders" },
      {
        op: 'set_properties',
        properties: new Map<string, string | number | boolean>([
          ['format', 'PARQUET'],
          ['n', 3],
        ]),
      },
    ];
    const table = await metastore().alterTable(ORDERS, ops);
    const t = '"hive"."sales"."orders"';
    expect(alterStatements().slice(0, 6)).toEqual([
      `ALTER TABLE ${t} ADD COLUMN "note ""x""" varchar(20) COMMENT 'it''s new'`,
      `ALTER TABLE ${t} RENAME COLUMN "customer" TO "client"`,
      `ALTER TABLE ${t} DROP COLUMN "total"`,
      `COMMENT ON COLUMN ${t}."client" IS 'who'`,
      `COMMENT ON TABLE ${t} IS 'o''rders'`,
      `ALTER TABLE ${t} SET PROPERTIES "format" = 'PARQUET', "n" = 3`,
    ]);
    expect(table).toEqual({
      ...ORDERS,
      description: "o'rders",
      columns: [
        { name: 'id', type: 'bigint', description: 'order id' },
        { name: 'client', type: 'varchar', description: 'who' },
        { name: 'note "x"', type: 'varchar(20)', description: "it's new" },
      ],
    });
    expect([...trino.table('hive', 'sales', 'orders')!.properties]).toEqual([
      ['format', 'PARQUET'],
      ['n', 3],
    ]);
  });

  it('refuses unknown and duplicate columns and the last column, naming each operation, and runs nothing', async () => {
    trino.addTable('hive', 'sales', 'one', [{ name: 'only', type: 'bigint' }]);
    const err = await rejection(
      metastore().alterTable(ORDERS, [
        { op: 'drop_column', name: 'nope' },
        { op: 'add_column', name: 'id', type: 'bigint', comment: null },
        { op: 'rename_column', name: 'customer', new_name: 'total' },
        { op: 'set_column_comment', name: 'gone', comment: 'x' },
        { op: 'drop_column', name: 'customer' },
        { op: 'set_column_comment', name: 'customer', comment: 'dropped before' },
      ]),
    );
    expect(err).toBeInstanceOf(Invalid);
    expect((err as Invalid).issues.map((i) => [i.loc, i.type])).toEqual([
      [['body', 'operations', 0, 'name'], 'value_error'],
      [['body', 'operations', 1, 'name'], 'value_error'],
      [['body', 'operations', 2, 'new_name'], 'value_error'],
      [['body', 'operations', 3, 'name'], 'value_error'],
      [['body', 'operations', 5, 'name'], 'value_error'],
    ]);
    const last = await rejection(
      metastore().alterTable({ ...ORDERS, table: 'one' }, [{ op: 'drop_column', name: 'only' }]),
    );
    expect((last as Invalid).issues[0]).toMatchObject({
      loc: ['body', 'operations', 0, 'name'],
      msg: "Value error, operation 0: 'only' is the table's last column",
    });
    expect(trino.statements().filter((sql) => !sql.startsWith('SELECT'))).toEqual([]);
    const missing = await rejection(
      metastore().alterTable({ ...ORDERS, table: 'nope' }, [{ op: 'set_comment', comment: 'x' }]),
    );
    expect(missing).toBeInstanceOf(NotFound);
  });

  it('all or none: when the n-th statement fails, the applied ones are undone in reverse', async () => {
    const rows = [
      [1, 'ann', '9.99'],
      [2, 'bob', '1.00'],
    ];
    trino.addTable('hive', 'sales', 'orders', trino.table('hive', 'sales', 'orders')!.columns, {
      comment: 'before',
      rows,
    });
    const before = trino.table('hive', 'sales', 'orders')!.columns;
    // Two reads, then: rename, comment, drop, table comment — and the add fails.
    trino.failStatement(2 + 5);
    const err = await rejection(
      metastore().alterTable(ORDERS, [
        { op: 'rename_column', name: 'customer', new_name: 'client' },
        { op: 'set_column_comment', name: 'id', comment: 'changed' },
        { op: 'drop_column', name: 'total' },
        { op: 'set_comment', comment: 'after' },
        { op: 'add_column', name: 'extra', type: 'bigint', comment: null },
        { op: 'set_properties', properties: new Map([['format', 'ORC']]) },
      ]),
    );
    // Trino's own failure (GENERIC_INTERNAL_ERROR, INTERNAL_ERROR): a dependency failure, 503.
    expect(err).toBeInstanceOf(Unavailable);
    const t = '"hive"."sales"."orders"';
    expect(alterStatements()).toEqual([
      `ALTER TABLE ${t} RENAME COLUMN "customer" TO "client"`,
      `COMMENT ON COLUMN ${t}."id" IS 'changed'`,
      `ALTER TABLE ${t} DROP COLUMN "total"`,
      `COMMENT ON TABLE ${t} IS 'after'`,
      `ALTER TABLE ${t} ADD COLUMN "extra" bigint`,
      // the undo, last applied first
      `COMMENT ON TABLE ${t} IS 'before'`,
      `ALTER TABLE ${t} ADD COLUMN "total" decimal(12,2) COMMENT 'it''s the total'`,
      `COMMENT ON COLUMN ${t}."id" IS 'order id'`,
      `ALTER TABLE ${t} RENAME COLUMN "client" TO "customer"`,
    ]);
    const now = trino.table('hive', 'sales', 'orders')!;
    expect(now.comment).toBe('before');
    expect(now.properties.size).toBe(0);
    // Every column is back with its type and comment; the dropped one last and without its data.
    const byName = (cs: typeof before) => [...cs].sort((a, b) => (a.name < b.name ? -1 : 1));
    expect(byName(now.columns).map(({ name, type, comment }) => ({ name, type, comment: comment ?? null }))).toEqual(
      byName(before).map(({ name, type, comment }) => ({ name, type, comment: comment ?? null })),
    );
    expect(now.columns.map((c) => c.name)).toEqual(['id', 'customer', 'total']);
    expect(now.rows).toEqual([
      [1, 'ann', null],
      [2, 'bob', null],
    ]);
  });

  it('a statement Trino refuses as a conflict is undone too and answers 409', async () => {
    // The first statement succeeds; Trino then refuses the add as COLUMN_ALREADY_EXISTS.
    trino.failStatement(2 + 2, { errorName: 'COLUMN_ALREADY_EXISTS', errorCode: 51, errorType: 'USER_ERROR' });
    const err = await rejection(
      metastore().alterTable(ORDERS, [
        { op: 'set_comment', comment: 'x' },
        { op: 'add_column', name: 'extra', type: 'bigint', comment: null },
      ]),
    );
    expect(err).toBeInstanceOf(Conflict);
    expect(err.message).toBe('Column extra exists already in table hive.sales.orders');
    expect(alterStatements().at(-1)).toBe('COMMENT ON TABLE "hive"."sales"."orders" IS NULL');
    expect(trino.table('hive', 'sales', 'orders')!.comment).toBeNull();
  });
});

describe('events', () => {
  it('a change records its event once Trino confirmed it; a refused change records none', async () => {
    const subject = `metastore/hive/${randomUUID()}`;
    const schema = subject.split('/')[2]!;
    await metastore().createSchema('hive', schema, none, event(subject, 'metastore.schema.created'));
    const [recorded, ...more] = await eventsOf(subject);
    expect(more).toEqual([]);
    expect(recorded).toMatchObject({
      type: 'dpm.metastore.schema.created',
      subject,
      sequence: 1,
      actor: 'dana',
      data: { name: schema, table_count: 0, catalog: 'hive' },
    });
    // Refused by Trino (exists already): no event.
    await rejection(metastore().createSchema('hive', schema, none, event(subject, 'metastore.schema.created')));
    expect(await eventsOf(subject)).toHaveLength(1);
    // The subject goes on counting.
    await metastore().dropSchema('hive', schema, event(subject, 'metastore.schema.deleted'));
    expect((await eventsOf(subject)).map((e) => e.sequence)).toEqual([1, 2]);
  });

  it('an ALTER refused before or undone after records no event', async () => {
    const subject = `metastore/hive/sales/${randomUUID()}`;
    await rejection(
      metastore().alterTable(ORDERS, [{ op: 'drop_column', name: 'nope' }], event(subject, 'metastore.table.altered')),
    );
    trino.failStatement(2 + 1);
    await rejection(
      metastore().alterTable(ORDERS, [{ op: 'set_comment', comment: 'x' }], event(subject, 'metastore.table.altered')),
    );
    expect(await eventsOf(subject)).toEqual([]);
    await metastore().alterTable(
      ORDERS,
      [{ op: 'set_comment', comment: 'x' }],
      event(subject, 'metastore.table.altered'),
    );
    expect(await eventsOf(subject)).toHaveLength(1);
  });
});
