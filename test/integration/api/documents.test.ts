import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { EnrichmentConfirmation } from '../../../functions/documents/schemas.js';
import { DocumentService } from '../../../functions/documents/service.js';
import { DynamoDocumentStore } from '../../../functions/documents/store.js';
import { TABLES, physicalTableName } from '../../../infra/tables.js';
import { BuiltinCatalog } from '../../../shared/adapters/builtin-catalog.js';
import type { Caller } from '../../../shared/auth/caller.js';
import { Unavailable } from '../../../shared/errors.js';
import { rejection } from '../../support/rejection.js';
import { adminToken, api, db, slug, token } from '../helpers.js';
import { provided } from '../provided.js';

const BASE = '/api/documents';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let admin: string;
let alice: string;
let bob: string;

beforeAll(async () => {
  admin = await adminToken('doc-admin');
  alice = await token(slug('alice'));
  bob = await token(slug('bob'));
});

/** The suite's DynamoDB: the built-in catalog and the documents table, as the platform wires them. */
const catalog = () => new BuiltinCatalog(db(), physicalTableName(provided('stage'), TABLES.catalog));
const store = () => new DynamoDocumentStore(db(), physicalTableName(provided('stage'), TABLES.documents));
const service = () => new DocumentService(store(), catalog());

/** An admin as the service sees one (the HTTP layer's caller), for calls that bypass HTTP. */
const ADMIN_CALLER: Caller = {
  principal: 'documents-test-admin',
  name: 'doc-admin',
  roles: new Set(['admin']),
  via: 'bearer',
};

interface Flagged {
  name: string;
  is_existing: boolean;
  urn: string | null;
}
interface Doc {
  id: string;
  owner: string;
  status: string;
  enrichment_status: string;
  catalog_urn: string;
  suggested_summary: string | null;
  suggested_tags: Flagged[];
  suggested_glossary_terms: Flagged[];
  suggested_domain: Flagged | null;
  [k: string]: unknown;
}

const register = async (
  who = alice,
  body: unknown = { filename: 'report.pdf', mime_type: 'application/pdf', size_bytes: 1234 },
) => {
  const res = await api<Doc>(BASE, { method: 'POST', token: who, body });
  expect(res.status).toBe(201);
  return res.body;
};
const move = (id: string, body: unknown, who = admin) =>
  api<Doc>(`${BASE}/${id}/status`, { method: 'POST', token: who, body });
const suggest = (id: string, body: unknown, who = admin) =>
  api<Doc>(`${BASE}/${id}/suggestions`, { method: 'PUT', token: who, body });
const confirm = (id: string, body: unknown, who = alice) =>
  api<Doc>(`${BASE}/${id}/enrichment`, { method: 'PATCH', token: who, body });
const names = (items: { name: string }[]) => items.map((i) => i.name);

/** A document awaiting review, with no suggestions worth checking. */
async function awaitingReview(who = alice): Promise<Doc> {
  const doc = await register(who);
  const res = await suggest(doc.id, { suggested_summary: 's', suggested_tags: [], suggested_glossary_terms: [] });
  expect(res.status).toBe(200);
  return res.body;
}

describe('documents', () => {
  it('registers a document owned by the caller, with every field', async () => {
    const doc = await register(alice, {
      filename: 'a.pdf',
      mime_type: 'application/pdf',
      size_bytes: 0,
      subtype: 'contract',
      objstore_key: 'docs/a.pdf',
    });
    expect(doc).toEqual({
      id: expect.stringMatching(UUID),
      filename: 'a.pdf',
      owner: expect.stringMatching(/^alice-/),
      mime_type: 'application/pdf',
      size_bytes: 0,
      page_count: null,
      chunk_count: null,
      subtype: 'contract',
      status: 'uploading',
      enrichment_status: 'pending',
      catalog_urn: `urn:li:document:${doc.id}`,
      extraction_warning: null,
      suggested_summary: null,
      error: null,
      // A user's object key lives under the document's own prefix (an admin's is kept as given).
      objstore_key: `documents/${doc.id}/docs/a.pdf`,
      suggested_tags: [],
      suggested_glossary_terms: [],
      suggested_domain: null,
      created_at: expect.stringMatching(ISO_MS),
      updated_at: expect.stringMatching(ISO_MS),
    });
    expect((await api(`${BASE}/${doc.id}`, { token: alice })).body).toEqual(doc);
    expect((await api(`${BASE}/${doc.id}`, { token: admin })).body).toEqual(doc);
  });

  it('lists the caller’s own documents; an admin sees them all, page by page', async () => {
    const carol = await token(slug('carol'));
    const first = await register(carol);
    const second = await register(carol);
    const other = await register(alice);
    const mine = await api<Doc[]>(BASE, { token: carol });
    expect(mine.status).toBe(200);
    expect(mine.body.map((d) => d.id)).toEqual([first.id, second.id]);
    const page = await api<Doc[]>(`${BASE}?limit=1`, { token: carol });
    expect(page.body.map((d) => d.id)).toEqual([first.id]);
    const cursor = page.headers.get('x-next-cursor')!;
    const next = await api<Doc[]>(`${BASE}?limit=1&cursor=${encodeURIComponent(cursor)}`, { token: carol });
    expect(next.body.map((d) => d.id)).toEqual([second.id]);

    const all: string[] = [];
    let after: string | null = null;
    do {
      const res: Awaited<ReturnType<typeof api<Doc[]>>> = await api<Doc[]>(
        `${BASE}?limit=1000${after ? `&cursor=${encodeURIComponent(after)}` : ''}`,
        { token: admin },
      );
      all.push(...res.body.map((d) => d.id));
      after = res.headers.get('x-next-cursor');
    } while (after);
    expect(all).toEqual(expect.arrayContaining([first.id, second.id, other.id]));
  });

  it('runs the whole path: status moves, suggestions, confirmation (E6)', async () => {
    const c = catalog();
    const knownTag = slug('PII');
    const knownTerm = slug('Customer');
    const domain = slug('finance');
    await c.createTag(knownTag);
    await c.createGlossaryTerm(knownTerm);
    await c.createDomain(domain);
    const newTag = slug('Contract');
    const newTerm = slug('Invoice');

    const doc = await register();
    const extracting = await move(doc.id, { status: 'extracting' });
    expect(extracting.status).toBe(200);
    expect(extracting.body.status).toBe('extracting');
    const indexed = await move(doc.id, { status: 'indexed', page_count: 12, chunk_count: 40, extraction_warning: 'w' });
    expect(indexed.status).toBe(200);
    expect(indexed.body).toMatchObject({ status: 'indexed', page_count: 12, chunk_count: 40, extraction_warning: 'w' });
    const back = await move(doc.id, { status: 'extracting' });
    expect(back.status).toBe(409);
    expect(back.body).toEqual({ error: expect.any(String), code: 409 });
    expect((await move(doc.id, { status: 'uploading' })).status).toBe(409);

    const suggested = await suggest(doc.id, {
      suggested_summary: 'A contract',
      suggested_tags: [knownTag, newTag],
      suggested_glossary_terms: [knownTerm, newTerm],
      suggested_domain: domain,
    });
    expect(suggested.status).toBe(200);
    expect(suggested.body).toMatchObject({
      enrichment_status: 'awaiting_review',
      suggested_summary: 'A contract',
      suggested_tags: [
        { name: knownTag, is_existing: true, urn: `urn:li:tag:${knownTag}` },
        { name: newTag, is_existing: false, urn: null },
      ],
      suggested_glossary_terms: [
        { name: knownTerm, is_existing: true, urn: `urn:li:glossaryTerm:${knownTerm}` },
        { name: newTerm, is_existing: false, urn: null },
      ],
      suggested_domain: { name: domain, is_existing: true, urn: `urn:li:domain:${domain}` },
    });

    const confirmed = await confirm(doc.id, {
      summary: null,
      accepted_tags: [knownTag],
      new_tags: [newTag],
      accepted_glossary_terms: [knownTerm],
      new_glossary_terms: [newTerm],
      domain,
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({
      enrichment_status: 'confirmed',
      status: 'indexed',
      suggested_summary: 'A contract',
      suggested_tags: [
        { name: knownTag, is_existing: true, urn: `urn:li:tag:${knownTag}` },
        { name: newTag, is_existing: true, urn: `urn:li:tag:${newTag}` },
      ],
      suggested_glossary_terms: [
        { name: knownTerm, is_existing: true, urn: `urn:li:glossaryTerm:${knownTerm}` },
        { name: newTerm, is_existing: true, urn: `urn:li:glossaryTerm:${newTerm}` },
      ],
      suggested_domain: { name: domain, is_existing: true, urn: `urn:li:domain:${domain}` },
    });
    expect((await api(`${BASE}/${doc.id}`, { token: alice })).body).toEqual(confirmed.body);

    const tags = await api<{ name: string }[]>('/api/catalog/tags?limit=1000', { token: alice });
    expect(names(tags.body)).toEqual(expect.arrayContaining([knownTag, newTag]));
    const terms = await api<{ name: string }[]>('/api/catalog/glossary-terms?limit=1000', { token: alice });
    expect(names(terms.body)).toEqual(expect.arrayContaining([knownTerm, newTerm]));

    expect(await c.getEntity(doc.catalog_urn)).toMatchObject({
      description: 'A contract',
      domain,
      tags: [knownTag, newTag].sort(),
      glossary_terms: [knownTerm, newTerm].sort(),
    });

    // Confirming twice: 409.
    const again = await confirm(doc.id, { accepted_tags: [knownTag] });
    expect(again.status).toBe(409);
  });

  it('allows ocr_required → extracting and failed from extracting; stores the error', async () => {
    const doc = await register();
    expect((await move(doc.id, { status: 'indexed' })).status).toBe(409);
    expect((await move(doc.id, { status: 'extracting' })).status).toBe(200);
    expect((await move(doc.id, { status: 'ocr_required' })).body.status).toBe('ocr_required');
    expect((await move(doc.id, { status: 'extracting' })).body.status).toBe('extracting');
    const failed = await move(doc.id, { status: 'failed', error: 'unreadable' });
    expect(failed.body).toMatchObject({ status: 'failed', error: 'unreadable' });
    expect((await move(doc.id, { status: 'extracting' })).status).toBe(409);
  });

  it('replaces the summary when the confirmation gives one, and keeps nothing it did not list', async () => {
    const doc = await awaitingReview();
    const res = await confirm(doc.id, { summary: 'Confirmed summary' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      suggested_summary: 'Confirmed summary',
      suggested_tags: [],
      suggested_glossary_terms: [],
      suggested_domain: null,
    });
  });

  it('lets an admin confirm someone else’s document', async () => {
    const doc = await awaitingReview();
    expect((await confirm(doc.id, {}, admin)).body.enrichment_status).toBe('confirmed');
  });

  it('records a new domain as pending and attaches the document once the domain exists', async () => {
    const domain = slug('legal');
    const doc = await awaitingReview();
    const res = await confirm(doc.id, { domain, domain_is_new: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enrichment_status: 'confirmed', suggested_domain: null });
    expect((await store().getRaw(doc.id))?.pending_domain).toBe(domain);
    expect((await catalog().getEntity(doc.catalog_urn)).domain).toBeNull();
    const svc = service();
    expect(await svc.pendingDocumentIds(domain)).toEqual([doc.id]);

    // Not attached while the domain is missing.
    expect(await svc.attachPendingDocuments(domain)).toEqual([]);
    expect((await store().getRaw(doc.id))?.pending_domain).toBe(domain);

    await catalog().createDomain(domain);
    expect(await svc.attachPendingDocuments(domain)).toEqual([doc.id]);
    const raw = await store().getRaw(doc.id);
    expect(raw?.pending_domain).toBeUndefined();
    expect((await catalog().getEntity(doc.catalog_urn)).domain).toBe(domain);
    const read = await api<Doc>(`${BASE}/${doc.id}`, { token: alice });
    expect(read.body.suggested_domain).toEqual({ name: domain, is_existing: true, urn: `urn:li:domain:${domain}` });
    // A repeat attaches nothing.
    expect(await svc.attachPendingDocuments(domain)).toEqual([]);
  });

  it('is attached when an admin creates the domain over HTTP', async () => {
    const domain = slug('finance');
    const doc = await awaitingReview();
    expect((await confirm(doc.id, { domain, domain_is_new: true })).status).toBe(200);
    const created = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } });
    expect(created.status).toBe(201);
    // attached while the domain was created: nothing left pending
    expect(created.body).toMatchObject({ name: domain, pending_documents: [] });
    const read = await api<Doc>(`${BASE}/${doc.id}`, { token: alice });
    expect(read.body.suggested_domain).toEqual({ name: domain, is_existing: true, urn: `urn:li:domain:${domain}` });
    expect((await catalog().getEntity(doc.catalog_urn)).domain).toBe(domain);
  });

  it('attaches a domain marked new at once when it exists already', async () => {
    const domain = slug('hr');
    await catalog().createDomain(domain);
    const doc = await awaitingReview();
    const res = await confirm(doc.id, { domain, domain_is_new: true });
    expect(res.body.suggested_domain).toEqual({ name: domain, is_existing: true, urn: `urn:li:domain:${domain}` });
    expect((await store().getRaw(doc.id))?.pending_domain).toBeUndefined();
  });

  it('answers 401 without credentials, on every endpoint', async () => {
    const id = randomUUID();
    const calls = [
      api(BASE, { method: 'POST', body: { filename: 'a', mime_type: 'b', size_bytes: 1 } }),
      api(BASE),
      api(`${BASE}/${id}`),
      api(`${BASE}/${id}/status`, { method: 'POST', body: { status: 'extracting' } }),
      api(`${BASE}/${id}/suggestions`, { method: 'PUT', body: {} }),
      api(`${BASE}/${id}/enrichment`, { method: 'PATCH', body: {} }),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 401 });
    }
  });

  it('answers 403 for someone else’s document and for non-admins on pipeline endpoints', async () => {
    const doc = await awaitingReview();
    expect((await api(`${BASE}/${doc.id}`, { token: bob })).status).toBe(403);
    const foreign = await confirm(doc.id, {}, bob);
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({ error: expect.any(String), code: 403 });
    expect((await move(doc.id, { status: 'extracting' }, alice)).status).toBe(403);
    expect(
      (await suggest(doc.id, { suggested_summary: null, suggested_tags: [], suggested_glossary_terms: [] }, alice))
        .status,
    ).toBe(403);
    expect((await api<Doc[]>(BASE, { token: bob })).body.map((d) => d.id)).not.toContain(doc.id);
    // Still awaiting review: nothing was written.
    expect((await api<Doc>(`${BASE}/${doc.id}`, { token: alice })).body.enrichment_status).toBe('awaiting_review');
  });

  it('answers 404 for an unknown document', async () => {
    const id = randomUUID();
    expect((await api(`${BASE}/${id}`, { token: alice })).status).toBe(404);
    expect((await move(id, { status: 'extracting' })).status).toBe(404);
    expect(
      (await suggest(id, { suggested_summary: null, suggested_tags: [], suggested_glossary_terms: [] })).status,
    ).toBe(404);
    const res = await confirm(id, {});
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 404 });
  });

  it('answers 409 when confirming before suggestions, or suggesting after confirmation', async () => {
    const doc = await register();
    expect((await confirm(doc.id, {})).status).toBe(409);
    const ready = await awaitingReview();
    expect((await confirm(ready.id, {})).status).toBe(200);
    expect(
      (await suggest(ready.id, { suggested_summary: null, suggested_tags: [], suggested_glossary_terms: [] })).status,
    ).toBe(409);
  });

  it('answers 422 for accepted names the catalog lacks and a missing existing domain, writing nothing', async () => {
    const known = slug('Known');
    await catalog().createTag(known);
    const newTag = slug('NotCreated');
    const doc = await awaitingReview();
    const missingTag = slug('Missing');
    const missingTerm = slug('MissingTerm');
    const missingDomain = slug('nodomain');
    const res = await confirm(doc.id, {
      accepted_tags: [known, missingTag],
      new_tags: [newTag],
      accepted_glossary_terms: [missingTerm],
      domain: missingDomain,
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: 'value_error', loc: ['body', 'accepted_tags', 1], input: missingTag }),
      expect.objectContaining({ type: 'value_error', loc: ['body', 'accepted_glossary_terms', 0], input: missingTerm }),
      expect.objectContaining({ type: 'value_error', loc: ['body', 'domain'], input: missingDomain }),
    ]);
    expect(await catalog().getTag(newTag)).toBeUndefined();
    expect((await api<Doc>(`${BASE}/${doc.id}`, { token: alice })).body.enrichment_status).toBe('awaiting_review');
  });

  it('answers 422 for a bad uuid, a bad enum, an extra field and bad registration bodies', async () => {
    const bad = await api(`${BASE}/not-a-uuid`, { token: alice });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'uuid_parsing', loc: ['path', 'document_id'] });

    const doc = await register();
    const badEnum = await api(`${BASE}/${doc.id}/status`, { method: 'POST', token: admin, body: { status: 'done' } });
    expect(badEnum.status).toBe(422);
    expect(badEnum.body.detail[0]).toMatchObject({ type: 'enum', loc: ['body', 'status'] });

    const extra = await api(`${BASE}/${doc.id}/enrichment`, {
      method: 'PATCH',
      token: alice,
      body: { summary: 'x', bogus: 1 },
    });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ type: 'extra_forbidden', loc: ['body', 'bogus'] });

    const reg = await api(BASE, { method: 'POST', token: alice, body: { filename: '', size_bytes: -1 } });
    expect(reg.status).toBe(422);
    expect(reg.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual(
      expect.arrayContaining([
        [['body', 'filename'], 'string_too_short'],
        [['body', 'mime_type'], 'missing'],
        [['body', 'size_bytes'], 'greater_than_equal'],
      ]),
    );
  });
});

describe('E6 is all or nothing under concurrency (claim, apply, finish)', () => {
  it('of 15 concurrent confirmations exactly one wins, and only its tags, terms and summary reach the catalog', async () => {
    const doc = await awaitingReview();
    const attempts = Array.from({ length: 15 }, (_, i) => ({
      summary: `summary of attempt ${i}`,
      new_tags: [slug(`race-tag-${i}`)],
      new_glossary_terms: [slug(`race-term-${i}`)],
    }));
    const answers = await Promise.all(attempts.map((body) => confirm(doc.id, body)));
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s === 200),
      statuses.join(','),
    ).toHaveLength(1);
    expect(
      statuses.filter((s) => s === 409),
      statuses.join(','),
    ).toHaveLength(14);
    const w = statuses.indexOf(200);
    const winner = attempts[w]!;

    const read = await api<Doc>(`${BASE}/${doc.id}`, { token: alice });
    expect(read.body).toEqual(answers[w]!.body);
    expect(read.body).toMatchObject({
      enrichment_status: 'confirmed',
      suggested_summary: winner.summary,
      suggested_tags: [{ name: winner.new_tags[0], is_existing: true, urn: `urn:li:tag:${winner.new_tags[0]}` }],
      suggested_glossary_terms: [
        {
          name: winner.new_glossary_terms[0],
          is_existing: true,
          urn: `urn:li:glossaryTerm:${winner.new_glossary_terms[0]}`,
        },
      ],
    });
    const c = catalog();
    expect(await c.getEntity(doc.catalog_urn)).toMatchObject({
      description: winner.summary,
      tags: winner.new_tags,
      glossary_terms: winner.new_glossary_terms,
    });
    // The losers created nothing.
    for (const [i, loser] of attempts.entries()) {
      if (i === w) continue;
      expect(await c.getTag(loser.new_tags[0]!), loser.new_tags[0]).toBeUndefined();
      expect(await c.getGlossaryTerm(loser.new_glossary_terms[0]!), loser.new_glossary_terms[0]).toBeUndefined();
    }
  });

  it('answers 409 while another confirmation holds a live claim, which reads as awaiting_review', async () => {
    const doc = await awaitingReview();
    const now = Date.now();
    const claimed = await store().claimConfirmation(doc.id, 'live-claim', now, now + 60_000);
    expect(claimed.ok).toBe(true);
    const read = await api<Doc>(`${BASE}/${doc.id}`, { token: alice });
    expect(read.body.enrichment_status).toBe('awaiting_review');
    const listed = await api<Doc[]>(`${BASE}?limit=1000`, { token: admin });
    expect(listed.body.find((d) => d.id === doc.id)?.enrichment_status).toBe('awaiting_review');

    const tag = slug('blocked');
    const res = await confirm(doc.id, { new_tags: [tag], summary: 'blocked' });
    expect(res.status).toBe(409);
    expect(await catalog().getTag(tag)).toBeUndefined();
    // New suggestions do not overwrite a confirmation in progress either.
    const suggested = await suggest(doc.id, {
      suggested_summary: 'x',
      suggested_tags: [],
      suggested_glossary_terms: [],
    });
    expect(suggested.status).toBe(409);
  });

  it('takes over a claim whose holder died once it has expired', async () => {
    const doc = await awaitingReview();
    const now = Date.now();
    expect((await store().claimConfirmation(doc.id, 'crashed', now - 60_000, now - 30_000)).ok).toBe(true);
    const res = await confirm(doc.id, { summary: 'after the crash' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ enrichment_status: 'confirmed', suggested_summary: 'after the crash' });
    const raw = await store().getRaw(doc.id);
    expect(Object.keys(raw ?? {}).filter((k) => k.startsWith('confirmation_claim'))).toEqual([]);
  });

  it('releases the claim when the catalog fails, so the same request succeeds when retried', async () => {
    const doc = await awaitingReview();
    const real = catalog();
    const failing = Object.create(real) as BuiltinCatalog;
    failing.annotate = () => Promise.reject(new Unavailable('the catalog did not answer'));
    const body = { summary: 'retried', new_tags: [slug('retry-tag')] };
    const failed = await rejection(
      new DocumentService(store(), failing).confirm(doc.id, EnrichmentConfirmation.parse(body), ADMIN_CALLER),
    );
    expect(failed).toBeInstanceOf(Unavailable);
    const read = await api<Doc>(`${BASE}/${doc.id}`, { token: alice });
    expect(read.body.enrichment_status).toBe('awaiting_review');
    expect((await store().getRaw(doc.id))?.enrichment_status).toBe('awaiting_review');

    const retried = await confirm(doc.id, body);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.suggested_summary).toBe('retried');
    expect((await real.getEntity(doc.catalog_urn)).description).toBe('retried');
  });

  it('answers 422 before claiming when the annotations would not fit the catalog', async () => {
    const doc = await awaitingReview();
    const prefix = slug('big');
    // 1000 names of 255 characters, twice, and a 10,000-character summary: over 400 KB.
    const namesOf = (kind: string) =>
      Array.from({ length: 1000 }, (_, i) => `${prefix}-${kind}-${i}-`.padEnd(255, 'x'));
    const res = await confirm(doc.id, {
      summary: 's'.repeat(10_000),
      new_tags: namesOf('tag'),
      new_glossary_terms: namesOf('term'),
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: 'value_error', loc: ['body'], msg: expect.stringMatching(/^Value error, /) }),
    ]);
    expect((await api<Doc>(`${BASE}/${doc.id}`, { token: alice })).body.enrichment_status).toBe('awaiting_review');
    expect(await catalog().getTag(namesOf('tag')[0]!)).toBeUndefined();
  });
});
