import type { ChatModel, ChatReply, ModelProvider } from '../ports/llm.js';
import { redactSecret, redactUrl, redactUrls } from '../redact.js';
import { systemClock } from '../clock.js';
import { AGAIN, type Backoff, backoffMs, retry } from '../retry.js';
import { networkReason } from './answers.js';

/** How much of an endpoint's error message a failure quotes. */
const MAX_PEER_TEXT = 500;

/** Answers that mean "later": rate limited, or briefly unavailable. */
const THROTTLED = new Set([429, 503]);
/** Tries while throttled: the first and up to 7 more, with full-jitter backoff under 0.5, 1, 2, 4, 8 s... */
const ATTEMPTS = 8;
const BACKOFF: Backoff = { baseMs: 500, maxMs: 8_000, jitter: 'full' };
/** A Retry-After longer than this is not waited for as such (the backoff applies). */
const MAX_RETRY_AFTER_MS = 20_000;

/** The pause a throttled answer asks for (`Retry-After` in seconds), when it asks for a sensible one. */
function retryAfterMs(res: Response | undefined): number | undefined {
  const seconds = Number(res?.headers.get('retry-after') ?? Number.NaN);
  return Number.isFinite(seconds) && seconds >= 0 && seconds * 1000 <= MAX_RETRY_AFTER_MS ? seconds * 1000 : undefined;
}

/** The model asked for when LLM_MODEL is unset. */
const DEFAULT_MODEL = 'gpt-4o-mini';

/**
 * The OpenAI chat-completions protocol: `POST {base}/chat/completions`. Also how the local
 * stand-in model is spoken to (provider `local`), so the same adapter runs there.
 */
export class OpenAiChatModel implements ChatModel {
  readonly provider: ModelProvider;
  readonly model: string;

  constructor(
    private readonly settings: {
      baseUrl: string;
      model: string | undefined;
      /** The key itself, or how to read it (Secrets Manager on AWS). */
      apiKey: string | (() => Promise<string>) | undefined;
      provider?: 'openai' | 'local';
    },
  ) {
    this.provider = settings.provider ?? 'openai';
    this.model = settings.model ?? DEFAULT_MODEL;
  }

  async complete(request: { system?: string; prompt: string }, signal: AbortSignal): Promise<ChatReply> {
    const messages = [
      ...(request.system ? [{ role: 'system', content: request.system }] : []),
      { role: 'user', content: request.prompt },
    ];
    const url = `${this.settings.baseUrl.replace(/\/$/, '')}/chat/completions`;
    const key = await this.apiKey();
    const payload = JSON.stringify({ model: this.model, messages });
    let tries = 0;
    let throttled: Response | undefined;
    // A throttled call (429, 503) is tried again with backoff, within the caller's signal.
    const out = await retry<Response>(
      async () => {
        tries++;
        const res = await this.post(url, key, payload, signal);
        if (!THROTTLED.has(res.status)) return res;
        throttled = res;
        await res.body?.cancel().catch(() => undefined);
        return AGAIN;
      },
      {
        attempts: ATTEMPTS,
        delayMs: (attempt) => retryAfterMs(throttled) ?? backoffMs(attempt - 2, BACKOFF),
        sleep: (ms) => systemClock.sleep(ms, signal),
      },
    );
    if (!out.done) throw new Error(`model endpoint still answered ${throttled?.status} after ${tries} tries`);
    const res = out.value;
    const body = (await res.json().catch(() => undefined)) as
      | {
          model?: unknown;
          choices?: { message?: { content?: unknown } }[];
          usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
          error?: { message?: unknown };
        }
      | undefined;
    if (signal.aborted) throw signal.reason;
    if (!res.ok) {
      const detail = typeof body?.error?.message === 'string' ? peerText(body.error.message, key) : '';
      throw new Error(`model endpoint answered ${res.status}${detail ? `: ${detail}` : ''}`);
    }
    const content = body?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new Error('model endpoint answered without choices[0].message.content');
    const { prompt_tokens: input, completion_tokens: output } = body?.usage ?? {};
    return {
      text: content,
      model: typeof body?.model === 'string' && body.model !== '' ? body.model.slice(0, 200) : this.model,
      ...(Number.isSafeInteger(input) && Number.isSafeInteger(output)
        ? { usage: { input_tokens: input as number, output_tokens: output as number } }
        : {}),
    };
  }

  private async post(url: string, key: string | undefined, body: string, signal: AbortSignal): Promise<Response> {
    try {
      return await fetch(url, {
        method: 'POST',
        signal,
        headers: {
          'content-type': 'application/json',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
        body,
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      // fetch's own message may quote the URL, credentials included.
      throw new Error(`model endpoint ${redactUrl(url)} did not answer: ${redactUrls(networkReason(err))}`);
    }
  }

  private async apiKey(): Promise<string | undefined> {
    const { apiKey } = this.settings;
    if (!apiKey) return undefined;
    return typeof apiKey === 'string' ? apiKey : apiKey();
  }
}

/** The endpoint's own words, as a message may carry them: without the key (some echo it), bounded. */
function peerText(text: string, key: string | undefined): string {
  const safe = redactUrls(redactSecret(text, key));
  return safe.length > MAX_PEER_TEXT ? `${safe.slice(0, MAX_PEER_TEXT)}…` : safe;
}
