import { describe, expect, it } from 'vitest';
import {
  excerpt,
  mentions,
  parseRephrasing,
  suggestionsFor,
  type DomainTable,
} from '../../functions/query/questions.js';
import { type QueryCatalog, type QueryMetastore, QueryService } from '../../functions/query/service.js';
import { datasetUrnOf, emptyAnnotations, parseDatasetUrn } from '../../shared/ports/catalog.js';
import type { ChatModel } from '../../shared/ports/llm.js';
import type { TableSchema } from '../../shared/ports/metastore.js';

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

describe('dataset urns: one builder, one parser', () => {
  it('reads catalog, schema and table back from a dataset urn', () => {
    expect(parseDatasetUrn(urn)).toEqual({ platform: 'dpm', catalog: 'hive', schema: 'sales', table: 'orders' });
  });
  it('gives two tables whose names split the same dots two urns, each read back as its own table', () => {
    const a = datasetUrnOf('dpm', 'sales.eu', 'core', 'orders');
    const b = datasetUrnOf('dpm', 'sales', 'eu.core', 'orders');
    expect(a).toBe('urn:li:dataset:(urn:li:dataPlatform:dpm,sales%2Eeu.core.orders,PROD)');
    expect(b).toBe('urn:li:dataset:(urn:li:dataPlatform:dpm,sales.eu%2Ecore.orders,PROD)');
    expect(parseDatasetUrn(a)).toEqual({ platform: 'dpm', catalog: 'sales.eu', schema: 'core', table: 'orders' });
    expect(parseDatasetUrn(b)).toEqual({ platform: 'dpm', catalog: 'sales', schema: 'eu.core', table: 'orders' });
  });
  it('round-trips names with the urn delimiters and the escape character', () => {
    for (const [c, s, t] of [
      ['a%2Eb', 's', 't'],
      ['x,y', '(s)', 't.'],
      ['%', '%25', '..'],
      ['constructor', '__proto__', 'toString'],
    ] as const) {
      const built = datasetUrnOf('trino', c, s, t);
      expect(built.match(/,/g)).toHaveLength(2);
      expect(parseDatasetUrn(built)).toEqual({ platform: 'trino', catalog: c, schema: s, table: t });
    }
  });
  it('gives nothing for other urns, a wrong number of parts, or a non-canonical escape', () => {
    expect(parseDatasetUrn('urn:li:document:123')).toBeUndefined();
    expect(parseDatasetUrn('urn:li:dataset:(urn:li:dataPlatform:dpm,a.b,PROD)')).toBeUndefined();
    // Unescaped dots are ambiguous: never guessed at.
    expect(parseDatasetUrn('urn:li:dataset:(urn:li:dataPlatform:dpm,a.b.c.d,PROD)')).toBeUndefined();
    expect(parseDatasetUrn('urn:li:dataset:(urn:li:dataPlatform:dpm,%61.b.c,PROD)')).toBeUndefined();
    expect(parseDatasetUrn('urn:li:dataset:(urn:li:dataPlatform:dpm,%E0%A4.b.c,PROD)')).toBeUndefined();
    expect(parseDatasetUrn('urn:li:dataset:(urn:li:dataPlatform:dpm,.b.c,PROD)')).toBeUndefined();
  });
});

describe('suggestions over columns named like object properties', () => {
  it('reads each column of its own, not what Object.prototype has under that name', () => {
    const odd: TableSchema = {
      ...orders,
      columns: ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'].map((name) => ({
        name,
        type: 'varchar',
        description: null,
      })),
    };
    const entity = {
      ...emptyAnnotations(urn),
      columns: new Map([['toString', { description: null, tags: [], glossary_terms: ['Label'] }]]),
    };
    const list = suggestionsFor('d', [{ schema: odd, entity }]);
    const top = list.find((s) => s.sql.includes('GROUP BY'))!;
    expect(top.sql).toContain('"toString"');
    expect(top.question).toContain('(glossary term: Label)');
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
      columns: new Map([['region', { description: null, tags: [], glossary_terms: ['Sales Region'] }]]),
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
  const catalog: QueryCatalog = {
    getDomain: async () => ({ name: 'd', urn: 'urn:li:domain:d', description: null }),
    listDomainEntities: async () => [table.entity],
    datasetUrn: (c, s, t) => datasetUrnOf('dpm', c, s, t),
  };
  const metastore: QueryMetastore = { getTables: async () => [orders] };

  it('rephrases questions and keeps SQL and ids', async () => {
    const model: ChatModel = {
      provider: 'openai',
      model: 'm',
      complete: async ({ prompt }) => {
        const { questions } = JSON.parse(prompt) as { questions: { i: number }[] };
        const text = JSON.stringify({ questions: questions.map(({ i }) => ({ i, question: `Q${i}?` })) });
        return { text, model: 'm' };
      },
    };
    const plain = await new QueryService(metastore, catalog).suggest('d');
    const rephrased = await new QueryService(metastore, catalog, model).suggest('d');
    expect(rephrased.map((s) => s.question)).toEqual(plain.map((_, i) => `Q${i}?`));
    expect(rephrased.map((s) => [s.suggestion_id, s.sql])).toEqual(plain.map((s) => [s.suggestion_id, s.sql]));
  });

  it('answers the deterministic wording when the model fails', async () => {
    const model: ChatModel = { provider: 'openai', model: 'm', complete: () => Promise.reject(new Error('down')) };
    const plain = await new QueryService(metastore, catalog).suggest('d');
    expect(await new QueryService(metastore, catalog, model).suggest('d')).toEqual(plain);
  });
});
