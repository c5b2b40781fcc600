/** Which kind of endpoint answers a crew's `llm` steps, `ask` and suggestions (LLM_PROVIDER). */
export type ModelProvider = 'openai' | 'bedrock' | 'local';

/** Tokens a call used, when the provider says. */
export interface TokenUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
}

/** One reply: its text, the model that gave it, and its token usage when the provider gives it. */
export interface ChatReply {
  readonly text: string;
  /** The model (or inference profile) that answered, as the provider names it. */
  readonly model: string;
  readonly usage?: TokenUsage;
}

/**
 * A chat model: OpenAI-compatible chat completions (also the local stand-in's protocol) or
 * Amazon Bedrock's Converse API. A failure is thrown as an Error whose message is safe to
 * show (no key, no credential) and names the provider's reason.
 */
export interface ChatModel {
  readonly provider: ModelProvider;
  /** The configured model id (or inference profile), as shown by GET /api/crews/types. */
  readonly model: string;
  /** One completion within `signal` (the step's time; a throttled call is retried inside it). */
  complete(request: { system?: string; prompt: string }, signal: AbortSignal): Promise<ChatReply>;
}
