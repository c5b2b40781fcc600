import { describe, expect, it } from 'vitest';
import {
  excerpt,
  mentions,
  parseRephrasing,
  QueryService,
  suggestionsFor,
  tableRefsOf,
  type DomainTable,
} from '../../functions/query/service.js';
import { emptyAnnotations, type MetadataCatalog } from '../../shared/ports/catalog.js';
import type { ChatModel } from '../../shared/ports/llm.js';
import type { Metastore, TableSchema } from '../../shared/ports/metastore.js';

const orders: TableSchema = {
  catalog: 'hive',
  schema: 'sales',
  table: 'orders',
  description: null,
  columns: [
    { name: 'order_id', type: 'bigint', description: null },
    { name: 'note', type: 'varchar', description: null },
    { name: 'region', type: 'varchar', description: null },
    { name: 'amount', type: 'decimal(10,2)', description: null },
  ],
};
const urn = 'urn:li:dataset:(urn:li:dataPlatform:dpm,hive.sales.orders,PROD)';

describe('tableRefsOf', () => {
  it('reads catalog, schema and table from a dataset urn', () => {
    expect(tableRefsOf(urn)).toEqual([{ catalog: 'hive', schema: 'sales', table: 'orders' }]);
  });
  it('offers every split when names hold dots', () => {
    expect(tableRefsOf('urn:li:dataset:(urn:li:dataPlatform:dpm,a.b.c.d,PROD)')).toEqual([
      { catalog: 'a', schema: 'b', table: 'c.d' },
      { catalog: 'a', schema: 'b.c', table: 'd' },
      { catalog: 'a.b', schema: 'c', table: 'd' },
    ]);
  });
  it('gives nothing for other urns or too few parts', () => {
    expect(tableRefsOf('urn:li:document:123')).toEqual([]);
    expect(tableRefsOf('urn:li:dataset:(urn:li:dataPlatform:dpm,a.b,PROD)')).toEqual([]);
  });
  it('caps the candidates of a name with very many dots', () => {
    expect(tableRefsOf(`urn:li:dataset:(urn:li:dataPlatform:dpm,${'x.'.repeat(40)}y,PROD)`)).toHaveLength(10);
  });
});

describe('document summaries', () => {
  it('match a table by name, singular or spaced words, as whole words only', () => {
    expect(mentions('All Orders are final.', 'orders')).toBe(true);
    expect(mentions('Each order is final.', 'orders')).toBe(true);
    expect(mentions('Each line item ships.', 'line_items')).toBe(true);
    expect(mentions('Reorders are rare.', 'orders')).toBe(false);
    expect(mentions('The bus leaves.', 'bus')).toBe(true);
  });
  it('are quoted by their first sentence, short and without double quotes', () => {
    expect(excerpt('First "one".  Second.')).toBe("First 'one'.");
    const long = excerpt(`${'word '.repeat(60)}end.`);
    expect(long.length).toBeLessThanOrEqual(160);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('suggestionsFor', () => {
  it('prefers a column with a glossary term and names the term', () => {
    const entity = {
      ...emptyAnnotations(urn),
      columns: { region: { description: null, tags: [], glossary_terms: ['Sales Region'] } },
    };
    const list = suggestionsFor('d', [{ schema: orders, entity }]);
    const top = list.find((s) => s.sql.includes('GROUP BY'))!;
    expect(top.sql).toContain('"region"');
    expect(top.question).toContain('(glossary term: Sales Region)');
  });
});

describe('parseRephrasing', () => {
  it('takes the wordings of a JSON answer, fenced or not', () => {
    const answer = '```json\n{"questions":[{"i":0,"question":" How  many? "},{"i":1,"question":"Total?"}]}\n```';
    expect([...parseRephrasing(answer, 2)]).toEqual([
      [0, 'How many?'],
      [1, 'Total?'],
    ]);
  });
  it('leaves out what is unusable', () => {
    const answer = JSON.stringify({
      questions: [{ i: 5, question: 'out of range' }, { i: 0, question: '' }, { i: 1.5, question: 'x' }, { i: 1 }],
    });
    expect(parseRephrasing(answer, 2).size).toBe(0);
    expect(parseRephrasing('not json', 2).size).toBe(0);
    expect(parseRephrasing('{"questions": 3}', 2).size).toBe(0);
  });
});

describe('QueryService with a model', () => {
  const table: DomainTable = { schema: orders, entity: { ...emptyAnnotations(urn), domain: 'd' } };
  const catalog = {
    getDomain: async () => ({ name: 'd', urn: 'urn:li:domain:d', description: null }),
    listDomainEntities: async () => [table.entity],
    datasetUrn: (c: string, s: string, t: string) => `urn:li:dataset:(urn:li:dataPlatform:dpm,${c}.${s}.${t},PROD)`,
  } as unknown as MetadataCatalog;
  const metastore = { getTables: async () => [orders] } as unknown as Metastore;

  it('rephrases questions and keeps SQL and ids', async () => {
    const model: ChatModel = {
      complete: async ({ prompt }) => {
        const { questions } = JSON.parse(prompt) as { questions: { i: number }[] };
        return JSON.stringify({ questions: questions.map(({ i }) => ({ i, question: `Q${i}?` })) });
      },
    };
    const plain = await new QueryService(metastore, catalog).suggest('d');
    const rephrased = await new QueryService(metastore, catalog, model).suggest('d');
    expect(rephrased.map((s) => s.question)).toEqual(plain.map((_, i) => `Q${i}?`));
    expect(rephrased.map((s) => [s.suggestion_id, s.sql])).toEqual(plain.map((s) => [s.suggestion_id, s.sql]));
  });

  it('answers the deterministic wording when the model fails', async () => {
    const model: ChatModel = { complete: () => Promise.reject(new Error('down')) };
    const plain = await new QueryService(metastore, catalog).suggest('d');
    expect(await new QueryService(metastore, catalog, model).suggest('d')).toEqual(plain);
  });
});
