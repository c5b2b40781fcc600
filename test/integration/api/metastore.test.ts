import { beforeAll, describe, expect, it } from 'vitest';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import { adminToken, api, insertKey, slug, token, type ApiResponse } from '../helpers.js';

let admin: string;
let alice: string;

beforeAll(async () => {
  admin = await adminToken('metastore-admin');
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
      expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    }
  });
});

describe('names from users are data (security review)', () => {
  const PROTO_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

  it('keeps columns named like Object.prototype properties apart, in E5 and on every other table', async () => {
    const c = slug('cat');
    await register(c, 's', 'odd', {
      columns: [{ name: 'id', type: 'bigint' }, ...PROTO_NAMES.map((name) => ({ name, type: 'varchar' }))],
    });
    const tagOf = (name: string) => `tag-of-${name}`;
    const res = await api(acceptPath(c, 's', 'odd'), {
      method: 'POST',
      token: alice,
      body: {
        table: {},
        columns: PROTO_NAMES.map((name) => ({
          column_name: name,
          accepted_tags: [tagOf(name)],
          description: `the ${name} column`,
          new_glossary_terms: [{ term_name: `term-of-${name}` }],
        })),
      },
    });
    expect(res.status, res.text).toBe(200);
    // Every name is an own key of the answer, `__proto__` included (JSON.parse keeps it own).
    expect(Object.keys(res.body.column_tags_applied).sort()).toEqual([...PROTO_NAMES].sort());
    for (const name of PROTO_NAMES) expect(res.body.column_tags_applied[name]).toEqual([tagOf(name)]);
    expect(res.body).toMatchObject({ descriptions_updated: 5, glossary_terms_linked: 5 });

    const read = await api(tablePath(c, 's', 'odd'), { token: alice });
    expect(read.status, read.text).toBe(200);
    expect(read.body.columns).toEqual([
      { name: 'id', type: 'bigint', description: null, tags: [], classifications: [], glossary_terms: [] },
      ...PROTO_NAMES.map((name) => ({
        name,
        type: 'varchar',
        description: `the ${name} column`,
        tags: [tagOf(name)],
        classifications: [tagOf(name)],
        glossary_terms: [`term-of-${name}`],
      })),
    ]);

    // A brand-new table with the same column names shows none of it.
    const fresh = await register(slug('cat'), 's', 'fresh', {
      columns: PROTO_NAMES.map((name) => ({ name, type: 'varchar' })),
    });
    expect(fresh.columns).toEqual(
      PROTO_NAMES.map((name) => ({
        name,
        type: 'varchar',
        description: null,
        tags: [],
        classifications: [],
        glossary_terms: [],
      })),
    );
  });

  it('gives sales.eu/core/orders and sales/eu.core/orders urns and annotations of their own', async () => {
    const c = slug('sales');
    const first = await register(`${c}.eu`, 'core', 'orders');
    const second = await register(c, 'eu.core', 'orders');
    expect(first.urn).not.toBe(second.urn);
    expect(first.urn).toBe(`urn:li:dataset:(urn:li:dataPlatform:dpm,${c}%2Eeu.core.orders,PROD)`);
    expect(second.urn).toBe(`urn:li:dataset:(urn:li:dataPlatform:dpm,${c}.eu%2Ecore.orders,PROD)`);

    const tag = slug('only-first');
    const res = await api(acceptPath(`${c}.eu`, 'core', 'orders'), {
      method: 'POST',
      token: alice,
      body: {
        table: { accepted_tags: [tag], description: 'the first one' },
        columns: [{ column_name: 'email', accepted_tags: [tag] }],
      },
    });
    expect(res.status, res.text).toBe(200);
    expect((await api(tablePath(`${c}.eu`, 'core', 'orders'), { token: alice })).body).toMatchObject({
      tags: [tag],
      description: 'the first one',
    });
    const other = await api(tablePath(c, 'eu.core', 'orders'), { token: alice });
    expect(other.body).toMatchObject({ tags: [], description: 'Customer orders' });
    expect(other.body.columns.every((col: { tags: string[] }) => col.tags.length === 0)).toBe(true);
  });

  it('answers an acceptance too large for the catalog 422 before writing anything, and a fitting one whole', async () => {
    const c = slug('cat');
    const columns = Array.from({ length: 200 }, (_, i) => ({
      name: `col_${String(i).padStart(3, '0')}`,
      type: 'varchar',
    }));
    await register(c, 's', 'wide', { columns });
    const seeded = await api(acceptPath(c, 's', 'wide'), {
      method: 'POST',
      token: alice,
      body: { table: { description: 'before' }, columns: [{ column_name: 'col_000', description: 'first' }] },
    });
    expect(seeded.status, seeded.text).toBe(200);
    const before = await api(tablePath(c, 's', 'wide'), { token: alice });

    // 200 descriptions of 2,500 characters: about 500 KB, over DynamoDB's 400 KB item.
    const tag = slug('never-created');
    const accept = (length: number, description: string) =>
      api(acceptPath(c, 's', 'wide'), {
        method: 'POST',
        token: alice,
        body: {
          table: { description, accepted_tags: [tag] },
          columns: columns.map((col, i) => ({ column_name: col.name, description: `${i}:`.padEnd(length, 'd') })),
        },
      });
    const big = await accept(2_500, 'after');
    expect(big.status, big.text.slice(0, 500)).toBe(422);
    expect(big.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body'],
        msg: expect.stringMatching(/^Value error, .*at most 409600/),
        input: null,
        ctx: { error: expect.any(String) },
      },
    ]);
    expect((await api(tablePath(c, 's', 'wide'), { token: alice })).body).toEqual(before.body);
    const tags = await api<{ name: string }[]>('/api/catalog/tags?limit=1000', { token: alice });
    expect(tags.body.map((t) => t.name)).not.toContain(tag);

    // 200 descriptions of 1,500 characters fit: all of them are written.
    const fits = await accept(1_500, 'after');
    expect(fits.status, fits.text.slice(0, 500)).toBe(200);
    expect(fits.body.descriptions_updated).toBe(201);
    const after = await api(tablePath(c, 's', 'wide'), { token: alice });
    expect(after.body.description).toBe('after');
    expect(after.body.columns.map((col: { description: string }) => col.description)).toEqual(
      columns.map((_, i) => `${i}:`.padEnd(1_500, 'd')),
    );
  });
});
