import { beforeAll, describe, expect, it } from 'vitest';
import { type Envelope, eventsOf as feedEvents, expectNothingMore } from '../event-feed.js';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import { adminToken, api, slug, token } from '../helpers.js';

// docs/identity-and-keys.md, data products: list (role filter), create from a query, an E12
// suggestion or neither (`query` is optional: a role-scoped owner of keys) (admin), delete
// (admin; its keys stop working); a key needs an existing product, and `default` always
// exists. Events per docs/events-and-webhooks.md: `dataproduct.created` / `.deleted` about `dataproducts/{id}`.

let adminName: string;
let admin: string;
let carol: string;

interface Product {
  id: string;
  name: string;
  role_name: string;
  domain_urn: string | null;
  query: string | null;
  is_view: boolean;
  created_by: string;
  created_at: string;
}

interface Suggestion {
  suggestion_id: string;
  sql: string;
  tables: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A domain with two tables, and a table outside it. */
const domain = slug('dp-domain');
const catalog = slug('dpcat');
const schema = 'core';
const tablePath = (t: string) => `/api/metastore/catalogs/${catalog}/schemas/${schema}/tables/${t}`;

beforeAll(async () => {
  adminName = slug('dp-admin');
  admin = await adminToken(adminName);
  carol = await token(slug('dp-carol'));
  const created = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } });
  expect(created.status, created.text).toBe(201);
  const columns = [
    { name: 'order_id', type: 'bigint' },
    { name: 'amount', type: 'decimal(10,2)' },
  ];
  for (const [table, inDomain] of [
    ['orders', true],
    ['refunds', true],
    ['outside', false],
  ] as const) {
    const res = await api(tablePath(table), {
      method: 'PUT',
      token: admin,
      body: { columns, ...(inDomain ? { domain } : {}) },
    });
    expect(res.status, res.text).toBe(200);
  }
});

const create = (body: unknown, t = admin) => api('/api/dataproduct', { method: 'POST', token: t, body });

async function created(body: Record<string, unknown>): Promise<Product> {
  const res = await create({ role_name: 'analyst', query: 'SELECT 1 FROM sales.core.orders', ...body });
  expect(res.status, res.text).toBe(201);
  return res.body as Product;
}

/** Every product the list answers (every page), as `t` sees it. */
async function listAll(query = '', t = carol): Promise<Product[]> {
  const all: Product[] = [];
  let cursor: string | undefined;
  do {
    const q = `limit=1000${query ? `&${query}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await api<Product[]>(`/api/dataproduct?${q}`, { token: t });
    expect(res.status, res.text).toBe(200);
    all.push(...res.body);
    cursor = res.headers.get('x-next-cursor') ?? undefined;
  } while (cursor);
  return all;
}

/** DynamoDB's order of names: their UTF-8 bytes. */
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

const locTypes = (res: { body: any }) =>
  (res.body.detail as { loc: unknown[]; type: string }[]).map((d) => [d.loc, d.type]);

describe('POST /api/dataproduct', () => {
  it('creates a product from a read-only query: 201 with exactly the contract fields', async () => {
    const name = slug('Sales EU');
    const res = await create({ name, role_name: 'analyst', query: '  SELECT order_id FROM sales.core.orders ;' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      name,
      role_name: 'analyst',
      domain_urn: null,
      // trimmed, without its final `;`
      query: 'SELECT order_id FROM sales.core.orders',
      is_view: false,
      created_by: adminName,
      created_at: expect.stringMatching(ISO),
    });
    const view = await created({ name: slug('view'), is_view: true });
    expect(view.is_view).toBe(true);
    expect((await listAll()).filter((p) => p.id === res.body.id)).toEqual([res.body]);
  });

  it("creates one from an E12 suggestion of its domain, taking the suggestion's SQL", async () => {
    const suggestions = await api<Suggestion[]>(`/api/query/suggest/${domain}`, { token: carol });
    expect(suggestions.status, suggestions.text).toBe(200);
    const picked = suggestions.body.find((s) => s.tables.some((t) => t.endsWith('.refunds')))!;
    expect(picked).toBeDefined();
    const name = slug('from-suggestion');
    const res = await create({
      name,
      role_name: 'finance',
      domain_urn: `urn:li:domain:${domain}`,
      suggestion_id: picked.suggestion_id,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name, role_name: 'finance', domain_urn: `urn:li:domain:${domain}` });
    expect(res.body.query).toBe(picked.sql);
  });

  it("creates one without SQL, as the NX1 SDK's data_products.create(name, role_name) asks: query null, everywhere", async () => {
    const name = slug('keys-owner');
    const role = slug('keys-role');
    // exactly the body the SDK sends for its plain call (test/sdk/nx1-sdk: DataProductsClient.create)
    const res = await create({ name, role_name: role, is_view: false });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      name,
      role_name: role,
      domain_urn: null,
      query: null,
      is_view: false,
      created_by: adminName,
      created_at: expect.stringMatching(ISO),
    });
    // read back: the list answers it as the creation did, with or without the role filter
    expect(await listAll(`roles=${encodeURIComponent(role)}`)).toEqual([res.body]);
    expect((await listAll()).filter((p) => p.id === res.body.id)).toEqual([res.body]);
    // nulls are "not given" too, and a domain alone is enough (it must exist)
    const inDomain = await create({
      name: slug('keys-owner-domain'),
      role_name: role,
      domain_urn: `urn:li:domain:${domain}`,
      query: null,
      suggestion_id: null,
      query_id: null,
    });
    expect(inDomain.status, inDomain.text).toBe(201);
    expect(inDomain.body).toMatchObject({ domain_urn: `urn:li:domain:${domain}`, query: null, is_view: false });
    const unknownDomain = await create({
      name: slug('keys-owner-nodomain'),
      role_name: role,
      domain_urn: `urn:li:domain:${slug('no-domain')}`,
    });
    expect(unknownDomain.status).toBe(404);
  });

  it('answers 404 for an unknown suggestion or domain', async () => {
    const unknownSuggestion = await create({
      name: slug('x'),
      role_name: 'r',
      domain_urn: `urn:li:domain:${domain}`,
      suggestion_id: '00000000-0000-0000-0000-000000000000',
    });
    expect(unknownSuggestion.status).toBe(404);
    expect(unknownSuggestion.body).toEqual({
      error: `No suggestion 00000000-0000-0000-0000-000000000000 in domain ${domain}`,
      code: 404,
    });
    const unknownDomain = await create({
      name: slug('x'),
      role_name: 'r',
      domain_urn: `urn:li:domain:${slug('no-domain')}`,
      query: 'SELECT 1 FROM a.b.c',
    });
    expect(unknownDomain.status).toBe(404);
    expect(unknownDomain.body.error).toMatch(/^No domain urn:li:domain:no-domain-/);
  });

  it("reads only its domain's tables when it has a domain, and only reads", async () => {
    const urn = `urn:li:domain:${domain}`;
    const inside = await create({
      name: slug('inside'),
      role_name: 'r',
      domain_urn: urn,
      query: `SELECT o.amount FROM "${catalog}".core.orders o JOIN "${catalog}"."core"."refunds" r ON o.order_id = r.order_id`,
    });
    expect(inside.status, inside.text).toBe(201);
    const outside = await create({
      name: slug('outside'),
      role_name: 'r',
      domain_urn: urn,
      query: `SELECT * FROM "${catalog}".core.outside`,
    });
    expect(outside.status).toBe(422);
    expect(outside.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'query'],
        msg: "Value error, not a read-only query: it reads a table that is not one of the domain's",
        input: `SELECT * FROM "${catalog}".core.outside`,
        ctx: { error: "not a read-only query: it reads a table that is not one of the domain's" },
      },
    ]);
    for (const query of ['DELETE FROM a.b.c', 'DROP TABLE a.b.c', 'SELECT 1', 'SELECT * FROM orders']) {
      const res = await create({ name: slug('writes'), role_name: 'r', query });
      expect(res.status, query).toBe(422);
      expect(locTypes(res), query).toEqual([[['body', 'query'], 'value_error']]);
    }
  });

  it('answers 422 with every shape problem at its loc, then the rules across fields', async () => {
    const missing = await create({ query: 'SELECT 1 FROM a.b.c' });
    expect(missing.status).toBe(422);
    expect(locTypes(missing)).toEqual([
      [['body', 'name'], 'missing'],
      [['body', 'role_name'], 'missing'],
    ]);

    const badTypes = await create({ name: 1, role_name: ['r'], query: 5, is_view: 'maybe', colour: 'red' });
    expect(locTypes(badTypes)).toEqual([
      [['body', 'name'], 'string_type'],
      [['body', 'role_name'], 'string_type'],
      [['body', 'query'], 'string_type'],
      [['body', 'is_view'], 'bool_parsing'],
      [['body', 'colour'], 'extra_forbidden'],
    ]);

    const badValues = await create({
      name: ' padded',
      role_name: 'a,b',
      domain_urn: 'sales',
      query: 'x'.repeat(10_001),
    });
    expect(locTypes(badValues)).toEqual([
      [['body', 'name'], 'string_pattern_mismatch'],
      [['body', 'role_name'], 'string_pattern_mismatch'],
      [['body', 'domain_urn'], 'string_pattern_mismatch'],
      [['body', 'query'], 'string_too_long'],
    ]);

    const both = await create({
      name: slug('n'),
      role_name: 'r',
      domain_urn: `urn:li:domain:${domain}`,
      query: 'SELECT 1 FROM a.b.c',
      suggestion_id: 'x',
    });
    expect(locTypes(both)).toEqual([[['body'], 'value_error']]);
    const noDomain = await create({ name: slug('n'), role_name: 'r', suggestion_id: 'x' });
    expect(locTypes(noDomain)).toEqual([[['body', 'domain_urn'], 'value_error']]);
    // No saved queries here: refused with what to send instead.
    const savedQuery = await create({ name: slug('n'), role_name: 'r', query_id: 'q-1' });
    expect(savedQuery.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'query_id'],
        msg: 'Value error, this service keeps no saved queries: give the SQL in `query`, or an E12 `suggestion_id`',
        input: 'q-1',
        ctx: { error: 'this service keeps no saved queries: give the SQL in `query`, or an E12 `suggestion_id`' },
      },
    ]);
    // null is "not given", as the SDK's Optional fields
    const nulls = await create({
      name: slug('nulls'),
      role_name: 'r',
      domain_urn: null,
      query: 'SELECT 1 FROM a.b.c',
      suggestion_id: null,
      query_id: null,
    });
    expect(nulls.status, nulls.text).toBe(201);
  });

  it('answers 409 for a name taken, also between concurrent creations, and frees it with the deletion', async () => {
    const name = slug('unique');
    const first = await created({ name });
    const again = await create({ name, role_name: 'other', query: 'SELECT 2 FROM a.b.c' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: `A data product named ${name} exists`, code: 409 });

    const raced = slug('raced');
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        create({ name: raced, role_name: `r${i}`, query: 'SELECT 1 FROM a.b.c' }).then((r) => r.status),
      ),
    );
    expect(answers.sort()).toEqual([201, 409, 409, 409, 409, 409]);
    expect((await listAll()).filter((p) => p.name === raced)).toHaveLength(1);

    expect((await api(`/api/dataproduct/${first.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    const reused = await created({ name });
    expect(reused.id).not.toBe(first.id);
  });

  it('answers 401 without credentials and 403 to a user without role admin', async () => {
    const body = { name: slug('n'), role_name: 'r', query: 'SELECT 1 FROM a.b.c' };
    expect((await api('/api/dataproduct', { method: 'POST', body })).status).toBe(401);
    const forbidden = await create(body, carol);
    expect(forbidden.status).toBe(403);
    // authorization comes before validation
    expect((await create({}, carol)).status).toBe(403);
  });
});

describe('GET /api/dataproduct', () => {
  it('lists every live product by name to any user; `roles` keeps those of the roles named', async () => {
    const run = slug('roles');
    const [r1, r2, r3] = [`${run}-r1`, `${run}-r2`, `${run} r3`];
    const made = [
      await created({ name: `${run}-d`, role_name: r1 }),
      await created({ name: `${run}-a`, role_name: r2 }),
      await created({ name: `${run}-c`, role_name: r1 }),
      await created({ name: `${run}-b`, role_name: r3 }),
    ];
    const names = (list: Product[]) => list.map((p) => p.name);

    const all = await listAll();
    expect(names(all)).toEqual([...names(all)].sort(byBytes));
    expect(names(all.filter((p) => p.name.startsWith(run)))).toEqual([`${run}-a`, `${run}-b`, `${run}-c`, `${run}-d`]);
    expect(all.find((p) => p.id === made[0]!.id)).toEqual(made[0]);

    expect(names(await listAll(`roles=${encodeURIComponent(r1)}`))).toEqual([`${run}-c`, `${run}-d`]);
    // comma-separated; blanks around a role, empty entries and repeats are ignored; a role may hold a blank
    expect(names(await listAll(`roles=${encodeURIComponent(` ${r1} ,, ${r3},${r1}`)}`))).toEqual([
      `${run}-b`,
      `${run}-c`,
      `${run}-d`,
    ]);
    expect(await listAll(`roles=${encodeURIComponent(`${run}-nobody`)}`)).toEqual([]);
    // empty: no filter
    expect((await listAll('roles=')).length).toBe(all.length);
  });

  it('pages by name with X-Next-Cursor, across roles as in one, and leaves deleted products out', async () => {
    const run = slug('pages');
    const roles = [`${run}-x`, `${run}-y`];
    const made: Product[] = [];
    for (let i = 0; i < 5; i++) made.push(await created({ name: `${run}-${i}`, role_name: roles[i % 2] }));
    const gone = made.splice(2, 1)[0]!;
    expect((await api(`/api/dataproduct/${gone.id}`, { method: 'DELETE', token: admin })).status).toBe(204);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await api<Product[]>(
        `/api/dataproduct?roles=${roles.join(',')}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: carol },
      );
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.map((p) => p.name));
      cursor = res.headers.get('x-next-cursor') ?? undefined;
      pages += 1;
    } while (cursor && pages < 10);
    expect(seen).toEqual(made.map((p) => p.name));
    // four products, two a page: no cursor after the second page
    expect(pages).toBe(2);
    expect((await listAll()).some((p) => p.id === gone.id)).toBe(false);

    const bad = await api('/api/dataproduct?cursor=not-a-cursor', { token: carol });
    expect(locTypes(bad)).toEqual([[['query', 'cursor'], 'value_error']]);
    const tooMany = await api(`/api/dataproduct?roles=${Array.from({ length: 51 }, (_, i) => `r${i}`).join(',')}`, {
      token: carol,
    });
    expect(locTypes(tooMany)).toEqual([[['query', 'roles'], 'value_error']]);
    expect((await api('/api/dataproduct')).status).toBe(401);
  });

  it("orders names as DynamoDB does (UTF-8 bytes), in one role's list and merged across roles", async () => {
    const run = slug('utf8');
    // U+FFFD sorts before U+1F600 in UTF-8 (and code points), after it in UTF-16 units
    const high = await created({ name: `${run}-\u{1F600}`, role_name: `${run}-1` });
    const low = await created({ name: `${run}-\uFFFD`, role_name: `${run}-2` });
    const merged = await listAll(`roles=${encodeURIComponent(`${run}-1,${run}-2`)}`);
    expect(merged.map((p) => p.id)).toEqual([low.id, high.id]);
    const all = (await listAll()).filter((p) => p.name.startsWith(run));
    expect(all.map((p) => p.id)).toEqual([low.id, high.id]);
  });
});

describe('DELETE /api/dataproduct/{dataproduct_id}', () => {
  it('deletes a product once (204, then 404); `default` cannot be deleted (409)', async () => {
    const product = await created({ name: slug('doomed') });
    expect((await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: carol })).status).toBe(403);
    expect((await api(`/api/dataproduct/${product.id}`, { method: 'DELETE' })).status).toBe(401);
    const res = await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: admin });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const again = await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: admin });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: `No data product ${product.id}`, code: 404 });
    const unknown = await api('/api/dataproduct/7c9e6679-7425-40de-944b-e07fc1f90ae7', {
      method: 'DELETE',
      token: admin,
    });
    expect(unknown.status).toBe(404);
    const defaults = await api('/api/dataproduct/default', { method: 'DELETE', token: admin });
    expect(defaults.status).toBe(409);
    expect(defaults.body).toEqual({
      error: 'The data product `default` always exists: it cannot be deleted',
      code: 409,
    });
    const bad = await api('/api/dataproduct/bad%20id', { method: 'DELETE', token: admin });
    expect(locTypes(bad)).toEqual([[['path', 'dataproduct_id'], 'string_pattern_mismatch']]);
  });
});

describe("a product's pre-shared keys", () => {
  const makeKey = (product: string, t = carol) =>
    api(`/api/dataproduct/${product}/psk`, { method: 'POST', token: t, body: { description: 'product key' } });
  /** What a key may do: any user's read (its own keys). */
  const works = async (secret: string) => (await api('/api/dataproduct/psk?limit=1', { psk: secret })).status;

  it('needs an existing product: 404 for an unknown or deleted one, 201 for `default`', async () => {
    const unknown = await makeKey(slug('no-such-product'));
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/^No data product no-such-product-/);
    expect((await makeKey('7c9e6679-7425-40de-944b-e07fc1f90ae7')).status).toBe(404);
    const byDefault = await makeKey('default');
    expect(byDefault.status, byDefault.text).toBe(201);
    expect(byDefault.body.dataproduct_id).toBe('default');

    const product = await created({ name: slug('keyed') });
    const made = await makeKey(product.id);
    expect(made.status, made.text).toBe(201);
    expect(made.body.dataproduct_id).toBe(product.id);
    expect((await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    expect((await makeKey(product.id)).status).toBe(404);
  });

  it("stop working with the product's deletion, from the very next request; `default` keys keep working", async () => {
    const product = await created({ name: slug('stopping') });
    const productKey = (await makeKey(product.id)).body.key as string;
    const defaultKey = (await makeKey('default')).body.key as string;
    // a key made through the product's key stops with it too (docs/identity-and-keys.md, key lineage)
    const child = await api('/api/dataproduct/default/psk', {
      method: 'POST',
      psk: productKey,
      body: { description: 'made through the product key' },
    });
    expect(child.status, child.text).toBe(201);
    expect(await works(productKey)).toBe(200);
    expect(await works(child.body.key)).toBe(200);
    expect(await works(defaultKey)).toBe(200);

    expect((await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    const refused = await api('/api/dataproduct/psk?limit=1', { psk: productKey });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: "Pre-shared key's data product has been deleted", code: 401 });
    expect(refused.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    expect(await works(child.body.key)).toBe(401);
    expect(await works(defaultKey)).toBe(200);
  });
});

describe('a product without SQL', () => {
  it('owns keys that work as its creator and stop with it; its events carry query null', async () => {
    const res = await create({ name: slug('sdk-style'), role_name: slug('sdk-role') });
    expect(res.status, res.text).toBe(201);
    const product = res.body as Product;
    expect(product.query).toBeNull();
    const made = await api(`/api/dataproduct/${product.id}/psk`, {
      method: 'POST',
      token: carol,
      body: { description: 'key of a product without SQL' },
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body.dataproduct_id).toBe(product.id);
    const secret = made.body.key as string;
    const own = await api<{ psk: string }[]>('/api/dataproduct/psk?limit=1000', { psk: secret });
    expect(own.status, own.text).toBe(200);
    expect(own.body.map((k) => k.psk)).toContain(made.body.psk);
    // the key reads what its creator may read
    expect((await api('/api/dataproduct?limit=1', { psk: secret })).status).toBe(200);

    expect((await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    expect((await api('/api/dataproduct/psk?limit=1', { psk: secret })).status).toBe(401);

    const subject = `dataproducts/${product.id}`;
    const events: Envelope[] = await feedEvents(subject, 2, admin);
    expect(events.map((e) => e.type)).toEqual(['dpm.dataproduct.created', 'dpm.dataproduct.deleted']);
    for (const e of events) expect(e.data).toEqual(product);
  });
});

describe('data product events', () => {
  it('created and deleted, about dataproducts/{id}, with the product as data and the admin as actor', async () => {
    const product = await created({ name: slug('evented'), domain_urn: null });
    expect((await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    // refused changes make no event
    expect((await api(`/api/dataproduct/${product.id}`, { method: 'DELETE', token: admin })).status).toBe(404);
    expect((await create({ name: product.name, role_name: 'r', query: 'DROP TABLE a.b.c' })).status).toBe(422);

    const subject = `dataproducts/${product.id}`;
    const events: Envelope[] = await feedEvents(subject, 2, admin);
    expect(events.map((e) => [e.type, e.subject, e.sequence, e.actor])).toEqual([
      ['dpm.dataproduct.created', subject, 1, adminName],
      ['dpm.dataproduct.deleted', subject, 2, adminName],
    ]);
    for (const e of events) {
      expect(e.data).toEqual(product);
      expect(e).toMatchObject({ specversion: '1.0', datacontenttype: 'application/json' });
    }
    // A deleted product changes no more: the store's own record says that the refused
    // deletion after it made no event (the product is kept, marked, with its last stamp).
    await expectNothingMore(subject, events, { table: 'dataProducts', key: { pk: `P#${product.id}` }, is: 'kept' });
    expect(events[0]!.time).toBe(product.created_at);
    expect(Date.parse(events[1]!.time)).toBeGreaterThanOrEqual(Date.parse(product.created_at));
  });
});
