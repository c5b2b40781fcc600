import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { BuiltinMetastore } from '../../../shared/adapters/builtin-metastore.js';
import { adminToken, api, db, slug, table, token, type ApiResponse } from '../helpers.js';
import { type Envelope, eventsBefore, eventsOf as feedEvents } from '../event-feed.js';

// docs/sdk.md: the NX1 SDK's metastore on the built-in metastore, over HTTP. Reads for any
// user, DDL for admins, tags and domains for any user (like E5); every change is a domain
// event (docs/events-and-webhooks.md) with the resource as its GET answers it.

let admin: string;
let alice: string;
let reader: string;
/** The caller of the changes that mark the end of what a test checks (event-feed.ts eventsBefore). */
let marker: string;
const MARKER = 'sdk-metastore-marker';
const byMarker = (e: Envelope) => e.actor === MARKER;

beforeAll(async () => {
  admin = await adminToken('sdk-metastore-admin');
  alice = await token('sdk-metastore-alice');
  reader = await adminToken('sdk-metastore-events');
  marker = await adminToken(MARKER);
});

const M = '/api/metastore';
const catalogPath = (c: string) => `${M}/catalogs/${encodeURIComponent(c)}`;
const schemaPath = (c: string, s: string) => `${catalogPath(c)}/schemas/${s}`;
const tablePath = (c: string, s: string, t: string) => `${schemaPath(c, s)}/tables/${t}`;
const ref = (c: string, s: string, t: string) => encodeURIComponent(`${c}.${s}.${t}`);
const eventsOf = (subject: string, count: number) => feedEvents(subject, count, reader);
const locTypes = (res: ApiResponse) =>
  (res.body.detail as { loc: unknown[]; type: string }[]).map((d) => [d.loc, d.type]);

const post = (path: string, body?: unknown, who = admin) => api(path, { method: 'POST', token: who, body });
const del = (path: string, who = admin) => api(path, { method: 'DELETE', token: who });
const patch = (path: string, body: unknown, who = admin) => api(path, { method: 'PATCH', token: who, body });

const COLUMNS = [
  { name: 'order_id', type: 'bigint', comment: 'the order', nullable: false },
  { name: 'email', type: 'varchar' },
  { name: 'amount', type: 'decimal(10,2)' },
];

async function must(res: Promise<ApiResponse>, status: number): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r;
}

/** A fresh catalog with schema `core` and table `orders`. */
async function seeded(c = slug('sdkcat')) {
  await must(post(`${M}/catalogs`, { catalog: c, catalog_type: 'hive', properties: { location: 's3://x' } }), 201);
  await must(post(`${catalogPath(c)}/schemas`, { schema_name: 'core' }), 201);
  await must(post(`${schemaPath(c, 'core')}/tables`, { table_name: 'orders', columns: COLUMNS }), 201);
  return c;
}

const column = (name: string, type: string, description: string | null = null) => ({
  name,
  type,
  description,
  tags: [],
  classifications: [],
  glossary_terms: [],
});

describe('engines, details and reads', () => {
  it('lists the configured engine', async () => {
    const res = await must(api(`${M}/engines`, { token: alice }), 200);
    expect(res.body).toEqual({ engines: [{ name: 'builtin', default: true }] });
  });

  it('creates a catalog, schema and table and reads each back, counts included', async () => {
    const c = slug('sdkcat');
    const created = await must(post(`${M}/catalogs`, { catalog: c, catalog_type: 'iceberg' }), 201);
    expect(created.body).toEqual({ name: c, type: 'iceberg', schema_count: 0 });
    const schema = await must(post(`${catalogPath(c)}/schemas`, { schema_name: 'core', properties: { a: 1 } }), 201);
    expect(schema.body).toEqual({ name: 'core', table_count: 0 });
    await must(post(`${catalogPath(c)}/schemas`, { schema_name: 'archive' }), 201);
    const tableRes = await must(
      post(`${schemaPath(c, 'core')}/tables`, {
        table_name: 'orders',
        columns: COLUMNS,
        properties: { format: 'ORC' },
      }),
      201,
    );
    const expected = {
      catalog: c,
      schema: 'core',
      table: 'orders',
      urn: `urn:li:dataset:(urn:li:dataPlatform:dpm,${c}.core.orders,PROD)`,
      description: null,
      domain: null,
      tags: [],
      classifications: [],
      glossary_terms: [],
      columns: [
        column('order_id', 'bigint', 'the order'),
        column('email', 'varchar'),
        column('amount', 'decimal(10,2)'),
      ],
    };
    expect(tableRes.body).toEqual(expected);
    await must(post(`${schemaPath(c, 'core')}/tables`, { table_name: 'customers', columns: [COLUMNS[0]] }), 201);

    const catalogs = await must(api(`${M}/catalogs/details`, { token: alice }), 200);
    expect(catalogs.body.catalogs.find((x: { name: string }) => x.name === c)).toEqual({
      name: c,
      type: 'iceberg',
      schema_count: 2,
    });
    const names = catalogs.body.catalogs.map((x: { name: string }) => x.name);
    expect(names).toEqual([...names].sort());
    expect((await must(api(`${catalogPath(c)}/schemas/details`, { token: alice }), 200)).body).toEqual({
      schemas: [
        { name: 'archive', table_count: 0 },
        { name: 'core', table_count: 2 },
      ],
    });
    const { columns: _columns, ...summary } = expected;
    const tables = await must(api(`${schemaPath(c, 'core')}/tables/details`, { token: alice }), 200);
    expect(tables.body).toEqual({
      tables: [{ ...summary, table: 'customers', urn: expected.urn.replace('orders', 'customers') }, summary],
    });
    expect((await must(api(`${schemaPath(c, 'archive')}/tables/details`, { token: alice }), 200)).body).toEqual({
      tables: [],
    });
    for (const suffix of ['', '/details', '/metadata'])
      expect((await must(api(`${tablePath(c, 'core', 'orders')}${suffix}`, { token: alice }), 200)).body).toEqual(
        expected,
      );
    expect((await must(api(`${tablePath(c, 'core', 'orders')}/columns`, { token: alice }), 200)).body).toEqual({
      columns: expected.columns,
    });
    const preview = { columns: ['order_id', 'email', 'amount'], rows: [] };
    expect((await must(api(`${tablePath(c, 'core', 'orders')}/preview`, { token: alice }), 200)).body).toEqual(preview);
    for (const limit of [1, 1000])
      expect(
        (await must(api(`${tablePath(c, 'core', 'orders')}/preview?limit=${limit}`, { token: alice }), 200)).body,
      ).toEqual(preview);

    // drops, children first; the counts follow
    await must(del(tablePath(c, 'core', 'customers')), 204);
    expect((await must(api(`${catalogPath(c)}/schemas/details`, { token: alice }), 200)).body.schemas[1]).toEqual({
      name: 'core',
      table_count: 1,
    });
    await must(del(schemaPath(c, 'archive')), 204);
    await must(del(tablePath(c, 'core', 'orders')), 204);
    await must(del(schemaPath(c, 'core')), 204);
    expect((await must(api(`${catalogPath(c)}/schemas/details`, { token: alice }), 200)).body).toEqual({ schemas: [] });
    await must(del(catalogPath(c)), 204);
    const after = await must(api(`${M}/catalogs/details`, { token: alice }), 200);
    expect(after.body.catalogs.map((x: { name: string }) => x.name)).not.toContain(c);
    expect((await api(`${catalogPath(c)}/schemas`, { token: alice })).status).toBe(404);
  });

  it('keeps the counters right through registrations (PUT): a replaced table is not counted again', async () => {
    const c = slug('sdkcat');
    const body = { columns: [{ name: 'id', type: 'bigint' }] };
    await must(api(tablePath(c, 's', 'a'), { method: 'PUT', token: admin, body }), 200);
    await must(api(tablePath(c, 's', 'a'), { method: 'PUT', token: admin, body }), 200);
    await must(api(tablePath(c, 's', 'b'), { method: 'PUT', token: admin, body }), 200);
    await must(api(tablePath(c, 't', 'a'), { method: 'PUT', token: admin, body }), 200);
    await Promise.all(
      ['c', 'd', 'e', 'c', 'd'].map((t) => must(api(tablePath(c, 's', t), { method: 'PUT', token: admin, body }), 200)),
    );
    const catalogs = (await must(api(`${M}/catalogs/details`, { token: alice }), 200)).body.catalogs;
    expect(catalogs.find((x: { name: string }) => x.name === c)).toEqual({ name: c, type: null, schema_count: 2 });
    expect((await must(api(`${catalogPath(c)}/schemas/details`, { token: alice }), 200)).body).toEqual({
      schemas: [
        { name: 's', table_count: 5 },
        { name: 't', table_count: 1 },
      ],
    });
    // a registered table can be dropped like a created one, and the counts follow
    await must(del(tablePath(c, 't', 'a')), 204);
    await must(del(schemaPath(c, 't')), 204);
    expect((await api(`${catalogPath(c)}/schemas/details`, { token: alice })).body.schemas).toEqual([
      { name: 's', table_count: 5 },
    ]);
  });
});

describe('errors', () => {
  it('answers 404 naming what is missing', async () => {
    const c = await seeded();
    const nope = slug('nope');
    const cases: [Promise<ApiResponse>, string][] = [
      [api(`${catalogPath(nope)}/schemas/details`, { token: alice }), `No catalog ${nope}`],
      [api(`${schemaPath(nope, 'core')}/tables/details`, { token: alice }), `No catalog ${nope}`],
      [api(`${schemaPath(c, 'nope')}/tables/details`, { token: alice }), `No schema ${c}.nope`],
      [api(`${tablePath(c, 'core', 'nope')}/details`, { token: alice }), `No table ${c}.core.nope`],
      [api(`${tablePath(c, 'core', 'nope')}/metadata`, { token: alice }), `No table ${c}.core.nope`],
      [api(`${tablePath(c, 'core', 'nope')}/columns`, { token: alice }), `No table ${c}.core.nope`],
      [api(`${tablePath(c, 'core', 'nope')}/preview`, { token: alice }), `No table ${c}.core.nope`],
      [api(`${tablePath(c, 'nope', 'orders')}/preview`, { token: alice }), `No schema ${c}.nope`],
      [post(`${catalogPath(nope)}/schemas`, { schema_name: 's' }), `No catalog ${nope}`],
      [post(`${schemaPath(c, 'nope')}/tables`, { table_name: 't', columns: COLUMNS }), `No schema ${c}.nope`],
      [post(`${schemaPath(nope, 'core')}/tables`, { table_name: 't', columns: COLUMNS }), `No catalog ${nope}`],
      [del(catalogPath(nope)), `No catalog ${nope}`],
      [del(schemaPath(c, 'nope')), `No schema ${c}.nope`],
      [del(tablePath(c, 'core', 'nope')), `No table ${c}.core.nope`],
      [
        patch(tablePath(c, 'core', 'nope'), { operations: [{ op: 'set_comment', comment: 'x' }] }),
        `No table ${c}.core.nope`,
      ],
      [post(`${M}/tags/x/tables/${ref(c, 'core', 'nope')}`, undefined, alice), `No table ${c}.core.nope`],
      [del(`${M}/tags/x/tables/${ref(c, 'nope', 'orders')}`, alice), `No schema ${c}.nope`],
      [post(`${M}/domains/${nope}/tables/${ref(c, 'core', 'orders')}`, undefined, alice), `No domain ${nope}`],
      [del(`${M}/domains/${nope}/tables/${ref(c, 'core', 'orders')}`, alice), `No domain ${nope}`],
      [post(`${M}/domains/x/tables/${ref(nope, 'core', 'orders')}`, undefined, alice), `No catalog ${nope}`],
    ];
    for (const [res, error] of cases) {
      const r = await res;
      expect([r.status, r.body]).toEqual([404, { error, code: 404 }]);
    }
  });

  it('answers 409 for a name taken and for a drop of a catalog or schema that is not empty', async () => {
    const c = await seeded();
    const conflicts: [Promise<ApiResponse>, RegExp][] = [
      [post(`${M}/catalogs`, { catalog: c, catalog_type: 'memory' }), /exists already/],
      [post(`${catalogPath(c)}/schemas`, { schema_name: 'core' }), /exists already/],
      [post(`${schemaPath(c, 'core')}/tables`, { table_name: 'orders', columns: COLUMNS }), /exists already/],
      [del(catalogPath(c)), new RegExp(`Catalog ${c} has 1 schema: drop them first`)],
      [del(schemaPath(c, 'core')), new RegExp(`Schema ${c}.core has 1 table: drop them first`)],
    ];
    for (const [res, error] of conflicts) {
      const r = await res;
      expect(r.status, r.text).toBe(409);
      expect(r.body).toEqual({ error: expect.stringMatching(error), code: 409 });
    }
    // nothing changed
    expect((await must(api(`${catalogPath(c)}/schemas/details`, { token: alice }), 200)).body).toEqual({
      schemas: [{ name: 'core', table_count: 1 }],
    });
  });

  it('answers 422 with exact loc and type', async () => {
    const c = await seeded();
    const preview = (limit: string) =>
      api(`${tablePath(c, 'core', 'orders')}/preview?limit=${limit}`, { token: alice });
    expect(locTypes(await preview('0'))).toEqual([[['query', 'limit'], 'greater_than_equal']]);
    expect(locTypes(await preview('1001'))).toEqual([[['query', 'limit'], 'less_than_equal']]);
    expect(locTypes(await preview('x'))).toEqual([[['query', 'limit'], 'int_parsing']]);

    expect(locTypes(await post(`${M}/catalogs`, { catalog: 'a/b', catalog_type: 'hive;' }))).toEqual([
      [['body', 'catalog'], 'string_pattern_mismatch'],
      [['body', 'catalog_type'], 'string_pattern_mismatch'],
    ]);
    expect(
      locTypes(await post(`${M}/catalogs`, { catalog: 'x', catalog_type: 'hive', properties: { 'a-b': 1 } })),
    ).toEqual([[['body', 'properties', 'a-b', '[key]'], 'string_pattern_mismatch']]);
    const proto = await api(`${M}/catalogs`, {
      method: 'POST',
      token: admin,
      rawBody: '{"catalog": "x", "catalog_type": "hive", "properties": {"__proto__": 1}}',
    });
    expect(locTypes(proto)).toEqual([[['body', 'properties', '__proto__'], 'value_error']]);
    expect(locTypes(await post(`${M}/catalogs`, { catalog_type: 'hive', extra: 1 }))).toEqual([
      [['body', 'catalog'], 'missing'],
      [['body', 'extra'], 'extra_forbidden'],
    ]);
    expect(locTypes(await del(`${M}/catalogs/-x`))).toEqual([[['path', 'catalog_name'], 'string_pattern_mismatch']]);
    expect(locTypes(await post(`${catalogPath(c)}/schemas`, { schema_name: 'a b' }))).toEqual([
      [['body', 'schema_name'], 'string_pattern_mismatch'],
    ]);
    const badTable = await post(`${schemaPath(c, 'core')}/tables`, {
      table_name: 'a#b',
      columns: [
        { name: '', type: 'int' },
        { name: 'x', type: 'int); DROP TABLE t; --' },
        { name: 'y' },
        { name: 'z', type: 'int', nullable: 'maybe' },
      ],
    });
    expect(locTypes(badTable)).toEqual([
      [['body', 'table_name'], 'string_pattern_mismatch'],
      [['body', 'columns', 0, 'name'], 'string_too_short'],
      [['body', 'columns', 1, 'type'], 'string_pattern_mismatch'],
      [['body', 'columns', 2, 'type'], 'missing'],
      [['body', 'columns', 3, 'nullable'], 'bool_parsing'],
    ]);
    expect(locTypes(await post(`${schemaPath(c, 'core')}/tables`, { table_name: 't', columns: [] }))).toEqual([
      [['body', 'columns'], 'too_short'],
    ]);
    const twice = await post(`${schemaPath(c, 'core')}/tables`, {
      table_name: 't',
      columns: [COLUMNS[0], COLUMNS[0]],
    });
    expect(locTypes(twice)).toEqual([[['body', 'columns', 1, 'name'], 'value_error']]);

    const path = tablePath(c, 'core', 'orders');
    const unknownOp = await patch(path, { operations: [{ op: 'set_comment', comment: 'x' }, { op: 'truncate' }] });
    expect(unknownOp.status).toBe(422);
    expect(unknownOp.body.detail).toEqual([
      expect.objectContaining({
        type: 'union_tag_invalid',
        loc: ['body', 'operations', 1],
        ctx: expect.objectContaining({ discriminator: "'op'", tag: 'truncate' }),
      }),
    ]);
    expect(locTypes(await patch(path, { operations: [{ name: 'x' }] }))).toEqual([
      [['body', 'operations', 0], 'union_tag_not_found'],
    ]);
    expect(locTypes(await patch(path, { operations: [] }))).toEqual([[['body', 'operations'], 'too_short']]);
    expect(locTypes(await patch(path, { operations: [{ op: 'drop_column' }] }))).toEqual([
      [['body', 'operations', 0, 'name'], 'missing'],
    ]);
    expect(locTypes(await patch(path, {}))).toEqual([[['body', 'operations'], 'missing']]);
  });

  it('answers 401 without credentials and 403 to a non-admin writer; changes nothing', async () => {
    const c = await seeded();
    expect((await api(`${M}/engines`)).status).toBe(401);
    expect((await api(`${M}/catalogs/details`)).status).toBe(401);
    expect((await api(`${M}/catalogs`, { method: 'POST', body: { catalog: 'x', catalog_type: 'hive' } })).status).toBe(
      401,
    );
    expect((await api(`${M}/tags/x/tables/${ref(c, 'core', 'orders')}`, { method: 'POST' })).status).toBe(401);
    const refused = [
      post(`${M}/catalogs`, { catalog: slug('x'), catalog_type: 'hive' }, alice),
      del(catalogPath(c), alice),
      post(`${catalogPath(c)}/schemas`, { schema_name: 'other' }, alice),
      del(schemaPath(c, 'core'), alice),
      post(`${schemaPath(c, 'core')}/tables`, { table_name: 'other', columns: COLUMNS }, alice),
      del(tablePath(c, 'core', 'orders'), alice),
      patch(tablePath(c, 'core', 'orders'), { operations: [{ op: 'drop_column', name: 'email' }] }, alice),
    ];
    for (const res of await Promise.all(refused)) expect([res.status, res.body.code]).toEqual([403, 403]);
    expect((await must(api(`${catalogPath(c)}/schemas/details`, { token: alice }), 200)).body).toEqual({
      schemas: [{ name: 'core', table_count: 1 }],
    });
    expect(
      (await must(api(`${tablePath(c, 'core', 'orders')}/columns`, { token: alice }), 200)).body.columns,
    ).toHaveLength(3);
  });
});

describe('ALTER TABLE (PATCH)', () => {
  it('applies every operation in order, and a description written over an E5 one wins', async () => {
    const c = await seeded();
    const path = tablePath(c, 'core', 'orders');
    // E5 gave `email` a description in the catalog: it shows over the metastore's
    await must(
      post(
        `${M}/classify/${c}/core/orders/accept`,
        { table: {}, columns: [{ column_name: 'email', description: 'E5' }] },
        alice,
      ),
      200,
    );
    const altered = await must(
      patch(path, {
        operations: [
          { op: 'add_column', name: 'note', type: 'varchar', comment: 'free text' },
          { op: 'rename_column', name: 'amount', new_name: 'total' },
          { op: 'set_column_comment', name: 'email', comment: 'where to write' },
          { op: 'drop_column', name: 'order_id' },
          { op: 'set_comment', comment: 'Orders' },
          { op: 'set_properties', properties: { format: 'PARQUET', bucketed: true } },
        ],
      }),
      200,
    );
    expect(altered.body).toMatchObject({ description: 'Orders' });
    expect(
      altered.body.columns.map((x: { name: string; type: string; description: string | null }) => [
        x.name,
        x.type,
        x.description,
      ]),
    ).toEqual([
      ['email', 'varchar', 'where to write'],
      ['total', 'decimal(10,2)', null],
      ['note', 'varchar', 'free text'],
    ]);
    expect((await must(api(path, { token: alice }), 200)).body).toEqual(altered.body);
  });

  it('changes nothing when one operation is refused (all or none), and records no event', async () => {
    const c = await seeded();
    const path = tablePath(c, 'core', 'orders');
    const before = await must(api(path, { token: alice }), 200);
    const refused = await patch(path, {
      operations: [
        { op: 'add_column', name: 'note', type: 'varchar' },
        { op: 'set_comment', comment: 'changed' },
        { op: 'drop_column', name: 'nope' },
      ],
    });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'operations', 2, 'name'],
        msg: `Value error, operation 2 (drop_column): table ${c}.core.orders has no column 'nope'`,
        input: 'nope',
        ctx: { error: `operation 2 (drop_column): table ${c}.core.orders has no column 'nope'` },
      },
    ]);
    const last = await patch(path, {
      operations: [
        { op: 'drop_column', name: 'order_id' },
        { op: 'drop_column', name: 'email' },
        { op: 'drop_column', name: 'amount' },
      ],
    });
    expect(locTypes(last)).toEqual([[['body', 'operations', 2, 'name'], 'value_error']]);
    expect(last.body.detail[0].msg).toMatch(/last column/);
    const taken = await patch(path, { operations: [{ op: 'rename_column', name: 'email', new_name: 'amount' }] });
    expect(locTypes(taken)).toEqual([[['body', 'operations', 0, 'new_name'], 'value_error']]);
    const duplicate = await patch(path, { operations: [{ op: 'add_column', name: 'email', type: 'int' }] });
    expect(locTypes(duplicate)).toEqual([[['body', 'operations', 0, 'name'], 'value_error']]);

    expect((await must(api(path, { token: alice }), 200)).body).toEqual(before.body);
    // The marker: one more alteration of the table; the refused ones' events would come before it.
    await must(patch(path, { operations: [{ op: 'set_comment', comment: 'marker' }] }, marker), 200);
    const { before: events, marker: marked } = await eventsBefore(`metastore/${c}/core/orders`, byMarker, reader);
    expect(events.map((e) => e.type)).toEqual(['dpm.metastore.table.registered']);
    expect(marked.type).toBe('dpm.metastore.table.altered');
  });

  it('loses no update when alterations race', async () => {
    const c = await seeded();
    const path = tablePath(c, 'core', 'orders');
    const names = Array.from({ length: 6 }, (_, i) => `extra_${i}`);
    const results = await Promise.all(
      names.map((name) => patch(path, { operations: [{ op: 'add_column', name, type: 'int' }] })),
    );
    expect(results.map((r) => r.status)).toEqual(names.map(() => 200));
    const columns = (await must(api(`${path}/columns`, { token: alice }), 200)).body.columns.map(
      (x: { name: string }) => x.name,
    );
    expect([...columns].sort()).toEqual(['amount', 'email', ...names, 'order_id'].sort());
    const events = await eventsOf(`metastore/${c}/core/orders`, 7);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(events.at(-1)!.data).toEqual((await api(path, { token: alice })).body);
  });
});

describe('tags and domains by `catalog.schema.table`', () => {
  it('tags, untags, sets and removes a domain; a dotted catalog name is double-quoted', async () => {
    const c = `sales.eu-${slug('q')}`;
    await seeded(c);
    const quoted = encodeURIComponent(`"${c}".core.orders`);
    const tag = slug('sdk-tag');
    expect(await must(api(`${M}/tags`, { token: alice }), 200).then((r) => r.body)).not.toContain(tag);

    // unquoted, the dots split the catalog's name: not three parts
    const unquoted = await post(`${M}/tags/${tag}/tables/${encodeURIComponent(`${c}.core.orders`)}`, undefined, alice);
    expect(locTypes(unquoted)).toEqual([[['path', 'table'], 'value_error']]);
    expect(unquoted.body.detail[0].input).toBe(`${c}.core.orders`);
    const malformed = await post(`${M}/tags/${tag}/tables/${encodeURIComponent('"a.b.c')}`, undefined, alice);
    expect(locTypes(malformed)).toEqual([[['path', 'table'], 'value_error']]);

    // nothing to take off a table never annotated: 200, unchanged, no event
    const plain = await must(api(tablePath(c, 'core', 'orders'), { token: alice }), 200);
    expect((await must(del(`${M}/tags/${tag}/tables/${quoted}`, alice), 200)).body).toEqual(plain.body);

    const tagged = await must(post(`${M}/tags/${tag}/tables/${quoted}`, undefined, alice), 200);
    expect(tagged.body).toMatchObject({
      catalog: c,
      schema: 'core',
      table: 'orders',
      tags: [tag],
      classifications: [tag],
    });
    const tags = (await must(api(`${M}/tags`, { token: alice }), 200)).body as string[];
    expect(tags).toContain(tag);
    expect(tags).toEqual([...tags].sort());
    // tagging again changes nothing
    expect((await must(post(`${M}/tags/${tag}/tables/${quoted}`, undefined, alice), 200)).body).toEqual(tagged.body);

    const domain = slug('sdk-domain');
    await must(post('/api/catalog/domains', { name: domain, description: 'Sales' }), 201);
    const domains = (await must(api(`${M}/domains`, { token: alice }), 200)).body.domains;
    expect(domains).toContainEqual({ name: domain, urn: `urn:li:domain:${domain}`, description: 'Sales' });
    const inDomain = await must(post(`${M}/domains/${domain}/tables/${quoted}`, undefined, alice), 200);
    expect(inDomain.body).toMatchObject({ domain, tags: [tag] });

    // another domain than the table's: no change
    const other = slug('sdk-domain');
    await must(post('/api/catalog/domains', { name: other }), 201);
    expect((await must(del(`${M}/domains/${other}/tables/${quoted}`, alice), 200)).body.domain).toBe(domain);

    const out = await must(del(`${M}/domains/${domain}/tables/${quoted}`, alice), 200);
    expect(out.body.domain).toBeNull();
    const untagged = await must(del(`${M}/tags/${tag}/tables/${quoted}`, alice), 200);
    expect(untagged.body).toMatchObject({ tags: [], classifications: [], domain: null });
    expect((await must(api(tablePath(c, 'core', 'orders'), { token: alice }), 200)).body).toEqual(untagged.body);
    // untagging again changes nothing
    expect((await must(del(`${M}/tags/${tag}/tables/${quoted}`, alice), 200)).body).toEqual(untagged.body);

    // one sequence for the table; no event for the changes that changed nothing
    const subject = `metastore/${c}/core/orders`;
    // The marker: one more change of the table (a tag of the marker's own)
    await must(post(`${M}/tags/${slug('sdk-marker')}/tables/${quoted}`, undefined, marker), 200);
    const { before: events, marker: marked } = await eventsBefore(subject, byMarker, reader);
    expect(marked.type).toBe('dpm.catalog.table.tagged');
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.metastore.table.registered', 1, 'sdk-metastore-admin'],
      ['dpm.catalog.table.tagged', 2, 'sdk-metastore-alice'],
      ['dpm.catalog.table.domain_set', 3, 'sdk-metastore-alice'],
      ['dpm.catalog.table.domain_removed', 4, 'sdk-metastore-alice'],
      ['dpm.catalog.table.untagged', 5, 'sdk-metastore-alice'],
    ]);
    expect(events[1]!.data).toEqual({ ...tagged.body, tag });
    expect(events[2]!.data).toEqual(inDomain.body);
    expect(events[3]!.data).toEqual({ ...out.body, removed_domain: domain });
    expect(events[4]!.data).toEqual({ ...untagged.body, tag });
    for (const e of events) expectEnvelope(e, subject);
  });
});

function expectEnvelope(e: Envelope, subject: string) {
  expect(e).toMatchObject({ specversion: '1.0', subject, datacontenttype: 'application/json' });
  expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
  expect(JSON.stringify(e.data)).not.toMatch(/"pk"|"sk"|revision|ENTITY#/);
}

describe('events of DDL', () => {
  it('records each change with the GET answer as data, in per-subject order', async () => {
    const c = slug('sdkcat');
    const created = await must(post(`${M}/catalogs`, { catalog: c, catalog_type: 'hive' }), 201);
    const schema = await must(post(`${catalogPath(c)}/schemas`, { schema_name: 'core' }), 201);
    const tableRes = await must(
      post(`${schemaPath(c, 'core')}/tables`, { table_name: 'orders', columns: COLUMNS }),
      201,
    );
    const altered = await must(
      patch(tablePath(c, 'core', 'orders'), { operations: [{ op: 'set_comment', comment: 'Orders' }] }),
      200,
    );
    await must(del(tablePath(c, 'core', 'orders')), 204);
    await must(del(schemaPath(c, 'core')), 204);
    await must(del(catalogPath(c)), 204);
    // the name comes back: its subjects go on counting
    await must(post(`${M}/catalogs`, { catalog: c, catalog_type: 'memory' }), 201);

    const catalogEvents = await eventsOf(`metastore/${c}`, 3);
    expect(catalogEvents.map((e) => [e.type, e.sequence, e.actor, e.data])).toEqual([
      ['dpm.metastore.catalog.created', 1, 'sdk-metastore-admin', created.body],
      ['dpm.metastore.catalog.deleted', 2, 'sdk-metastore-admin', { name: c, type: 'hive', schema_count: 0 }],
      ['dpm.metastore.catalog.created', 3, 'sdk-metastore-admin', { name: c, type: 'memory', schema_count: 0 }],
    ]);
    const schemaEvents = await eventsOf(`metastore/${c}/core`, 2);
    expect(schemaEvents.map((e) => [e.type, e.sequence, e.data])).toEqual([
      ['dpm.metastore.schema.created', 1, { ...schema.body, catalog: c }],
      ['dpm.metastore.schema.deleted', 2, { name: 'core', table_count: 0, catalog: c }],
    ]);
    const tableEvents = await eventsOf(`metastore/${c}/core/orders`, 3);
    expect(tableEvents.map((e) => [e.type, e.sequence, e.data])).toEqual([
      ['dpm.metastore.table.registered', 1, tableRes.body],
      ['dpm.metastore.table.altered', 2, altered.body],
      ['dpm.metastore.table.deleted', 3, altered.body],
    ]);
    for (const e of catalogEvents) expectEnvelope(e, `metastore/${c}`);
    for (const e of schemaEvents) expectEnvelope(e, `metastore/${c}/core`);
    for (const e of tableEvents) expectEnvelope(e, `metastore/${c}/core/orders`);

    // refused changes have none
    expect((await post(`${M}/catalogs`, { catalog: c, catalog_type: 'hive' })).status).toBe(409);
    expect((await del(schemaPath(c, 'nope'))).status).toBe(404);
    // The markers: schema `nope` made (its subject's first event, unless the refused deletion
    // made one), then gone again, and the catalog deleted (its fourth, unless the refused creation made one).
    await must(post(`${catalogPath(c)}/schemas`, { schema_name: 'nope' }, marker), 201);
    const nope = await eventsBefore(`metastore/${c}/nope`, byMarker, reader);
    expect(nope.before).toEqual([]);
    expect(nope.marker.type).toBe('dpm.metastore.schema.created');
    await must(del(schemaPath(c, 'nope'), marker), 204);
    await must(del(catalogPath(c), marker), 204);
    const catalog = await eventsBefore(`metastore/${c}`, byMarker, reader);
    expect(catalog.before).toEqual(catalogEvents);
    expect(catalog.marker.type).toBe('dpm.metastore.catalog.deleted');
  });
});

describe('races', () => {
  it('of two creations of one schema, one is 201 and the other 409', async () => {
    for (let round = 0; round < 3; round++) {
      const c = slug('sdkcat');
      await must(post(`${M}/catalogs`, { catalog: c, catalog_type: 'hive' }), 201);
      const statuses = (
        await Promise.all([1, 2, 3].map(() => post(`${catalogPath(c)}/schemas`, { schema_name: 'core' })))
      ).map((r) => r.status);
      expect(statuses.sort()).toEqual([201, 409, 409]);
      expect((await must(api(`${M}/catalogs/details`, { token: alice }), 200)).body.catalogs).toContainEqual({
        name: c,
        type: 'hive',
        schema_count: 1,
      });
    }
  });

  it('never leaves a table in a dropped schema when its creation races the drop', async () => {
    for (let round = 0; round < 4; round++) {
      const c = slug('sdkcat');
      await must(post(`${M}/catalogs`, { catalog: c, catalog_type: 'hive' }), 201);
      await must(post(`${catalogPath(c)}/schemas`, { schema_name: 'core' }), 201);
      const [created, dropped] = await Promise.all([
        post(`${schemaPath(c, 'core')}/tables`, { table_name: 't', columns: COLUMNS }),
        del(schemaPath(c, 'core')),
      ]);
      const outcome = [created.status, dropped.status];
      expect([
        [201, 409],
        [404, 204],
      ]).toContainEqual(outcome);
      const tables = await api(`${schemaPath(c, 'core')}/tables/details`, { token: alice });
      if (dropped.status === 204) {
        expect(tables.status).toBe(404);
        expect(
          (
            await db().send(
              new QueryCommand({
                TableName: table('metastore'),
                KeyConditionExpression: 'pk = :pk',
                ExpressionAttributeValues: { ':pk': `TABLE#${c}#core` },
              }),
            )
          ).Items,
        ).toEqual([]);
      } else {
        expect(tables.body.tables.map((t: { table: string }) => t.table)).toEqual(['t']);
        expect((await api(`${catalogPath(c)}/schemas/details`, { token: alice })).body.schemas).toEqual([
          { name: 'core', table_count: 1 },
        ]);
      }
    }
  });
});

describe('the built-in adapter', () => {
  const metastore = () => new BuiltinMetastore(db(), table('metastore'));

  it('answers details with one Query each', async () => {
    const c = await seeded();
    const adapter = metastore();
    const client = (adapter as unknown as { db: { send: (...args: unknown[]) => unknown } }).db;
    const send = vi.spyOn(client, 'send');
    try {
      expect(await adapter.schemaDetails(c)).toEqual([{ name: 'core', table_count: 1 }]);
      expect((await adapter.tableDetails(c, 'core'))!.map((t) => t.table)).toEqual(['orders']);
      expect(send.mock.calls.map(([command]) => (command as object).constructor.name)).toEqual([
        'QueryCommand',
        'QueryCommand',
      ]);
    } finally {
      send.mockRestore();
    }
  });

  it('counts the children of items written before counters existed, once', async () => {
    const c = slug('legacy');
    const client = db();
    // what registerTable wrote before: catalog and schema items with their names only
    await client.send(new PutCommand({ TableName: table('metastore'), Item: { pk: 'CATALOG', sk: c, name: c } }));
    await client.send(
      new PutCommand({ TableName: table('metastore'), Item: { pk: `SCHEMA#${c}`, sk: 's', name: 's' } }),
    );
    for (const t of ['a', 'b'])
      await client.send(
        new PutCommand({
          TableName: table('metastore'),
          Item: {
            pk: `TABLE#${c}#s`,
            sk: t,
            catalog: c,
            schema: 's',
            table: t,
            columns: [{ name: 'id', type: 'int' }],
          },
        }),
      );
    const adapter = metastore();
    expect(await adapter.schemaDetails(c)).toEqual([{ name: 's', table_count: 2 }]);
    expect((await adapter.catalogDetails()).find((x) => x.name === c)).toEqual({
      name: c,
      type: null,
      schema_count: 1,
    });
    await expect(adapter.dropSchema(c, 's')).rejects.toThrow(/has 2 tables/);
    await adapter.dropTable({ catalog: c, schema: 's', table: 'a' });
    await adapter.registerTable({ catalog: c, schema: 's', table: 'c', description: null, columns: [] });
    expect(await adapter.schemaDetails(c)).toEqual([{ name: 's', table_count: 2 }]);
    await adapter.dropTable({ catalog: c, schema: 's', table: 'b' });
    await adapter.dropTable({ catalog: c, schema: 's', table: 'c' });
    await adapter.dropSchema(c, 's');
    await adapter.dropCatalog(c);
    expect(await adapter.listSchemas(c)).toBeUndefined();
  });
});
