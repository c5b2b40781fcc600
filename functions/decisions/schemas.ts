import * as z from 'zod/mini';
import { laxInt } from '../../shared/pydantic/lax.js';
import { integer, intParam, PageQuery } from '../../shared/params.js';
import { optionalText, slug } from '../../shared/http/schemas.js';
import { pydanticIssue } from '../../shared/pydantic/issues.js';
import { component, doc } from '../../shared/schema.js';

export const DecisionStatus = component(
  'DecisionStatus',
  doc(
    z.enum(['draft', 'submitted', 'approved', 'retired']),
    "a version's lifecycle status: `draft` (new) → `submitted` (submit) → `approved` (approve; reject returns it to `draft`) → `retired` (retire)",
  ),
);
export type DecisionStatus = z.infer<typeof DecisionStatus>;

export const DecisionKeyParams = z.object({
  workspace: doc(slug(), 'workspace slug', { example: 'finance' }),
  key: doc(slug(), 'decision key, a flat slug', { example: 'credit-limit' }),
});

/** `GET /api/decisions`: the list's page, and a workspace to list alone. */
export const DecisionsQuery = z.extend(PageQuery, {
  workspace: doc(z.optional(slug()), "only this workspace's decisions (a workspace slug)", { example: 'finance' }),
});
export type DecisionsQuery = z.infer<typeof DecisionsQuery>;

export const VersionParams = z.extend(DecisionKeyParams, {
  version: doc(intParam({ min: 1 }), 'version number', { type: 'integer', minimum: 1 }),
});

export const VersionSummary = component(
  'VersionSummary',
  z.object({
    workspace: doc(z.string(), 'workspace slug'),
    key: doc(z.string(), 'decision key, a flat slug'),
    version: doc(z.int(), 'version number: 1, 2, 3... per key, assigned at creation'),
    content_sha: doc(z.string(), 'lowercase hex SHA-256 of the canonical JSON content'),
    status: DecisionStatus,
    notes: doc(
      z.nullable(z.string()),
      'reviewer note: the one given at creation, replaced by each transition that carries notes',
    ),
    created_by: doc(z.string(), "the author's name"),
    created_at: doc(z.iso.datetime(), 'when the version was created (ISO 8601 UTC)'),
    submitted_by: doc(z.nullable(z.string()), "the submitter's name; null until submitted, cleared by a reject"),
    submitted_at: doc(z.nullable(z.iso.datetime()), 'when it was submitted; null until submitted, cleared by a reject'),
    approved_by: doc(z.nullable(z.string()), "the approver's name; null until approved"),
    approved_at: doc(z.nullable(z.iso.datetime()), 'when it was approved; null until approved'),
    source_instance: doc(
      z.nullable(z.string()),
      'as given at creation (informational, not interpreted); null when not given',
    ),
    source_version: doc(
      z.nullable(z.int()),
      'as given at creation (informational, not interpreted); null when not given',
    ),
  }),
);
export type VersionSummary = z.infer<typeof VersionSummary>;

export const DecisionSummary = component(
  'DecisionSummary',
  z.object({
    workspace: doc(z.string(), 'workspace slug'),
    key: doc(z.string(), 'decision key, a flat slug'),
    latest_version: doc(z.int(), 'the newest version created'),
    latest_status: DecisionStatus,
    published_version: doc(
      z.nullable(z.int()),
      'the newest approved version (what `.../published` answers); null while none is approved',
    ),
    updated_at: doc(
      z.iso.datetime(),
      'when this entry last changed: a version created, the latest one moved through the lifecycle, or the published version changed (ISO 8601 UTC)',
    ),
  }),
);
export type DecisionSummary = z.infer<typeof DecisionSummary>;

export const VersionDetail = component(
  'VersionDetail',
  z.extend(VersionSummary, {
    content: doc(z.unknown(), 'the decision content: any JSON value'),
  }),
);
export type VersionDetail = z.infer<typeof VersionDetail>;

export const HistoryEntry = component(
  'HistoryEntry',
  z.object({
    from: doc(z.nullable(DecisionStatus), 'the status before the transition; null for `create`'),
    to: DecisionStatus,
    action: doc(z.enum(['create', 'submit', 'approve', 'reject', 'retire']), 'what happened'),
    by: doc(z.string(), 'the name of who did it'),
    at: doc(z.iso.datetime(), 'when (ISO 8601 UTC)'),
    notes: doc(z.nullable(z.string()), 'the note given with the transition, or null'),
  }),
);
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const CreateVersionRequest = component(
  'CreateVersionRequest',
  z.strictObject({
    content: doc(
      z.unknown().check(z.refine((v) => v !== undefined, { params: pydanticIssue('missing', 'Field required') })),
      'the decision content, required: any JSON value, at most 200 KiB as canonical JSON',
    ),
    notes: doc(optionalText(1000), 'reviewer note, at most 1000 characters'),
    source_instance: doc(
      z.optional(z.nullable(z.string().check(z.maxLength(256)))),
      'stored as given (informational, not interpreted), at most 256 characters',
    ),
    source_version: doc(
      z.optional(z.nullable(integer().check(z.gte(1)))),
      'stored as given (informational, not interpreted), an integer ≥ 1',
    ),
  }),
);
export type CreateVersionRequest = z.infer<typeof CreateVersionRequest>;

/** Spec 2.2; the body may also be `null` or absent. */
/** E1's family takes this object, `null` or no body at all. */
export const LifecycleBody = component(
  'LifecycleActionRequest',
  z.nullable(
    z.strictObject({
      notes: doc(optionalText(1000), 'reviewer note recorded with the transition (at most 1000 characters)'),
    }),
  ),
);

const AGAINST_ERROR = 'must be `published` or a version number (an integer ≥ 1)';

export const DiffQuery = z.object({
  against: doc(
    z.optional(
      z.pipe(
        z.string().check(
          z.refine((s) => s === 'published' || ((n) => typeof n === 'number' && n >= 1)(laxInt(s)), {
            params: pydanticIssue('value_error', `Value error, ${AGAINST_ERROR}`, { error: AGAINST_ERROR }),
            abort: true,
          }),
        ),
        z.transform((s): 'published' | number => (s === 'published' ? 'published' : (laxInt(s) as number))),
      ),
    ),
    'what to compare with: `published` (the default: the newest approved version) or a version number',
    { type: 'string', default: 'published', example: '3' },
  ),
});
export type DiffQuery = z.infer<typeof DiffQuery>;

export const VersionRef = component(
  'VersionRef',
  z.object({
    version: doc(z.int(), 'version number'),
    content_sha: doc(z.string(), 'lowercase hex SHA-256 of its canonical JSON content'),
  }),
);

export const ContentChange = component(
  'ContentChange',
  z.object({
    op: doc(z.enum(['add', 'remove', 'replace']), 'what happened at `path`'),
    path: doc(z.string(), 'where, as a JSON Pointer (RFC 6901) into the content; `""` is the whole content', {
      example: '/limits/0/amount',
    }),
    old: doc(z.optional(z.unknown()), 'the value before (remove, replace)'),
    new: doc(z.optional(z.unknown()), 'the value after (add, replace)'),
  }),
);
export type ContentChange = z.infer<typeof ContentChange>;

export const VersionDiff = component(
  'VersionDiff',
  z.object({
    from: doc(z.nullable(VersionRef), 'the version compared with; null when there is no published version'),
    to: doc(VersionRef, 'the version whose changes these are'),
    changes: doc(
      z.array(ContentChange),
      'the changes that turn `from` into `to`, in an order that applies as a JSON Patch; none when equal. ' +
        'At most 1,000 changes and 1 MiB of answer: past either bound, the changes up to it',
    ),
    truncated: doc(
      z.boolean(),
      'whether the changes stop at a bound (1,000 changes or 1 MiB of answer) and more changes follow; ' +
        'the comparison stopped there',
    ),
    change_count: doc(
      z.optional(z.int()),
      'only when `truncated`: how many changes the comparison found before it stopped, the first left out ' +
        'included; a lower bound of the total (when not truncated, the total is the length of `changes`)',
      { example: 1001 },
    ),
  }),
);
export type VersionDiff = z.infer<typeof VersionDiff>;
