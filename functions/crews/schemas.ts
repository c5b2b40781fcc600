import { z } from '@hono/zod-openapi';
import { intParam } from '../../shared/http/params.js';

export const VARIABLE_TYPES = ['string', 'integer', 'number', 'boolean', 'object', 'array'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

/** At most this many steps, so a run's outputs fit in its `run.completed` event. */
export const MAX_STEPS = 20;

export const Variable = z
  .strictObject({
    name: z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/),
    type: z.enum(VARIABLE_TYPES).default('string'),
    required: z.boolean().default(false),
    default: z.unknown().optional().openapi({ description: 'a value of the declared type' }),
    description: z.string().max(2000).nullable().optional(),
  })
  .openapi('CrewVariable');
export type Variable = z.infer<typeof Variable>;

const stepId = z.string().regex(/^[a-z0-9_-]{1,64}$/);
const text = (max: number) => z.string().max(max);

export const RenderStep = z.strictObject({ id: stepId, kind: z.literal('render'), template: text(100_000) });
export const HttpStep = z.strictObject({
  id: stepId,
  kind: z.literal('http'),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']),
  url: text(4000),
  headers: z.record(z.string().max(256), text(8000)).optional(),
  body: text(100_000).optional(),
});
export const LlmStep = z.strictObject({
  id: stepId,
  kind: z.literal('llm'),
  prompt: text(100_000),
  system: text(100_000).optional(),
});
/** DynamoDB stores no number of smaller magnitude than this (it answers "Number underflow"). */
const SMALLEST_STORABLE = 1e-130;
export const WaitStep = z.strictObject({
  id: stepId,
  kind: z.literal('wait'),
  // A wait of a few 1e-300 seconds is a wait of none: stored as 0 rather than refused by the table.
  seconds: z
    .number()
    .min(0)
    .max(60)
    .overwrite((s) => (s < SMALLEST_STORABLE ? 0 : s)),
});

export const Step = z.discriminatedUnion('kind', [RenderStep, HttpStep, LlmStep, WaitStep]).openapi('CrewStep');
export type Step = z.infer<typeof Step>;

export const TemplateRequest = z
  .strictObject({
    name: z.string().min(1).max(200),
    description: z.string().max(4000).nullable().optional(),
    variables: z.array(Variable).max(100).default([]),
    steps: z.array(Step).min(1).max(MAX_STEPS),
  })
  .openapi('CrewTemplateRequest');
export type TemplateRequest = z.infer<typeof TemplateRequest>;

export const CrewTemplate = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    variables: z.array(Variable),
    steps: z.array(Step),
    created_by: z.string(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .openapi('CrewTemplate');
export type CrewTemplate = z.infer<typeof CrewTemplate>;

export const TemplateParams = z.object({ template_id: z.string().min(1).max(64) });

export const RunRequest = z
  .strictObject({
    values: z.record(z.string(), z.unknown()).default({}).openapi({ description: 'variable name → value' }),
  })
  .openapi('CrewRunRequest');

export const RunHandle = z
  .object({ correlation_id: z.string(), status: z.literal('pending'), message: z.string() })
  .openapi('CrewRunHandle');

export const RUN_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const CrewRun = z
  .object({
    correlation_id: z.string(),
    template_id: z.string(),
    status: z.enum(RUN_STATUSES),
    values: z.record(z.string(), z.unknown()),
    created_by: z.string(),
    created_at: z.iso.datetime(),
    started_at: z.iso.datetime().nullable(),
    finished_at: z.iso.datetime().nullable(),
    event_count: z.int(),
    error: z.string().nullable(),
  })
  .openapi('CrewRun');
export type CrewRun = z.infer<typeof CrewRun>;

export const EVENT_TYPES = [
  'run.queued',
  'run.started',
  'step.started',
  'step.completed',
  'step.failed',
  'run.completed',
  'run.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const CrewEvent = z
  .object({
    index: z.int(),
    correlation_id: z.string(),
    type: z.enum(EVENT_TYPES),
    timestamp: z.iso.datetime(),
    step_id: z.string().optional(),
    message: z.string(),
    data: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi('CrewEvent');
export type CrewEvent = z.infer<typeof CrewEvent>;

/** E13 path: exactly 36 characters (the UUID E2 returned). */
export const RunParams = z.object({ correlation_id: z.string().min(36).max(36) });

export const EventsQuery = z.object({
  start: intParam({ min: 0 }).optional().openapi({ type: 'integer', minimum: 0, default: 0 }),
  start_index: intParam({ min: 0 })
    .optional()
    .openapi({ type: 'integer', minimum: 0, description: 'alias of `start`' }),
});
