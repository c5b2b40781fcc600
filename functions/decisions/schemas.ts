import { z } from '@hono/zod-openapi';
import { integer, intParam } from '../../shared/http/params.js';
import { optionalText, slug } from '../../shared/http/schemas.js';
import { pydanticIssue } from '../../shared/http/validation.js';

export const DecisionStatus = z.enum(['draft', 'submitted', 'approved', 'retired']).openapi('DecisionStatus', {
  description:
    "a version's lifecycle status: `draft` (new) → `submitted` (submit) → `approved` (approve; reject returns it to `draft`) → `retired` (retire)",
});
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
    workspace: z.string().openapi({ description: 'workspace slug' }),
    key: z.string().openapi({ description: 'decision key, a flat slug' }),
    version: z.int().openapi({ description: 'version number: 1, 2, 3... per key, assigned at creation' }),
    content_sha: z.string().openapi({ description: 'lowercase hex SHA-256 of the canonical JSON content' }),
    status: DecisionStatus,
    notes: z.string().nullable().openapi({
      description: 'reviewer note: the one given at creation, replaced by each transition that carries notes',
    }),
    created_by: z.string().openapi({ description: "the author's name" }),
    created_at: z.iso.datetime().openapi({ description: 'when the version was created (ISO 8601 UTC)' }),
    submitted_by: z
      .string()
      .nullable()
      .openapi({ description: "the submitter's name; null until submitted, cleared by a reject" }),
    submitted_at: z.iso
      .datetime()
      .nullable()
      .openapi({ description: 'when it was submitted; null until submitted, cleared by a reject' }),
    approved_by: z.string().nullable().openapi({ description: "the approver's name; null until approved" }),
    approved_at: z.iso.datetime().nullable().openapi({ description: 'when it was approved; null until approved' }),
    source_instance: z
      .string()
      .nullable()
      .openapi({ description: 'as given at creation (informational, not interpreted); null when not given' }),
    source_version: z
      .int()
      .nullable()
      .openapi({ description: 'as given at creation (informational, not interpreted); null when not given' }),
  })
  .openapi('VersionSummary');
export type VersionSummary = z.infer<typeof VersionSummary>;

export const VersionDetail = VersionSummary.extend({
  content: z.unknown().openapi({ description: 'the decision content: any JSON value' }),
}).openapi('VersionDetail');
export type VersionDetail = z.infer<typeof VersionDetail>;

export const HistoryEntry = z
  .object({
    from: DecisionStatus.nullable().openapi({ description: 'the status before the transition; null for `create`' }),
    to: DecisionStatus,
    action: z.enum(['create', 'submit', 'approve', 'reject', 'retire']).openapi({ description: 'what happened' }),
    by: z.string().openapi({ description: 'the name of who did it' }),
    at: z.iso.datetime().openapi({ description: 'when (ISO 8601 UTC)' }),
    notes: z.string().nullable().openapi({ description: 'the note given with the transition, or null' }),
  })
  .openapi('HistoryEntry');
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const CreateVersionRequest = z
  .strictObject({
    content: z
      .unknown()
      .refine((v) => v !== undefined, { params: pydanticIssue('missing', 'Field required') })
      .openapi({
        description: 'the decision content, required: any JSON value, at most 200 KiB as canonical JSON',
      }),
    notes: optionalText(1000).openapi({ description: 'reviewer note, at most 1000 characters' }),
    source_instance: z
      .string()
      .max(256)
      .nullable()
      .optional()
      .openapi({ description: 'stored as given (informational, not interpreted), at most 256 characters' }),
    source_version: integer()
      .min(1)
      .nullable()
      .optional()
      .openapi({ description: 'stored as given (informational, not interpreted), an integer ≥ 1' }),
  })
  .openapi('CreateVersionRequest');
export type CreateVersionRequest = z.infer<typeof CreateVersionRequest>;

/** Spec 2.2; the body may also be `null` or absent. */
export const LifecycleActionRequest = z
  .strictObject({
    notes: optionalText(1000).openapi({
      description: 'reviewer note recorded with the transition (at most 1000 characters)',
    }),
  })
  .openapi('LifecycleActionRequest');
export const LifecycleBody = LifecycleActionRequest.nullable();
