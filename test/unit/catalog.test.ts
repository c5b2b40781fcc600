import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DataHubCatalog, DataHubError } from '../../shared/adapters/datahub.js';
import { Unavailable } from '../../shared/http/errors.js';
import { startFakeDataHub, type FakeDataHub } from '../support/datahub-server.js';
import { rejection } from '../support/rejection.js';

let datahub: FakeDataHub;

beforeAll(async () => {
  datahub = await startFakeDataHub();
});

afterAll(async () => {
  await datahub.stop();
});

beforeEach(() => datahub.reset());

const catalog = (over: { token?: string; gmsUrl?: string; timeoutMs?: number } = {}) =>
  new DataHubCatalog(
    { gmsUrl: over.gmsUrl ?? `${datahub.url}/`, token: over.token ?? datahub.token },
    { timeoutMs: over.timeoutMs ?? 2_000 },
  );

describe('definitions', () => {
  it('creates a tag, then finds it existing', async () => {
    const c = catalog();
    expect(await c.createTag('PII', 'Personal data')).toEqual({
      item: { name: 'PII', urn: 'urn:li:tag:PII', description: 'Personal data' },
      created: true,
    });
    expect(await c.createTag('PII', 'another description')).toEqual({
      item: { name: 'PII', urn: 'urn:li:tag:PII', description: 'Personal data' },
      created: false,
    });
    expect(datahub.tags.size).toBe(1);
    expect(datahub.requests.map((r) => r.operation)).toEqual(['GetTag', 'CreateTag', 'GetTag']);
    expect(datahub.requests[1]!.variables).toEqual({
      input: { id: 'PII', name: 'PII', description: 'Personal data' },
    });
  });

  it('creates a glossary term and a domain idempotently', async () => {
    const c = catalog();
    expect(await c.createGlossaryTerm('Customer')).toEqual({
      item: { name: 'Customer', urn: 'urn:li:glossaryTerm:Customer', description: null },
      created: true,
    });
    expect((await c.createGlossaryTerm('Customer')).created).toBe(false);
    expect(await c.createDomain('Finance', 'Money')).toEqual({
      item: { name: 'Finance', urn: 'urn:li:domain:Finance', description: 'Money' },
      created: true,
    });
    expect((await c.createDomain('Finance')).created).toBe(false);
    expect(await c.getDomain('Finance')).toEqual({
      name: 'Finance',
      urn: 'urn:li:domain:Finance',
      description: 'Money',
    });
    expect(await c.getGlossaryTerm('Nope')).toBeUndefined();
    expect(await c.getTag('Nope')).toBeUndefined();
    expect(await c.getDomain('Nope')).toBeUndefined();
  });

  it('concurrent creates of one name: exactly one is created', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => catalog().createDomain('Race')));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(results.every((r) => r.item.urn === 'urn:li:domain:Race')).toBe(true);
  });

  it('lists each kind sorted by name, across pages', async () => {
    const c = catalog();
    const names = Array.from({ length: 105 }, (_, i) => `t${String(104 - i).padStart(3, '0')}`);
    for (const name of names) datahub.tags.set(`urn:li:tag:${name}`, { name, description: null });
    await c.createGlossaryTerm('b');
    await c.createGlossaryTerm('a', 'first');
    await c.createDomain('Sales');
    await c.createDomain('Finance');
    const tags = await c.listTags();
    expect(tags).toHaveLength(105);
    expect(tags.map((t) => t.name)).toEqual([...names].sort());
    expect(datahub.requests.filter((r) => r.operation === 'SearchEntities')).toHaveLength(2);
    expect(await c.listGlossaryTerms()).toEqual([
      { name: 'a', urn: 'urn:li:glossaryTerm:a', description: 'first' },
      { name: 'b', urn: 'urn:li:glossaryTerm:b', description: null },
    ]);
    expect((await c.listDomains()).map((d) => d.urn)).toEqual(['urn:li:domain:Finance', 'urn:li:domain:Sales']);
  });
});

describe('entities', () => {
  it('builds dataset urns with the configured platform', () => {
    expect(catalog().datasetUrn('hive', 'sales', 'orders')).toBe(
      'urn:li:dataset:(urn:li:dataPlatform:trino,hive.sales.orders,PROD)',
    );
    expect(new DataHubCatalog({ gmsUrl: datahub.url, token: 't', platform: 'hive' }).datasetUrn('c', 's', 't')).toBe(
      'urn:li:dataset:(urn:li:dataPlatform:hive,c.s.t,PROD)',
    );
  });

  it('an entity DataHub does not have has empty annotations', async () => {
    expect(await catalog().getEntity('urn:li:dataset:(urn:li:dataPlatform:trino,a.b.c,PROD)')).toEqual({
      urn: 'urn:li:dataset:(urn:li:dataPlatform:trino,a.b.c,PROD)',
      description: null,
      domain: null,
      tags: [],
      glossary_terms: [],
      columns: new Map(),
    });
  });

  it('annotates a table and its columns, adding to what is there', async () => {
    const c = catalog();
    const urn = c.datasetUrn('hive', 'sales', 'orders');
    datahub.addDataset(urn, ['id', 'email', 'amount']);
    for (const tag of ['PII', 'Sensitive', 'Gold']) await c.createTag(tag);
    for (const term of ['Order', 'Email Address']) await c.createGlossaryTerm(term);
    await c.createDomain('Sales');
    await c.annotate(urn, {
      description: 'All orders',
      domain: 'Sales',
      tags: ['Sensitive'],
      glossaryTerms: ['Order'],
      columns: new Map([['email', { description: 'Buyer email', tags: ['PII'], glossaryTerms: ['Email Address'] }]]),
    });
    await c.annotate(urn, {
      tags: ['Gold'],
      columns: new Map([
        ['amount', { description: 'Total' }],
        ['email', { tags: ['Sensitive'] }],
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
        ['email', { description: 'Buyer email', tags: ['PII', 'Sensitive'], glossary_terms: ['Email Address'] }],
      ]),
    });
    const columnTags = datahub.requests.find(
      (r) => r.operation === 'AddTags' && (r.variables.input as { subResource?: string }).subResource === 'email',
    );
    expect(columnTags?.variables).toEqual({
      input: { tagUrns: ['urn:li:tag:PII'], resourceUrn: urn, subResource: 'email', subResourceType: 'DATASET_FIELD' },
    });
    expect(datahub.requests.find((r) => r.operation === 'SetDomain')?.variables).toEqual({
      domainUrn: 'urn:li:domain:Sales',
      entityUrn: urn,
    });
  });

  it("lists a domain's datasets through a search filtered on the domain, page by page", async () => {
    const c = catalog();
    await c.createDomain('Sales');
    await c.createDomain('HR');
    await c.createGlossaryTerm('Order');
    const urns = Array.from({ length: 230 }, (_, i) => c.datasetUrn('hive', 'sales', `t${String(i).padStart(3, '0')}`));
    for (const urn of urns) datahub.addDataset(urn, ['id']);
    const hr = c.datasetUrn('hive', 'hr', 'people');
    datahub.addDataset(hr, ['id']);
    for (const urn of urns) await c.annotate(urn, { domain: 'Sales' });
    await c.annotate(urns[0]!, { glossaryTerms: ['Order'], columns: new Map([['id', { description: 'key' }]]) });
    await c.annotate(hr, { domain: 'HR' });
    datahub.requests.length = 0;

    const entities = await c.listDomainEntities('Sales');
    expect(entities.map((e) => e.urn)).toEqual([...urns].sort());
    expect(entities[0]).toEqual({
      urn: urns[0],
      description: null,
      domain: 'Sales',
      tags: [],
      glossary_terms: ['Order'],
      columns: new Map([['id', { description: 'key', tags: [], glossary_terms: [] }]]),
    });
    const searches = datahub.requests.filter((r) => r.operation === 'DomainDatasets');
    expect(searches).toHaveLength(3);
    expect(searches[0]!.variables).toEqual({
      input: {
        types: ['DATASET'],
        query: '*',
        start: 0,
        count: 100,
        orFilters: [{ and: [{ field: 'domains', condition: 'EQUAL', values: ['urn:li:domain:Sales'] }] }],
      },
    });
    expect(await c.listDomainEntities('Nobody')).toEqual([]);
  });

  it('keeps fields named like Object.prototype properties as data', async () => {
    const c = catalog();
    const names = ['constructor', '__proto__', 'toString'];
    const urn = c.datasetUrn('hive', 'sales', 'odd');
    datahub.addDataset(urn, names);
    await c.createTag('PII');
    await c.annotate(urn, { columns: new Map(names.map((n) => [n, { description: `d-${n}`, tags: ['PII'] }])) });
    const entity = await c.getEntity(urn);
    expect([...entity.columns.keys()]).toEqual([...names].sort());
    for (const n of names)
      expect(entity.columns.get(n)).toEqual({ description: `d-${n}`, tags: ['PII'], glossary_terms: [] });
  });

  it('escapes dots in dataset urns like the built-in catalog, so two tables never share one', () => {
    const c = catalog();
    expect(c.datasetUrn('sales.eu', 'core', 'orders')).toBe(
      'urn:li:dataset:(urn:li:dataPlatform:trino,sales%2Eeu.core.orders,PROD)',
    );
    expect(c.datasetUrn('sales', 'eu.core', 'orders')).toBe(
      'urn:li:dataset:(urn:li:dataPlatform:trino,sales.eu%2Ecore.orders,PROD)',
    );
  });

  it('sends the bearer token on every call', async () => {
    const c = catalog();
    await c.createTag('x');
    await c.listDomains();
    expect(datahub.requests.length).toBeGreaterThan(0);
    expect(datahub.requests.every((r) => r.authorization === `Bearer ${datahub.token}`)).toBe(true);
  });
});

describe('failures', () => {
  it('surfaces a GraphQL error with DataHub’s message', async () => {
    const c = catalog();
    const urn = c.datasetUrn('hive', 'sales', 'orders');
    datahub.addDataset(urn, ['id']);
    const err = await rejection(c.annotate(urn, { tags: ['Unknown'] }));
    expect(err).toBeInstanceOf(DataHubError);
    expect(err).not.toBeInstanceOf(Unavailable);
    expect(err.message).toMatch(/AddTags: Failed to add Tag urn:li:tag:Unknown: it does not exist/);

    await c.createTag('PII');
    const missing = await rejection(c.annotate(c.datasetUrn('x', 'y', 'z'), { tags: ['PII'] }));
    expect(missing.message).toMatch(/Entity does not exist/);
  });

  it('a refused token is Unavailable', async () => {
    const err = await rejection(catalog({ token: 'wrong' }).listTags());
    expect(err).toBeInstanceOf(Unavailable);
    expect(err.message).toMatch(/refused the configured token \(HTTP 401\)/);
    expect(err.message).not.toContain('wrong');
  });

  it('a 500 is Unavailable', async () => {
    datahub.failNext = 1;
    const err = await rejection(catalog().createTag('PII'));
    expect(err).toBeInstanceOf(Unavailable);
    expect(err.message).toMatch(/DataHub failed \(HTTP 500\) on GetTag/);
    expect((await catalog().createTag('PII')).created).toBe(true);
  });

  it('a DataHub that is down or not listening is Unavailable', async () => {
    datahub.down = true;
    const err = await rejection(catalog().getTag('PII'));
    expect(err).toBeInstanceOf(Unavailable);
    expect(err.message).toMatch(/^DataHub is not reachable$/);
    datahub.down = false;
    const gone = await rejection(catalog({ gmsUrl: 'http://127.0.0.1:1' }).listDomains());
    expect(gone).toBeInstanceOf(Unavailable);
  });
});
