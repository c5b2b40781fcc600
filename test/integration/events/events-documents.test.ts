import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, slug, token } from '../helpers.js';
import { type Envelope, eventsBefore, eventsOf as feedEvents, expectNothingMore } from '../event-feed.js';

// docs/events-and-webhooks.md for documents (E6): `document.created` / `.status_changed` / `.suggestions_ready`
// / `.enrichment_confirmed` / `.domain_attached`, subject `documents/{id}`, data the document
// as GET answers it after the change; no event for a refused change.

let events: string;
let admin: string;
let alice: string;
let aliceName: string;
let bob: string;
/** Makes the change that marks the end of what a test checks (event-feed.ts eventsBefore). */
let marker: string;
const MARKER = 'doc-events-marker';
const byMarker = (e: Envelope) => e.actor === MARKER;

beforeAll(async () => {
  marker = await adminToken(MARKER);
  events = await adminToken('doc-events-reader');
  admin = await adminToken('doc-events-admin');
  aliceName = slug('alice');
  alice = await token(aliceName);
  bob = await token(slug('bob'));
});

const BASE = '/api/documents';
const FILE = { filename: 'report.pdf', mime_type: 'application/pdf', size_bytes: 1234 };

const eventsOf = (subject: string, count: number) => feedEvents(subject, count, events);

/** Nothing internal in an event: no principal, key, index, claim or stamp attribute. */
function expectClean(e: Envelope) {
  expect(JSON.stringify(e.data)).not.toMatch(/principal|ev_|list_pk|created_key|confirmation_claim|"sub-/);
}

const register = async (who = alice) => {
  const res = await api(BASE, { method: 'POST', token: who, body: FILE });
  expect(res.status, res.text).toBe(201);
  return res.body as Record<string, unknown> & { id: string };
};

describe('document events', () => {
  it('one event per committed change of a document, in order, with the GET answer as data', async () => {
    const doc = await register();
    const subject = `documents/${doc.id}`;
    const path = `${BASE}/${doc.id}`;

    // refused: a move from the wrong status (409), by a non-admin (403)
    expect((await api(`${path}/status`, { method: 'POST', token: admin, body: { status: 'indexed' } })).status).toBe(
      409,
    );
    expect((await api(`${path}/status`, { method: 'POST', token: alice, body: { status: 'extracting' } })).status).toBe(
      403,
    );
    const extracting = await api(`${path}/status`, {
      method: 'POST',
      token: admin,
      body: { status: 'extracting', page_count: 3 },
    });
    expect(extracting.status).toBe(200);

    const tag = slug('events-tag');
    // refused: suggestions by a non-admin
    const suggestions = { suggested_summary: 'About money', suggested_tags: [tag], suggested_glossary_terms: [] };
    expect((await api(`${path}/suggestions`, { method: 'PUT', token: alice, body: suggestions })).status).toBe(403);
    const suggested = await api(`${path}/suggestions`, { method: 'PUT', token: admin, body: suggestions });
    expect(suggested.status).toBe(200);

    // refused: not the owner (403), an accepted tag the catalog lacks (422)
    const confirmation = { summary: 'Money matters', new_tags: [tag] };
    expect((await api(`${path}/enrichment`, { method: 'PATCH', token: bob, body: confirmation })).status).toBe(403);
    const unknown = { accepted_tags: [slug('no-such-tag')] };
    expect((await api(`${path}/enrichment`, { method: 'PATCH', token: alice, body: unknown })).status).toBe(422);
    const confirmed = await api(`${path}/enrichment`, { method: 'PATCH', token: alice, body: confirmation });
    expect(confirmed.status, confirmed.text).toBe(200);
    // refused: confirmed already (409); suggestions once confirmed (409); a move backwards (409)
    expect((await api(`${path}/enrichment`, { method: 'PATCH', token: alice, body: confirmation })).status).toBe(409);
    expect((await api(`${path}/suggestions`, { method: 'PUT', token: admin, body: suggestions })).status).toBe(409);
    expect((await api(`${path}/status`, { method: 'POST', token: admin, body: { status: 'extracting' } })).status).toBe(
      409,
    );

    const read = await api(path, { token: alice });
    const listed = await api(`${BASE}?limit=1000`, { token: alice });
    // The marker: one more change of the document (a forward move); the refused changes'
    // events would come before it.
    const moved = await api(`${path}/status`, {
      method: 'POST',
      token: marker,
      body: { status: 'failed', error: null },
    });
    expect(moved.status, moved.text).toBe(200);
    const { before: found, marker: marked } = await eventsBefore(subject, byMarker, events);
    expect(marked.type).toBe('dpm.document.status_changed');
    expect(found.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.document.created', 1, aliceName],
      ['dpm.document.status_changed', 2, 'doc-events-admin'],
      ['dpm.document.suggestions_ready', 3, 'doc-events-admin'],
      ['dpm.document.enrichment_confirmed', 4, aliceName],
    ]);
    expect(found[0]!.data).toEqual(doc);
    expect(found[1]!.data).toEqual(extracting.body);
    expect(found[2]!.data).toEqual(suggested.body);
    // the confirmation's answer, and that it waits for no domain
    expect(found[3]!.data).toEqual({ ...confirmed.body, pending_domain: null });
    expect(found[3]!.data).toEqual({ ...read.body, pending_domain: null });
    // the stamp never shows in what GET and the list answer
    expect(listed.body.find((d: { id: string }) => d.id === doc.id)).toEqual(read.body);
    expect(`${read.text}${listed.text}`).not.toMatch(/ev_|owner_principal|pending_domain/);
    expect(found[3]!.data).toMatchObject({
      enrichment_status: 'confirmed',
      suggested_summary: 'Money matters',
      suggested_tags: [{ name: tag, is_existing: true, urn: `urn:li:tag:${tag}` }],
    });
    for (const [i, e] of found.entries()) {
      expect(e).toMatchObject({
        specversion: '1.0',
        source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
        subject,
        datacontenttype: 'application/json',
      });
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
      // the instant the document records
      expect(e.time).toBe(i === 0 ? doc.created_at : e.data.updated_at);
      expectClean(e);
    }
  });

  it('records the move back from ocr_required as its own change', async () => {
    const doc = await register();
    const path = `${BASE}/${doc.id}/status`;
    for (const status of ['extracting', 'ocr_required', 'extracting', 'failed']) {
      const res = await api(path, { method: 'POST', token: admin, body: { status, error: null } });
      expect(res.status, `${status}: ${res.text}`).toBe(200);
    }
    const found = await eventsOf(`documents/${doc.id}`, 5);
    expect(found.map((e) => [e.type, e.sequence, e.data.status])).toEqual([
      ['dpm.document.created', 1, 'uploading'],
      ['dpm.document.status_changed', 2, 'extracting'],
      ['dpm.document.status_changed', 3, 'ocr_required'],
      ['dpm.document.status_changed', 4, 'extracting'],
      ['dpm.document.status_changed', 5, 'failed'],
    ]);
  });

  it('a document waiting for a new domain says so, and is attached by whoever creates the domain', async () => {
    const doc = await register();
    const subject = `documents/${doc.id}`;
    const path = `${BASE}/${doc.id}`;
    const domain = slug('events-domain');
    const suggested = await api(`${path}/suggestions`, {
      method: 'PUT',
      token: admin,
      body: { suggested_summary: null, suggested_tags: [], suggested_glossary_terms: [], suggested_domain: domain },
    });
    expect(suggested.status).toBe(200);
    // refused: a domain not marked new that does not exist
    const notNew = await api(`${path}/enrichment`, { method: 'PATCH', token: alice, body: { domain } });
    expect(notNew.status).toBe(422);
    const confirmed = await api(`${path}/enrichment`, {
      method: 'PATCH',
      token: alice,
      body: { domain, domain_is_new: true },
    });
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(confirmed.body.suggested_domain).toBeNull();

    const waiting = await eventsOf(subject, 3);
    expect(waiting.map((e) => [e.type, e.sequence])).toEqual([
      ['dpm.document.created', 1],
      ['dpm.document.suggestions_ready', 2],
      ['dpm.document.enrichment_confirmed', 3],
    ]);
    expect(waiting[2]!.data).toEqual({ ...confirmed.body, pending_domain: domain });

    const created = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } });
    expect(created.status, created.text).toBe(201);
    // refused: the domain exists now; creating it again attaches nothing more
    expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } })).status).toBe(
      409,
    );

    const attachedOnce = await eventsOf(subject, 4);
    const read = await api(path, { token: alice });
    // The marker: one more change of the document (its first move); an event the refused
    // creation attached would come before it.
    const moved = await api(`${path}/status`, { method: 'POST', token: marker, body: { status: 'extracting' } });
    expect(moved.status, moved.text).toBe(200);
    const { before: found, marker: marked } = await eventsBefore(subject, byMarker, events);
    expect(marked.type).toBe('dpm.document.status_changed');
    expect(found).toEqual(attachedOnce);
    expect(found).toHaveLength(4);
    const attached = found[3]!;
    expect([attached.type, attached.sequence, attached.actor]).toEqual([
      'dpm.document.domain_attached',
      4,
      'doc-events-admin',
    ]);
    expect(read.body.suggested_domain).toEqual({ name: domain, is_existing: true, urn: `urn:li:domain:${domain}` });
    expect(attached.data).toEqual(read.body);
    expect(attached.time).toBe(read.body.updated_at);
    for (const e of found) expectClean(e);
  });

  it('no event for a document that does not exist or a registration refused', async () => {
    const id = randomUUID();
    expect(
      (await api(`${BASE}/${id}/status`, { method: 'POST', token: admin, body: { status: 'extracting' } })).status,
    ).toBe(404);
    const none = { suggested_summary: null, suggested_tags: [], suggested_glossary_terms: [] };
    expect((await api(`${BASE}/${id}/suggestions`, { method: 'PUT', token: admin, body: none })).status).toBe(404);
    expect((await api(`${BASE}/${id}/enrichment`, { method: 'PATCH', token: alice, body: {} })).status).toBe(404);
    const refused = await api(BASE, { method: 'POST', token: alice, body: { ...FILE, size_bytes: -1 } });
    expect(refused.status).toBe(422);
    // No document can take that id for a marker: the store's own record, read at once, says
    // that nothing was recorded about it and no item was made.
    await expectNothingMore(`documents/${id}`, [], { table: 'documents', key: { id }, is: 'gone' });
    expect(await eventsOf(`documents/${id}`, 0)).toEqual([]);
  });

  it('keeps one gap-free sequence per document under concurrent changes', async () => {
    const docs = await Promise.all(Array.from({ length: 4 }, () => register()));
    // the same move asked twice at once: one wins, one event
    const moves = await Promise.all(
      docs.flatMap((d) =>
        [1, 2].map(() =>
          api(`${BASE}/${d.id}/status`, { method: 'POST', token: admin, body: { status: 'extracting' } }).then(
            (r) => r.status,
          ),
        ),
      ),
    );
    expect(moves.filter((s) => s === 200)).toHaveLength(docs.length);
    expect(moves.filter((s) => s === 409)).toHaveLength(docs.length);
    for (const d of docs) {
      const found = await eventsOf(`documents/${d.id}`, 2);
      expect(found.map((e) => [e.type, e.sequence])).toEqual([
        ['dpm.document.created', 1],
        ['dpm.document.status_changed', 2],
      ]);
    }
  });
});
