import type { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import type { ChatModel } from '../../shared/ports/llm.js';
import type { Step } from './schemas.js';
import { type RenderContext, render } from './templating.js';

export type StepOutcome = { ok: true; output: unknown } | { ok: false; error: string };

/** Every output is capped, so a run's `run.completed` event fits in one item. */
export const MAX_OUTPUT_BYTES = 16 * 1024;
const HTTP_TIMEOUT_MS = 10_000;
const LLM_TIMEOUT_MS = 60_000;

/** Outputs are capped in UTF-8 bytes (what DynamoDB counts), cut on a character boundary. */
function capped(output: unknown): unknown {
  const text = typeof output === 'string' ? output : (JSON.stringify(output) ?? 'null');
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= MAX_OUTPUT_BYTES) return output;
  const kept = bytes
    .subarray(0, MAX_OUTPUT_BYTES)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${kept}…[truncated ${bytes.length - Buffer.byteLength(kept, 'utf8')} bytes]`;
}

const message = (err: unknown) =>
  err instanceof Error ? (err.name === 'TimeoutError' ? 'timed out' : err.message) : String(err);

/** Executes one step; a failure is an outcome (step.failed), never a thrown error. */
export class StepExecutor {
  constructor(
    private readonly http: OutboundHttp,
    private readonly llm: ChatModel | undefined,
  ) {}

  async execute(step: Step, ctx: RenderContext): Promise<StepOutcome> {
    try {
      return { ok: true, output: capped(await this.run(step, ctx)) };
    } catch (err) {
      return { ok: false, error: message(err) };
    }
  }

  private async run(step: Step, ctx: RenderContext): Promise<unknown> {
    switch (step.kind) {
      case 'render':
        return render(step.template, ctx);
      case 'wait':
        await new Promise((r) => setTimeout(r, step.seconds * 1000));
        return null;
      case 'http': {
        const headers = Object.fromEntries(Object.entries(step.headers ?? {}).map(([k, v]) => [k, render(v, ctx)]));
        const res = await this.http.request(
          {
            method: step.method,
            url: render(step.url, ctx),
            headers,
            ...(step.body !== undefined ? { body: render(step.body, ctx) } : {}),
          },
          AbortSignal.timeout(HTTP_TIMEOUT_MS),
        );
        if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status} from ${render(step.url, ctx)}`);
        return res;
      }
      case 'llm': {
        if (!this.llm) throw new Error('no language model is configured (set LLM_BASE_URL)');
        return this.llm.complete(
          {
            prompt: render(step.prompt, ctx),
            ...(step.system !== undefined ? { system: render(step.system, ctx) } : {}),
          },
          AbortSignal.timeout(LLM_TIMEOUT_MS),
        );
      }
    }
  }
}
