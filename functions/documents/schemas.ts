import * as z from 'zod/mini';
import { integer } from '../../shared/params.js';
import { component, doc } from '../../shared/schema.js';

/** Spec 3.2. */
export const DOCUMENT_STATUSES = ['uploading', 'extracting', 'ocr_required', 'indexed', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];
export const ENRICHMENT_STATUSES = ['pending', 'running', 'awaiting_review', 'confirmed', 'failed'] as const;
export type EnrichmentStatus = (typeof ENRICHMENT_STATUSES)[number];

/**
 * The forward moves of a document's status (docs/data-and-catalog.md): for each target, the statuses it
 * may be reached from. `uploading` is where a document starts; nothing moves back to it.
 */
export const STATUS_PREDECESSORS: Readonly<Record<DocumentStatus, readonly DocumentStatus[]>> = {
  uploading: [],
  extracting: ['uploading', 'ocr_required'],
  indexed: ['extracting'],
  ocr_required: ['extracting'],
  failed: ['extracting'],
};

export const MAX_NAME = 255;
export const MAX_SUMMARY = 10_000;
export const MAX_TEXT = 4000;
export const MAX_SUGGESTIONS = 1000;

/** A tag, glossary term or domain name as the catalog stores it (undescribed: for wrappers). */
const labelText = () => z.string().check(z.minLength(1), z.maxLength(MAX_NAME));
/** A tag, glossary term or domain name as the catalog stores it. */
const label = (what: string) => doc(labelText(), what);
const labels = (what: string) => z.array(label(what)).check(z.maxLength(MAX_SUGGESTIONS));

export const FlaggedSuggestion = component(
  'FlaggedSuggestion',
  z.object({
    name: doc(z.string(), 'the tag, glossary term or domain name'),
    is_existing: doc(z.boolean(), 'whether the metadata catalog has it'),
    urn: doc(z.nullable(z.string()), "its catalog urn; null while it doesn't exist"),
  }),
);
export type FlaggedSuggestion = z.infer<typeof FlaggedSuggestion>;

/** Spec 2.7, plus the timestamps every stored resource carries. */
export const Document = component(
  'Document',
  z.object({
    id: doc(z.uuid(), 'the document id (UUID), assigned at registration'),
    filename: doc(z.string(), 'the file name given at registration'),
    owner: doc(z.string(), 'the name of who registered it'),
    mime_type: doc(z.string(), 'the media type, e.g. `application/pdf`'),
    size_bytes: doc(z.int(), 'the file size in bytes'),
    page_count: doc(z.nullable(z.int()), 'pages, as the ingestion pipeline reported; null until then'),
    chunk_count: doc(z.nullable(z.int()), 'indexed chunks, as the ingestion pipeline reported; null until then'),
    subtype: doc(z.nullable(z.string()), 'as given at registration; null when not given'),
    status: doc(
      z.enum(DOCUMENT_STATUSES),
      'ingestion status: starts `uploading`; forward moves only: uploading → extracting → indexed / ocr_required / failed, ocr_required → extracting',
    ),
    enrichment_status: doc(
      z.enum(ENRICHMENT_STATUSES),
      'enrichment status: `pending` at registration, `awaiting_review` once suggestions are stored, `confirmed` after E6',
    ),
    catalog_urn: doc(z.string(), 'the document entity in the metadata catalog'),
    extraction_warning: doc(z.nullable(z.string()), 'a warning the ingestion pipeline reported; null when none'),
    suggested_summary: doc(z.nullable(z.string()), 'the suggested summary; after E6 the confirmed one; null when none'),
    error: doc(z.nullable(z.string()), 'an error the ingestion pipeline reported; null when none'),
    objstore_key: doc(z.nullable(z.string()), 'the object storage key given at registration; null when not given'),
    suggested_tags: doc(
      z.array(FlaggedSuggestion),
      'suggested tags, each flagged with what the catalog has; after E6 the kept ones',
    ),
    suggested_glossary_terms: doc(
      z.array(FlaggedSuggestion),
      'suggested glossary terms, each flagged with what the catalog has; after E6 the kept ones',
    ),
    suggested_domain: doc(
      z.nullable(FlaggedSuggestion),
      'the suggested domain; after E6 the chosen one; null when none',
    ),
    created_at: doc(z.iso.datetime(), 'when the document was registered (ISO 8601 UTC)'),
    updated_at: doc(z.iso.datetime(), 'when it last changed (ISO 8601 UTC)'),
  }),
);
export type Document = z.infer<typeof Document>;

export const DocumentParams = z.object({
  document_id: doc(z.uuid(), 'the document id returned at registration'),
});

export const DocumentRequest = component(
  'DocumentRequest',
  z.strictObject({
    filename: doc(z.string().check(z.minLength(1), z.maxLength(1024)), 'the file name, 1–1024 characters'),
    mime_type: doc(
      z.string().check(z.minLength(1), z.maxLength(255)),
      'the media type, e.g. `application/pdf` (1–255 characters)',
    ),
    size_bytes: doc(integer().check(z.gte(0)), 'the file size in bytes (≥ 0)'),
    subtype: doc(
      z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(255)))),
      'an optional document subtype, 1–255 characters',
    ),
    objstore_key: doc(
      z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(1024)))),
      'the object storage key',
    ),
  }),
);
export type DocumentRequest = z.infer<typeof DocumentRequest>;

export const StatusUpdate = component(
  'DocumentStatusUpdate',
  z.strictObject({
    status: doc(
      z.enum(DOCUMENT_STATUSES),
      'forward moves only: uploading → extracting → indexed / ocr_required / failed, ocr_required → extracting',
    ),
    page_count: doc(z.optional(z.nullable(integer().check(z.gte(0)))), 'pages found (≥ 0)'),
    chunk_count: doc(z.optional(z.nullable(integer().check(z.gte(0)))), 'chunks indexed (≥ 0)'),
    extraction_warning: doc(
      z.optional(z.nullable(z.string().check(z.maxLength(MAX_TEXT)))),
      'a warning from extraction, at most 4000 characters',
    ),
    error: doc(
      z.optional(z.nullable(z.string().check(z.maxLength(MAX_TEXT)))),
      'why ingestion failed, at most 4000 characters',
    ),
  }),
);
export type StatusUpdate = z.infer<typeof StatusUpdate>;

export const SuggestionsRequest = component(
  'DocumentSuggestions',
  z.strictObject({
    suggested_summary: doc(
      z.nullable(z.string().check(z.maxLength(MAX_SUMMARY))),
      'the suggested summary (required; at most 10,000 characters, or null)',
    ),
    suggested_tags: doc(
      labels('tag'),
      'suggested tag names (required; at most 1000, each 1–255 characters; duplicates are dropped)',
    ),
    suggested_glossary_terms: doc(
      labels('glossary term'),
      'suggested glossary term names (required; at most 1000, each 1–255 characters; duplicates are dropped)',
    ),
    suggested_domain: doc(z.optional(z.nullable(labelText())), 'the suggested domain name (1–255 characters), or null'),
  }),
);
export type SuggestionsRequest = z.infer<typeof SuggestionsRequest>;

/** Spec 2.8. */
export const EnrichmentConfirmation = component(
  'EnrichmentConfirmation',
  z.strictObject({
    summary: doc(
      z._default(z.nullable(z.string().check(z.maxLength(MAX_SUMMARY))), null),
      'confirmed summary; null keeps the current one',
    ),
    accepted_tags: doc(z._default(labels('tag'), []), 'kept tags that exist in the catalog'),
    new_tags: doc(z._default(labels('tag'), []), 'kept tags the service creates'),
    accepted_glossary_terms: doc(
      z._default(labels('glossary term'), []),
      'kept glossary terms that exist in the catalog',
    ),
    new_glossary_terms: doc(z._default(labels('glossary term'), []), 'kept glossary terms the service creates'),
    domain: doc(z._default(z.nullable(labelText()), null), 'null leaves the document unassigned'),
    domain_is_new: doc(z._default(z.boolean(), false), 'true: the domain is attached once an administrator creates it'),
  }),
);
export type EnrichmentConfirmation = z.infer<typeof EnrichmentConfirmation>;
