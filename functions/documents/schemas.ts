import { z } from '@hono/zod-openapi';
import { integer } from '../../shared/http/params.js';

/** Spec 3.2. */
export const DOCUMENT_STATUSES = ['uploading', 'extracting', 'ocr_required', 'indexed', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];
export const ENRICHMENT_STATUSES = ['pending', 'running', 'awaiting_review', 'confirmed', 'failed'] as const;
export type EnrichmentStatus = (typeof ENRICHMENT_STATUSES)[number];

/**
 * The forward moves of a document's status (API.md §7): for each target, the statuses it
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

/** A tag, glossary term or domain name as the catalog stores it. */
const label = (what: string) => z.string().min(1).max(MAX_NAME).openapi({ description: what });
const labels = (what: string) => z.array(label(what)).max(MAX_SUGGESTIONS);

export const FlaggedSuggestion = z
  .object({
    name: z.string().openapi({ description: 'the tag, glossary term or domain name' }),
    is_existing: z.boolean().openapi({ description: 'whether the metadata catalog has it' }),
    urn: z.string().nullable().openapi({ description: "its catalog urn; null while it doesn't exist" }),
  })
  .openapi('FlaggedSuggestion');
export type FlaggedSuggestion = z.infer<typeof FlaggedSuggestion>;

/** Spec 2.7, plus the timestamps every stored resource carries. */
export const Document = z
  .object({
    id: z.uuid().openapi({ description: 'the document id (UUID), assigned at registration' }),
    filename: z.string().openapi({ description: 'the file name given at registration' }),
    owner: z.string().openapi({ description: 'the name of who registered it' }),
    mime_type: z.string().openapi({ description: 'the media type, e.g. `application/pdf`' }),
    size_bytes: z.int().openapi({ description: 'the file size in bytes' }),
    page_count: z
      .int()
      .nullable()
      .openapi({ description: 'pages, as the ingestion pipeline reported; null until then' }),
    chunk_count: z
      .int()
      .nullable()
      .openapi({ description: 'indexed chunks, as the ingestion pipeline reported; null until then' }),
    subtype: z.string().nullable().openapi({ description: 'as given at registration; null when not given' }),
    status: z.enum(DOCUMENT_STATUSES).openapi({
      description:
        'ingestion status: starts `uploading`; forward moves only: uploading → extracting → indexed / ocr_required / failed, ocr_required → extracting',
    }),
    enrichment_status: z.enum(ENRICHMENT_STATUSES).openapi({
      description:
        'enrichment status: `pending` at registration, `awaiting_review` once suggestions are stored, `confirmed` after E6',
    }),
    catalog_urn: z.string().openapi({ description: 'the document entity in the metadata catalog' }),
    extraction_warning: z
      .string()
      .nullable()
      .openapi({ description: 'a warning the ingestion pipeline reported; null when none' }),
    suggested_summary: z
      .string()
      .nullable()
      .openapi({ description: 'the suggested summary; after E6 the confirmed one; null when none' }),
    error: z.string().nullable().openapi({ description: 'an error the ingestion pipeline reported; null when none' }),
    objstore_key: z
      .string()
      .nullable()
      .openapi({ description: 'the object storage key given at registration; null when not given' }),
    suggested_tags: z
      .array(FlaggedSuggestion)
      .openapi({ description: 'suggested tags, each flagged with what the catalog has; after E6 the kept ones' }),
    suggested_glossary_terms: z.array(FlaggedSuggestion).openapi({
      description: 'suggested glossary terms, each flagged with what the catalog has; after E6 the kept ones',
    }),
    suggested_domain: FlaggedSuggestion.nullable().openapi({
      description: 'the suggested domain; after E6 the chosen one; null when none',
    }),
    created_at: z.iso.datetime().openapi({ description: 'when the document was registered (ISO 8601 UTC)' }),
    updated_at: z.iso.datetime().openapi({ description: 'when it last changed (ISO 8601 UTC)' }),
  })
  .openapi('Document');
export type Document = z.infer<typeof Document>;

export const DocumentParams = z.object({
  document_id: z.uuid().openapi({ description: 'the document id returned at registration' }),
});

export const DocumentRequest = z
  .strictObject({
    filename: z.string().min(1).max(1024).openapi({ description: 'the file name, 1–1024 characters' }),
    mime_type: z
      .string()
      .min(1)
      .max(255)
      .openapi({ description: 'the media type, e.g. `application/pdf` (1–255 characters)' }),
    size_bytes: integer().min(0).openapi({ description: 'the file size in bytes (≥ 0)' }),
    subtype: z
      .string()
      .min(1)
      .max(255)
      .nullable()
      .optional()
      .openapi({ description: 'an optional document subtype, 1–255 characters' }),
    objstore_key: z.string().min(1).max(1024).nullable().optional().openapi({ description: 'the object storage key' }),
  })
  .openapi('DocumentRequest');
export type DocumentRequest = z.infer<typeof DocumentRequest>;

export const StatusUpdate = z
  .strictObject({
    status: z.enum(DOCUMENT_STATUSES).openapi({
      description:
        'forward moves only: uploading → extracting → indexed / ocr_required / failed, ocr_required → extracting',
    }),
    page_count: integer().min(0).nullable().optional().openapi({ description: 'pages found (≥ 0)' }),
    chunk_count: integer().min(0).nullable().optional().openapi({ description: 'chunks indexed (≥ 0)' }),
    extraction_warning: z
      .string()
      .max(MAX_TEXT)
      .nullable()
      .optional()
      .openapi({ description: 'a warning from extraction, at most 4000 characters' }),
    error: z
      .string()
      .max(MAX_TEXT)
      .nullable()
      .optional()
      .openapi({ description: 'why ingestion failed, at most 4000 characters' }),
  })
  .openapi('DocumentStatusUpdate');
export type StatusUpdate = z.infer<typeof StatusUpdate>;

export const SuggestionsRequest = z
  .strictObject({
    suggested_summary: z
      .string()
      .max(MAX_SUMMARY)
      .nullable()
      .openapi({ description: 'the suggested summary (required; at most 10,000 characters, or null)' }),
    suggested_tags: labels('tag').openapi({
      description: 'suggested tag names (required; at most 1000, each 1–255 characters; duplicates are dropped)',
    }),
    suggested_glossary_terms: labels('glossary term').openapi({
      description:
        'suggested glossary term names (required; at most 1000, each 1–255 characters; duplicates are dropped)',
    }),
    suggested_domain: label('domain')
      .nullable()
      .optional()
      .openapi({ description: 'the suggested domain name (1–255 characters), or null' }),
  })
  .openapi('DocumentSuggestions');
export type SuggestionsRequest = z.infer<typeof SuggestionsRequest>;

/** Spec 2.8. */
export const EnrichmentConfirmation = z
  .strictObject({
    summary: z
      .string()
      .max(MAX_SUMMARY)
      .nullable()
      .default(null)
      .openapi({ description: 'confirmed summary; null keeps the current one' }),
    accepted_tags: labels('tag').default([]).openapi({ description: 'kept tags that exist in the catalog' }),
    new_tags: labels('tag').default([]).openapi({ description: 'kept tags the service creates' }),
    accepted_glossary_terms: labels('glossary term')
      .default([])
      .openapi({ description: 'kept glossary terms that exist in the catalog' }),
    new_glossary_terms: labels('glossary term')
      .default([])
      .openapi({ description: 'kept glossary terms the service creates' }),
    domain: label('domain').nullable().default(null).openapi({ description: 'null leaves the document unassigned' }),
    domain_is_new: z.boolean().default(false).openapi({
      description: 'true: the domain is attached once an administrator creates it',
    }),
  })
  .openapi('EnrichmentConfirmation');
export type EnrichmentConfirmation = z.infer<typeof EnrichmentConfirmation>;
