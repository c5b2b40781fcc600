import type { ChatModel } from '../ports/llm.js';

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
    const res = await fetch(`${this.settings.baseUrl.replace(/\/$/, '')}/chat/completions`, {
      method: 'POST',
      signal,
      headers: {
        'content-type': 'application/json',
        ...(await this.authorization()),
      },
      body: JSON.stringify({ model: this.settings.model ?? 'gpt-4o-mini', messages }),
    });
    const body = (await res.json().catch(() => undefined)) as
      { choices?: { message?: { content?: unknown } }[]; error?: { message?: string } } | undefined;
    if (!res.ok)
      throw new Error(`model endpoint answered ${res.status}${body?.error?.message ? `: ${body.error.message}` : ''}`);
    const content = body?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new Error('model endpoint answered without choices[0].message.content');
    return content;
  }

  private async authorization(): Promise<Record<string, string>> {
    const { apiKey } = this.settings;
    if (!apiKey) return {};
    return { authorization: `Bearer ${typeof apiKey === 'string' ? apiKey : await apiKey()}` };
  }
}
