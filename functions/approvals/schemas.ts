import * as z from 'zod/mini';
import { PageQuery } from '../../shared/params.js';
import { component, doc } from '../../shared/schema.js';

/** Who the caller is, as the service sees it (docs/reviewing.md). */
export const Me = component(
  'Me',
  z.object({
    name: doc(z.string(), 'the name shown for the caller (preferred_username, else email, else sub)'),
    principal: doc(
      z.string(),
      'who the caller is, as every ownership and four-eyes check compares it: opaque and stable',
    ),
    roles: doc(z.array(z.string()), "the caller's roles, sorted"),
    credential: doc(z.enum(['bearer', 'psk']), 'how the caller authenticated'),
    session: doc(z.boolean(), 'whether it is an identity-provider session (deciding needs one)'),
  }),
);
export type Me = z.infer<typeof Me>;

export const APPROVAL_KINDS = ['decision_version', 'crew_step'] as const;

export const DecisionVersionApproval = component(
  'DecisionVersionApproval',
  z.object({
    kind: doc(z.literal('decision_version'), 'a decision version to approve or reject'),
    workspace: doc(z.string(), 'workspace slug'),
    key: doc(z.string(), 'decision key'),
    version: doc(z.int(), 'version number'),
    created_by: doc(z.string(), 'the author'),
    submitted_by: doc(z.string(), 'who submitted it for review'),
    submitted_at: doc(z.iso.datetime(), 'when (the inbox is ordered by it)'),
    content_sha: doc(z.string(), 'lowercase hex SHA-256 of the canonical JSON content'),
    notes: doc(z.nullable(z.string()), "the note of its last transition (the submitter's), or null"),
  }),
);

export const CrewStepApproval = component(
  'CrewStepApproval',
  z.object({
    kind: doc(z.literal('crew_step'), 'a waiting crew approval step to approve or reject'),
    correlation_id: doc(z.string(), 'the run'),
    step_id: doc(z.string(), 'the approval step'),
    template_id: doc(z.string(), "the run's template"),
    template_name: doc(z.string(), "the template's name when the run started"),
    prompt: doc(z.string(), "the step's rendered prompt: what is to be decided"),
    role: doc(z.string(), 'the role the step needs'),
    started_by: doc(z.string(), "the run's starter (who may not decide it)"),
    waiting_since: doc(z.iso.datetime(), 'when the step began to wait (the inbox is ordered by it)'),
    expires_at: doc(z.iso.datetime(), 'the step fails when nobody decides by then'),
  }),
);

export const Approval = component('Approval', z.union([DecisionVersionApproval, CrewStepApproval]));
export type Approval = z.infer<typeof Approval>;

export const ApprovalsQuery = z.extend(PageQuery, {
  kind: doc(z.optional(z.enum(APPROVAL_KINDS)), 'only items of this kind'),
});
export type ApprovalsQuery = z.infer<typeof ApprovalsQuery>;
