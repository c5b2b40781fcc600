import * as z from 'zod/mini';
import { integer, intParam, PageQuery } from '../../../shared/params.js';
import { component, doc } from '../../../shared/schema.js';
import { runWebhookUrl } from '../../../shared/webhook-url.js';
import { MAX_BULK_CANCEL, MAX_ERROR_BYTES, MAX_MESSAGE_BYTES } from '../limits.js';

export const RunRequest = component(
  'CrewRunRequest',
  z.strictObject({
    values: doc(
      z._default(z.record(z.string(), z.unknown()), {}),
      "variable name → value (default `{}`): every required variable, no undeclared name (422 `extra_forbidden`), each of its variable's type; a variable left out takes its default, else null",
    ),
    webhook_url: z.optional(
      runWebhookUrl(
        "where every E13 event of this run is POSTed, in index order, as a signed `dpm.crew.run.event` envelope whose `data` is the E13 event (like CrewAI's kickoff callbacks); the answer then carries the signing `webhook_secret`",
      ),
    ),
  }),
);

export const RunHandle = component(
  'CrewRunHandle',
  z.object({
    correlation_id: doc(
      z.string(),
      "the run's id (UUID, 36 characters): poll its events with `GET /api/events/{correlation_id}` (E13)",
    ),
    status: doc(z.literal('pending'), 'always `pending`: the run is queued'),
    message: doc(z.string(), 'where to poll, in words'),
    webhook_secret: doc(
      z.optional(z.string()),
      "only with `webhook_url`: the secret (`whsec_` + base64 of 32 bytes) that signs the run's deliveries (Standard Webhooks); shown only here",
    ),
  }),
);

export const RUN_STATUSES = ['pending', 'running', 'waiting', 'succeeded', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const CrewRun = component(
  'CrewRun',
  z.object({
    correlation_id: doc(z.string(), "the run's id (UUID), as E2 answered"),
    template_id: doc(z.string(), 'the template that was run'),
    status: doc(
      z.enum(RUN_STATUSES),
      '`pending` (queued) → `running` → `succeeded` or `failed`; `waiting` while an `approval` step waits for its decision; `cancelled` when its starter or an admin cancelled it before it finished; a retried run is `pending` again',
    ),
    values: doc(
      z.record(z.string(), z.unknown()),
      'the variable values of the run, defaults filled in (null for an optional one left out)',
    ),
    created_by: doc(z.string(), 'the name of who started the run'),
    created_at: doc(z.iso.datetime(), 'when the run was queued (ISO 8601 UTC)'),
    started_at: doc(z.nullable(z.iso.datetime()), 'when the worker started it; null before'),
    finished_at: doc(z.nullable(z.iso.datetime()), 'when it succeeded or failed; null before'),
    event_count: doc(z.int(), 'how many events the run has so far (indices 0 to event_count − 1)'),
    error: doc(
      z.nullable(z.string()),
      `why the run failed (at most ${MAX_ERROR_BYTES / 1024} KiB); null unless it failed`,
    ),
    progress: doc(
      z.object({
        completed_steps: doc(z.int(), 'steps completed so far'),
        total_steps: doc(z.int(), "the run's steps (its template's when it started)"),
        current_step: doc(
          z.nullable(z.string()),
          'the step running, or the one the run failed at; null before the first step and once it succeeded',
        ),
      }),
      'how far the run is',
    ),
    step_ids: doc(
      z.array(z.string()),
      "the ids of the run's steps, in order: its template's when it started (a rerun's, the run it reruns); `from_step` of a rerun is one of them",
    ),
    rerun_of: doc(
      z.nullable(z.string()),
      'the run this one reruns (`POST /api/crew-runs/{correlation_id}/rerun`); null for a run started otherwise',
    ),
    schedule_id: doc(z.nullable(z.string()), 'the schedule that started the run; null for a run started otherwise'),
  }),
);
export type CrewRun = z.infer<typeof CrewRun>;

export const RUN_LOG_ENTRY_TYPES = [
  'run.queued',
  'run.started',
  'step.started',
  'step.completed',
  'step.waiting',
  'step.failed',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.retried',
  'run.throttled',
  'run.timed_out',
] as const;
export type RunLogEntryType = (typeof RUN_LOG_ENTRY_TYPES)[number];

export const RunLogEntry = component(
  'CrewEvent',
  z.object({
    index: doc(z.int(), "the event's place in the run: 0, 1, 2... without gaps"),
    correlation_id: doc(z.string(), 'the run'),
    type: doc(
      z.enum(RUN_LOG_ENTRY_TYPES),
      'in order: `run.queued` (index 0, written by E2; a rerun writes with it one `step.completed` with `data.reused` per step carried over), `run.started`, per step `step.started` then `step.completed` or `step.failed` (an `approval` step writes `step.waiting` before its outcome), then `run.completed` or `run.failed`; `run.cancelled` (data `{"by", "reason"}`) ends a cancelled run, whenever it comes; `run.retried` (data `{"by"}`) continues a failed or cancelled run, followed by the step that runs again; `run.throttled` (data `{"position"}`) when a run of a template with `max_concurrent_runs` has to wait for a slot (once per wait: before it starts, or again when it goes on after an approval while every slot is taken); `run.timed_out` (data `{"timeout_seconds"}`) then `run.failed` when it outlived `run_timeout_seconds`',
    ),
    timestamp: doc(z.iso.datetime(), 'when the event was written (ISO 8601 UTC)'),
    step_id: doc(z.optional(z.string()), 'the step, on `step.*` events'),
    message: doc(z.string(), `a human-readable account (at most ${MAX_MESSAGE_BYTES / 1024} KiB)`),
    data: doc(
      z.optional(z.record(z.string(), z.unknown())),
      '`run.queued`: `{"template_id", "values"}` (a rerun\'s adds `"rerun_of", "from_step"`); `step.started`: `{"input"}`, what the step sends, rendered: `render` `{"text"}`, `llm` `{"text", "system"?}`, `http` `{"method", "url", "headers", "body"?}` (values of headers named like secrets — authorization, cookie, key, token, secret, password, signature, session, auth — shown as `***`), `wait` `{"seconds"}`, `approval` `{"prompt"}`, each text at most 64 KiB; `step.completed`: `{"output"}`, and for an `llm` step `"provider", "model"` (which answered) and `"usage": {"input_tokens", "output_tokens"}` when the provider gives it (a rerun\'s step carried over from the run it reruns: `{"output", "reused": true}`, written with `run.queued`); `step.waiting`: `{"prompt", "role", "expires_at", "next"}`, where `next` is `{"step_id", "kind", "input"}` of the step that follows, its input as it would be sent with the outputs so far (null when the approval is the last step); `step.failed` and `run.failed`: `{"error"}`; `run.throttled`: `{"position"}`; `run.timed_out`: `{"timeout_seconds"}`; `run.completed`: `{"outputs": {step id: output}}`, where an output too large for the event is replaced by a note pointing to its `step.completed` event',
    ),
  }),
);
export type RunLogEntry = z.infer<typeof RunLogEntry>;

export const RunListQuery = z.extend(PageQuery, {
  status: doc(z.optional(z.enum(RUN_STATUSES)), 'only runs in this status'),
  template_id: doc(z.optional(z.string().check(z.minLength(1), z.maxLength(64))), 'only runs of this template'),
  created_by: doc(
    z.optional(z.literal('me')),
    "`me`: only the caller's own runs, by principal (what a caller without the role `admin` always gets); an admin's list without it holds every run",
  ),
});
export type RunListQuery = z.infer<typeof RunListQuery>;

export const CancelRequest = component(
  'CrewRunCancelRequest',
  z.strictObject({
    reason: doc(
      z.optional(z.string().check(z.maxLength(1000))),
      'why (at most 1000 characters): in the `run.cancelled` event',
    ),
  }),
);
export type CancelRequest = z.infer<typeof CancelRequest>;

export const RerunRequest = component(
  'CrewRunRerunRequest',
  z.strictObject({
    from_step: doc(
      z.string().check(z.regex(/^[a-z0-9_-]{1,64}$/)),
      "the first step to run again, one of the run's `step_ids` (422 `value_error` otherwise); every step before it must have completed in the run (409 otherwise), and its output is carried over",
    ),
    values: doc(
      z._default(z.record(z.string(), z.unknown()), {}),
      "variable name → value replacing the run's (default `{}`: the run's values as they were), checked as E2 checks `values` against the variables the run was started with: no undeclared name (422 `extra_forbidden`), each of its variable's type",
    ),
  }),
);
export type RerunRequest = z.infer<typeof RerunRequest>;

/** The statuses of a run that has not finished: what a bulk cancel may filter on. */
export const UNFINISHED_STATUSES = ['pending', 'running', 'waiting'] as const;

const BULK_CANCEL_FILTERS = ['template_id', 'status', 'created_before', 'created_by'] as const;

export const BulkCancelRequest = component(
  'CrewRunsCancelRequest',
  doc(
    z
      .strictObject({
        template_id: doc(z.optional(z.string().check(z.minLength(1), z.maxLength(64))), 'only runs of this template'),
        status: doc(
          z.optional(z.array(z.enum(UNFINISHED_STATUSES)).check(z.minLength(1))),
          'only runs in one of these statuses (`pending`, `running`, `waiting`)',
        ),
        created_before: doc(
          z.optional(z.iso.datetime({ offset: true })),
          'only runs queued before this instant (ISO 8601, with `Z` or an offset)',
        ),
        created_by: doc(
          z.optional(z.literal('me')),
          "`me`: only the caller's own runs (what a caller without the role `admin` always gets)",
        ),
      })
      .check(
        // As a pydantic model validator: only once every field is valid.
        z.refine((body) => BULK_CANCEL_FILTERS.some((name) => body[name] !== undefined), {
          message: `at least one filter is needed (${BULK_CANCEL_FILTERS.join(', ')})`,
          when: (payload) => payload.issues.length === 0,
        }),
      ),
    `Which unfinished runs to cancel: those matching every filter given (at least one). A caller without the role \`admin\` cancels only their own runs; an admin everyone's, or with \`"created_by": "me"\` their own. At most ${MAX_BULK_CANCEL} runs match one call, oldest first.`,
  ),
);
export type BulkCancelRequest = z.infer<typeof BulkCancelRequest>;

export const BulkCancelResult = component(
  'CrewRunsCancelled',
  z.object({
    matched: doc(z.int(), `unfinished runs that matched the filters when read (at most ${MAX_BULK_CANCEL})`),
    cancelled: doc(
      z.int(),
      'of those, the runs this call cancelled (`run.cancelled`, as by the single cancel); a run that finished or was cancelled meanwhile is matched but not counted',
    ),
    more: doc(
      z.boolean(),
      `true when more than ${MAX_BULK_CANCEL} runs matched: call again to cancel the next ones (the runs cancelled now no longer match)`,
    ),
  }),
);
export type BulkCancelResult = z.infer<typeof BulkCancelResult>;

/** The longest E13 long poll (`wait`), in seconds. */
export const MAX_WAIT_SECONDS = 20;

/** E13 path: exactly 36 characters (the UUID E2 returned). */
export const RunParams = z.object({
  correlation_id: doc(
    z.string().check(z.minLength(36), z.maxLength(36)),
    'the correlation id E2 returned: exactly 36 characters',
  ),
});

export const EventsQuery = z.object({
  start: doc(
    z.optional(intParam({ min: 0 })),
    'the index to read from (≥ 0, default 0): the last index received + 1 answers only the new events; past the end the answer is `[]`',
    { type: 'integer', minimum: 0, default: 0 },
  ),
  start_index: doc(z.optional(intParam({ min: 0 })), 'alias of `start` (used when `start` is not given)', {
    type: 'integer',
    minimum: 0,
  }),
  wait: doc(
    z.optional(intParam({ min: 0, max: MAX_WAIT_SECONDS })),
    `long poll (seconds, 0–${MAX_WAIT_SECONDS}, default 0): when no event at or after \`start\` exists yet and the run has not finished, the answer waits up to this long and comes as soon as one is written`,
    { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS, default: 0 },
  ),
});

export const DecisionRequest = component(
  'CrewStepDecisionRequest',
  z.strictObject({
    approve: doc(z.boolean(), 'true approves the step (the run goes on), false rejects it (the run fails)'),
    notes: doc(
      z.optional(z.string().check(z.maxLength(2000))),
      "why (at most 2000 characters): in the step's output, or in the failure when rejected",
    ),
  }),
);
export type DecisionRequest = z.infer<typeof DecisionRequest>;

export const StepParams = z.extend(RunParams, {
  step_id: doc(z.string().check(z.regex(/^[a-z0-9_-]{1,64}$/)), "the `approval` step's id in the run's template"),
});

/*
 * The NX1 SDK's crews (docs/sdk.md): a crew type is a crew template, by name.
 */
