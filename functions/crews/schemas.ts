import * as z from 'zod/mini';
import { integer, intParam, PageQuery } from '../../shared/http/params.js';
import { component, doc } from '../../shared/schema.js';
import { runWebhookUrl } from '../../shared/http/webhook-url.js';
import { MAX_BULK_CANCEL, MAX_ERROR_BYTES, MAX_MESSAGE_BYTES, MAX_OUTPUT_BYTES } from './limits.js';

export const VARIABLE_TYPES = ['string', 'integer', 'number', 'boolean', 'object', 'array'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

/** At most this many steps, so a run's outputs fit in its `run.completed` event. */
export const MAX_STEPS = 20;

export const Variable = component(
  'CrewVariable',
  doc(
    z.strictObject({
      name: doc(
        z.string().check(z.regex(/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/)),
        'the variable name, `^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`, unique in the template (`__proto__` is reserved); `{{name}}` in a step field is replaced by its value',
      ),
      type: doc(
        z._default(z.enum(VARIABLE_TYPES), 'string'),
        'the JSON type of its value (default `string`); E2 converts as pydantic does in lax mode (`"3"` is 3 for `integer` and `number`, `"yes"` is true for `boolean`) and refuses any other mismatch with 422',
      ),
      required: doc(
        z._default(z.boolean(), false),
        'whether E2 must give a value (default false): a missing required value is 422 `missing`',
      ),
      default: doc(
        z.optional(z.unknown()),
        'the value a run takes when E2 leaves the variable out: a value of the declared type (an `integer` default must be a whole number). An optional variable without a default is null, which renders as nothing',
      ),
      description: doc(
        z.optional(z.nullable(z.string().check(z.maxLength(2000)))),
        'what the variable means, for the people who run the template (at most 2000 characters)',
      ),
    }),
    'A declared input of a crew template; E2 gives its value in `values`.',
  ),
);
export type Variable = z.infer<typeof Variable>;

const stepId = doc(
  z.string().check(z.regex(/^[a-z0-9_-]{1,64}$/)),
  "the step id, `^[a-z0-9_-]{1,64}$`, unique in the template (`__proto__` is reserved); later steps insert this step's output with `{{steps.<id>.output}}`",
);
const text = (max: number) => z.string().check(z.maxLength(max));

export const RenderStep = doc(
  z.strictObject({
    id: stepId,
    kind: doc(z.literal('render'), '`render`: the output is the rendered `template`'),
    template: doc(
      text(100_000),
      "text with placeholders (at most 100,000 characters); rendered, it is the step's output",
    ),
  }),
  'Renders a text: `{{name}}` and `{{steps.<id>.output}}` replaced. Output: the text.',
);
export const HttpStep = doc(
  z.strictObject({
    id: stepId,
    kind: doc(z.literal('http'), '`http`: one HTTP request; the output is `{"status", "body"}`'),
    method: doc(
      z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']),
      'the HTTP method; GET and HEAD send no body',
    ),
    url: doc(
      text(4000),
      'the URL, rendered (at most 4000 characters before rendering; placeholders are inserted as they are, not URL-encoded): `http` or `https`, and its host must be in `CREW_HTTP_ALLOWED_HOSTS`',
    ),
    headers: doc(
      z.optional(z.record(z.string().check(z.maxLength(256)), text(8000))),
      'request headers: name (at most 256 characters) → value (rendered; at most 8000 characters before rendering)',
    ),
    body: doc(z.optional(text(100_000)), 'the request body, rendered (at most 100,000 characters before rendering)'),
  }),
  'One HTTP request with a 10 s timeout; redirects are not followed. Output: `{"status": <int>, "body": <the response, parsed when its content-type is JSON, else text; read up to 1 MiB>}`; a status outside 200–299 fails the step. Only `http`/`https` URLs whose host (as a name, or `host:port`) is listed in `CREW_HTTP_ALLOWED_HOSTS` (comma-separated, case-insensitive; empty by default, so every `http` step fails until it is set); link-local (169.254.0.0/16, fe80::/10), cloud metadata (169.254.169.254, fd00:ec2::254, 100.100.100.200, `metadata.google.internal`, ...) and unspecified (0.0.0.0/8, `::`) addresses are always refused, also when a listed name resolves to one.',
);
export const LlmStep = doc(
  z.strictObject({
    id: stepId,
    kind: doc(z.literal('llm'), '`llm`: one chat completion; the output is the reply text'),
    prompt: doc(text(100_000), 'the user message, rendered (at most 100,000 characters before rendering)'),
    system: doc(
      z.optional(text(100_000)),
      'an optional system message, rendered (at most 100,000 characters before rendering)',
    ),
  }),
  'One chat completion from the OpenAI-compatible endpoint `LLM_BASE_URL` (model `LLM_MODEL`, key `LLM_API_KEY`), with a 60 s timeout. Output: the reply text. Without `LLM_BASE_URL` the step fails with "no language model is configured (set LLM_BASE_URL)".',
);
/** DynamoDB stores no number of smaller magnitude than this (it answers "Number underflow"). */
const SMALLEST_STORABLE = 1e-130;
export const WaitStep = doc(
  z.strictObject({
    id: stepId,
    kind: doc(z.literal('wait'), '`wait`: sleeps; the output is null'),
    // A wait of a few 1e-300 seconds is a wait of none: stored as 0 rather than refused by the table.
    seconds: doc(
      z.number().check(
        z.gte(0),
        z.lte(60),
        z.overwrite((s) => (s < SMALLEST_STORABLE ? 0 : s)),
      ),
      'how long to sleep, 0–60 seconds (fractions allowed)',
    ),
  }),
  'Sleeps for `seconds` (for pacing and tests). Output: null.',
);

/** How long an approval may wait for its decision, in seconds (API.md §4). */
export const APPROVAL_TIMEOUT = { min: 60, max: 604_800, default: 86_400 } as const;
export const ApprovalStep = doc(
  z.strictObject({
    id: stepId,
    kind: doc(z.literal('approval'), '`approval`: a person decides; the output is `{"approved": true, "by", "notes"}`'),
    prompt: doc(
      text(100_000),
      'what the approver is asked, rendered (at most 100,000 characters before rendering): in the `step.waiting` event',
    ),
    role: doc(
      z._default(z.string().check(z.regex(/^[A-Za-z0-9_.:-]{1,128}$/)), 'approver'),
      'the role a decider must have (default `approver`; `^[A-Za-z0-9_.:-]{1,128}$`)',
    ),
    timeout_seconds: doc(
      z._default(z.int().check(z.gte(APPROVAL_TIMEOUT.min), z.lte(APPROVAL_TIMEOUT.max)), APPROVAL_TIMEOUT.default),
      `how long the decision may take, ${APPROVAL_TIMEOUT.min}–${APPROVAL_TIMEOUT.max} seconds (default ${APPROVAL_TIMEOUT.default}, a day); no decision by then fails the step`,
    ),
  }),
  'Human in the loop: the run pauses with status `waiting` and the event `step.waiting` (data `{"prompt", "role", "expires_at"}`), holding no worker. A caller with `role` and a Bearer session who is not the run\'s starter decides with `POST /api/crew-runs/{id}/steps/{step_id}/decision`: approve → `step.completed` (output `{"approved": true, "by", "notes"}`) and the run goes on; reject → `step.failed` (`rejected by <name>: <notes>`) and `run.failed`. No decision by `expires_at` → `step.failed` and `run.failed`.',
);

export type ApprovalStep = z.infer<typeof ApprovalStep>;

export const Step = component(
  'CrewStep',
  doc(
    z.discriminatedUnion('kind', [RenderStep, HttpStep, LlmStep, WaitStep, ApprovalStep]),
    [
      'One step of a crew template; `kind` selects one of:',
      '',
      '- `render` `{"template"}`: output is the rendered text.',
      '- `http` `{"method", "url", "headers"?, "body"?}`: url, header values and body are rendered; output `{"status", "body"}`; a non-2xx status fails the step; only hosts in `CREW_HTTP_ALLOWED_HOSTS`, never link-local or metadata addresses.',
      '- `llm` `{"prompt", "system"?}`: both rendered; output is the reply text of the model at `LLM_BASE_URL`.',
      '- `wait` `{"seconds"}`: sleeps 0–60 s; output null.',
      '- `approval` `{"prompt", "role"?, "timeout_seconds"?}`: the run waits (status `waiting`) for a person with `role` (default `approver`), not its starter, to approve or reject; output `{"approved": true, "by", "notes"}`.',
      '',
      'Steps run in order; a step that fails (`step.failed`) ends the run (`run.failed`).',
    ].join('\n'),
  ),
);
export type Step = z.infer<typeof Step>;

/**
 * A crew template as documented in /openapi.json and README (render → http → llm); a unit
 * test (test/unit/schema-docs.test.ts) keeps it valid, declaration rules included.
 */
export const EXAMPLE_TEMPLATE: {
  name: string;
  description: string;
  variables: z.input<typeof Variable>[];
  steps: z.input<typeof Step>[];
} = {
  name: 'order-status-reply',
  description: "Looks an order up in the shop's API and drafts a status reply to the customer",
  variables: [
    { name: 'order_id', type: 'integer', required: true, description: "the shop's order number" },
    { name: 'customer', type: 'string', required: true, description: "the customer's first name" },
    { name: 'tone', type: 'string', default: 'friendly', description: 'the tone of the reply' },
  ],
  steps: [
    {
      id: 'brief',
      kind: 'render',
      template:
        'Customer {{customer}} asks about order {{order_id}}. Answer in a {{tone}} tone, in at most three sentences.',
    },
    {
      id: 'order',
      kind: 'http',
      method: 'GET',
      url: 'https://shop.example.com/api/orders/{{order_id}}',
      headers: { Accept: 'application/json' },
    },
    {
      id: 'reply',
      kind: 'llm',
      system: 'You are a customer-service assistant. Use only the order record you are given.',
      prompt: '{{steps.brief.output}}\n\nThe order record (HTTP status and body): {{steps.order.output}}',
    },
  ],
};

/** The template syntax, as /openapi.json shows it on the template request. */
const TEMPLATE_SYNTAX = [
  'A crew template: declared `variables` and `steps` that run in order. E2 (`POST /api/crew-templates/{template_id}/run`) runs it with `values` for the variables; E13 (`GET /api/events/{correlation_id}`) polls its progress.',
  '',
  '**Placeholders** in the text fields of steps (`template`; `url`, header values and `body`; `prompt` and `system`):',
  '',
  '- `{{name}}`: the value of the declared variable `name`;',
  '- `{{steps.<id>.output}}`: the output of the earlier step `<id>`.',
  '',
  'Spaces inside the braces are allowed (`{{ name }}`). A string is inserted as it is (not escaped, not URL-encoded), null as nothing, any other value (number, boolean, object, array, an `http` output) as its JSON text.',
  '',
  '**Declaration rules** (422 `value_error` otherwise): variable names are unique, step ids are unique, and neither may be `__proto__`; a `default` has the declared type; a placeholder names a declared variable or an earlier step (not the step itself or a later one); any other `{{...}}` is refused as an unknown placeholder; `concurrency_key` needs `max_concurrent_runs` and its placeholders name declared variables only. At most 100 variables and 20 steps.',
  '',
  `**Outputs**: a step's output is kept up to ${MAX_OUTPUT_BYTES / 1024} KiB as JSON (UTF-8); a larger one is cut and ends with a \`…[truncated: N bytes as JSON, over the limit of ${MAX_OUTPUT_BYTES}]\` marker. A failure's text is kept up to ${MAX_ERROR_BYTES / 1024} KiB.`,
].join('\n');

/** The bounds of a template's run limits (API.md §4 "Runs people can plan on"). */
export const RUN_LIMITS = {
  maxConcurrent: { min: 1, max: 1000 },
  timeout: { min: 1, max: 604_800 },
  /** The longest `concurrency_key` template; its rendered text is hashed, however long. */
  keyLength: 1000,
} as const;

const MAX_CONCURRENT_RUNS_DOC = `runs of this template that may be \`running\` at once, ${RUN_LIMITS.maxConcurrent.min}–${RUN_LIMITS.maxConcurrent.max} (no limit when not set; a run waiting for an approval does not count): a run over it stays \`pending\` with the event \`run.throttled\` (data \`{"position"}\`: 1 is next) once, and starts when a slot frees, oldest first; each run keeps the limit its template had when it was queued`;
const CONCURRENCY_KEY_DOC = `only with \`max_concurrent_runs\`: a template string of the run's variables (\`{{customer}}\`, rendered like \`render\`; no step outputs; at most ${RUN_LIMITS.keyLength} characters): the limit then counts per rendered key, so runs with different keys do not wait for each other`;
const RUN_TIMEOUT_DOC = `how long a run may take, ${RUN_LIMITS.timeout.min}–${RUN_LIMITS.timeout.max} seconds from \`run.started\` (a retried run's from its new start; time \`waiting\` for an approval counts, and so does waiting for a slot once started): a run still unfinished then ends \`failed\` with \`run.timed_out\` and \`run.failed\` (error \`timed out after N s\`), a running step abandoned within a second`;

export const TemplateRequest = component(
  'CrewTemplateRequest',
  doc(
    z.strictObject({
      name: doc(z.string().check(z.minLength(1), z.maxLength(200)), 'the template name, 1–200 characters'),
      description: doc(
        z.optional(z.nullable(z.string().check(z.maxLength(4000)))),
        'what the template does (at most 4000 characters)',
      ),
      variables: doc(
        z._default(z.array(Variable).check(z.maxLength(100)), []),
        'the declared variables (at most 100, default none); names are unique',
      ),
      steps: doc(
        z.array(Step).check(z.minLength(1), z.maxLength(MAX_STEPS)),
        `the steps, run in order (1–${MAX_STEPS}); ids are unique`,
      ),
      max_concurrent_runs: doc(
        z.optional(
          z.nullable(integer().check(z.gte(RUN_LIMITS.maxConcurrent.min), z.lte(RUN_LIMITS.maxConcurrent.max))),
        ),
        MAX_CONCURRENT_RUNS_DOC,
      ),
      concurrency_key: doc(
        z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(RUN_LIMITS.keyLength)))),
        CONCURRENCY_KEY_DOC,
      ),
      run_timeout_seconds: doc(
        z.optional(z.nullable(integer().check(z.gte(RUN_LIMITS.timeout.min), z.lte(RUN_LIMITS.timeout.max)))),
        RUN_TIMEOUT_DOC,
      ),
    }),
    TEMPLATE_SYNTAX,
    { example: EXAMPLE_TEMPLATE },
  ),
);
export type TemplateRequest = z.infer<typeof TemplateRequest>;

export const CrewTemplate = component(
  'CrewTemplate',
  z.object({
    id: doc(z.uuid(), 'the template id (UUID), assigned at creation'),
    name: doc(z.string(), 'the template name'),
    description: doc(z.nullable(z.string()), 'what the template does; null when not given'),
    variables: doc(z.array(Variable), 'the declared variables, with `type` and `required` filled in'),
    steps: doc(z.array(Step), 'the steps, run in order'),
    max_concurrent_runs: doc(z.optional(z.int()), `${MAX_CONCURRENT_RUNS_DOC}; absent when not set`),
    concurrency_key: doc(z.optional(z.string()), `${CONCURRENCY_KEY_DOC}; absent when not set`),
    run_timeout_seconds: doc(z.optional(z.int()), `${RUN_TIMEOUT_DOC}; absent when not set`),
    created_by: doc(z.string(), "the creator's name"),
    created_at: doc(z.iso.datetime(), 'when the template was created (ISO 8601 UTC)'),
    updated_at: doc(z.iso.datetime(), 'when it was last replaced (ISO 8601 UTC)'),
  }),
);
export type CrewTemplate = z.infer<typeof CrewTemplate>;

export const TemplateParams = z.object({
  template_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the template id returned at creation'),
});

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
      '`run.queued`: `{"template_id", "values"}` (a rerun\'s adds `"rerun_of", "from_step"`); `step.completed`: `{"output"}` (a rerun\'s step carried over from the run it reruns: `{"output", "reused": true}`, written with `run.queued`); `step.waiting`: `{"prompt", "role", "expires_at"}`; `step.failed` and `run.failed`: `{"error"}`; `run.throttled`: `{"position"}`; `run.timed_out`: `{"timeout_seconds"}`; `run.completed`: `{"outputs": {step id: output}}`, where an output too large for the event is replaced by a note pointing to its `step.completed` event',
    ),
  }),
);
export type RunLogEntry = z.infer<typeof RunLogEntry>;

export const RunListQuery = z.extend(PageQuery, {
  status: doc(z.optional(z.enum(RUN_STATUSES)), 'only runs in this status'),
  template_id: doc(z.optional(z.string().check(z.minLength(1), z.maxLength(64))), 'only runs of this template'),
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
 * The NX1 SDK's crews (API.md §17): a crew type is a crew template, by name.
 */

export const CrewType = component(
  'CrewType',
  z.object({
    crew_type: doc(z.string(), 'the crew type: the name of a crew template; `POST /api/crews/run` runs it'),
    template_id: doc(z.uuid(), 'the crew template behind it'),
    description: doc(z.nullable(z.string()), 'what it does; null when its template has no description'),
    inputs: doc(
      z.array(z.string()),
      "the names of its template's variables: the keys `task_input` may hold (see the template for their types)",
    ),
  }),
);
export type CrewType = z.infer<typeof CrewType>;

export const CrewTypeRunRequest = component(
  'CrewTypeRunRequest',
  z.strictObject({
    crew_type: doc(
      z.string().check(z.minLength(1), z.maxLength(200)),
      'the crew type: the name of exactly one crew template (404 when none has it, 409 when several do)',
    ),
    task_input: doc(
      z._default(z.record(z.string(), z.unknown()), {}),
      'the template\'s variable values (default `{}`), checked as E2 checks `values` (422 at `["body", "task_input", name]`)',
    ),
  }),
);
export type CrewTypeRunRequest = z.infer<typeof CrewTypeRunRequest>;

export const CrewResult = component(
  'CrewResult',
  z.object({
    correlation_id: doc(z.string(), "the run's id, as `POST /api/crews/run` answered"),
    status: doc(z.enum(RUN_STATUSES), "the run's status, as `GET /api/crew-runs/{correlation_id}` answers it"),
    result: doc(
      z.unknown(),
      "the output of the template's last step once the run succeeded (the `llm` step's reply text for the built-in crews); null before, and when it failed or was cancelled",
    ),
    outputs: doc(
      z.record(z.string(), z.unknown()),
      'step id → output of every step completed so far (those of `run.completed` once the run succeeded)',
    ),
    error: doc(z.nullable(z.string()), 'why the run failed; null unless it failed'),
  }),
);
export type CrewResult = z.infer<typeof CrewResult>;

/* Crew schedules (API.md §4 "Runs people can plan on"). */

export const SCHEDULE_OVERLAPS = ['skip', 'allow'] as const;

const scheduleExpression = doc(
  z.string().check(z.minLength(1), z.maxLength(256)),
  "EventBridge Scheduler's syntax and semantics: `cron(minutes hours day-of-month month day-of-week year)` (one of the day fields `?`; `, - * / L W #`; JAN-DEC, SUN-SAT) or `rate(N minute|minutes|hour|hours|day|days)`, which first fires N units after the schedule's creation or the last change of its expression, then every N units",
);
const scheduleTimezone = doc(
  z.string().check(z.minLength(1), z.maxLength(64)),
  'IANA time zone name (`ScheduleExpressionTimezone`) the cron fields are read in, with its daylight-saving rules: a skipped wall time fires nothing that day, a repeated one fires once',
);
const scheduleValues = doc(
  z.record(z.string(), z.unknown()),
  "the run's variable values, checked as E2 checks them against the template's variables",
);
const scheduleOverlap = doc(
  z.enum(SCHEDULE_OVERLAPS),
  "`skip`: a fire while the schedule's previous run is unfinished starts nothing (it records `last_skipped_at`); `allow`: it starts a run anyway",
);

export const ScheduleRequest = component(
  'CrewScheduleRequest',
  z.strictObject({
    template_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the crew template each fire runs'),
    name: doc(z.string().check(z.minLength(1), z.maxLength(200)), 'what people call it'),
    expression: scheduleExpression,
    timezone: z._default(scheduleTimezone, 'UTC'),
    values: z._default(scheduleValues, {}),
    overlap: z._default(scheduleOverlap, 'skip'),
    enabled: doc(z._default(z.boolean(), true), 'a disabled schedule fires nothing'),
  }),
);
export type ScheduleRequest = z.infer<typeof ScheduleRequest>;

export const SchedulePatch = component(
  'CrewSchedulePatch',
  z.strictObject({
    expression: z.optional(scheduleExpression),
    timezone: z.optional(scheduleTimezone),
    values: z.optional(scheduleValues),
    overlap: z.optional(scheduleOverlap),
    enabled: z.optional(doc(z.boolean(), 'a disabled schedule fires nothing')),
  }),
);
export type SchedulePatch = z.infer<typeof SchedulePatch>;

export const ScheduleParams = z.object({
  schedule_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the schedule id returned at creation'),
});

export const CrewSchedule = component(
  'CrewSchedule',
  z.object({
    id: doc(z.string(), 'the schedule id (UUID)'),
    template_id: doc(z.string(), 'the crew template each fire runs'),
    name: doc(z.string(), 'what people call it'),
    expression: scheduleExpression,
    timezone: scheduleTimezone,
    values: scheduleValues,
    overlap: scheduleOverlap,
    enabled: doc(z.boolean(), 'a disabled schedule fires nothing'),
    next_run_at: doc(
      z.nullable(z.iso.datetime()),
      'the next fire (null when disabled or when the expression has none left)',
    ),
    last_run_at: doc(z.nullable(z.iso.datetime()), 'the scheduled time of the last fire that started a run'),
    last_correlation_id: doc(z.nullable(z.string()), 'the run that fire started'),
    last_skipped_at: doc(
      z.nullable(z.iso.datetime()),
      'the scheduled time of the last fire that started nothing (`overlap: skip` while the previous run was unfinished, values the template no longer takes, or a later fire had started its run)',
    ),
    created_by: doc(z.string(), 'who created it: every run it starts is theirs'),
    created_at: doc(z.iso.datetime(), 'when it was created (ISO 8601 UTC)'),
    updated_at: doc(z.iso.datetime(), 'when it was last changed (ISO 8601 UTC)'),
  }),
);
export type CrewSchedule = z.infer<typeof CrewSchedule>;
