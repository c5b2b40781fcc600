import { randomUUID } from 'node:crypto';
import { type Caller, isAdmin, isPrincipal } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { Conflict, Forbidden, Invalid, NotFound, type ValidationIssue, valueError } from '../../shared/errors.js';
import {
  documentUrnOf,
  type CatalogItem,
  type EntityChange,
  type MetadataCatalog,
} from '../../shared/ports/catalog.js';
import { logger } from '../../shared/logger.js';
import {
  STATUS_PREDECESSORS,
  type Document,
  type DocumentRequest,
  type EnrichmentConfirmation,
  type FlaggedSuggestion,
  type StatusUpdate,
  type SuggestionsRequest,
} from './schemas.js';
import type { DocumentStore, WriteResult } from './store.js';

/** The document's entity in the metadata catalog. */

const distinct = (names: Iterable<string>): string[] => [...new Set(names)];

const flag = (name: string, item: CatalogItem | undefined): FlaggedSuggestion => ({
  name,
  is_existing: item !== undefined,
  urn: item?.urn ?? null,
});

const kept = (item: CatalogItem): FlaggedSuggestion => ({ name: item.name, is_existing: true, urn: item.urn });

/** Documents and their enrichment (docs/data-and-catalog.md, E6). */
export class DocumentService {
  constructor(
    private readonly documents: DocumentStore,
    private readonly catalog: MetadataCatalog,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  async create(req: DocumentRequest, caller: Caller): Promise<Document> {
    const id = randomUUID();
    const at = this.clock.iso();
    const doc: Document = {
      id,
      filename: req.filename,
      owner: caller.name,
      mime_type: req.mime_type,
      size_bytes: req.size_bytes,
      page_count: null,
      chunk_count: null,
      subtype: req.subtype ?? null,
      status: 'uploading',
      enrichment_status: 'pending',
      catalog_urn: documentUrnOf(id),
      extraction_warning: null,
      suggested_summary: null,
      error: null,
      objstore_key: objectKeyFor(id, req.objstore_key, caller),
      suggested_tags: [],
      suggested_glossary_terms: [],
      suggested_domain: null,
      created_at: at,
      updated_at: at,
    };
    // All or nothing, entity first: a catalog that does not answer fails the request (503)
    // before the document exists, so no document is ever without its catalog entity (E6
    // annotates it). If the document's item then cannot be written, the entity is removed
    // again; should that fail too, what is left is an entity no document names (its id is
    // random and never reused), which nothing reads.
    await this.catalog.registerDocument({ urn: doc.catalog_urn, id, title: doc.filename, subtype: doc.subtype });
    try {
      await this.documents.create(doc, caller.principal, { type: 'document.created', actor: caller.name, at });
    } catch (err) {
      await this.catalog.unregisterDocument(doc.catalog_urn).catch((undoError: unknown) =>
        logger.warn('could not remove the catalog entity of a document that was not created', {
          document_id: id,
          error: undoError as Error,
        }),
      );
      throw err;
    }
    return doc;
  }

  /** The caller's own documents; an admin's list holds every document. Oldest first. */
  list(caller: Caller, limit: number, cursor: string | undefined): Promise<Page<Document>> {
    return isAdmin(caller)
      ? this.documents.listAll(limit, cursor)
      : this.documents.listOwned(caller.principal, limit, cursor);
  }

  async get(id: string, caller: Caller): Promise<Document> {
    const found = await this.documents.getWithOwner(id);
    if (!found) throw new NotFound(`No document ${id}`);
    if (!isPrincipal(found.ownerPrincipal, caller) && !isAdmin(caller))
      throw new Forbidden("Only the document's owner or an admin may access it");
    return found.document;
  }

  /** A forward status move (admin), one write conditional on the current status. */
  async setStatus(id: string, req: StatusUpdate, caller: Caller): Promise<Document> {
    const from = STATUS_PREDECESSORS[req.status];
    const at = this.clock.iso();
    const result = await this.documents.setStatus(
      id,
      from,
      {
        status: req.status,
        page_count: req.page_count,
        chunk_count: req.chunk_count,
        extraction_warning: req.extraction_warning,
        error: req.error,
        updated_at: at,
      },
      { type: 'document.status_changed', actor: caller.name, at },
    );
    return outcome(result, id, `a document can move to ${req.status} only from ${from.join(' or ') || 'nowhere'}`);
  }

  /** The enrichment pipeline's suggestions (admin), each flagged with what the catalog has. */
  async setSuggestions(id: string, req: SuggestionsRequest, caller: Caller): Promise<Document> {
    const tagNames = distinct(req.suggested_tags);
    const termNames = distinct(req.suggested_glossary_terms);
    const [tags, terms, domain] = await Promise.all([
      Promise.all(tagNames.map((n) => this.catalog.getTag(n))),
      Promise.all(termNames.map((n) => this.catalog.getGlossaryTerm(n))),
      req.suggested_domain != null ? this.catalog.getDomain(req.suggested_domain) : undefined,
    ]);
    const at = this.clock.iso();
    const result = await this.documents.setSuggestions(
      id,
      {
        suggested_summary: req.suggested_summary,
        suggested_tags: tagNames.map((n, i) => flag(n, tags[i])),
        suggested_glossary_terms: termNames.map((n, i) => flag(n, terms[i])),
        suggested_domain: req.suggested_domain != null ? flag(req.suggested_domain, domain) : null,
        enrichment_status: 'awaiting_review',
        updated_at: at,
      },
      { type: 'document.suggestions_ready', actor: caller.name, at },
      Date.parse(at),
    );
    return outcome(result, id, 'the enrichment is confirmed already');
  }

  /**
   * How long a confirmation's claim holds: well beyond the longest a request can run (the
   * Lambda timeout), so only a claim whose holder died can expire and be taken over.
   */
  static readonly CONFIRMATION_CLAIM_MS = 30_000;

  /**
   * E6. All or nothing, in four steps:
   * 1. read and check everything (404, 403, 409 unless awaiting review, 422 for accepted
   *    names, an existing domain the catalog lacks, or annotations the catalog cannot
   *    store) before writing anything;
   * 2. claim the document: one write conditional on `awaiting_review` (or on an expired
   *    claim), so of concurrent confirmations exactly one goes on and the others get 409
   *    having written nothing;
   * 3. create the new tags and terms (idempotent) and annotate the document's catalog
   *    entity; if that fails, the claim is released (the document awaits review again) and
   *    a retry of the request completes it;
   * 4. flip the document with one write conditional on still holding the claim.
   */
  async confirm(id: string, req: EnrichmentConfirmation, caller: Caller): Promise<Document> {
    const doc = await this.get(id, caller);
    if (doc.enrichment_status !== 'awaiting_review') {
      throw new Conflict(`The enrichment of document ${id} is ${doc.enrichment_status}, not awaiting_review`);
    }

    const issues: ValidationIssue[] = [];
    const [acceptedTags, acceptedTerms, existingDomain] = await Promise.all([
      Promise.all(req.accepted_tags.map((n) => this.catalog.getTag(n))),
      Promise.all(req.accepted_glossary_terms.map((n) => this.catalog.getGlossaryTerm(n))),
      req.domain !== null ? this.catalog.getDomain(req.domain) : undefined,
    ]);
    req.accepted_tags.forEach((name, i) => {
      if (!acceptedTags[i]) issues.push(valueError(['body', 'accepted_tags', i], `no catalog tag '${name}'`, name));
    });
    req.accepted_glossary_terms.forEach((name, i) => {
      if (!acceptedTerms[i])
        issues.push(valueError(['body', 'accepted_glossary_terms', i], `no glossary term '${name}'`, name));
    });
    if (req.domain !== null && !req.domain_is_new && !existingDomain) {
      issues.push(valueError(['body', 'domain'], `no catalog domain '${req.domain}'`, req.domain));
    }
    if (issues.length > 0) throw new Invalid(issues);

    // A domain marked new that exists meanwhile is attached at once; one still missing waits.
    const domain = req.domain === null ? undefined : existingDomain;
    const pendingDomain = req.domain !== null && !domain ? req.domain : null;
    const changeOf = (tags: string[], terms: string[], summary: string | null): EntityChange => ({
      tags,
      glossaryTerms: terms,
      ...(summary ? { description: summary } : {}),
      ...(domain ? { domain: domain.name } : {}),
    });
    // Annotations the catalog could not store: 422 (AnnotationTooLarge) before anything is written.
    await this.catalog.checkAnnotation(
      doc.catalog_urn,
      changeOf(
        distinct([...req.accepted_tags, ...req.new_tags]),
        distinct([...req.accepted_glossary_terms, ...req.new_glossary_terms]),
        req.summary ?? doc.suggested_summary,
      ),
    );

    const claim = randomUUID();
    const now = this.clock.now();
    const claimed = outcome(
      await this.documents.claimConfirmation(id, claim, now, now + DocumentService.CONFIRMATION_CLAIM_MS),
      id,
      'the enrichment is no longer awaiting review',
    );
    // The summary as the claim found it (suggestions may have been replaced since the first read).
    const summary = req.summary ?? claimed.suggested_summary;
    let tags: CatalogItem[];
    let terms: CatalogItem[];
    try {
      // Definitions: new ones created (an existing one is simply attached).
      const [newTags, newTerms] = await Promise.all([
        Promise.all(distinct(req.new_tags).map((n) => this.catalog.createTag(n).then((c) => c.item))),
        Promise.all(
          distinct(req.new_glossary_terms).map((n) => this.catalog.createGlossaryTerm(n).then((c) => c.item)),
        ),
      ]);
      tags = dedupe([...(acceptedTags as CatalogItem[]), ...newTags]);
      terms = dedupe([...(acceptedTerms as CatalogItem[]), ...newTerms]);
      await this.catalog.annotate(
        doc.catalog_urn,
        changeOf(
          tags.map((t) => t.name),
          terms.map((t) => t.name),
          summary,
        ),
      );
    } catch (err) {
      // Awaiting review again, so the caller can retry; a release that fails too expires.
      const released = await this.documents.releaseConfirmation(id, claim).catch((releaseError: unknown) => {
        logger.warn('could not release a confirmation claim; it expires', {
          document_id: id,
          error: releaseError as Error,
        });
        return undefined;
      });
      if (released && !released.ok) logger.warn('confirmation claim lost before release', { document_id: id });
      throw err;
    }

    const at = this.clock.iso();
    const result = await this.documents.confirm(
      id,
      claim,
      {
        suggested_summary: summary,
        suggested_tags: tags.map(kept),
        suggested_glossary_terms: terms.map(kept),
        suggested_domain: domain ? kept(domain) : null,
        enrichment_status: 'confirmed',
        updated_at: at,
      },
      pendingDomain,
      // The document alone does not show a domain it waits for (domain_is_new).
      { type: 'document.enrichment_confirmed', actor: caller.name, at, about: { pending_domain: pendingDomain } },
    );
    return outcome(result, id, 'the enrichment is no longer awaiting review');
  }

  /** Ids of the documents waiting for a domain that does not exist yet. */
  async pendingDocumentIds(domainName: string): Promise<string[]> {
    return (await this.documents.listPending(domainName)).map((d) => d.id);
  }

  /**
   * Called once a domain exists: every document that confirmed it with `domain_is_new:
   * true` gets it on its catalog entity, loses `pending_domain`, and shows the domain as
   * an existing suggestion. Returns the ids attached. Each document is annotated first and
   * flipped second, conditional on it still waiting for this domain, so a repeat is harmless.
   * `actor`: who made the domain exist, named by each document's `document.domain_attached`.
   */
  async attachPendingDocuments(domainName: string, actor: string | null = null): Promise<string[]> {
    const domain = await this.catalog.getDomain(domainName);
    if (!domain) return [];
    const attached: string[] = [];
    for (const doc of await this.documents.listPending(domainName)) {
      await this.catalog.annotate(doc.catalog_urn, { domain: domain.name });
      const at = this.clock.iso();
      const result = await this.documents.attachDomain(
        doc.id,
        domainName,
        { suggested_domain: kept(domain), updated_at: at },
        { type: 'document.domain_attached', actor, at },
      );
      if (result.ok) attached.push(doc.id);
      else logger.info('document no longer waiting for domain', { document_id: doc.id, domain: domainName });
    }
    return attached;
  }
}

/** Prefix of the object keys that non-admins' documents get: derived from the document. */
const documentObjectPrefix = (id: string) => `documents/${id}/`;

/**
 * Where the document's object is stored. An admin (the ingestion pipeline) names any key;
 * anyone else's key lives under the document's own prefix, so that no user can claim
 * another's object.
 */
function objectKeyFor(id: string, requested: string | null | undefined, caller: Caller): string | null {
  if (requested == null) return null;
  if (isAdmin(caller)) return requested;
  const relative = requested.replace(/^\/+/, '');
  if (relative === '' || relative.split('/').some((part) => part === '.' || part === '..')) {
    throw new Invalid([
      valueError(['body', 'objstore_key'], 'must be a relative object key without "." or ".." parts', requested),
    ]);
  }
  return `${documentObjectPrefix(id)}${relative}`;
}

const dedupe = (items: CatalogItem[]): CatalogItem[] => {
  const seen = new Set<string>();
  return items.filter((i) => !seen.has(i.name) && seen.add(i.name));
};

function outcome(result: WriteResult, id: string, conflict: string): Document {
  if (result.ok) return result.document;
  if (result.reason === 'missing') throw new NotFound(`No document ${id}`);
  throw new Conflict(`Document ${id}: ${conflict}`);
}
