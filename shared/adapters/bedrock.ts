import type {
  BedrockRuntimeClient,
  ConverseCommandInput,
  ConverseCommandOutput,
} from '@aws-sdk/client-bedrock-runtime';
import { type Lazy, lazy } from '../aws/lazy.js';
import { type Clock, systemClock } from '../clock.js';
import type { ChatModel, ChatReply } from '../ports/llm.js';
import { redactSecret, redactUrls } from '../redact.js';
import { AGAIN, type Backoff, backoffMs, type Retried, retry } from '../retry.js';
import { networkReason } from './answers.js';

/** AWS credentials as the SDK takes them (tests; on AWS the SDK's default chain: the Lambda's role). */
export interface BedrockCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface BedrockSettings {
  /** The region of the Bedrock runtime endpoint (bedrock-runtime.<region>.amazonaws.com). */
  readonly region: string;
  /**
   * What answers: a foundation model id (`anthropic.claude-3-haiku-20240307-v1:0`), an
   * inference profile id (`us.anthropic.claude-…`) or the ARN of either. Sent as Converse's
   * `modelId` and reported as the reply's `model`.
   */
  readonly model: string;
  /** Another endpoint than the region's (tests, emulators): `http://127.0.0.1:port`. */
  readonly endpoint?: string;
  /**
   * Credentials to sign with (tests). When not given: the SDK's default chain (on AWS the
   * function's role), also when `endpoint` is given.
   */
  readonly credentials?: BedrockCredentials;
}

/** How much of Bedrock's own message a failure quotes. */
const MAX_PEER_TEXT = 500;

/**
 * Tries of one completion while Bedrock throttles (or is briefly unavailable): the first and
 * up to 7 more, each after a pause of full jitter under 0.5, 1, 2, 4, 8, 8, 8 s (about 16 s
 * in all on average), never beyond the caller's signal (a step's 60 s).
 */
const ATTEMPTS = 8;
const BACKOFF: Backoff = { baseMs: 500, maxMs: 8_000, jitter: 'full' };

/**
 * Bedrock's answers worth another try: throttling (429: ThrottlingException, and
 * ModelNotReadyException, which Bedrock documents as to be retried) and a service briefly
 * unavailable (503). Anything else Bedrock answers (AccessDenied, ResourceNotFound,
 * Validation, a model's own error) fails at once.
 */
const TRANSIENT = new Set(['ThrottlingException', 'ServiceUnavailableException', 'ModelNotReadyException']);
const TRANSIENT_STATUS = new Set([429, 503]);

type BedrockSdk = typeof import('@aws-sdk/client-bedrock-runtime');

/** What the SDK's errors carry: Bedrock's error code as `name`, its HTTP answer in `$metadata`. */
interface SdkError {
  readonly name?: string;
  readonly message?: string;
  readonly $fault?: 'client' | 'server';
  readonly $metadata?: { readonly httpStatusCode?: number };
}

/**
 * Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`, SigV4-signed for service
 * `bedrock`) through `@aws-sdk/client-bedrock-runtime`: one user message, the system prompt
 * as a system block, the reply's text blocks joined, its token usage.
 *
 * The client is built on the first call and reused (the SDK module is loaded then, not at a
 * cold start that never calls). The SDK's own retries are off (`maxAttempts: 1`): a throttled
 * call is retried here, each try counted, with backoff, within the caller's signal. There is
 * no per-attempt request timeout (a completion takes as long as the model writes): the
 * signal bounds the whole call, tries and pauses included, and when it aborts its reason is
 * what is thrown (a TimeoutError from AbortSignal.timeout), as the caller's timeout handling
 * expects. The SDK's HTTP/2 handler for Bedrock is kept, one connection per call (its default).
 *
 * A failure's message names Bedrock's reason and quotes its message, bounded, URLs redacted,
 * with no access key id, secret or session token (some AWS messages quote the signed
 * headers, the session token among them).
 */
export class BedrockChatModel implements ChatModel {
  readonly provider = 'bedrock' as const;
  readonly model: string;
  private readonly client: Lazy<{ sdk: BedrockSdk; client: BedrockRuntimeClient }>;

  /**
   * `settings` as documented above; `clock` is what the pauses between tries sleep on (the
   * system's; a test hands in one that does not wait).
   */
  constructor(
    private readonly settings: BedrockSettings,
    private readonly clock: Clock = systemClock,
  ) {
    this.model = settings.model;
    this.client = lazy(async () => {
      const sdk = await import('@aws-sdk/client-bedrock-runtime');
      const client = new sdk.BedrockRuntimeClient({
        region: settings.region,
        // Another endpoint (a VPC endpoint, a test's) is still Bedrock: signed with the real
        // credentials (the default chain: the function's role), never an emulator's dummy ones.
        ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
        // Retries are ours (counted, within the signal), not the SDK's.
        maxAttempts: 1,
        ...(settings.credentials ? { credentials: settings.credentials } : {}),
      });
      // As clients.ts: no SDK logger is configured, so its input/output filtering is work for nothing.
      client.middlewareStack.remove('loggerMiddleware');
      return { sdk, client };
    });
  }

  async complete(request: { system?: string; prompt: string }, signal: AbortSignal): Promise<ChatReply> {
    const input: ConverseCommandInput = {
      modelId: this.settings.model,
      messages: [{ role: 'user', content: [{ text: request.prompt }] }],
      ...(request.system !== undefined && request.system !== '' ? { system: [{ text: request.system }] } : {}),
    };
    let client: { sdk: BedrockSdk; client: BedrockRuntimeClient };
    try {
      client = await this.client();
    } catch (err) {
      throw new Error(`Bedrock client could not be loaded: ${redactUrls(networkReason(err))}`);
    }
    const { sdk } = client;
    let last: unknown;
    let tries = 0;
    let out: Retried<ConverseCommandOutput>;
    try {
      out = await retry<ConverseCommandOutput>(
        async () => {
          tries++;
          try {
            return await client.client.send(new sdk.ConverseCommand(input), { abortSignal: signal });
          } catch (err) {
            if (signal.aborted || !isTransient(err)) throw err;
            last = err;
            return AGAIN;
          }
        },
        {
          attempts: ATTEMPTS,
          // Before try 2, 3, …: full jitter under 0.5, 1, 2 … s; the pause ends when the signal aborts.
          delayMs: (attempt) => backoffMs(attempt - 2, BACKOFF),
          sleep: (ms) => this.clock.sleep(ms, signal),
        },
      );
    } catch (err) {
      // A timeout (or a cancel) is the caller's: its reason, whatever the SDK made of it.
      if (signal.aborted) throw signal.reason;
      throw await this.failure(err, client.client);
    }
    if (!out.done) throw await this.failure(last, client.client, tries);
    return this.reply(out.value);
  }

  private reply(out: ConverseCommandOutput): ChatReply {
    const content = out.output?.message?.content;
    const texts = (content ?? []).flatMap((block) => (typeof block.text === 'string' ? [block.text] : []));
    if (texts.length === 0) {
      throw new Error(`Bedrock answered without text (stopReason: ${out.stopReason ?? 'none'})`);
    }
    const { inputTokens, outputTokens } = out.usage ?? {};
    return {
      text: texts.join(''),
      model: this.settings.model,
      ...(Number.isSafeInteger(inputTokens) && Number.isSafeInteger(outputTokens)
        ? { usage: { input_tokens: inputTokens as number, output_tokens: outputTokens as number } }
        : {}),
    };
  }

  /** The Error a failed call is thrown as: Bedrock's reason, or the network's; no credential in it. */
  private async failure(err: unknown, client: BedrockRuntimeClient, tries?: number): Promise<Error> {
    const e = (err ?? {}) as SdkError;
    const status = e.$metadata?.httpStatusCode;
    if (typeof status === 'number' || e.$fault) {
      // Bedrock answered: the request was signed, so the SDK holds the identity it signed with.
      const secrets = [...this.configuredSecrets(), ...(await signedWith(client))];
      const name = e.name && e.name !== 'Error' ? e.name : `HTTP ${status ?? 'error'}`;
      const detail = peerText(String(e.message ?? ''), secrets);
      const what =
        tries !== undefined
          ? `Bedrock still refused the call after ${tries} tries`
          : e.$fault === 'server' || (status ?? 0) >= 500
            ? 'Bedrock failed the call'
            : 'Bedrock refused the call';
      return new Error(`${what} (${name})${detail ? `: ${detail}` : ''}`);
    }
    const reason = peerText(networkReason(err), this.configuredSecrets());
    if (e.name === 'CredentialsProviderError')
      return new Error(`Bedrock was not called: no AWS credentials (${reason})`);
    // No answer: the connection, TLS, a reset stream.
    return new Error(`Bedrock endpoint did not answer: ${reason}`);
  }

  private configuredSecrets(): string[] {
    const { credentials } = this.settings;
    return credentialTexts([credentials?.accessKeyId, credentials?.secretAccessKey, credentials?.sessionToken]);
  }
}

/**
 * The credentials the SDK signed with (its memoized identity; on AWS the role's temporary
 * credentials): a message must not show them.
 */
async function signedWith(client: BedrockRuntimeClient): Promise<string[]> {
  try {
    const identity = await client.config.credentials();
    return credentialTexts([identity.accessKeyId, identity.secretAccessKey, identity.sessionToken]);
  } catch {
    return [];
  }
}

const credentialTexts = (values: (string | undefined)[]): string[] =>
  values.filter((text): text is string => typeof text === 'string' && text.length >= 4);

function isTransient(err: unknown): boolean {
  const e = err as SdkError | undefined;
  if (e?.name && TRANSIENT.has(e.name)) return true;
  const status = e?.$metadata?.httpStatusCode;
  return typeof status === 'number' && TRANSIENT_STATUS.has(status);
}

/**
 * Bedrock's own words (or a network reason) as a message may carry them: the known
 * credentials out, then anything shaped like an access key id or a session token that
 * follows its header name, URLs redacted, bounded.
 */
function peerText(text: string, secrets: readonly string[]): string {
  let safe = secrets.reduce((t, secret) => redactSecret(t, secret), text);
  safe = safe
    .replace(/\b(?:AKIA|ASIA)[A-Z0-9]{12,}\b/g, '***')
    .replace(/(x-amz-security-token\s*[:=]\s*)\S+/gi, '$1***')
    .replace(/(Credential=)[^/\s,]+/g, '$1***');
  safe = redactUrls(safe);
  return safe.length > MAX_PEER_TEXT ? `${safe.slice(0, MAX_PEER_TEXT)}…` : safe;
}
