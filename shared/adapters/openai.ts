import type { ChatModel } from '../ports/llm.js';

/** The OpenAI chat-completions protocol: `POST {base}/chat/completions`. */
export class OpenAiChatModel implements ChatModel {
  constructor(private readonly settings: { baseUrl: string; model: string | undefined; apiKey: string | undefined }) {}

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
        ...(this.settings.apiKey ? { authorization: `Bearer ${this.settings.apiKey}` } : {}),
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
}
