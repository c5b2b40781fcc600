import * as z from 'zod/mini';
import { component, doc } from '../../shared/schema.js';
import { RUN_STATUSES } from './runs/run-schemas.js';

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
    model: doc(
      z.nullable(
        z.object({
          provider: doc(z.enum(['openai', 'bedrock', 'local']), 'LLM_PROVIDER: `local` is the local stand-in model'),
          model: doc(z.string(), 'the model id, inference profile or stand-in name'),
        }),
      ),
      "the model that answers its `llm` steps (the service's configured one); null when none is configured, and the steps fail",
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
