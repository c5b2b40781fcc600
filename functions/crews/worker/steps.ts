import type { HttpRequester } from '../../../shared/adapters/outbound-http.js';
import { type Clock, systemClock } from '../../../shared/clock.js';
import type { ChatModel, ModelProvider, TokenUsage } from '../../../shared/ports/llm.js';
import { failureText } from '../../../shared/failure-text.js';
import { redactUrl } from '../../../shared/redact.js';
import { capJson, capText, MAX_ERROR_BYTES, MAX_OUTPUT_BYTES } from '../limits.js';
import type { Step } from '../templates/template-schemas.js';
import type { RenderContext } from '../templates/templating.js';
import { renderStep, type StepRequest } from './step-input.js';

/**
 * A step's outcome. A completed `llm` step says which model answered and, when the provider
 * gives it, its token usage (`step.completed` data `provider`, `model`, `usage`).
 */
export type StepOutcome =
  | { ok: true; output: unknown; model?: { provider: ModelProvider; model: string; usage?: TokenUsage } }
  | { ok: false; error: string };

const HTTP_TIMEOUT_MS = 10_000;
/** LLM_TIMEOUT_SECONDS' default. */
const LLM_TIMEOUT_MS = 60_000;

/** Why a step failed, as events and the log show it (shared/failure-text.ts). */
const STEP_FAILURE = { timedOut: 'timed out', cap: (text: string) => capText(text, MAX_ERROR_BYTES) } as const;

/** Executes one step; a failure is an outcome (step.failed), never a thrown error. */
export class StepExecutor {
  constructor(
    private readonly http: HttpRequester,
    private readonly llm: ChatModel | undefined,
    /** What a `wait` step sleeps on. */
    private readonly clock: Clock = systemClock,
    /** How long an `llm` step's call may take (LLM_TIMEOUT_SECONDS), its throttling retries included. */
    private readonly llmTimeoutMs: number = LLM_TIMEOUT_MS,
  ) {}

  /** `cancelled` abandons a `wait`, an `http` or an `llm` step under way (the run was cancelled). */
  async execute(step: Step, ctx: RenderContext, cancelled?: AbortSignal): Promise<StepOutcome> {
    try {
      const { output, model } = await this.run(renderStep(step, ctx), cancelled);
      return { ok: true, output: capJson(output, MAX_OUTPUT_BYTES), ...(model ? { model } : {}) };
    } catch (err) {
      return { ok: false, error: failureText(err, STEP_FAILURE) };
    }
  }

  private async run(
    request: StepRequest,
    cancelled: AbortSignal | undefined,
  ): Promise<{ output: unknown; model?: Extract<StepOutcome, { ok: true }>['model'] }> {
    const within = (ms: number) =>
      cancelled ? AbortSignal.any([AbortSignal.timeout(ms), cancelled]) : AbortSignal.timeout(ms);
    switch (request.kind) {
      case 'render':
        return { output: request.text };
      case 'wait':
        // `seconds` on the clock, or less when the run is cancelled (then its reason is thrown).
        await this.clock.sleep(request.seconds * 1000, cancelled);
        return { output: null };
      case 'http': {
        const { method, url, headers, body } = request;
        const res = await this.http.request(
          { method, url, headers, ...(body !== undefined ? { body } : {}) },
          within(HTTP_TIMEOUT_MS),
        );
        if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status} from ${redactUrl(url)}`);
        return { output: res };
      }
      case 'llm': {
        if (!this.llm) throw new Error('no language model is configured (set LLM_PROVIDER: openai, bedrock or local)');
        const reply = await this.llm.complete(
          { prompt: request.text, ...(request.system !== undefined ? { system: request.system } : {}) },
          within(this.llmTimeoutMs),
        );
        const { provider } = this.llm;
        return {
          output: reply.text,
          model: { provider, model: reply.model, ...(reply.usage ? { usage: reply.usage } : {}) },
        };
      }
      case 'approval':
        // A person decides (decide.ts waits for the decision endpoint): never executed.
        throw new Error('an approval step is decided by a person, not executed');
    }
  }
}
