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
    name: z.string(),
    is_existing: z.boolean().openapi({ description: 'whether the metadata catalog has it' }),
    urn: z.string().nullable().openapi({ description: "its catalog urn; null while it doesn't exist" }),
  })
  .openapi('FlaggedSuggestion');
export type FlaggedSuggestion = z.infer<typeof FlaggedSuggestion>;

/** Spec 2.7, plus the timestamps every stored resource carries. */
export const Document = z
  .object({
    id: z.uuid(),
    filename: z.string(),
    owner: z.string(),
    mime_type: z.string(),
    size_bytes: z.int(),
    page_count: z.int().nullable(),
    chunk_count: z.int().nullable(),
    subtype: z.string().nullable(),
    status: z.enum(DOCUMENT_STATUSES),
    enrichment_status: z.enum(ENRICHMENT_STATUSES),
    catalog_urn: z.string().openapi({ description: 'the document entity in the metadata catalog' }),
    extraction_warning: z.string().nullable(),
    suggested_summary: z.string().nullable(),
    error: z.string().nullable(),
    objstore_key: z.string().nullable(),
    suggested_tags: z.array(FlaggedSuggestion),
    suggested_glossary_terms: z.array(FlaggedSuggestion),
    suggested_domain: FlaggedSuggestion.nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .openapi('Document');
export type Document = z.infer<typeof Document>;

export const DocumentParams = z.object({
  document_id: z.uuid().openapi({ description: 'the document id returned at registration' }),
});

export const DocumentRequest = z
  .strictObject({
    filename: z.string().min(1).max(1024),
    mime_type: z.string().min(1).max(255),
    size_bytes: integer().min(0),
    subtype: z.string().min(1).max(255).nullable().optional(),
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
    page_count: integer().min(0).nullable().optional(),
    chunk_count: integer().min(0).nullable().optional(),
    extraction_warning: z.string().max(MAX_TEXT).nullable().optional(),
    error: z.string().max(MAX_TEXT).nullable().optional(),
  })
  .openapi('DocumentStatusUpdate');
export type StatusUpdate = z.infer<typeof StatusUpdate>;

export const SuggestionsRequest = z
  .strictObject({
    suggested_summary: z.string().max(MAX_SUMMARY).nullable(),
    suggested_tags: labels('tag'),
    suggested_glossary_terms: labels('glossary term'),
    suggested_domain: label('domain').nullable().optional(),
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
