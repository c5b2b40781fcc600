import { secretValue } from '../aws/secrets-manager.js';
import type { Config } from '../config.js';
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

/**
 * The configured model (LLM_BASE_URL, LLM_MODEL, and LLM_API_KEY or, on AWS, the secret at
 * LLM_API_KEY_ARN), or undefined when no model is configured.
 */
export function configuredChatModel(config: Config): ChatModel | undefined {
  const { baseUrl, model, apiKey, apiKeyArn } = config.llm;
  if (!baseUrl) return undefined;
  return new OpenAiChatModel({
    baseUrl,
    model,
    apiKey: apiKey ?? (apiKeyArn ? () => secretValue(config.region, apiKeyArn) : undefined),
  });
}
