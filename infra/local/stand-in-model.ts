import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The local stand-in model (LLM_PROVIDER=local, `npm start`'s default when no model is
 * configured): an OpenAI-compatible chat-completions endpoint on loopback, so that the real
 * adapter (shared/adapters/openai.ts) runs. It knows no language: each reply starts with
 * STAND_IN_LABEL and states what it received, deterministically, so a crew succeeds locally
 * and nobody mistakes its answer for a model's. Never on AWS (configuration and synth refuse it).
 */
export const STAND_IN_LABEL = '[local stand-in model]';
export const STAND_IN_MODEL = 'local-stand-in';

/** The largest request it reads (a prompt is at most 64 KiB of rendered text, a system prompt too). */
const MAX_BODY_BYTES = 1024 * 1024;
/** How much of the first line a reply quotes. */
const MAX_QUOTED_CHARS = 200;

export interface StandInModel {
  /** LLM_BASE_URL for the OpenAI-compatible adapter: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  stop(): Promise<void>;
}

interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

/** The reply to `messages`: the label, then what the last user message was (its length and first line). */
export function standInReply(messages: readonly ChatMessage[]): string {
  const prompt = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const firstLine = prompt.split(/\r?\n/, 1)[0] ?? '';
  const quoted = firstLine.length > MAX_QUOTED_CHARS ? `${firstLine.slice(0, MAX_QUOTED_CHARS)}…` : firstLine;
  return (
    `${STAND_IN_LABEL} I am not a language model: I received a message of ${[...prompt].length} characters ` +
    `whose first line is "${quoted}". Configure a real model (LLM_PROVIDER=openai with LLM_BASE_URL, or bedrock with LLM_MODEL) for real answers.`
  );
}

/** A rough, deterministic token count (about four characters a token), as providers report usage. */
const tokens = (text: string) => Math.ceil([...text].length / 4);

/** Starts the stand-in on `host` (a loopback address) at a port of the system's choice. */
export async function startStandInModel(host = '127.0.0.1'): Promise<StandInModel> {
  const server: Server = createServer((req, res) => void answer(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    baseUrl: `http://${urlHost}:${port}/v1`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (status: number, message: string, type: string) => send(status, { error: { message, type } });
  if (req.url !== '/v1/chat/completions') return error(404, `no such path: ${req.method} ${req.url}`, 'not_found');
  if (req.method !== 'POST') return error(405, 'use POST', 'invalid_request_error');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES)
      return error(413, `the request is over ${MAX_BODY_BYTES} bytes`, 'invalid_request_error');
    chunks.push(chunk);
  }
  let body: { model?: unknown; messages?: unknown };
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
  } catch {
    return error(400, 'the body is not JSON', 'invalid_request_error');
  }
  const messages = Array.isArray(body.messages)
    ? body.messages.filter(
        (m): m is ChatMessage =>
          typeof m === 'object' && m !== null && typeof m.role === 'string' && typeof m.content === 'string',
      )
    : [];
  if (messages.length === 0)
    return error(400, 'messages must be a non-empty array of {role, content}', 'invalid_request_error');
  const content = standInReply(messages);
  send(200, {
    id: 'chatcmpl-local-stand-in',
    object: 'chat.completion',
    created: 0,
    model: STAND_IN_MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: {
      prompt_tokens: messages.reduce((n, m) => n + tokens(m.content), 0),
      completion_tokens: tokens(content),
      total_tokens: messages.reduce((n, m) => n + tokens(m.content), 0) + tokens(content),
    },
  });
}
