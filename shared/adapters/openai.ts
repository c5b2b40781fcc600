import type { ChatModel } from '../ports/llm.js';
import { redactSecret, redactUrl, redactUrls } from '../redact.js';
import { networkReason } from './answers.js';

/** How much of an endpoint's error message a failure quotes. */
const MAX_PEER_TEXT = 500;

/** The OpenAI chat-completions protocol: `POST {base}/chat/completions`. */
export class OpenAiChatModel implements ChatModel {
  constructor(
    private readonly settings: {
      baseUrl: string;
      model: string | undefined;
      /** The key itself, or how to read it (Secrets Manager on AWS). */
      apiKey: string | (() => Promise<string>) | undefined;
    },
  ) {}

  async complete(request: { system?: string; prompt: string }, signal: AbortSignal): Promise<string> {
    const messages = [
      ...(request.system ? [{ role: 'system', content: request.system }] : []),
      { role: 'user', content: request.prompt },
    ];
    const url = `${this.settings.baseUrl.replace(/\/$/, '')}/chat/completions`;
    const key = await this.apiKey();
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        signal,
        headers: {
          'content-type': 'application/json',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
        body: JSON.stringify({ model: this.settings.model ?? 'gpt-4o-mini', messages }),
      });
    } catch (err) {
      if (signal.aborted) throw err;
      // fetch's own message may quote the URL, credentials included.
      throw new Error(`model endpoint ${redactUrl(url)} did not answer: ${redactUrls(networkReason(err))}`);
    }
    const body = (await res.json().catch(() => undefined)) as
      { choices?: { message?: { content?: unknown } }[]; error?: { message?: unknown } } | undefined;
    if (!res.ok) {
      const detail = typeof body?.error?.message === 'string' ? peerText(body.error.message, key) : '';
      throw new Error(`model endpoint answered ${res.status}${detail ? `: ${detail}` : ''}`);
    }
    const content = body?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new Error('model endpoint answered without choices[0].message.content');
    return content;
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
