import { beforeAll, describe, expect, it } from 'vitest';
import { createQueryApp } from '../../../functions/query/app.js';
import { QueryService } from '../../../functions/query/service.js';
import { BuiltinCatalog } from '../../../shared/adapters/builtin-catalog.js';
import { BuiltinMetastore } from '../../../shared/adapters/builtin-metastore.js';
import type { RequestAuthenticator } from '../../../shared/auth/authenticator.js';
import { adminPsk, adminToken, api, db, insertKey, slug, table, token } from '../helpers.js';

// POST /api/query/ask (docs/sdk.md, the SDK's queries.ask). The suite's platform has a model
// (LLM_BASE_URL: test/support/openai-server.ts), which writes `SELECT COUNT(*) AS answer FROM
// <the first table it is given>`; what it writes wrong, or a failure, gets the catalog's SQL:
// E12's suggestion that the prompt asks for, as a platform without a model answers.

interface Answer {
  domain: string;
  prompt: string;
  sql: string;
  tables: string[];
  answer: string | null;
  suggestion_id?: string;
}

const COLUMNS = {
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
  ],
};

let admin: string;
let alice: string;
let domain: string;
let catalog: string;

beforeAll(async () => {
  admin = await adminToken('ask-admin');
  alice = await token('alice');
  domain = slug('ask');
  catalog = slug('askcat');
  expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } })).status).toBe(
    201,
  );
  for (const [name, columns] of Object.entries(COLUMNS)) {
    const res = await api(`/api/metastore/catalogs/${catalog}/schemas/sales/tables/${name}`, {
      method: 'PUT',
      token: admin,
      body: { domain, columns },
    });
    expect(res.status, res.text).toBe(200);
  }
});

const ask = (body: unknown, auth: { token?: string; psk?: string } = { token: alice }) =>
  api<Answer>('/api/query/ask', { method: 'POST', ...auth, body });
const locTypes = (res: { body: { detail: { loc: unknown[]; type: string }[] } }) =>
  res.body.detail.map((d) => [d.loc, d.type]);

/** The catalog's SQL for "how many orders": E12's row count of the orders table. */
const rowCountOfOrders = () => `SELECT COUNT(*) AS row_count FROM "${catalog}"."sales"."orders"`;

describe('POST /api/query/ask with a model', () => {
  it("answers the model's SQL over the table the prompt names, checked, without a suggestion_id", async () => {
    const prompt = 'How many orders are there?';
    const res = await ask({ domain, prompt });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      domain,
      prompt,
      sql: `SELECT COUNT(*) AS answer FROM "${catalog}"."sales"."orders"`,
      tables: [`${catalog}.sales.orders`],
      answer: null,
    });
  });

  it('works with pre-shared keys, as the SDK calls it', async () => {
    const prompt = 'How many customers?';
    const viaAdminKey = await ask({ domain, prompt }, { psk: adminPsk() });
    expect(viaAdminKey.status, viaAdminKey.text).toBe(200);
    expect(viaAdminKey.body.tables).toEqual([`${catalog}.sales.customers`]);
    const userKey = (await insertKey({ createdBy: 'ask-key-user' })).secret;
    expect((await ask({ domain, prompt }, { psk: userKey })).body).toEqual(viaAdminKey.body);
  });

  it.each([
    ['fails', 'FAIL: how many orders are there?'],
    ['writes a DROP', 'DROP: how many orders are there?'],
    ['reads a table outside the domain', 'ELSEWHERE: how many orders are there?'],
    ['answers prose', 'GARBLE: how many orders are there?'],
  ])("answers the catalog's SQL, with its suggestion_id, when the model %s", async (_, prompt) => {
    const res = await ask({ domain, prompt });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ domain, prompt, sql: rowCountOfOrders(), tables: [`${catalog}.sales.orders`] });
    expect(res.body.answer).toBeNull();
    // The id is the suggestion's (E12): the same one the suggestions list gives that SQL.
    const suggestions = await api<{ suggestion_id: string; sql: string }[]>(`/api/query/suggest/${domain}`, {
      token: alice,
    });
    expect(suggestions.body.find((s) => s.sql === rowCountOfOrders())?.suggestion_id).toBe(res.body.suggestion_id);
  });
});

describe('POST /api/query/ask without a model (the platform without LLM_BASE_URL)', () => {
  const users: Record<string, { principal: string; name: string; roles: Set<string>; via: 'bearer' }> = {
    alice: { principal: '["https://issuer.test","sub-alice"]', name: 'alice', roles: new Set(), via: 'bearer' },
  };
  const authenticator: RequestAuthenticator = {
    authenticate: async ({ authorization }) => users[authorization!.slice(7)]!,
  };
  const app = () =>
    createQueryApp({
      authenticator,
      service: new QueryService(
        new BuiltinMetastore(db(), table('metastore')),
        new BuiltinCatalog(db(), table('catalog')),
      ),
    });
  const call = async (body: unknown) => {
    const res = await app().request('/api/query/ask', {
      method: 'POST',
      headers: { authorization: 'Bearer alice', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Answer };
  };

  it('answers the suggestion the prompt asks for, the same for the same prompt', async () => {
    const first = await call({ domain, prompt: 'How many orders are there?' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      domain,
      prompt: 'How many orders are there?',
      sql: rowCountOfOrders(),
      tables: [`${catalog}.sales.orders`],
      answer: null,
      suggestion_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
    });
    expect((await call({ domain, prompt: 'How many orders are there?' })).body).toEqual(first.body);
    const total = await call({ domain, prompt: 'What is the total amount of all orders?' });
    expect(total.body.sql).toBe(`SELECT SUM("amount") AS total FROM "${catalog}"."sales"."orders"`);
  });
});

describe('POST /api/query/ask: errors', () => {
  it('answers 404 for an unknown domain', async () => {
    const res = await ask({ domain: slug('none'), prompt: 'How many orders?' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 404 });
  });

  it('answers 409 for a domain without tables', async () => {
    const empty = slug('ask-empty');
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: empty } })).status).toBe(
      201,
    );
    const res = await ask({ domain: empty, prompt: 'How many orders?' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.any(String), code: 409 });
  });

  it('answers 401 without credentials', async () => {
    const res = await ask({ domain, prompt: 'How many orders?' }, {});
    expect(res.status).toBe(401);
  });

  it('answers 422 with the exact loc and type of each bad field', async () => {
    const cases: [unknown, [unknown[], string][]][] = [
      [{ domain }, [[['body', 'prompt'], 'missing']]],
      [
        {},
        [
          [['body', 'domain'], 'missing'],
          [['body', 'prompt'], 'missing'],
        ],
      ],
      [{ domain, prompt: '' }, [[['body', 'prompt'], 'string_too_short']]],
      [{ domain, prompt: ' \n\t ' }, [[['body', 'prompt'], 'string_pattern_mismatch']]],
      [{ domain, prompt: 'x'.repeat(4001) }, [[['body', 'prompt'], 'string_too_long']]],
      [{ domain, prompt: 7 }, [[['body', 'prompt'], 'string_type']]],
      [{ domain: '', prompt: 'How many?' }, [[['body', 'domain'], 'string_too_short']]],
      [{ domain, prompt: 'How many?', limit: 3 }, [[['body', 'limit'], 'extra_forbidden']]],
    ];
    for (const [body, expected] of cases) {
      const res = await ask(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(locTypes(res as never), JSON.stringify(body).slice(0, 80)).toEqual(expected);
    }
    const tooLong = await ask({ domain, prompt: 'x'.repeat(4001) });
    expect((tooLong.body as never as { detail: { ctx: unknown }[] }).detail[0]!.ctx).toEqual({ max_length: 4000 });
    // 4000 characters are still a prompt.
    expect((await ask({ domain, prompt: `orders ${'x'.repeat(3993)}` })).status).toBe(200);
  });
});
