import { z } from '@hono/zod-openapi';
import { integer, intParam } from '../../shared/http/params.js';
import { optionalText, slug } from '../../shared/http/schemas.js';
import { pydanticIssue } from '../../shared/http/validation.js';

export const DecisionStatus = z.enum(['draft', 'submitted', 'approved', 'retired']).openapi('DecisionStatus');
export type DecisionStatus = z.infer<typeof DecisionStatus>;

export const KeyParams = z.object({
  workspace: slug().openapi({ description: 'workspace slug', example: 'finance' }),
  key: slug().openapi({ description: 'decision key, a flat slug', example: 'credit-limit' }),
});

export const VersionParams = KeyParams.extend({
  version: intParam({ min: 1 }).openapi({ type: 'integer', minimum: 1, description: 'version number' }),
});

export const VersionSummary = z
  .object({
    workspace: z.string(),
    key: z.string(),
    version: z.int(),
    content_sha: z.string().openapi({ description: 'lowercase hex SHA-256 of the canonical JSON content' }),
    status: DecisionStatus,
    notes: z.string().nullable(),
    created_by: z.string(),
    created_at: z.iso.datetime(),
    submitted_by: z.string().nullable(),
    submitted_at: z.iso.datetime().nullable(),
    approved_by: z.string().nullable(),
    approved_at: z.iso.datetime().nullable(),
    source_instance: z.string().nullable(),
    source_version: z.int().nullable(),
  })
  .openapi('VersionSummary');
export type VersionSummary = z.infer<typeof VersionSummary>;

export const VersionDetail = VersionSummary.extend({
  content: z.unknown().openapi({ description: 'any JSON value' }),
}).openapi('VersionDetail');
export type VersionDetail = z.infer<typeof VersionDetail>;

export const HistoryEntry = z
  .object({
    from: DecisionStatus.nullable(),
    to: DecisionStatus,
    action: z.enum(['create', 'submit', 'approve', 'reject', 'retire']),
    by: z.string(),
    at: z.iso.datetime(),
    notes: z.string().nullable(),
  })
  .openapi('HistoryEntry');
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const CreateVersionRequest = z
  .strictObject({
    content: z
      .unknown()
      .refine((v) => v !== undefined, { params: pydanticIssue('missing', 'Field required') })
      .openapi({ description: 'any JSON value' }),
    notes: optionalText(1000),
    source_instance: z.string().max(256).nullable().optional(),
    source_version: integer().min(1).nullable().optional(),
  })
  .openapi('CreateVersionRequest');
export type CreateVersionRequest = z.infer<typeof CreateVersionRequest>;

/** Spec 2.2; the body may also be `null` or absent. */
export const LifecycleActionRequest = z.strictObject({ notes: optionalText(1000) }).openapi('LifecycleActionRequest');
export const LifecycleBody = LifecycleActionRequest.nullable();
