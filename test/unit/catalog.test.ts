import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DataHubCatalog, DataHubError } from '../../shared/adapters/datahub.js';
import { statusOf } from '../../shared/http/errors.js';
import { Unavailable } from '../../shared/errors.js';
import { documentUrnOf } from '../../shared/ports/catalog.js';
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
    // The table's description through its editable properties, a column's through updateDescription.
    expect(datahub.requests.find((r) => r.operation === 'UpdateDataset')?.variables).toEqual({
      urn,
      input: { editableProperties: { description: 'All orders' } },
    });
    expect(datahub.requests.filter((r) => r.operation === 'UpdateDescription').map((r) => r.variables.input)).toEqual([
      { description: 'Buyer email', resourceUrn: urn, subResource: 'email', subResourceType: 'DATASET_FIELD' },
      { description: 'Total', resourceUrn: urn, subResource: 'amount', subResourceType: 'DATASET_FIELD' },
    ]);
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
    const searches = datahub.requests.filter((r) => r.operation === 'DomainEntities');
    expect(searches).toHaveLength(3);
    expect(searches[0]!.variables).toEqual({
      input: {
        types: ['DATASET', 'DOCUMENT'],
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

const doc = (id: string, over: { title?: string; subtype?: string | null } = {}) => ({
  urn: documentUrnOf(id),
  id,
  title: over.title ?? 'report.pdf',
  subtype: over.subtype ?? null,
});

describe('documents', () => {
  it('registers a document as a DataHub Document entity with its id, title and subtype', async () => {
    const c = catalog();
    await c.registerDocument(doc('d-1', { title: 'q3.pdf', subtype: 'invoice' }));
    expect(datahub.requests.map((r) => r.operation)).toEqual(['CreateDocument']);
    expect(datahub.requests[0]!.variables).toEqual({
      input: {
        id: 'd-1',
        title: 'q3.pdf',
        contents: { text: '' },
        subType: 'invoice',
        settings: { showInGlobalContext: false },
      },
    });
    expect(datahub.documents.get('urn:li:document:d-1')).toMatchObject({
      title: 'q3.pdf',
      text: '',
      subType: 'invoice',
      showInGlobalContext: false,
    });
    // Registered and never annotated: empty annotations, read with the document query.
    expect(await c.getEntity('urn:li:document:d-1')).toEqual({
      urn: 'urn:li:document:d-1',
      description: null,
      domain: null,
      tags: [],
      glossary_terms: [],
      columns: new Map(),
    });
    expect(datahub.requests.at(-1)!.operation).toBe('GetDocument');
  });

  it('registering again (a retry) succeeds and changes nothing', async () => {
    const c = catalog();
    await c.registerDocument(doc('d-2', { title: 'first.pdf' }));
    await c.registerDocument(doc('d-2', { title: 'second.pdf' }));
    expect(datahub.documents.size).toBe(1);
    expect(datahub.documents.get('urn:li:document:d-2')!.title).toBe('first.pdf');
  });

  it('annotates a registered document (E6) and reads it back with document(urn)', async () => {
    const c = catalog();
    const urn = documentUrnOf('d-3');
    await c.registerDocument(doc('d-3'));
    await c.createTag('Finance');
    await c.createGlossaryTerm('Invoice');
    await c.createDomain('Sales');
    await c.annotate(urn, {
      tags: ['Finance'],
      glossaryTerms: ['Invoice'],
      description: 'Quarterly invoices',
      domain: 'Sales',
    });
    expect(await c.getEntity(urn)).toEqual({
      urn,
      description: 'Quarterly invoices',
      domain: 'Sales',
      tags: ['Finance'],
      glossary_terms: ['Invoice'],
      columns: new Map(),
    });
    const ops = datahub.requests.map((r) => r.operation);
    // The summary goes to the document's text: updateDescription has no document case in DataHub.
    expect(ops).toContain('UpdateDocumentContents');
    expect(ops).not.toContain('UpdateDescription');
    expect(ops).not.toContain('GetDataset');
    expect(datahub.requests.find((r) => r.operation === 'UpdateDocumentContents')!.variables).toEqual({
      input: { urn, contents: { text: 'Quarterly invoices' } },
    });
    expect(datahub.requests.find((r) => r.operation === 'AddTags')!.variables).toEqual({
      input: { tagUrns: ['urn:li:tag:Finance'], resourceUrn: urn },
    });
    // The domain's entities include the document.
    expect((await c.listDomainEntities('Sales')).map((e) => [e.urn, e.description])).toEqual([
      [urn, 'Quarterly invoices'],
    ]);
  });

  it('annotating a document DataHub never got fails with DataHub’s message', async () => {
    const c = catalog();
    await c.createTag('Finance');
    const err = await rejection(c.annotate(documentUrnOf('never'), { tags: ['Finance'] }));
    expect(err).toBeInstanceOf(DataHubError);
    expect(err.message).toMatch(/urn:li:document:never\. Entity does not exist/);
    // For the caller the catalog failed: a 503, never a 500.
    expect(statusOf(err)).toBe(503);
  });

  it('a document has no columns', async () => {
    const c = catalog();
    await c.registerDocument(doc('d-4'));
    const err = await rejection(c.annotate(documentUrnOf('d-4'), { columns: new Map([['x', { description: 'y' }]]) }));
    expect(err).toBeInstanceOf(DataHubError);
  });

  it('unregisters a document (compensation), and unregistering a missing one succeeds', async () => {
    const c = catalog();
    await c.registerDocument(doc('d-5'));
    await c.unregisterDocument(documentUrnOf('d-5'));
    expect(datahub.documents.size).toBe(0);
    expect(datahub.requests.at(-1)!.operation).toBe('DeleteDocument');
    await c.unregisterDocument(documentUrnOf('d-5'));
    expect(datahub.requests.at(-1)!.operation).toBe('DocumentExists');
  });

  it('a DataHub that is down fails the registration as Unavailable, creating nothing', async () => {
    datahub.down = true;
    const err = await rejection(catalog().registerDocument(doc('d-6')));
    expect(err).toBeInstanceOf(Unavailable);
    datahub.down = false;
    expect(datahub.documents.size).toBe(0);
  });
});

describe('the fake answers as DataHub’s schema does', () => {
  const call = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${datahub.url}/api/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${datahub.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string }[] };
  };

  it('refuses a field the type does not have (a Document has no description)', async () => {
    const body = await call('query Q($urn: String!) { document(urn: $urn) { urn description } }', {
      urn: 'urn:li:document:x',
    });
    expect(body.errors?.[0]?.message).toMatch(/Field 'description' in type 'Document' is undefined/);
    expect(body.data).toBeUndefined();
  });

  it('refuses an input field the input type does not have, and a missing required one', async () => {
    const unknown = await call('mutation M($input: CreateDocumentInput!) { createDocument(input: $input) }', {
      input: { id: 'a', contents: { text: '' }, description: 'no such field' },
    });
    expect(unknown.errors?.[0]?.message).toMatch(/'description' is not defined for type 'CreateDocumentInput'/);
    const missing = await call('mutation M($input: CreateDocumentInput!) { createDocument(input: $input) }', {
      input: { id: 'a' },
    });
    expect(missing.errors?.[0]?.message).toMatch(/NonNull type 'DocumentContentInput!'/);
    expect(datahub.documents.size).toBe(0);
  });

  it('refuses unknown operations, a wrongly typed variable and a bad enum value', async () => {
    expect((await call('mutation M { upsertDocument }')).errors?.[0]?.message).toMatch(/FieldUndefined/);
    expect(
      (await call('query Q($urn: String) { document(urn: $urn) { urn } }', { urn: 'u' })).errors?.[0]?.message,
    ).toMatch(/VariableTypeMismatch/);
    const badEnum = await call('mutation M($input: CreateDocumentInput!) { createDocument(input: $input) }', {
      input: { contents: { text: '' }, state: 'DRAFT' },
    });
    expect(badEnum.errors?.[0]?.message).toMatch(/enum 'DocumentState'/);
  });

  it('answers exactly the selected fields', async () => {
    await catalog().registerDocument(doc('sel'));
    const body = await call('query Q($urn: String!) { document(urn: $urn) { urn info { title } } }', {
      urn: 'urn:li:document:sel',
    });
    expect(body).toEqual({ data: { document: { urn: 'urn:li:document:sel', info: { title: 'report.pdf' } } } });
  });

  it('refuses updateDescription on a document and on a dataset without a column, as DataHub does', async () => {
    await catalog().registerDocument(doc('desc'));
    const onDocument = await call('mutation M($input: DescriptionUpdateInput!) { updateDescription(input: $input) }', {
      input: { description: 'x', resourceUrn: 'urn:li:document:desc' },
    });
    expect(onDocument.errors?.[0]?.message).toMatch(/Unsupported resource type urn:li:document:desc/);
    const urn = catalog().datasetUrn('hive', 'sales', 'orders');
    datahub.addDataset(urn, ['id']);
    const onTable = await call('mutation M($input: DescriptionUpdateInput!) { updateDescription(input: $input) }', {
      input: { description: 'x', resourceUrn: urn },
    });
    expect(onTable.errors?.[0]?.message).toMatch(/without subresource is not currently supported/);
  });
});

describe('failures', () => {
  it('surfaces a GraphQL error with DataHub’s message', async () => {
    const c = catalog();
    const urn = c.datasetUrn('hive', 'sales', 'orders');
    datahub.addDataset(urn, ['id']);
    const err = await rejection(c.annotate(urn, { tags: ['Unknown'] }));
    expect(err).toBeInstanceOf(DataHubError);
    // A refusal is the catalog failing the request: 503 with DataHub's message, not a 500.
    expect(err).toBeInstanceOf(Unavailable);
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
