import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Document, DocumentStatus } from '../../functions/documents/schemas.js';
import { DocumentService } from '../../functions/documents/service.js';
import type { DocumentFields, DocumentStore, WriteResult } from '../../functions/documents/store.js';
import type { Caller } from '../../shared/auth/caller.js';
import { Conflict, Forbidden, NotFound, Unavailable } from '../../shared/errors.js';
import type { Change } from '../../shared/events/types.js';
import {
  type CatalogItem,
  documentUrnOf,
  domainUrn,
  type EntityChange,
  glossaryTermUrn,
  type MetadataCatalog,
  tagUrn,
} from '../../shared/ports/catalog.js';
import { rejection } from '../support/rejection.js';
import { adminCaller, invalidIssues, principalOf, unused, userCaller } from './fakes.js';

/**
 * Documents and E6 (docs/data-and-catalog.md) over an in-memory document table and catalog: ownership by
 * principal, forward status moves, the suggestions' flags, and E6's checks before any
 * write, its claim, its all-or-nothing effects and what each change records.
 */

const AT = '2026-11-21T10:00:00.000Z';

interface Row {
  document: Document;
  ownerPrincipal: string | undefined;
  /** The claim of a confirmation under way (the store's `confirming`). */
  claim?: string;
  pendingDomain?: string;
}

/** The documents table as DynamoDocumentStore keeps it, with the writes' conditions. */
function documentTable() {
  const rows = new Map<string, Row>();
  const changes: { id: string; change: Change }[] = [];
  const calls: string[] = [];
  const lists: { owner?: string; limit: number; cursor: string | undefined }[] = [];
  const set = (row: Row, fields: DocumentFields): Document => {
    const defined = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    row.document = { ...row.document, ...defined };
    return row.document;
  };
  /** One conditional write: missing, conflict, or the fields set. */
  const write = (id: string, when: (row: Row) => boolean, apply: (row: Row) => void, change?: Change): WriteResult => {
    const row = rows.get(id);
    if (!row) return { ok: false, reason: 'missing' };
    if (!when(row)) return { ok: false, reason: 'conflict' };
    apply(row);
    if (change) changes.push({ id, change });
    return { ok: true, document: row.document };
  };
  const store: DocumentStore = {
    create: async (doc, ownerPrincipal, change) => {
      calls.push('create');
      rows.set(doc.id, { document: doc, ownerPrincipal });
      changes.push({ id: doc.id, change });
    },
    getWithOwner: async (id) => {
      const row = rows.get(id);
      return row && { document: row.document, ownerPrincipal: row.ownerPrincipal };
    },
    ownersOf: unused,
    getRaw: unused,
    listOwned: async (owner, limit, cursor) => {
      lists.push({ owner, limit, cursor });
      return {
        items: [...rows.values()].filter((r) => r.ownerPrincipal === owner).map((r) => r.document),
        nextCursor: 'n',
      };
    },
    listAll: async (limit, cursor) => {
      lists.push({ limit, cursor });
      return { items: [...rows.values()].map((r) => r.document), nextCursor: undefined };
    },
    listPending: async (domain) => [...rows.values()].filter((r) => r.pendingDomain === domain).map((r) => r.document),
    setStatus: async (id, from: readonly DocumentStatus[], fields, change) =>
      write(
        id,
        (r) => from.includes(r.document.status),
        (r) => set(r, fields),
        change,
      ),
    setSuggestions: async (id, fields, change) =>
      write(
        id,
        (r) => r.document.enrichment_status !== 'confirmed' && r.claim === undefined,
        (r) => set(r, fields),
        change,
      ),
    claimConfirmation: async (id, claim) => {
      calls.push('claim');
      return write(
        id,
        (r) => r.document.enrichment_status === 'awaiting_review' && r.claim === undefined,
        (r) => (r.claim = claim),
      );
    },
    releaseConfirmation: async (id, claim) => {
      calls.push('release');
      return write(
        id,
        (r) => r.claim === claim,
        (r) => delete r.claim,
      );
    },
    confirm: async (id, claim, fields, pendingDomain, change) => {
      calls.push('confirm');
      return write(
        id,
        (r) => r.claim === claim,
        (r) => {
          set(r, fields);
          delete r.claim;
          if (pendingDomain === null) delete r.pendingDomain;
          else r.pendingDomain = pendingDomain;
        },
        change,
      );
    },
    attachDomain: async (id, domain, fields, change) =>
      write(
        id,
        (r) => r.pendingDomain === domain,
        (r) => {
          set(r, fields);
          delete r.pendingDomain;
        },
        change,
      ),
  };
  return { store, rows, changes, calls, lists };
}

const item = (urn: (n: string) => string, name: string): CatalogItem => ({ name, urn: urn(name), description: null });

/** A catalog of tags, glossary terms and domains that records what is written to it. */
function catalog(known: { tags?: string[]; terms?: string[]; domains?: string[] } = {}) {
  const tags = new Map((known.tags ?? []).map((n) => [n, item(tagUrn, n)]));
  const terms = new Map((known.terms ?? []).map((n) => [n, item(glossaryTermUrn, n)]));
  const domains = new Map((known.domains ?? []).map((n) => [n, item(domainUrn, n)]));
  const writes: string[] = [];
  const annotations: { urn: string; change: EntityChange }[] = [];
  const create = (map: Map<string, CatalogItem>, urn: (n: string) => string, name: string) => {
    const existing = map.get(name);
    if (existing) return { item: existing, created: false };
    map.set(name, item(urn, name));
    return { item: map.get(name)!, created: true };
  };
  const fake: MetadataCatalog = {
    datasetUrn: () => {
      throw new Error('not used by this test');
    },
    listTags: unused,
    listGlossaryTerms: unused,
    listDomains: unused,
    getTag: async (n) => tags.get(n),
    getGlossaryTerm: async (n) => terms.get(n),
    getDomain: async (n) => domains.get(n),
    createTag: async (n) => {
      writes.push(`createTag ${n}`);
      return create(tags, tagUrn, n);
    },
    createGlossaryTerm: async (n) => {
      writes.push(`createGlossaryTerm ${n}`);
      return create(terms, glossaryTermUrn, n);
    },
    createDomain: unused,
    getEntity: unused,
    getEntities: unused,
    listDomainEntities: unused,
    checkAnnotation: async () => undefined,
    annotate: async (urn, change) => {
      writes.push(`annotate ${urn}`);
      annotations.push({ urn, change });
    },
    registerDocument: async (d) => void writes.push(`register ${d.urn} ${d.title}`),
    unregisterDocument: async (urn) => void writes.push(`unregister ${urn}`),
  };
  return { fake, writes, annotations, domains };
}

const request = { filename: 'report.pdf', mime_type: 'application/pdf', size_bytes: 1234 };
const confirmation = {
  summary: null,
  accepted_tags: [],
  new_tags: [],
  accepted_glossary_terms: [],
  new_glossary_terms: [],
  domain: null,
  domain_is_new: false,
};

function world(known: Parameters<typeof catalog>[0] = {}) {
  const table = documentTable();
  const cat = catalog(known);
  return { ...table, catalog: cat, service: new DocumentService(table.store, cat.fake) };
}

/** Carol's document, with the pipeline's suggestions stored: awaiting review. */
async function awaitingReview(w: ReturnType<typeof world>, owner: Caller = userCaller('carol')) {
  const doc = await w.service.create(request, owner);
  await w.service.setSuggestions(
    doc.id,
    {
      suggested_summary: 'Quarterly sales',
      suggested_tags: ['pii'],
      suggested_glossary_terms: [],
      suggested_domain: null,
    },
    adminCaller(),
  );
  w.changes.length = 0;
  w.calls.length = 0;
  w.catalog.writes.length = 0;
  return doc;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.parse(AT));
});
afterEach(() => {
  vi.useRealTimers();
});

describe('DocumentService.create', () => {
  it("registers the catalog entity first, then the document owned by the caller's principal", async () => {
    const w = world();
    const doc = await w.service.create({ ...request, subtype: 'contract' }, userCaller('carol'));
    expect(doc).toMatchObject({
      filename: 'report.pdf',
      owner: 'carol',
      subtype: 'contract',
      status: 'uploading',
      enrichment_status: 'pending',
      catalog_urn: documentUrnOf(doc.id),
      objstore_key: null,
      created_at: AT,
      updated_at: AT,
    });
    expect(w.catalog.writes).toEqual([`register ${documentUrnOf(doc.id)} report.pdf`]);
    expect(w.rows.get(doc.id)?.ownerPrincipal).toBe(principalOf('carol'));
    expect(w.changes).toEqual([{ id: doc.id, change: { type: 'document.created', actor: 'carol', at: AT } }]);
  });

  it("keeps a user's object key under the document's own prefix; an admin names any key", async () => {
    const w = world();
    const mine = await w.service.create({ ...request, objstore_key: '//raw/report.pdf' }, userCaller('carol'));
    expect(mine.objstore_key).toBe(`documents/${mine.id}/raw/report.pdf`);
    const admins = await w.service.create({ ...request, objstore_key: 'ingest/any/where.pdf' }, adminCaller());
    expect(admins.objstore_key).toBe('ingest/any/where.pdf');
  });

  it.each(['../other/x.pdf', 'a/./b', '/'])(
    'refuses the object key %j of a user (422) before writing anything',
    async (key) => {
      const w = world();
      expect(await invalidIssues(w.service.create({ ...request, objstore_key: key }, userCaller('carol')))).toEqual([
        {
          type: 'value_error',
          loc: ['body', 'objstore_key'],
          msg: 'Value error, must be a relative object key without "." or ".." parts',
          input: key,
          ctx: { error: 'must be a relative object key without "." or ".." parts' },
        },
      ]);
      expect(w.catalog.writes).toEqual([]);
      expect(w.rows.size).toBe(0);
    },
  );

  it('removes the catalog entity again when the document cannot be stored', async () => {
    const w = world();
    const service = new DocumentService(
      {
        ...w.store,
        create: async () => {
          throw new Unavailable();
        },
      },
      w.catalog.fake,
    );
    expect(await rejection(service.create(request, userCaller('carol')))).toBeInstanceOf(Unavailable);
    expect(w.catalog.writes).toHaveLength(2);
    const urn = w.catalog.writes[0]!.split(' ')[1]!;
    expect(w.catalog.writes[1]).toBe(`unregister ${urn}`);
  });
});

describe('DocumentService reads', () => {
  it("lists a user's own documents by principal and an admin's all, passing the cursor on", async () => {
    const w = world();
    await w.service.create(request, userCaller('carol'));
    await w.service.create(request, userCaller('bob'));
    const own = await w.service.list(userCaller('carol'), 10, 'c1');
    expect(own.items.map((d) => d.owner)).toEqual(['carol']);
    expect(own.nextCursor).toBe('n');
    expect((await w.service.list(adminCaller(), 20, undefined)).items).toHaveLength(2);
    expect(w.lists).toEqual([
      { owner: principalOf('carol'), limit: 10, cursor: 'c1' },
      { limit: 20, cursor: undefined },
    ]);
  });

  it('answers the owner (by principal) and admins; another subject of the same name 403; unknown 404', async () => {
    const w = world();
    const doc = await w.service.create(request, userCaller('carol'));
    expect((await w.service.get(doc.id, userCaller('carol'))).id).toBe(doc.id);
    expect((await w.service.get(doc.id, adminCaller())).id).toBe(doc.id);
    const refused = await rejection(w.service.get(doc.id, userCaller('carol', { subject: 'another' })));
    expect(refused).toBeInstanceOf(Forbidden);
    expect(refused.message).toBe("Only the document's owner or an admin may access it");
    expect(await rejection(w.service.get('00000000-0000-4000-8000-000000000001', adminCaller()))).toBeInstanceOf(
      NotFound,
    );
  });
});

describe('DocumentService pipeline writes', () => {
  it('moves the status forward only from its predecessors, and records the move', async () => {
    const w = world();
    const doc = await w.service.create(request, userCaller('carol'));
    const moved = await w.service.setStatus(doc.id, { status: 'extracting', page_count: 3 }, adminCaller('dana'));
    expect(moved).toMatchObject({ status: 'extracting', page_count: 3 });
    expect(w.changes.at(-1)).toEqual({
      id: doc.id,
      change: { type: 'document.status_changed', actor: 'dana', at: AT },
    });
    const back = await rejection(w.service.setStatus(doc.id, { status: 'uploading' }, adminCaller()));
    expect(back).toBeInstanceOf(Conflict);
    expect(back.message).toBe(`Document ${doc.id}: a document can move to uploading only from nowhere`);
    const skip = await rejection(w.service.setStatus(doc.id, { status: 'extracting' }, adminCaller()));
    expect(skip.message).toBe(
      `Document ${doc.id}: a document can move to extracting only from uploading or ocr_required`,
    );
    expect(await rejection(w.service.setStatus('missing', { status: 'indexed' }, adminCaller()))).toBeInstanceOf(
      NotFound,
    );
  });

  it('flags each distinct suggestion with what the catalog has', async () => {
    const w = world({ tags: ['pii'], domains: ['sales'] });
    const doc = await w.service.create(request, userCaller('carol'));
    const out = await w.service.setSuggestions(
      doc.id,
      {
        suggested_summary: 'Quarterly sales',
        suggested_tags: ['pii', 'fresh', 'pii'],
        suggested_glossary_terms: ['revenue'],
        suggested_domain: 'sales',
      },
      adminCaller('dana'),
    );
    expect(out).toMatchObject({
      enrichment_status: 'awaiting_review',
      suggested_summary: 'Quarterly sales',
      suggested_tags: [
        { name: 'pii', is_existing: true, urn: tagUrn('pii') },
        { name: 'fresh', is_existing: false, urn: null },
      ],
      suggested_glossary_terms: [{ name: 'revenue', is_existing: false, urn: null }],
      suggested_domain: { name: 'sales', is_existing: true, urn: domainUrn('sales') },
    });
    expect(w.changes.at(-1)?.change.type).toBe('document.suggestions_ready');
    // Flagging writes nothing to the catalog.
    expect(w.catalog.writes).toHaveLength(1);
  });
});

describe('DocumentService.confirm (E6)', () => {
  it('answers 409 unless the enrichment awaits review, before any check or write', async () => {
    const w = world();
    const doc = await w.service.create(request, userCaller('carol'));
    const refused = await rejection(
      w.service.confirm(doc.id, { ...confirmation, accepted_tags: ['nope'] }, userCaller('carol')),
    );
    expect(refused).toBeInstanceOf(Conflict);
    expect(refused.message).toBe(`The enrichment of document ${doc.id} is pending, not awaiting_review`);
    expect(w.calls).toEqual(['create']);
  });

  it("refuses another's document with 403 before telling its state (409)", async () => {
    const w = world();
    const doc = await w.service.create(request, userCaller('carol'));
    expect(await rejection(w.service.confirm(doc.id, confirmation, userCaller('bob')))).toBeInstanceOf(Forbidden);
    expect(w.calls).toEqual(['create']);
  });

  it('lists every unknown accepted name and a missing existing domain in one 422, writing nothing', async () => {
    const w = world({ tags: ['pii'], terms: ['revenue'] });
    const doc = await awaitingReview(w);
    const issues = await invalidIssues(
      w.service.confirm(
        doc.id,
        {
          ...confirmation,
          accepted_tags: ['pii', 'ghost'],
          accepted_glossary_terms: ['margin', 'revenue'],
          domain: 'finance',
          domain_is_new: false,
        },
        userCaller('carol'),
      ),
    );
    expect(issues.map((i) => [i.type, i.loc, i.input])).toEqual([
      ['value_error', ['body', 'accepted_tags', 1], 'ghost'],
      ['value_error', ['body', 'accepted_glossary_terms', 0], 'margin'],
      ['value_error', ['body', 'domain'], 'finance'],
    ]);
    expect(issues[2]!.msg).toBe("Value error, no catalog domain 'finance'");
    expect(w.calls).toEqual([]);
    expect(w.catalog.writes).toEqual([]);
  });

  it('creates the new definitions, annotates the entity and keeps what was confirmed, all under one claim', async () => {
    const w = world({ tags: ['pii'], domains: ['sales'] });
    const doc = await awaitingReview(w);
    const out = await w.service.confirm(
      doc.id,
      {
        ...confirmation,
        accepted_tags: ['pii'],
        new_tags: ['fresh', 'pii'],
        new_glossary_terms: ['revenue'],
        domain: 'sales',
      },
      userCaller('carol'),
    );
    expect(out).toMatchObject({
      enrichment_status: 'confirmed',
      suggested_summary: 'Quarterly sales',
      suggested_tags: [
        { name: 'pii', is_existing: true, urn: tagUrn('pii') },
        { name: 'fresh', is_existing: true, urn: tagUrn('fresh') },
      ],
      suggested_glossary_terms: [{ name: 'revenue', is_existing: true, urn: glossaryTermUrn('revenue') }],
      suggested_domain: { name: 'sales', is_existing: true, urn: domainUrn('sales') },
    });
    expect(w.calls).toEqual(['claim', 'confirm']);
    expect(w.catalog.annotations).toEqual([
      {
        urn: doc.catalog_urn,
        change: { tags: ['pii', 'fresh'], glossaryTerms: ['revenue'], description: 'Quarterly sales', domain: 'sales' },
      },
    ]);
    expect(w.changes).toEqual([
      {
        id: doc.id,
        change: { type: 'document.enrichment_confirmed', actor: 'carol', at: AT, about: { pending_domain: null } },
      },
    ]);
    expect(w.rows.get(doc.id)?.pendingDomain).toBeUndefined();
  });

  it('leaves a new domain that does not exist yet pending, and attaches it once the domain exists', async () => {
    const w = world();
    const doc = await awaitingReview(w);
    await w.service.confirm(doc.id, { ...confirmation, domain: 'finance', domain_is_new: true }, userCaller('carol'));
    expect(w.catalog.annotations[0]!.change.domain).toBeUndefined();
    expect(w.changes[0]!.change.about).toEqual({ pending_domain: 'finance' });
    expect(await w.service.pendingDocumentIds('finance')).toEqual([doc.id]);

    // Not there yet: nothing attached, nothing written.
    expect(await w.service.attachPendingDocuments('finance', 'dana')).toEqual([]);
    w.catalog.domains.set('finance', item(domainUrn, 'finance'));
    expect(await w.service.attachPendingDocuments('finance', 'dana')).toEqual([doc.id]);
    expect(w.catalog.annotations.at(-1)).toEqual({ urn: doc.catalog_urn, change: { domain: 'finance' } });
    expect(w.changes.at(-1)).toEqual({
      id: doc.id,
      change: { type: 'document.domain_attached', actor: 'dana', at: AT },
    });
    expect((await w.service.get(doc.id, userCaller('carol'))).suggested_domain).toEqual({
      name: 'finance',
      is_existing: true,
      urn: domainUrn('finance'),
    });
    // Done once: a repeat attaches nothing.
    expect(await w.service.attachPendingDocuments('finance', 'dana')).toEqual([]);
  });

  it('attaches a domain marked new that exists by now at once, leaving nothing pending', async () => {
    const w = world({ domains: ['finance'] });
    const doc = await awaitingReview(w);
    const out = await w.service.confirm(
      doc.id,
      { ...confirmation, domain: 'finance', domain_is_new: true },
      userCaller('carol'),
    );
    expect(out.suggested_domain).toEqual({ name: 'finance', is_existing: true, urn: domainUrn('finance') });
    expect(w.catalog.annotations[0]!.change.domain).toBe('finance');
    expect(w.changes[0]!.change.about).toEqual({ pending_domain: null });
    expect(await w.service.pendingDocumentIds('finance')).toEqual([]);
  });

  it('releases its claim when the catalog fails, so the document awaits review and a retry completes', async () => {
    const w = world();
    const doc = await awaitingReview(w);
    const failing = new DocumentService(w.store, {
      ...w.catalog.fake,
      annotate: async () => {
        throw new Unavailable();
      },
    });
    expect(await rejection(failing.confirm(doc.id, confirmation, userCaller('carol')))).toBeInstanceOf(Unavailable);
    expect(w.calls).toEqual(['claim', 'release']);
    expect(w.changes).toEqual([]);
    expect((await w.service.get(doc.id, userCaller('carol'))).enrichment_status).toBe('awaiting_review');
    expect((await w.service.confirm(doc.id, confirmation, userCaller('carol'))).enrichment_status).toBe('confirmed');
  });

  it('answers 409 without touching the catalog when another confirmation holds the claim', async () => {
    const w = world();
    const doc = await awaitingReview(w);
    w.rows.get(doc.id)!.claim = 'someone-else';
    const refused = await rejection(
      w.service.confirm(doc.id, { ...confirmation, new_tags: ['x'] }, userCaller('carol')),
    );
    expect(refused).toBeInstanceOf(Conflict);
    expect(refused.message).toBe(`Document ${doc.id}: the enrichment is no longer awaiting review`);
    expect(w.catalog.writes).toEqual([]);
  });
});
