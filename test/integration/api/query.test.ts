import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, slug, token } from '../helpers.js';

let admin: string;
let alice: string;

const tablePath = (c: string, s: string, t: string) => `/api/metastore/catalogs/${c}/schemas/${s}/tables/${t}`;
const acceptPath = (c: string, s: string, t: string) => `/api/metastore/classify/${c}/${s}/${t}/accept`;

interface Column {
  name: string;
  type: string;
}

const TABLES: Record<string, Column[]> = {
  orders: [
    { name: 'order_id', type: 'bigint' },
    { name: 'customer_id', type: 'bigint' },
    { name: 'status', type: 'varchar(20)' },
    { name: 'amount', type: 'decimal(10,2)' },
    { name: 'created_at', type: 'timestamp(3)' },
  ],
  customers: [
    { name: 'customer_id', type: 'bigint' },
    { name: 'country', type: 'varchar' },
    { name: 'signup_date', type: 'date' },
  ],
  payments: [
    { name: 'payment_id', type: 'bigint' },
    { name: 'customer_id', type: 'bigint' },
    { name: 'method', type: 'char(8)' },
    { name: 'fee', type: 'double' },
  ],
};

interface Suggestion {
  suggestion_id: string;
  domain: string;
  question: string;
  sql: string;
  tables: string[];
}

/** The double-quoted identifiers of a SQL statement, unquoted. */
function quotedIdentifiers(sql: string): string[] {
  return [...sql.matchAll(/"((?:[^"]|"")*)"/g)].map((m) => m[1]!.replaceAll('""', '"'));
}

/** A small tokenizer: one SELECT, balanced quotes and parentheses, no semicolon. */
function tokenize(sql: string): string[] {
  const tokens: string[] = [];
  let depth = 0;
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    if (/\s/.test(ch)) {
      i += 1;
    } else if (ch === '"' || ch === "'") {
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) throw new Error(`unterminated quote in ${sql}`);
        if (sql[j] === ch) {
          if (sql[j + 1] === ch) j += 2;
          else break;
        } else j += 1;
      }
      tokens.push(sql.slice(i, j + 1));
      i = j + 1;
    } else if (ch === '(' || ch === ')') {
      depth += ch === '(' ? 1 : -1;
      if (depth < 0) throw new Error(`unbalanced parentheses in ${sql}`);
      tokens.push(ch);
      i += 1;
    } else if (ch === ';') {
      throw new Error(`semicolon in ${sql}`);
    } else if (/[A-Za-z0-9_]/.test(ch)) {
      const m = /^[A-Za-z0-9_]+/.exec(sql.slice(i))!;
      tokens.push(m[0]);
      i += m[0].length;
    } else if (/[.,*=<>]/.test(ch)) {
      tokens.push(ch);
      i += 1;
    } else {
      throw new Error(`unexpected ${ch} in ${sql}`);
    }
  }
  if (depth !== 0) throw new Error(`unbalanced parentheses in ${sql}`);
  return tokens;
}

let domain: string;
let catalog: string;
const schema = 'sales';

beforeAll(async () => {
  admin = await adminToken('query-admin');
  alice = await token('alice');
  domain = slug('domain');
  catalog = slug('cat');
  const created = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } });
  expect(created.status, created.text).toBe(201);
  for (const [table, columns] of Object.entries(TABLES)) {
    const res = await api(tablePath(catalog, schema, table), {
      method: 'PUT',
      token: admin,
      body: { description: `The ${table}`, domain, columns },
    });
    expect(res.status, res.text).toBe(200);
  }
  // A table outside the domain, with the same shared key: never suggested.
  const other = await api(tablePath(catalog, schema, 'refunds'), {
    method: 'PUT',
    token: admin,
    body: { columns: [{ name: 'customer_id', type: 'bigint' }] },
  });
  expect(other.status, other.text).toBe(200);
  // A glossary term on the orders table.
  const term = slug('Revenue');
  const accepted = await api(acceptPath(catalog, schema, 'orders'), {
    method: 'POST',
    token: alice,
    body: { table: { new_glossary_terms: [{ term_name: term }] }, columns: [] },
  });
  expect(accepted.status, accepted.text).toBe(200);
});

function checkSuggestions(list: Suggestion[]) {
  const known = new Map(Object.entries(TABLES).map(([t, cols]) => [t, new Set(cols.map((c) => c.name))]));
  for (const table of Object.keys(TABLES)) {
    expect(list.some((s) => s.tables.includes(`${catalog}.${schema}.${table}`))).toBe(true);
  }
  for (const s of list) {
    expect(s.domain).toBe(domain);
    expect(s.suggestion_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(s.question).toMatch(/\?$/);
    const tokens = tokenize(s.sql);
    expect(tokens[0]).toBe('SELECT');
    expect(tokens.filter((t) => t === 'SELECT')).toHaveLength(1);
    // Every table named is one of the domain's; every other quoted identifier is a column of them.
    const tables = s.tables.map((t) => t.split('.')[2]!);
    for (const t of tables) expect(known.has(t)).toBe(true);
    const columns = new Set(tables.flatMap((t) => [...known.get(t)!]));
    for (const id of quotedIdentifiers(s.sql)) {
      expect([catalog, schema, ...tables, ...columns], `${id} in ${s.sql}`).toContain(id);
    }
    expect(s.sql).not.toContain('refunds');
  }
}

describe('suggested questions (E12)', () => {
  it('suggests runnable SQL over the real columns of each table of the domain, by GET and POST', async () => {
    const get = await api<Suggestion[]>(`/api/query/suggest/${domain}`, { token: alice });
    expect(get.status, get.text).toBe(200);
    checkSuggestions(get.body);

    const post = await api<Suggestion[]>('/api/query/suggest', { method: 'POST', token: alice, body: { domain } });
    expect(post.status, post.text).toBe(200);
    expect(post.body).toEqual(get.body);

    const kinds = get.body.map((s) => s.sql);
    expect(kinds).toContain(`SELECT COUNT(*) AS row_count FROM "${catalog}"."sales"."orders"`);
    expect(kinds).toContain(`SELECT * FROM "${catalog}"."sales"."orders" ORDER BY "created_at" DESC LIMIT 10`);
    expect(kinds).toContain(
      `SELECT "status", COUNT(*) AS row_count FROM "${catalog}"."sales"."orders" GROUP BY "status" ORDER BY COUNT(*) DESC LIMIT 10`,
    );
    expect(kinds).toContain(`SELECT SUM("amount") AS total FROM "${catalog}"."sales"."orders"`);
    const joins = get.body.filter((s) => s.tables.length === 2);
    expect(joins.length).toBeGreaterThanOrEqual(1);
    expect(joins.every((s) => s.sql.includes('"customer_id"'))).toBe(true);
    // Sorted by table name: customers, orders, payments.
    const firstTables = get.body.map((s) => s.tables[0]!.split('.')[2]);
    expect(firstTables).toEqual([...firstTables].sort());
    // The glossary term of the orders table is mentioned.
    expect(get.body.some((s) => s.tables[0]!.endsWith('.orders') && /glossary term: Revenue-/.test(s.question))).toBe(
      true,
    );
  });

  it('gives the same ids for the same domain state', async () => {
    const first = await api<Suggestion[]>(`/api/query/suggest/${domain}`, { token: alice });
    const second = await api<Suggestion[]>(`/api/query/suggest/${domain}`, { token: alice });
    expect(first.status).toBe(200);
    expect(second.body.map((s) => s.suggestion_id)).toEqual(first.body.map((s) => s.suggestion_id));
    expect(new Set(first.body.map((s) => s.suggestion_id)).size).toBe(first.body.length);
  });

  it('answers an empty list for a domain without tables', async () => {
    const empty = slug('domain');
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: empty } })).status).toBe(
      201,
    );
    const res = await api(`/api/query/suggest/${empty}`, { token: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('answers 404 for an unknown domain', async () => {
    const get = await api(`/api/query/suggest/${slug('none')}`, { token: alice });
    expect(get.status).toBe(404);
    expect(get.body).toEqual({ error: expect.any(String), code: 404 });
    const post = await api('/api/query/suggest', { method: 'POST', token: alice, body: { domain: slug('none') } });
    expect(post.status).toBe(404);
  });

  it('answers 401 without credentials', async () => {
    expect((await api(`/api/query/suggest/${domain}`)).status).toBe(401);
    expect((await api('/api/query/suggest', { method: 'POST', body: { domain } })).status).toBe(401);
  });

  it('answers 422 for a bad body', async () => {
    const missing = await api('/api/query/suggest', { method: 'POST', token: alice, body: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['body', 'domain'], 'missing'],
    ]);
    const extra = await api('/api/query/suggest', { method: 'POST', token: alice, body: { domain, limit: 3 } });
    expect(extra.status).toBe(422);
    expect(extra.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['body', 'limit'], 'extra_forbidden'],
    ]);
    const wrongType = await api('/api/query/suggest', { method: 'POST', token: alice, body: { domain: 7 } });
    expect(wrongType.status).toBe(422);
  });
});

describe('suggested questions: what the catalog knows of the domain', () => {
  /** A domain with the given tables registered into it; returns its name and catalog. */
  async function domainWith(label: string, tables: Record<string, Column[]>): Promise<{ name: string; cat: string }> {
    const name = slug(label);
    const cat = slug('cat');
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name } })).status).toBe(201);
    for (const [table, columns] of Object.entries(tables)) {
      const res = await api(tablePath(cat, schema, table), {
        method: 'PUT',
        token: admin,
        body: { domain: name, columns },
      });
      expect(res.status, res.text).toBe(200);
    }
    return { name, cat };
  }

  it('quotes the summary of a confirmed document of the domain in an overview of the table it names', async () => {
    const { name, cat } = await domainWith('docs', { orders: TABLES.orders!, customers: TABLES.customers! });
    const doc = await api<{ id: string }>('/api/documents', {
      method: 'POST',
      token: alice,
      body: { filename: 'orders-handbook.pdf', mime_type: 'application/pdf', size_bytes: 2048 },
    });
    expect(doc.status, doc.text).toBe(201);
    const summary = 'Every order a customer places is recorded once. Refunds are kept elsewhere.';
    const suggested = await api(`/api/documents/${doc.body.id}/suggestions`, {
      method: 'PUT',
      token: admin,
      body: { suggested_summary: summary, suggested_tags: [], suggested_glossary_terms: [], suggested_domain: name },
    });
    expect(suggested.status, suggested.text).toBe(200);
    const confirmed = await api(`/api/documents/${doc.body.id}/enrichment`, {
      method: 'PATCH',
      token: alice,
      body: { domain: name },
    });
    expect(confirmed.status, confirmed.text).toBe(200);

    const res = await api<Suggestion[]>(`/api/query/suggest/${name}`, { token: alice });
    expect(res.status, res.text).toBe(200);
    const overviews = res.body.filter((s) => s.sql.includes('MIN('));
    // "order" and "customer" are both named: each table gets its overview.
    expect(overviews.map((s) => s.sql)).toEqual([
      `SELECT COUNT(*) AS row_count, MIN("signup_date") AS earliest, MAX("signup_date") AS latest FROM "${cat}"."sales"."customers"`,
      `SELECT COUNT(*) AS row_count, MIN("created_at") AS earliest, MAX("created_at") AS latest FROM "${cat}"."sales"."orders"`,
    ]);
    expect(overviews[1]!.question).toContain('"Every order a customer places is recorded once."');
    expect(overviews[1]!.question).not.toContain('Refunds');
  });

  it('names tables whose names hold dots, and drops a table moved to another domain', async () => {
    const { name, cat } = await domainWith('dots', {
      'v1.events': [
        { name: 'event_id', type: 'bigint' },
        { name: 'kind', type: 'varchar' },
      ],
      leaving: [{ name: 'id', type: 'bigint' }],
    });
    const other = slug('other');
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: other } })).status).toBe(
      201,
    );
    const moved = await api(tablePath(cat, schema, 'leaving'), {
      method: 'PUT',
      token: admin,
      body: { domain: other, columns: [{ name: 'id', type: 'bigint' }] },
    });
    expect(moved.status, moved.text).toBe(200);

    const res = await api<Suggestion[]>(`/api/query/suggest/${name}`, { token: alice });
    expect(res.status, res.text).toBe(200);
    expect(new Set(res.body.flatMap((s) => s.tables))).toEqual(new Set([`${cat}.sales.v1.events`]));
    expect(res.body.map((s) => s.sql)).toContain(`SELECT COUNT(*) AS row_count FROM "${cat}"."sales"."v1.events"`);
    const left = await api<Suggestion[]>(`/api/query/suggest/${other}`, { token: alice });
    expect(left.body.map((s) => s.tables[0])).toEqual([`${cat}.sales.leaving`]);
  });

  it('suggests over columns named like Object.prototype properties (never a 500 for the domain)', async () => {
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
    const { name, cat } = await domainWith('proto', {
      odd: [
        { name: 'id', type: 'bigint' },
        ...names.map((n) => ({ name: n, type: 'varchar' })),
        { name: 'total', type: 'double' },
      ],
      plain: TABLES.customers!,
    });
    const accepted = await api(acceptPath(cat, schema, 'odd'), {
      method: 'POST',
      token: alice,
      body: {
        table: {},
        columns: names.map((n) => ({ column_name: n, new_glossary_terms: [{ term_name: `term-${n}` }] })),
      },
    });
    expect(accepted.status, accepted.text).toBe(200);

    const res = await api<Suggestion[]>(`/api/query/suggest/${name}`, { token: alice });
    expect(res.status, res.text).toBe(200);
    expect(new Set(res.body.flatMap((s) => s.tables))).toEqual(
      new Set([`${cat}.${schema}.odd`, `${cat}.${schema}.plain`]),
    );
    // The first text column is `constructor`, and its own glossary term is named.
    const top = res.body.find((s) => s.tables[0] === `${cat}.${schema}.odd` && s.sql.includes('GROUP BY'))!;
    expect(top.sql).toContain('"constructor"');
    expect(top.question).toContain('(glossary term: term-constructor)');
  });

  it('tells sales.eu/core/orders and sales/eu.core/orders apart in a domain', async () => {
    const name = slug('split');
    const c = slug('sales');
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name } })).status).toBe(201);
    for (const [catalogName, schemaName, columns] of [
      [`${c}.eu`, 'core', [{ name: 'eu_amount', type: 'double' }]],
      [c, 'eu.core', [{ name: 'other_amount', type: 'double' }]],
    ] as const) {
      const res = await api(tablePath(catalogName, schemaName, 'orders'), {
        method: 'PUT',
        token: admin,
        body: { domain: name, columns },
      });
      expect(res.status, res.text).toBe(200);
    }
    const res = await api<Suggestion[]>(`/api/query/suggest/${name}`, { token: alice });
    expect(res.status, res.text).toBe(200);
    const sums = res.body.filter((s) => s.sql.startsWith('SELECT SUM(')).map((s) => s.sql);
    expect(sums.sort()).toEqual(
      [
        `SELECT SUM("eu_amount") AS total FROM "${c}.eu"."core"."orders"`,
        `SELECT SUM("other_amount") AS total FROM "${c}"."eu.core"."orders"`,
      ].sort(),
    );
  });

  it('words questions as the configured model rephrases them, keeping SQL and ids', async () => {
    // The suite's platform has LLM_BASE_URL set: the fake model prefixes "In plain words: ".
    const { name } = await domainWith('llm', { orders: TABLES.orders! });
    const res = await api<Suggestion[]>(`/api/query/suggest/${name}`, { token: alice });
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThan(1);
    expect(
      res.body.every(
        (s) => s.question.startsWith('In plain words: How many') || s.question.startsWith('In plain words: What'),
      ),
    ).toBe(true);
    expect(res.body.map((s) => s.sql)).toContain(
      'SELECT SUM("amount") AS total FROM ' + res.body[0]!.sql.split('FROM ')[1],
    );
  });

  it('falls back to the deterministic wording when the model fails or answers nonsense', async () => {
    for (const label of ['GARBLE', 'FAIL']) {
      const { name } = await domainWith(label, { orders: TABLES.orders! });
      const res = await api<Suggestion[]>(`/api/query/suggest/${name}`, { token: alice });
      expect(res.status, label).toBe(200);
      expect(res.body.length).toBeGreaterThan(1);
      expect(res.body.some((s) => s.question.startsWith('In plain words'))).toBe(false);
      expect(res.body[0]!.question).toBe('How many rows does the orders table hold?');
    }
  });
});
