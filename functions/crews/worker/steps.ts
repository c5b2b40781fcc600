import type { HttpRequester } from '../../../shared/adapters/outbound-http.js';
import { type Clock, systemClock } from '../../../shared/clock.js';
import type { ChatModel } from '../../../shared/ports/llm.js';
import { failureText } from '../../../shared/failure-text.js';
import { redactUrl } from '../../../shared/redact.js';
import { capJson, capText, MAX_ERROR_BYTES, MAX_OUTPUT_BYTES } from '../limits.js';
import type { Step } from '../templates/template-schemas.js';
import { type RenderContext, render } from '../templates/templating.js';

export type StepOutcome = { ok: true; output: unknown } | { ok: false; error: string };

const HTTP_TIMEOUT_MS = 10_000;
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
  ) {}

  /** `cancelled` abandons a `wait`, an `http` or an `llm` step under way (the run was cancelled). */
  async execute(step: Step, ctx: RenderContext, cancelled?: AbortSignal): Promise<StepOutcome> {
    try {
      return { ok: true, output: capJson(await this.run(step, ctx, cancelled), MAX_OUTPUT_BYTES) };
    } catch (err) {
      return { ok: false, error: failureText(err, STEP_FAILURE) };
    }
  }

  private async run(step: Step, ctx: RenderContext, cancelled: AbortSignal | undefined): Promise<unknown> {
    const within = (ms: number) =>
      cancelled ? AbortSignal.any([AbortSignal.timeout(ms), cancelled]) : AbortSignal.timeout(ms);
    switch (step.kind) {
      case 'render':
        return render(step.template, ctx);
      case 'wait':
        // `seconds` on the clock, or less when the run is cancelled (then its reason is thrown).
        await this.clock.sleep(step.seconds * 1000, cancelled);
        return null;
      case 'http': {
        const headers = Object.fromEntries(Object.entries(step.headers ?? {}).map(([k, v]) => [k, render(v, ctx)]));
        const url = render(step.url, ctx);
        const res = await this.http.request(
          {
            method: step.method,
            url,
            headers,
            ...(step.body !== undefined ? { body: render(step.body, ctx) } : {}),
          },
          within(HTTP_TIMEOUT_MS),
        );
        if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status} from ${redactUrl(url)}`);
        return res;
      }
      case 'llm': {
        if (!this.llm) throw new Error('no language model is configured (set LLM_BASE_URL)');
        return this.llm.complete(
          {
            prompt: render(step.prompt, ctx),
            ...(step.system !== undefined ? { system: render(step.system, ctx) } : {}),
          },
          within(LLM_TIMEOUT_MS),
        );
      }
      case 'approval':
        // A person decides (decide.ts waits for the decision endpoint): never executed.
        throw new Error('an approval step is decided by a person, not executed');
    }
  }
}
