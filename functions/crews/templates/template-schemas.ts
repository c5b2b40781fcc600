import * as z from 'zod/mini';
import { integer } from '../../../shared/params.js';
import { component, doc } from '../../../shared/schema.js';
import { MAX_ERROR_BYTES, MAX_OUTPUT_BYTES } from '../limits.js';

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
  'One chat completion from the configured model (`LLM_PROVIDER`): an OpenAI-compatible endpoint (`LLM_BASE_URL`, `LLM_MODEL`, `LLM_API_KEY`), Amazon Bedrock\'s Converse API (`LLM_MODEL`, signed by the service\'s AWS role; throttling retried within the timeout) or, locally, the stand-in model whose replies start with `[local stand-in model]`; within `LLM_TIMEOUT_SECONDS` (default 60). Output: the reply text; `step.completed` also says the `provider`, the `model` that answered and its token `usage` when the provider gives it. Without a model the step fails with "no language model is configured (set LLM_PROVIDER: openai, bedrock or local)".',
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

/** How long an approval may wait for its decision, in seconds (docs/crews.md). */
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
 * A crew template as documented in /openapi.json and docs/crews.md (render → http → llm); a unit
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

/** The bounds of a template's run limits (docs/crews.md, limits and deadlines). */
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
