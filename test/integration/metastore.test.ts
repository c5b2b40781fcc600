import { beforeAll, describe, expect, it } from 'vitest';
import { api, insertKey, slug, token, type ApiResponse } from './helpers.js';

let admin: string;
let alice: string;

beforeAll(async () => {
  admin = await token('metastore-admin', { roles: ['admin'] });
  alice = await token('alice');
});

const NAME_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.$-]*$';

const tablePath = (c: string, s: string, t: string) => `/api/metastore/catalogs/${c}/schemas/${s}/tables/${t}`;
const acceptPath = (c: string, s: string, t: string) => `/api/metastore/classify/${c}/${s}/${t}/accept`;

const orders = {
  description: 'Customer orders',
  columns: [
    { name: 'order_id', type: 'bigint', description: 'the order' },
    { name: 'email', type: 'varchar' },
    { name: 'amount', type: 'decimal(10,2)' },
  ],
};

async function register(c: string, s: string, t: string, body: unknown = orders) {
  const res = await api(tablePath(c, s, t), { method: 'PUT', token: admin, body });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function createDomain(name = slug('domain'), description?: string) {
  const res = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name, description } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const locTypes = (detail: { loc: unknown[]; type: string }[]) => detail.map((d) => [d.loc, d.type]);

describe('metastore browse (E10)', () => {
  it('lists catalogs, schemas and tables, sorted', async () => {
    const c = slug('cat');
    await register(c, 'sales', 'orders');
    await register(c, 'sales', 'Customers');
    await register(c, 'sales', 'accounts');
    await register(c, 'archive', 'old_orders');

    const catalogs = await api('/api/metastore/catalogs', { token: alice });
    expect(catalogs.status).toBe(200);
    expect(catalogs.body.catalogs).toContain(c);
    expect(catalogs.body.catalogs).toEqual([...catalogs.body.catalogs].sort());

    const schemas = await api(`/api/metastore/catalogs/${c}/schemas`, { token: alice });
    expect(schemas.status).toBe(200);
    expect(schemas.body).toEqual({ schemas: ['archive', 'sales'] });

    const tables = await api(`/api/metastore/catalogs/${c}/schemas/sales/tables`, { token: alice });
    expect(tables.status).toBe(200);
    expect(tables.body).toEqual({ tables: ['Customers', 'accounts', 'orders'] });
    expect(tables.headers.get('x-request-id')).toMatch(/\S/);
  });

  it('answers 404 for an unknown catalog or schema', async () => {
    const c = slug('cat');
    await register(c, 'sales', 'orders');
    const noCatalog = await api(`/api/metastore/catalogs/${slug('none')}/schemas`, { token: alice });
    expect(noCatalog.status).toBe(404);
    expect(noCatalog.body).toEqual({ error: expect.any(String), code: 404 });
    expect((await api(`/api/metastore/catalogs/${slug('none')}/schemas/sales/tables`, { token: alice })).status).toBe(
      404,
    );
    expect((await api(`/api/metastore/catalogs/${c}/schemas/nope/tables`, { token: alice })).status).toBe(404);
  });

  it('answers 422 for names outside the pattern', async () => {
    const long = 'a'.repeat(256);
    const bad = await api(`/api/metastore/catalogs/-x/schemas/a%23b/tables`, { token: alice });
    expect(bad.status).toBe(422);
    expect(locTypes(bad.body.detail)).toEqual([
      [['path', 'catalog_name'], 'string_pattern_mismatch'],
      [['path', 'schema_name'], 'string_pattern_mismatch'],
    ]);
    expect(bad.body.detail[0].ctx).toEqual({ pattern: NAME_PATTERN });
    const tooLong = await api(`/api/metastore/catalogs/${long}/schemas`, { token: alice });
    expect(tooLong.status).toBe(422);
    expect(locTypes(tooLong.body.detail)).toEqual([[['path', 'catalog_name'], 'string_too_long']]);
    const space = await api(tablePath('c', 's', 'a%20b'), { token: alice });
    expect(space.status).toBe(422);
    expect(locTypes(space.body.detail)).toEqual([[['path', 'table_name'], 'string_pattern_mismatch']]);
    const accept = await api(acceptPath('c', 's.x', 'bad%23'), { method: 'POST', token: alice, body: { table: {} } });
    expect(accept.status).toBe(422);
    expect(locTypes(accept.body.detail)).toEqual([[['path', 'table'], 'string_pattern_mismatch']]);
  });
});

describe('table registration and metadata', () => {
  it('registers a table (admin) and reads it back with its catalog annotations', async () => {
    const c = slug('cat');
    const domain = await createDomain(slug('finance'));
    const body = { ...orders, domain: domain.name };
    const registered = await register(c, 'sales', 'orders', body);
    const expected = {
      catalog: c,
      schema: 'sales',
      table: 'orders',
      urn: `urn:li:dataset:(urn:li:dataPlatform:dpm,${c}.sales.orders,PROD)`,
      description: 'Customer orders',
      domain: domain.name,
      tags: [],
      classifications: [],
      glossary_terms: [],
      columns: [
        {
          name: 'order_id',
          type: 'bigint',
          description: 'the order',
          tags: [],
          classifications: [],
          glossary_terms: [],
        },
        { name: 'email', type: 'varchar', description: null, tags: [], classifications: [], glossary_terms: [] },
        { name: 'amount', type: 'decimal(10,2)', description: null, tags: [], classifications: [], glossary_terms: [] },
      ],
    };
    expect(registered).toEqual(expected);
    expect(Object.keys(registered)).toEqual(Object.keys(expected));
    const read = await api(tablePath(c, 'sales', 'orders'), { token: alice });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(expected);

    // Replaced as a whole in the metastore; the catalog keeps its description and domain.
    const replaced = await register(c, 'sales', 'orders', { columns: [{ name: 'id', type: 'int' }] });
    expect(replaced).toMatchObject({ description: 'Customer orders', domain: domain.name });
    expect(replaced.columns).toEqual([
      { name: 'id', type: 'int', description: null, tags: [], classifications: [], glossary_terms: [] },
    ]);
  });

  it('accepts a pre-shared key with the admin role', async () => {
    const { secret } = await insertKey({ createdBy: 'metastore-admin', roles: ['admin'] });
    const c = slug('cat');
    const res = await api(tablePath(c, 's', 't'), { method: 'PUT', psk: secret, body: orders });
    expect(res.status).toBe(200);
    expect(res.body.columns).toHaveLength(3);
  });

  it('answers 403 to a caller without the admin role', async () => {
    const c = slug('cat');
    const res = await api(tablePath(c, 's', 't'), { method: 'PUT', token: alice, body: orders });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), code: 403 });
    expect((await api(`/api/metastore/catalogs/${c}/schemas`, { token: alice })).status).toBe(404);
  });

  it('answers 422 for bad bodies: missing or empty columns, duplicates, unknown fields, unknown domain', async () => {
    const c = slug('cat');
    const put = (body: unknown) => api(tablePath(c, 's', 't'), { method: 'PUT', token: admin, body });

    const missing = await put({ description: 'x' });
    expect(missing.status).toBe(422);
    expect(locTypes(missing.body.detail)).toEqual([[['body', 'columns'], 'missing']]);

    const empty = await put({ columns: [], extra: 1 });
    expect(empty.status).toBe(422);
    expect(locTypes(empty.body.detail)).toEqual([
      [['body', 'columns'], 'too_short'],
      [['body', 'extra'], 'extra_forbidden'],
    ]);

    const columnErrors = await put({ columns: [{ name: 'a' }, { name: '', type: 'int' }] });
    expect(columnErrors.status).toBe(422);
    expect(locTypes(columnErrors.body.detail)).toEqual([
      [['body', 'columns', 0, 'type'], 'missing'],
      [['body', 'columns', 1, 'name'], 'string_too_short'],
    ]);

    const duplicate = await put({
      domain: slug('no-such-domain'),
      columns: [
        { name: 'a', type: 'int' },
        { name: 'b', type: 'int' },
        { name: 'a', type: 'varchar' },
      ],
    });
    expect(duplicate.status).toBe(422);
    expect(locTypes(duplicate.body.detail)).toEqual([
      [['body', 'columns', 2, 'name'], 'value_error'],
      [['body', 'domain'], 'value_error'],
    ]);
    expect(duplicate.body.detail[0]).toMatchObject({ input: 'a', msg: expect.stringMatching(/^Value error, /) });

    const notJson = await api(tablePath(c, 's', 't'), { method: 'PUT', token: admin, rawBody: '{' });
    expect(notJson.status).toBe(422);
    expect(notJson.body.detail[0].type).toBe('json_invalid');

    // Nothing was registered.
    expect((await api(`/api/metastore/catalogs/${c}/schemas`, { token: alice })).status).toBe(404);
  });

  it('answers 404 for an unknown table', async () => {
    const c = slug('cat');
    await register(c, 's', 't');
    const res = await api(tablePath(c, 's', 'other'), { token: alice });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 404 });
  });
});

describe('classification acceptance (E5)', () => {
  it('applies tags, classifications, glossary terms and descriptions with the documented counts', async () => {
    const c = slug('cat');
    await register(c, 'sales', 'orders');
    const existingTerm = slug('Revenue');
    const newTerm = slug('Order');
    const colTerm = slug('Contact');
    const tag = slug('sensitive');
    // An existing glossary term: created by an earlier acceptance.
    const seed = await api(acceptPath(c, 'sales', 'orders'), {
      method: 'POST',
      token: alice,
      body: { table: { new_glossary_terms: [{ term_name: existingTerm, term_description: 'money in' }] } },
    });
    expect(seed.status, seed.text).toBe(200);
    expect(seed.body).toEqual({
      success: true,
      table_tags_applied: [],
      column_tags_applied: {},
      glossary_terms_linked: 1,
      glossary_terms_created: 1,
      descriptions_updated: 0,
    });

    const body = {
      table: {
        accepted_classifications: ['PII'],
        accepted_tags: [tag, 'PII'],
        description: 'Orders placed by customers',
        accepted_glossary_terms: [existingTerm],
        new_glossary_terms: [
          { term_name: newTerm, term_description: 'a customer order' },
          // is_existing false, but it exists: linked, not created.
          { term_name: existingTerm },
        ],
      },
      columns: [
        {
          column_name: 'email',
          accepted_classifications: ['PII'],
          accepted_tags: ['contact'],
          description: 'customer e-mail',
          accepted_glossary_terms: [],
          new_glossary_terms: [{ term_name: colTerm, is_existing: false, term_urn: null }],
        },
        {
          column_name: 'amount',
          accepted_classifications: [],
          accepted_tags: [],
          description: '',
          accepted_glossary_terms: [existingTerm],
          new_glossary_terms: [{ term_name: newTerm, is_existing: true }],
        },
      ],
    };
    const first = await api(acceptPath(c, 'sales', 'orders'), { method: 'POST', token: alice, body });
    expect(first.status, first.text).toBe(200);
    const expected = {
      success: true,
      table_tags_applied: ['PII', tag].sort(),
      column_tags_applied: { email: ['PII', 'contact'], amount: [] },
      // table: existingTerm, newTerm; email: colTerm; amount: existingTerm, newTerm
      glossary_terms_linked: 5,
      // newTerm and colTerm; existingTerm existed already
      glossary_terms_created: 2,
      // the table's and email's; amount's is empty
      descriptions_updated: 2,
    };
    expect(first.body).toEqual(expected);
    expect(Object.keys(first.body)).toEqual(Object.keys(expected));

    // The catalog reads show the result.
    const meta = await api(tablePath(c, 'sales', 'orders'), { token: alice });
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({
      description: 'Orders placed by customers',
      tags: ['PII', tag].sort(),
      // Classifications are kept as tags: the same names.
      classifications: ['PII', tag].sort(),
      glossary_terms: [existingTerm, newTerm].sort(),
    });
    expect(meta.body.columns).toEqual([
      {
        name: 'order_id',
        type: 'bigint',
        description: 'the order',
        tags: [],
        classifications: [],
        glossary_terms: [],
      },
      {
        name: 'email',
        type: 'varchar',
        description: 'customer e-mail',
        tags: ['PII', 'contact'],
        classifications: ['PII', 'contact'],
        glossary_terms: [colTerm],
      },
      {
        name: 'amount',
        type: 'decimal(10,2)',
        description: null,
        tags: [],
        classifications: [],
        glossary_terms: [existingTerm, newTerm].sort(),
      },
    ]);
    const tags = await api('/api/catalog/tags', { token: alice, headers: {} });
    expect(tags.status).toBe(200);
    const tagNames = tags.body.map((t: { name: string }) => t.name);
    expect(tagNames).toEqual(expect.arrayContaining(['PII', 'contact', tag]));
    expect(tags.body.find((t: { name: string }) => t.name === tag)).toEqual({
      name: tag,
      urn: `urn:li:tag:${tag}`,
      description: null,
    });
    const terms = await api('/api/catalog/glossary-terms?limit=1000', { token: alice });
    expect(terms.status).toBe(200);
    const byName = Object.fromEntries(terms.body.map((t: { name: string }) => [t.name, t]));
    expect(byName[newTerm]).toEqual({
      name: newTerm,
      urn: `urn:li:glossaryTerm:${newTerm}`,
      description: 'a customer order',
    });
    expect(byName[existingTerm].description).toBe('money in');
    expect(byName[colTerm].description).toBeNull();

    // The same body again: the same state, nothing created.
    const second = await api(acceptPath(c, 'sales', 'orders'), { method: 'POST', token: alice, body });
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ ...expected, glossary_terms_created: 0 });
    expect((await api(tablePath(c, 'sales', 'orders'), { token: alice })).body).toEqual(meta.body);
    const termsAgain = await api('/api/catalog/glossary-terms?limit=1000', { token: alice });
    expect(termsAgain.body.filter((t: { name: string }) => t.name === newTerm)).toHaveLength(1);
  });

  it('answers 404 for an unknown table', async () => {
    const c = slug('cat');
    await register(c, 's', 't');
    const res = await api(acceptPath(c, 's', 'missing'), { method: 'POST', token: alice, body: { table: {} } });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 404 });
  });

  it('answers 422 for unknown columns and glossary terms, writing nothing', async () => {
    const c = slug('cat');
    await register(c, 's', 't');
    const missingTerm = slug('NoSuchTerm');
    const tag = slug('never');
    const res = await api(acceptPath(c, 's', 't'), {
      method: 'POST',
      token: alice,
      body: {
        table: { accepted_tags: [tag], accepted_glossary_terms: [missingTerm] },
        columns: [
          { column_name: 'email' },
          { column_name: 'nope' },
          { column_name: 'amount', new_glossary_terms: [{ term_name: missingTerm, is_existing: true }] },
        ],
      },
    });
    expect(res.status).toBe(422);
    expect(locTypes(res.body.detail)).toEqual([
      [['body', 'columns', 1, 'column_name'], 'value_error'],
      [['body', 'table', 'accepted_glossary_terms', 0], 'value_error'],
      [['body', 'columns', 2, 'new_glossary_terms', 0, 'term_name'], 'value_error'],
    ]);
    expect(res.body.detail[0]).toMatchObject({ input: 'nope', msg: expect.stringMatching(/^Value error, /) });
    const tags = await api('/api/catalog/tags?limit=1000', { token: alice });
    expect(tags.body.map((t: { name: string }) => t.name)).not.toContain(tag);
    expect((await api(tablePath(c, 's', 't'), { token: alice })).body.tags).toEqual([]);
  });

  it('answers 422 for malformed bodies', async () => {
    const c = slug('cat');
    await register(c, 's', 't');
    const res = await api(acceptPath(c, 's', 't'), {
      method: 'POST',
      token: alice,
      body: { columns: [{ accepted_tags: 'PII' }], extra: true },
    });
    expect(res.status).toBe(422);
    expect(locTypes(res.body.detail)).toEqual([
      [['body', 'table'], 'missing'],
      [['body', 'columns', 0, 'column_name'], 'missing'],
      [['body', 'columns', 0, 'accepted_tags'], 'list_type'],
      [['body', 'extra'], 'extra_forbidden'],
    ]);
    const empty = await api(acceptPath(c, 's', 't'), { method: 'POST', token: alice });
    expect(locTypes(empty.body.detail)).toEqual([[['body'], 'missing']]);
  });
});

describe('catalog browse and domains', () => {
  it('creates a domain (admin) and lists it with pending_documents', async () => {
    const name = slug('Marketing');
    const created = await createDomain(name, 'campaigns');
    expect(created).toEqual({ name, urn: `urn:li:domain:${name}`, description: 'campaigns', pending_documents: [] });
    const list = await api('/api/catalog/domains?limit=1000', { token: alice });
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual(created);
    const names = list.body.map((d: { name: string }) => d.name);
    expect(names).toEqual([...names].sort());

    const again = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: expect.any(String), code: 409 });

    const forbidden = await api('/api/catalog/domains', { method: 'POST', token: alice, body: { name: slug('d') } });
    expect(forbidden.status).toBe(403);

    const invalid = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: '', x: 1 } });
    expect(invalid.status).toBe(422);
    expect(locTypes(invalid.body.detail)).toEqual([
      [['body', 'name'], 'string_too_short'],
      [['body', 'x'], 'extra_forbidden'],
    ]);
  });

  it('pages the lists with limit and X-Next-Cursor', async () => {
    await createDomain(slug('page-a'));
    await createDomain(slug('page-b'));
    const all = (await api('/api/catalog/domains?limit=1000', { token: alice })).body as { name: string }[];
    expect(all.length).toBeGreaterThanOrEqual(2);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: ApiResponse<{ name: string }[]> = await api(
        `/api/catalog/domains?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        { token: alice },
      );
      expect(res.status).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(1);
      seen.push(...res.body.map((d) => d.name));
      cursor = res.headers.get('x-next-cursor');
    } while (cursor && seen.length < all.length + 5);
    expect(seen.slice(0, all.length)).toEqual(all.map((d) => d.name));
    const bad = await api('/api/catalog/tags?cursor=garbage', { token: alice });
    expect(bad.status).toBe(422);
    expect(locTypes(bad.body.detail)).toEqual([[['query', 'cursor'], 'value_error']]);
    expect((await api('/api/catalog/glossary-terms?limit=0', { token: alice })).status).toBe(422);
  });

  it('answers 401 without credentials, on every endpoint', async () => {
    const calls = [
      api('/api/metastore/catalogs'),
      api('/api/metastore/catalogs/c/schemas'),
      api('/api/metastore/catalogs/c/schemas/s/tables'),
      api(tablePath('c', 's', 't')),
      api(tablePath('c', 's', 't'), { method: 'PUT', body: orders }),
      api(acceptPath('c', 's', 't'), { method: 'POST', body: { table: {} } }),
      api('/api/catalog/tags'),
      api('/api/catalog/glossary-terms'),
      api('/api/catalog/domains'),
      api('/api/catalog/domains', { method: 'POST', body: { name: 'x' } }),
      api('/api/metastore/catalogs', { token: 'not-a-jwt' }),
      api('/api/catalog/tags', { psk: 'wrong-key' }),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 401 });
      expect(res.headers.get('www-authenticate')).toMatch(/Bearer/);
    }
  });
});
