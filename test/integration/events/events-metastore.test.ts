import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, slug, token } from '../helpers.js';
import { type Envelope, eventsBefore, eventsOf as feedEvents, expectNothingMore } from '../event-feed.js';

// docs/events-and-webhooks.md for the metastore and catalog (E5, E10): `metastore.table.registered` and
// `catalog.classification.accepted` share the table's subject `metastore/{c}/{s}/{t}` (one
// gap-free sequence across both); `catalog.domain.created` is `catalog/domains/{name}`.
// Data: the table as its GET answers after the change (an acceptance adds what it
// accepted: its answer without `success`), the domain as the domain list answers it.

let events: string;
let admin: string;
let alice: string;
let aliceName: string;
/** Makes the change that marks the end of what a test checks (event-feed.ts eventsBefore). */
let marker: string;
const MARKER = 'ms-events-marker';
const byMarker = (e: Envelope) => e.actor === MARKER;

beforeAll(async () => {
  marker = await adminToken(MARKER);
  events = await adminToken('ms-events-reader');
  admin = await adminToken('ms-events-admin');
  aliceName = slug('alice');
  alice = await token(aliceName);
});

const eventsOf = (subject: string, count: number) => feedEvents(subject, count, events);

const tablePath = (c: string, s: string, t: string) => `/api/metastore/catalogs/${c}/schemas/${s}/tables/${t}`;
const acceptPath = (c: string, s: string, t: string) => `/api/metastore/classify/${c}/${s}/${t}/accept`;

function expectEnvelope(e: Envelope, subject: string) {
  expect(e).toMatchObject({
    specversion: '1.0',
    source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
    subject,
    datacontenttype: 'application/json',
  });
  expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
  expect(e.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(JSON.stringify(e.data)).not.toMatch(/principal|ev_|"pk"|"sk"|ENTITY#|"version"|pending_domain/);
}

async function domains(): Promise<Record<string, unknown>[]> {
  const all: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const res: Awaited<ReturnType<typeof api>> = await api(
      `/api/catalog/domains?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token: alice },
    );
    expect(res.status).toBe(200);
    all.push(...(res.body as Record<string, unknown>[]));
    cursor = res.headers.get('x-next-cursor');
  } while (cursor);
  return all;
}

describe('table events', () => {
  it('registrations and acceptances of one table: one sequence, the GET answer as data', async () => {
    const c = slug('cat');
    const subject = `metastore/${c}/sales/orders`;
    const path = tablePath(c, 'sales', 'orders');
    const domain = slug('events-finance');
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } })).status).toBe(
      201,
    );
    const body = {
      description: 'Customer orders',
      domain,
      columns: [
        { name: 'order_id', type: 'bigint', description: 'the order' },
        { name: 'email', type: 'varchar' },
      ],
    };
    // refused: not an admin (403), an unknown domain and a repeated column (422)
    expect((await api(path, { method: 'PUT', token: alice, body })).status).toBe(403);
    expect((await api(path, { method: 'PUT', token: admin, body: { ...body, domain: slug('nope') } })).status).toBe(
      422,
    );
    const twice = { ...body, columns: [...body.columns, { name: 'email', type: 'text' }] };
    expect((await api(path, { method: 'PUT', token: admin, body: twice })).status).toBe(422);
    // refused: nothing to accept on a table not registered yet (404)
    expect(
      (await api(acceptPath(c, 'sales', 'orders'), { method: 'POST', token: alice, body: { table: {} } })).status,
    ).toBe(404);

    const registered = await api(path, { method: 'PUT', token: admin, body });
    expect(registered.status, registered.text).toBe(200);
    const first = await eventsOf(subject, 1);
    expect(first.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.metastore.table.registered', 1, 'ms-events-admin'],
    ]);
    expect(first[0]!.data).toEqual(registered.body);
    expect(first[0]!.data).toMatchObject({ description: 'Customer orders', domain });

    const tag = slug('PII');
    const term = slug('Revenue');
    const acceptance = {
      table: { accepted_tags: [tag], new_glossary_terms: [{ term_name: term, term_description: 'money in' }] },
      columns: [{ column_name: 'email', accepted_classifications: [tag], description: 'where to write' }],
    };
    // refused: an unknown column and a glossary term that must exist (422)
    const badColumn = { table: {}, columns: [{ column_name: 'nope', accepted_tags: [tag] }] };
    expect(
      (await api(acceptPath(c, 'sales', 'orders'), { method: 'POST', token: alice, body: badColumn })).status,
    ).toBe(422);
    const missingTerm = { table: { accepted_glossary_terms: [slug('missing')] } };
    expect(
      (await api(acceptPath(c, 'sales', 'orders'), { method: 'POST', token: alice, body: missingTerm })).status,
    ).toBe(422);
    const accepted = await api(acceptPath(c, 'sales', 'orders'), { method: 'POST', token: alice, body: acceptance });
    expect(accepted.status, accepted.text).toBe(200);
    const afterAcceptance = await api(path, { token: alice });
    // the same body again changes nothing: no event
    const again = await api(acceptPath(c, 'sales', 'orders'), { method: 'POST', token: alice, body: acceptance });
    expect(again.status).toBe(200);

    // registered again with another column: the annotations stay, the schema is replaced
    const reregistered = await api(path, {
      method: 'PUT',
      token: admin,
      body: { columns: [...body.columns, { name: 'amount', type: 'decimal(10,2)' }] },
    });
    expect(reregistered.status, reregistered.text).toBe(200);

    const current = await api(path, { token: alice });
    // The marker: the table registered once more; the refused changes' events (and one of the
    // acceptance that changed nothing) would come before it.
    const once = await api(path, {
      method: 'PUT',
      token: marker,
      body: { columns: [...body.columns, { name: 'amount', type: 'decimal(10,2)' }] },
    });
    expect(once.status, once.text).toBe(200);
    const { before: found, marker: marked } = await eventsBefore(subject, byMarker, events);
    expect(marked.type).toBe('dpm.metastore.table.registered');
    expect(found.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.metastore.table.registered', 1, 'ms-events-admin'],
      ['dpm.catalog.classification.accepted', 2, aliceName],
      ['dpm.metastore.table.registered', 3, 'ms-events-admin'],
    ]);
    const { success, ...what } = accepted.body;
    expect([success, what.column_tags_applied]).toEqual([true, { email: [tag] }]);
    expect(found[1]!.data).toEqual({ ...afterAcceptance.body, ...what });
    expect(found[1]!.data).toMatchObject({
      tags: [tag],
      glossary_terms: [term],
      glossary_terms_created: 1,
      table_tags_applied: [tag],
      columns: [
        expect.objectContaining({ name: 'order_id', tags: [] }),
        expect.objectContaining({ name: 'email', tags: [tag] }),
      ],
    });
    expect(found[2]!.data).toEqual(reregistered.body);
    expect(found[2]!.data).toEqual(current.body);
    expect((found[2]!.data.columns as { name: string }[]).map((col) => col.name)).toEqual([
      'order_id',
      'email',
      'amount',
    ]);
    for (const e of found) expectEnvelope(e, subject);
    // no event for the table that was never registered under another name
    expect(await eventsOf(`metastore/${c}/sales/missing`, 0)).toEqual([]);
  });

  it('keeps one gap-free sequence when a table is registered and classified concurrently', async () => {
    const c = slug('cat');
    const subject = `metastore/${c}/s/t`;
    const path = tablePath(c, 's', 't');
    const columns = [{ name: 'id', type: 'bigint' }];
    expect((await api(path, { method: 'PUT', token: admin, body: { columns } })).status).toBe(200);
    const tags = Array.from({ length: 5 }, () => slug('tag'));
    const statuses = await Promise.all([
      ...tags.map((tag) =>
        api(acceptPath(c, 's', 't'), { method: 'POST', token: alice, body: { table: { accepted_tags: [tag] } } }).then(
          (r) => r.status,
        ),
      ),
      ...[1, 2].map(() => api(path, { method: 'PUT', token: admin, body: { columns } }).then((r) => r.status)),
    ]);
    expect(statuses).toEqual(Array(7).fill(200));
    const current = await api(path, { token: alice });
    // The marker: one more registration, after every change of the race answered.
    expect((await api(path, { method: 'PUT', token: marker, body: { columns } })).status).toBe(200);
    const { before: found, marker: marked } = await eventsBefore(subject, byMarker, events);
    expect(marked.type).toBe('dpm.metastore.table.registered');
    expect(found.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(found.filter((e) => e.type === 'dpm.catalog.classification.accepted')).toHaveLength(5);
    expect(found.filter((e) => e.type === 'dpm.metastore.table.registered')).toHaveLength(3);
    // each acceptance's data holds every tag accepted before it
    const last = found.filter((e) => e.type === 'dpm.catalog.classification.accepted').at(-1)!;
    expect(last.data.tags).toEqual([...tags].sort());
    // the last change's data is the table as it is now (an acceptance adds what it accepted)
    const {
      table_tags_applied,
      column_tags_applied,
      glossary_terms_linked,
      glossary_terms_created,
      descriptions_updated,
      ...table
    } = found.at(-1)!.data;
    expect(table).toEqual(current.body);
  });
});

describe('table events with columns named like Object.prototype properties', () => {
  it('records the acceptance, its data the table as GET answers it', async () => {
    const c = slug('cat');
    const subject = `metastore/${c}/s/odd`;
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
    const columns = [{ name: 'id', type: 'bigint' }, ...names.map((name) => ({ name, type: 'varchar' }))];
    expect((await api(tablePath(c, 's', 'odd'), { method: 'PUT', token: admin, body: { columns } })).status).toBe(200);
    const accepted = await api(acceptPath(c, 's', 'odd'), {
      method: 'POST',
      token: alice,
      body: {
        table: {},
        columns: names.map((name) => ({ column_name: name, accepted_tags: [`tag-of-${name}`], description: name })),
      },
    });
    expect(accepted.status, accepted.text).toBe(200);
    const found = await eventsOf(subject, 2);
    expect(found.map((e) => [e.type, e.sequence])).toEqual([
      ['dpm.metastore.table.registered', 1],
      ['dpm.catalog.classification.accepted', 2],
    ]);
    const { success: _success, ...what } = accepted.body;
    expect(found[1]!.data).toEqual({ ...(await api(tablePath(c, 's', 'odd'), { token: alice })).body, ...what });
    const byName = new Map(
      (found[1]!.data.columns as { name: string; tags: string[] }[]).map((col) => [col.name, col]),
    );
    for (const name of names) expect(byName.get(name)?.tags).toEqual([`tag-of-${name}`]);
  });
});

describe('domain events', () => {
  it('a created domain is one event, its data the domain as listed; none for a refused creation', async () => {
    const name = slug('events-domain');
    const subject = `catalog/domains/${name}`;
    // refused: not an admin
    expect((await api('/api/catalog/domains', { method: 'POST', token: alice, body: { name } })).status).toBe(403);
    const created = await api('/api/catalog/domains', {
      method: 'POST',
      token: admin,
      body: { name, description: 'Money' },
    });
    expect(created.status, created.text).toBe(201);
    // refused: it exists
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name } })).status).toBe(409);

    const found = await eventsOf(subject, 1);
    // A domain never changes once made: no later change can mark the end. The store's own
    // record says that the refused creation after it made no event.
    await expectNothingMore(subject, found, { table: 'catalog', key: { pk: 'DOMAIN', sk: name }, is: 'kept' });
    expect(found.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.catalog.domain.created', 1, 'ms-events-admin'],
    ]);
    const listed = (await domains()).find((d) => d.name === name);
    // exactly the domain's fields: the stamp never shows
    expect(listed).toEqual({ name, urn: `urn:li:domain:${name}`, description: 'Money', pending_documents: [] });
    expect(found[0]!.data).toEqual(listed);
    expect(found[0]!.data).toEqual(created.body);
    expectEnvelope(found[0]!, subject);
  });

  it('no event for a domain whose creation was refused', async () => {
    const name = slug('events-domain');
    expect((await api('/api/catalog/domains', { method: 'POST', token: alice, body: { name } })).status).toBe(403);
    const tooLong = await api('/api/catalog/domains', {
      method: 'POST',
      token: admin,
      body: { name: 'x'.repeat(256) },
    });
    expect(tooLong.status).toBe(422);
    // The marker: the domain made, its subject's first event unless the refused creation made one.
    const created = await api('/api/catalog/domains', { method: 'POST', token: marker, body: { name } });
    expect(created.status, created.text).toBe(201);
    const { before, marker: marked } = await eventsBefore(`catalog/domains/${name}`, byMarker, events);
    expect(before).toEqual([]);
    expect(marked.type).toBe('dpm.catalog.domain.created');
  });
});
