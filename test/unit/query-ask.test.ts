import { describe, expect, it } from 'vitest';
import { askPrompt, MAX_MODEL_TABLES, parseModelSql } from '../../functions/query/ask.js';
import { type DomainTable, suggestionId } from '../../functions/query/questions.js';
import { checkReadOnlySql, MAX_SQL_LENGTH } from '../../functions/query/read-only-sql.js';
import { type QueryCatalog, type QueryMetastore, QueryService } from '../../functions/query/service.js';
import { Conflict, NotFound } from '../../shared/errors.js';
import { datasetUrnOf, emptyAnnotations } from '../../shared/ports/catalog.js';
import type { ChatModel } from '../../shared/ports/llm.js';
import type { TableSchema } from '../../shared/ports/metastore.js';

const table = (name: string, columns: [string, string][]): TableSchema => ({
  catalog: 'hive',
  schema: 'sales',
  table: name,
  description: null,
  columns: columns.map(([n, type]) => ({ name: n, type, description: null })),
});
const TABLES = [
  table('orders', [
    ['order_id', 'bigint'],
    ['customer_id', 'bigint'],
    ['status', 'varchar(20)'],
    ['amount', 'decimal(10,2)'],
    ['created_at', 'timestamp(3)'],
  ]),
  table('customers', [
    ['customer_id', 'bigint'],
    ['country', 'varchar'],
    ['signup_date', 'date'],
  ]),
  table('payments', [
    ['payment_id', 'bigint'],
    ['customer_id', 'bigint'],
    ['method', 'char(8)'],
    ['fee', 'double'],
  ]),
];
const entityOf = (t: TableSchema) => ({
  ...emptyAnnotations(datasetUrnOf('dpm', t.catalog, t.schema, t.table)),
  domain: 'd',
});

/** A catalog with domain `d` holding `tables`, and domain `empty` holding none. */
function fakes(tables: TableSchema[] = TABLES): { catalog: QueryCatalog; metastore: QueryMetastore } {
  return {
    catalog: {
      getDomain: async (name) =>
        name === 'd' || name === 'empty' ? { name, urn: `urn:li:domain:${name}`, description: null } : undefined,
      listDomainEntities: async (name) => (name === 'd' ? tables.map(entityOf) : []),
      datasetUrn: (c, s, t) => datasetUrnOf('dpm', c, s, t),
    },
    metastore: { getTables: async () => tables },
  };
}

const ask = (prompt: string, model?: ChatModel, timeoutMs?: number) => {
  const { catalog, metastore } = fakes();
  return new QueryService(metastore, catalog, model, timeoutMs).ask('d', prompt);
};

const ORDERS = '"hive"."sales"."orders"';
const PAYMENTS = '"hive"."sales"."payments"';

describe('ask without a model: the suggestion (E12) the prompt asks for', () => {
  it.each([
    ['How many orders are there?', `SELECT COUNT(*) AS row_count FROM ${ORDERS}`, ['hive.sales.orders']],
    ['What is the total fee of our payments?', `SELECT SUM("fee") AS total FROM ${PAYMENTS}`, ['hive.sales.payments']],
    [
      'Show me the most recent orders',
      `SELECT * FROM ${ORDERS} ORDER BY "created_at" DESC LIMIT 10`,
      ['hive.sales.orders'],
    ],
    [
      'most common status of an order',
      `SELECT "status", COUNT(*) AS row_count FROM ${ORDERS} GROUP BY "status" ORDER BY COUNT(*) DESC LIMIT 10`,
      ['hive.sales.orders'],
    ],
    [
      'Which customer_id values match between orders and payments?',
      `SELECT a."customer_id", COUNT(*) AS row_count FROM ${ORDERS} AS a JOIN ${PAYMENTS} AS b ON a."customer_id" = b."customer_id" GROUP BY a."customer_id" ORDER BY COUNT(*) DESC LIMIT 10`,
      ['hive.sales.orders', 'hive.sales.payments'],
    ],
    // Nothing of the domain named: its first suggestion (tables sorted by name).
    ['hello there', 'SELECT COUNT(*) AS row_count FROM "hive"."sales"."customers"', ['hive.sales.customers']],
  ])('%s', async (prompt, sql, tables) => {
    expect(await ask(prompt)).toEqual({
      domain: 'd',
      prompt,
      sql,
      tables,
      answer: null,
      suggestion_id: suggestionId('d', sql),
    });
  });

  it('gives the same answer to the same prompt', async () => {
    expect(await ask('total amount of orders')).toEqual(await ask('total amount of orders'));
  });

  it('answers 404 for an unknown domain and 409 for a domain without tables', async () => {
    const { catalog, metastore } = fakes();
    const service = new QueryService(metastore, catalog);
    await expect(service.ask('nope', 'How many?')).rejects.toBeInstanceOf(NotFound);
    await expect(service.ask('empty', 'How many?')).rejects.toBeInstanceOf(Conflict);
  });
});

describe('ask with a model', () => {
  const replying = (reply: string): ChatModel & { prompts: { system?: string; prompt: string }[] } => {
    const prompts: { system?: string; prompt: string }[] = [];
    return {
      prompts,
      provider: 'openai',
      model: 'm',
      complete: async (request) => {
        prompts.push(request);
        return { text: reply, model: 'm' };
      },
    };
  };

  it("answers the model's SQL once checked, with the tables it reads and no suggestion_id", async () => {
    const sql = `SELECT o."status", SUM(p."fee") FROM ${ORDERS} o JOIN ${PAYMENTS} p ON o."customer_id" = p."customer_id" GROUP BY 1`;
    const model = replying('```json\n' + JSON.stringify({ sql: `${sql};` }) + '\n```');
    expect(await ask('fees by order status', model)).toEqual({
      domain: 'd',
      prompt: 'fees by order status',
      sql,
      tables: ['hive.sales.orders', 'hive.sales.payments'],
      answer: null,
    });
    const sent = JSON.parse(model.prompts[0]!.prompt);
    expect(model.prompts[0]!.system).toMatch(/^You write one SQL query/);
    expect(sent.question).toBe('fees by order status');
    // The tables the prompt names come first, written as SQL, with their columns.
    expect(sent.tables.map((t: { name: string }) => t.name)).toEqual([ORDERS, '"hive"."sales"."customers"', PAYMENTS]);
    expect(sent.tables[0].columns[0]).toEqual({ name: 'order_id', type: 'bigint', description: null });
  });

  it("gives the suggestion's id when the model's SQL is exactly a suggestion's", async () => {
    const sql = `SELECT COUNT(*) AS row_count FROM ${ORDERS}`;
    const answer = await ask('How many orders?', replying(sql));
    expect(answer).toMatchObject({ sql, suggestion_id: suggestionId('d', sql) });
  });

  it.each([
    ['a write', `DROP TABLE ${ORDERS}`],
    ['two statements', `SELECT 1 FROM ${ORDERS}; DELETE FROM ${ORDERS}`],
    ['a table outside the domain', 'SELECT * FROM "system"."runtime"."nodes"'],
    ['prose', 'I cannot help with that.'],
    ['an empty reply', '   '],
    ['JSON without sql', '{"query": "SELECT 1"}'],
  ])("answers the catalog's SQL when the model's is refused: %s", async (_, reply) => {
    const answer = await ask('How many orders are there?', replying(reply));
    expect(answer).toEqual(await ask('How many orders are there?'));
    expect(answer.suggestion_id).toBeDefined();
  });

  it("answers the catalog's SQL when the model fails or does not answer in time", async () => {
    const failing: ChatModel = {
      provider: 'openai',
      model: 'm',
      complete: () => Promise.reject(new Error('model endpoint answered 500')),
    };
    const hanging: ChatModel = {
      provider: 'openai',
      model: 'm',
      complete: (_, signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
    };
    const plain = await ask('How many orders are there?');
    expect(await ask('How many orders are there?', failing)).toEqual(plain);
    expect(await ask('How many orders are there?', hanging, 20)).toEqual(plain);
  });

  it('describes at most MAX_MODEL_TABLES tables to the model, those the prompt names first', () => {
    const many = Array.from({ length: MAX_MODEL_TABLES + 5 }, (_, i) => table(`t${i}`, [['id', 'bigint']]));
    const tables: DomainTable[] = many.map((schema) => ({ schema, entity: entityOf(schema) }));
    const sent = JSON.parse(askPrompt('d', `rows of t${MAX_MODEL_TABLES + 2}`, tables));
    expect(sent.tables).toHaveLength(MAX_MODEL_TABLES);
    expect(sent.tables[0].name).toBe(`"hive"."sales"."t${MAX_MODEL_TABLES + 2}"`);
  });
});

describe('parseModelSql', () => {
  it('reads {"sql"} JSON or a bare query, fenced or not', () => {
    expect(parseModelSql('{"sql": " SELECT 1 "}')).toBe('SELECT 1');
    expect(parseModelSql('```json\n{"sql": "SELECT 1"}\n```')).toBe('SELECT 1');
    expect(parseModelSql('```sql\nSELECT 1\n```')).toBe('SELECT 1');
    expect(parseModelSql('SELECT 1')).toBe('SELECT 1');
    expect(parseModelSql('{"sql": 3}')).toBeUndefined();
    expect(parseModelSql('{not json')).toBeUndefined();
    expect(parseModelSql('```\n```')).toBeUndefined();
  });
});

describe('checkReadOnlySql', () => {
  const check = (sql: string) => checkReadOnlySql(sql, TABLES);
  const CUSTOMERS = '"hive"."sales"."customers"';

  it.each([
    [`SELECT COUNT(*) FROM ${ORDERS};`, ['hive.sales.orders']],
    [
      'select * from hive.sales.orders o join HIVE.SALES.CUSTOMERS c on o.customer_id = c.customer_id',
      ['hive.sales.orders', 'hive.sales.customers'],
    ],
    [
      `WITH recent (id) AS (SELECT "order_id" FROM ${ORDERS} WHERE "created_at" > current_date - interval '7' day) SELECT COUNT(*) FROM recent`,
      ['hive.sales.orders'],
    ],
    [`SELECT EXTRACT(YEAR FROM "created_at") AS y, COUNT(*) FROM ${ORDERS} GROUP BY 1`, ['hive.sales.orders']],
    [
      `SELECT * FROM ${CUSTOMERS} WHERE "customer_id" IN (SELECT "customer_id" FROM ${ORDERS})`,
      ['hive.sales.customers', 'hive.sales.orders'],
    ],
    [
      `SELECT * FROM ${ORDERS} o, ${PAYMENTS} p WHERE o."customer_id" = p."customer_id"`,
      ['hive.sales.orders', 'hive.sales.payments'],
    ],
    [
      `SELECT * FROM (${ORDERS} o JOIN ${PAYMENTS} p ON o."customer_id" = p."customer_id")`,
      ['hive.sales.orders', 'hive.sales.payments'],
    ],
    [`SELECT * FROM ${ORDERS} WHERE "status" = 'a;b -- c /* d'`, ['hive.sales.orders']],
    [`SELECT * FROM (SELECT * FROM ${ORDERS}) AS x CROSS JOIN UNNEST(ARRAY[1, 2]) AS u (n)`, ['hive.sales.orders']],
  ])('accepts %s', (sql, tables) => {
    expect(check(sql)).toEqual({ sql: sql.replace(/;$/, ''), tables });
  });

  it.each([
    [`DROP TABLE ${ORDERS}`, 'not a SELECT'],
    [`SELECT 1 FROM ${ORDERS}; DROP TABLE ${ORDERS}`, 'only one statement'],
    [`SELECT * FROM ${ORDERS} WHERE 1 = (DELETE FROM ${ORDERS})`, "'DELETE' is not read-only"],
    ['SELECT * FROM "system"."runtime"."nodes"', "not one of the domain's"],
    ['SELECT * FROM orders', 'catalog.schema.table'],
    ['SELECT * FROM "sales"."orders"', 'catalog.schema.table'],
    [`SELECT * FROM ${ORDERS} -- the orders`, 'comments'],
    [`SELECT /* x */ * FROM ${ORDERS}`, 'comments'],
    ["SELECT * FROM TABLE(system.query(query => 'SELECT 1'))", 'table functions'],
    ['SELECT 1', "none of the domain's tables"],
    [
      `SELECT * FROM ${CUSTOMERS} WHERE "customer_id" IN (SELECT "id" FROM "hive"."hr"."salaries")`,
      "not one of the domain's",
    ],
    [
      `SELECT * FROM ${ORDERS} o JOIN ${PAYMENTS} p ON o."customer_id" = p."customer_id", "hive"."hr"."salaries"`,
      "not one of the domain's",
    ],
    [`SELECT * FROM (${ORDERS} CROSS JOIN "hive"."hr"."salaries")`, "not one of the domain's"],
    [`WITH x AS (SELECT * FROM "hive"."hr"."salaries") SELECT * FROM x, ${ORDERS}`, "not one of the domain's"],
    [`SELECT * FROM "Hive"."sales"."orders"`, "not one of the domain's"],
    [`SELECT * FROM ${ORDERS} WHERE "status" = 'open`, 'not closed'],
    [`SELECT (1 FROM ${ORDERS}`, 'not closed'],
    [`SELECT * FROM ${ORDERS})`, 'not opened'],
    ['SELECT `x` FROM t', 'not Trino SQL'],
    [`SELECT * FROM ${ORDERS} WHERE "note" = '${'x'.repeat(MAX_SQL_LENGTH)}'`, `longer than ${MAX_SQL_LENGTH}`],
    ['   ;  ', 'no SQL'],
  ])('refuses %s', (sql, reason) => {
    const result = check(sql);
    expect('error' in result && result.error).toContain(reason);
  });
});
