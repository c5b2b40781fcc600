/** A chat-completion model (OpenAI-compatible endpoints on AWS and locally). */
export interface ChatModel {
  /** One completion; resolves with the reply text. */
  complete(request: { system?: string; prompt: string }, signal: AbortSignal): Promise<string>;
}
