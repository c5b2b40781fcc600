import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { BuiltinCatalog, itemSize, MAX_ENTITY_BYTES } from '../../../shared/adapters/builtin-catalog.js';
import { DataHubCatalog } from '../../../shared/adapters/datahub.js';
import { documentClient } from '../../../shared/aws/clients.js';
import { TABLES, physicalTableName } from '../../../infra/tables.js';
import { AnnotationTooLarge } from '../../../shared/ports/catalog.js';
import { rejection } from '../../support/rejection.js';
import { provided } from '../provided.js';

const catalog = () =>
  new BuiltinCatalog(
    documentClient({
      region: 'us-east-1',
      endpoints: { dynamodb: provided('dynamodbEndpoint'), sqs: undefined, s3: undefined },
    }),
    physicalTableName(provided('stage'), TABLES.catalog),
  );

/** The table is shared by the whole suite: every test uses names of its own. */
const unique = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

describe('built-in catalog definitions', () => {
  it('creates tags, terms and domains idempotently', async () => {
    const c = catalog();
    const tag = unique('PII');
    expect(await c.createTag(tag, 'Personal data')).toEqual({
      item: { name: tag, urn: `urn:li:tag:${tag}`, description: 'Personal data' },
      created: true,
    });
    expect(await c.createTag(tag, 'changed')).toEqual({
      item: { name: tag, urn: `urn:li:tag:${tag}`, description: 'Personal data' },
      created: false,
    });
    const term = unique('Customer');
    expect((await c.createGlossaryTerm(term)).item).toEqual({
      name: term,
      urn: `urn:li:glossaryTerm:${term}`,
      description: null,
    });
    expect((await c.createGlossaryTerm(term)).created).toBe(false);
    const domain = unique('Finance');
    expect((await c.createDomain(domain, 'Money')).created).toBe(true);
    expect((await c.createDomain(domain)).created).toBe(false);
    expect(await c.getDomain(domain)).toEqual({ name: domain, urn: `urn:li:domain:${domain}`, description: 'Money' });
    expect(await c.getTag(unique('missing'))).toBeUndefined();
  });

  it('concurrent creates of one name: exactly one is created', async () => {
    const c = catalog();
    const tag = unique('race');
    const results = await Promise.all(Array.from({ length: 8 }, () => c.createTag(tag)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('lists each kind sorted by name', async () => {
    const c = catalog();
    const prefix = unique('list');
    for (const suffix of ['c', 'a', 'b']) {
      await c.createTag(`${prefix}-${suffix}`);
      await c.createGlossaryTerm(`${prefix}-${suffix}`);
      await c.createDomain(`${prefix}-${suffix}`);
    }
    for (const list of [await c.listTags(), await c.listGlossaryTerms(), await c.listDomains()]) {
      const names = list.map((i) => i.name);
      expect(names).toEqual([...names].sort());
      expect(names.filter((n) => n.startsWith(prefix))).toEqual(['a', 'b', 'c'].map((s) => `${prefix}-${s}`));
    }
    expect((await c.listTags()).find((t) => t.name === `${prefix}-a`)).toEqual({
      name: `${prefix}-a`,
      urn: `urn:li:tag:${prefix}-a`,
      description: null,
    });
  });
});

describe('built-in catalog entities', () => {
  it('an entity never annotated has empty annotations', async () => {
    const urn = catalog().datasetUrn('hive', unique('s'), 't');
    expect(await catalog().getEntity(urn)).toEqual({
      urn,
      description: null,
      domain: null,
      tags: [],
      glossary_terms: [],
      columns: new Map(),
    });
  });

  it('reads many entities in batches of 100, in the order asked, the unannotated ones empty', async () => {
    const c = catalog();
    const schema = unique('batch');
    const urns = Array.from({ length: 150 }, (_, i) => c.datasetUrn('hive', schema, `t${i}`));
    for (const i of [0, 99, 149]) await c.annotate(urns[i]!, { tags: [`tag-${i}`] });
    const client = (c as unknown as { db: { send: (...args: unknown[]) => unknown } }).db;
    const send = vi.spyOn(client, 'send');
    try {
      const asked = [urns[149]!, ...urns.slice(0, 149)];
      const entities = await c.getEntities(asked);
      expect(entities.map((e) => e.urn)).toEqual(asked);
      expect(entities.map((e) => e.tags).filter((tags) => tags.length > 0)).toEqual([
        ['tag-149'],
        ['tag-0'],
        ['tag-99'],
      ]);
      expect(entities[2]).toMatchObject({ description: null, domain: null, tags: [], glossary_terms: [] });
      expect(send.mock.calls.map(([command]) => (command as object).constructor.name)).toEqual([
        'BatchGetCommand',
        'BatchGetCommand',
      ]);
    } finally {
      send.mockRestore();
    }
  });

  it('annotates a table and its columns, adding to what is there', async () => {
    const c = catalog();
    const urn = c.datasetUrn('hive', unique('sales'), 'orders');
    await c.annotate(urn, {
      description: 'All orders',
      domain: 'Sales',
      tags: ['Sensitive'],
      glossaryTerms: ['Order'],
      columns: new Map([['e:mail', { description: 'Buyer email', tags: ['PII'], glossaryTerms: ['Email Address'] }]]),
    });
    await c.annotate(urn, {
      tags: ['Gold', 'Sensitive'],
      columns: new Map([
        ['amount', { description: 'Total' }],
        ['e:mail', { tags: ['Sensitive'], glossaryTerms: [] }],
      ]),
    });
    expect(await c.getEntity(urn)).toEqual({
      urn,
      description: 'All orders',
      domain: 'Sales',
      tags: ['Gold', 'Sensitive'],
      glossary_terms: ['Order'],
      columns: new Map([
        ['amount', { description: 'Total', tags: [], glossary_terms: [] }],
        ['e:mail', { description: 'Buyer email', tags: ['PII', 'Sensitive'], glossary_terms: ['Email Address'] }],
      ]),
    });
  });

  it('a change with very many columns is written whole', async () => {
    const c = catalog();
    const urn = c.datasetUrn('hive', unique('wide'), 't');
    const columns = new Map(
      Array.from({ length: 300 }, (_, i) => [
        `column_${i}`,
        { description: `d${i}`, tags: ['PII'], glossaryTerms: ['T'] },
      ]),
    );
    await c.annotate(urn, { columns });
    const entity = await c.getEntity(urn);
    expect(entity.columns.size).toBe(300);
    expect(entity.columns.get('column_299')).toEqual({ description: 'd299', tags: ['PII'], glossary_terms: ['T'] });
  });

  it('10 concurrent annotate calls adding different tags all survive', async () => {
    const c = catalog();
    const urn = c.datasetUrn('hive', unique('race'), 't');
    const tags = Array.from({ length: 10 }, (_, i) => `tag-${i}`);
    await Promise.all(
      tags.map((tag) =>
        c.annotate(urn, { tags: [tag], columns: new Map([['id', { tags: [tag], glossaryTerms: [tag] }]]) }),
      ),
    );
    const entity = await c.getEntity(urn);
    expect(entity.tags).toEqual([...tags].sort());
    expect(entity.columns.get('id')).toEqual({
      description: null,
      tags: [...tags].sort(),
      glossary_terms: [...tags].sort(),
    });
  });

  it("lists a domain's entities (tables and documents) from the by_domain index, following a domain move", async () => {
    const c = catalog();
    const [sales, hr] = [unique('Sales'), unique('HR')];
    await c.createDomain(sales);
    await c.createDomain(hr);
    const schema = unique('s');
    const urns = Array.from({ length: 30 }, (_, i) => c.datasetUrn('hive', schema, `t${i}`));
    await Promise.all(
      urns.map((urn) => c.annotate(urn, { domain: sales, columns: new Map([['id', { description: 'key' }]]) })),
    );
    const doc = `urn:li:document:${randomUUID()}`;
    await c.annotate(doc, { domain: sales, description: 'About orders' });
    // Annotated without a domain: not in any domain's list.
    await c.annotate(c.datasetUrn('hive', schema, 'loose'), { tags: ['x'] });
    // Moved to another domain: leaves the first.
    await c.annotate(urns[0]!, { domain: hr });

    const entities = await c.listDomainEntities(sales);
    expect(entities.map((e) => e.urn)).toEqual([...urns.slice(1), doc].sort());
    expect(entities.find((e) => e.urn === doc)).toEqual({
      urn: doc,
      description: 'About orders',
      domain: sales,
      tags: [],
      glossary_terms: [],
      columns: new Map(),
    });
    expect(entities.find((e) => e.urn === urns[1])?.columns).toEqual(
      new Map([['id', { description: 'key', tags: [], glossary_terms: [] }]]),
    );
    expect((await c.listDomainEntities(hr)).map((e) => e.urn)).toEqual([urns[0]]);
    expect(await c.listDomainEntities(unique('empty'))).toEqual([]);
  });

  it('keeps columns named like Object.prototype properties as data, and Object.prototype untouched', async () => {
    const c = catalog();
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
    const urn = c.datasetUrn('hive', unique('proto'), 't');
    await c.annotate(urn, {
      columns: new Map(names.map((name) => [name, { description: `d-${name}`, tags: [`t-${name}`] }])),
    });
    const entity = await c.getEntity(urn);
    expect([...entity.columns.keys()]).toEqual([...names].sort());
    for (const name of names)
      expect(entity.columns.get(name)).toEqual({ description: `d-${name}`, tags: [`t-${name}`], glossary_terms: [] });
    expect((await c.getEntity(c.datasetUrn('hive', unique('fresh'), 't'))).columns.size).toBe(0);
    expect(Object.hasOwn(Object, 'tags') || Object.hasOwn(Object, 'description')).toBe(false);
  });

  it('refuses a change that would not fit one item (AnnotationTooLarge) having written nothing', async () => {
    const c = catalog();
    const urn = c.datasetUrn('hive', unique('big'), 't');
    await c.annotate(urn, { description: 'kept', columns: new Map([['a', { description: 'kept' }]]) });
    const before = await c.getEntity(urn);
    const columns = new Map(Array.from({ length: 120 }, (_, i) => [`c${i}`, { description: 'x'.repeat(4000) }]));
    const err = await rejection(c.annotate(urn, { description: 'changed', columns }));
    expect(err).toBeInstanceOf(AnnotationTooLarge);
    expect((err as AnnotationTooLarge).bytes).toBeGreaterThan(MAX_ENTITY_BYTES);
    expect(await rejection(c.checkAnnotation(urn, { columns }))).toBeInstanceOf(AnnotationTooLarge);
    expect(await c.getEntity(urn)).toEqual(before);
    // Just under the limit is written whole.
    const fitting = new Map(Array.from({ length: 95 }, (_, i) => [`c${i}`, { description: 'x'.repeat(4000) }]));
    await c.checkAnnotation(urn, { columns: fitting });
    await c.annotate(urn, { columns: fitting });
    expect((await c.getEntity(urn)).columns.size).toBe(96);
  });

  it('counts an item as DynamoDB does: names and values in UTF-8 bytes, set members summed', () => {
    expect(itemSize({ ab: 'é', tags: new Set(['x', 'yz']), n: 1 })).toBe(2 + 2 + 4 + 3 + 1 + 21);
  });

  it('urns have the DataHub adapter’s format (platform dpm)', async () => {
    const c = catalog();
    const datahub = new DataHubCatalog({ gmsUrl: 'http://127.0.0.1:1', token: 't', platform: 'dpm' });
    expect(c.datasetUrn('hive', 'sales', 'orders')).toBe(
      'urn:li:dataset:(urn:li:dataPlatform:dpm,hive.sales.orders,PROD)',
    );
    expect(c.datasetUrn('hive', 'sales', 'orders')).toBe(datahub.datasetUrn('hive', 'sales', 'orders'));
    const name = unique('Fmt');
    expect((await c.createTag(name)).item.urn).toBe(`urn:li:tag:${name}`);
    expect((await c.createGlossaryTerm(name)).item.urn).toBe(`urn:li:glossaryTerm:${name}`);
    expect((await c.createDomain(name)).item.urn).toBe(`urn:li:domain:${name}`);
  });
});
