import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BedrockChatModel, type BedrockCredentials } from '../../shared/adapters/bedrock.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { failureText } from '../../shared/failure-text.js';
import { type BedrockRequest, type FakeBedrock, startBedrockServer } from '../support/bedrock-server.js';
import { eventually } from '../support/eventually.js';
import { rejection } from '../support/rejection.js';

/**
 * The Bedrock chat model (Converse through @aws-sdk/client-bedrock-runtime) against the
 * local Bedrock of support/bedrock-server.ts, which checks each request's SigV4 signature
 * against its credentials: the request sent, the reply read, throttling retried and counted,
 * Bedrock's refusals quoted once, timeouts left to the caller, and no credential in any
 * message. Real sockets and timers (no fake timers in this file).
 */
const REGION = 'eu-west-1';
const CREDENTIALS: BedrockCredentials = {
  accessKeyId: 'AKIAZZBEDROCKTEST01',
  secretAccessKey: 'bedrock-test-secret/K7MDENG+bPxRfiCYzz',
  sessionToken: 'IQoJb3JpZ2luX2VjEBedrockTestSessionToken0123456789',
};
const MODEL = 'anthropic.claude-3-haiku-20240307-v1:0';
const PROFILE_ARN = `arn:aws:bedrock:${REGION}:123456789012:inference-profile/eu.anthropic.claude-3-5-sonnet-20240620-v1:0`;

let bedrock: FakeBedrock;
beforeAll(async () => {
  bedrock = await startBedrockServer({ region: REGION, credentials: CREDENTIALS, models: [MODEL, PROFILE_ARN] });
});
afterAll(() => bedrock.stop());

/** Every message a call of this file failed with: none may quote a credential (the last test). */
const thrown: string[] = [];

const chat = (settings: Partial<ConstructorParameters<typeof BedrockChatModel>[0]> = {}, clock?: Clock) =>
  new BedrockChatModel(
    { region: REGION, model: MODEL, endpoint: bedrock.endpoint, credentials: CREDENTIALS, ...settings },
    clock,
  );

/** The requests the server records while `call` runs, and what the call answered or threw. */
async function recorded<T>(call: () => Promise<T>): Promise<{ requests: BedrockRequest[]; value?: T; error?: Error }> {
  const mark = bedrock.requests.length;
  try {
    const value = await call();
    return { requests: bedrock.requests.slice(mark), value };
  } catch (err) {
    if (err instanceof Error) thrown.push(err.message);
    return { requests: bedrock.requests.slice(mark), error: err as Error };
  }
}

/** A prompt no other test sends (the server counts THROTTLE<n> per prompt). */
const unique = (text: string) => `${text} ${randomUUID()}`;

/** A clock whose pauses end at once, each recorded. */
function instantClock(): Clock & { pauses: number[] } {
  const pauses: number[] = [];
  return { ...systemClock, pauses, sleep: async (ms: number) => void pauses.push(ms) };
}

/** How steps.ts words a step's failure: a TimeoutError is "timed out". */
const stepFailure = (err: unknown) => failureText(err, { timedOut: 'timed out', cap: (text) => text });

describe('BedrockChatModel: a completion', () => {
  it('sends Converse with the system block and the user message, signed by the credentials, and reads text, model and usage', async () => {
    const model = chat();
    expect(model.provider).toBe('bedrock');
    expect(model.model).toBe(MODEL);
    const prompt = 'What is a lakehouse?\nAnswer in one line.';
    const { requests, value } = await recorded(() =>
      model.complete({ system: 'You are terse.', prompt }, AbortSignal.timeout(10_000)),
    );
    expect(value).toEqual({
      text: `Bedrock ${MODEL} answers: What is a lakehouse? (system: You are terse.)`,
      model: MODEL,
      // The local Bedrock counts words: "You are terse." (3) and the prompt (8) in, the reply's 11 out.
      usage: { input_tokens: 11, output_tokens: 11 },
    });
    expect(requests).toEqual([
      {
        modelId: MODEL,
        path: `/model/${encodeURIComponent(MODEL)}/converse`,
        method: 'POST',
        protocol: 'h2',
        body: { messages: [{ role: 'user', content: [{ text: prompt }] }], system: [{ text: 'You are terse.' }] },
        accessKeyId: CREDENTIALS.accessKeyId,
        verified: true,
        status: 200,
      },
    ]);
  });

  it('reaches an inference profile by its ARN (":" and "/" encoded in the path) and sends no system block when none is given', async () => {
    const { requests, value } = await recorded(() =>
      chat({ model: PROFILE_ARN }).complete({ prompt: 'hello' }, AbortSignal.timeout(10_000)),
    );
    expect(value).toEqual({
      text: `Bedrock ${PROFILE_ARN} answers: hello`,
      model: PROFILE_ARN,
      usage: { input_tokens: 1, output_tokens: 4 },
    });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.path).toBe(
      '/model/arn%3Aaws%3Abedrock%3Aeu-west-1%3A123456789012%3Ainference-profile%2Feu.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse',
    );
    expect(requests[0]).toMatchObject({ modelId: PROFILE_ARN, verified: true, status: 200 });
    expect(requests[0]!.body).toEqual({ messages: [{ role: 'user', content: [{ text: 'hello' }] }] });
  });

  it('builds its client once and reuses it', async () => {
    const model = chat();
    const first = await model.complete({ prompt: 'one' }, AbortSignal.timeout(10_000));
    const second = await model.complete({ prompt: 'two' }, AbortSignal.timeout(10_000));
    expect([first.text, second.text]).toEqual([`Bedrock ${MODEL} answers: one`, `Bedrock ${MODEL} answers: two`]);
    const client = (model as unknown as { client: () => Promise<unknown> }).client;
    expect(await client()).toBe(await client());
  });

  it('fails when Bedrock answers without a text block', async () => {
    const { requests, error } = await recorded(() =>
      chat().complete({ prompt: 'FILTERED' }, AbortSignal.timeout(10_000)),
    );
    expect(error?.message).toBe('Bedrock answered without text (stopReason: content_filtered)');
    expect(requests).toHaveLength(1);
  });
});

describe('BedrockChatModel: throttling is retried within the signal', () => {
  it('a call throttled twice succeeds on its third request, each one recorded (the SDK retries none itself)', async () => {
    const prompt = unique('THROTTLE2');
    const { requests, value } = await recorded(() => chat().complete({ prompt }, AbortSignal.timeout(20_000)));
    expect(value?.text).toBe(`Bedrock ${MODEL} answers: ${prompt}`);
    expect(requests.map((r) => [r.status, r.error, r.verified])).toEqual([
      [429, 'ThrottlingException', true],
      [429, 'ThrottlingException', true],
      [200, undefined, true],
    ]);
  });

  it.each([
    ['UNAVAILABLE1', 503, 'ServiceUnavailableException'],
    ['NOTREADY1', 429, 'ModelNotReadyException'],
  ])('%s: %i %s is tried again', async (script, status, error) => {
    const prompt = unique(script);
    const { requests, value } = await recorded(() => chat().complete({ prompt }, AbortSignal.timeout(20_000)));
    expect(value?.text).toBe(`Bedrock ${MODEL} answers: ${prompt}`);
    expect(requests.map((r) => [r.status, r.error])).toEqual([
      [status, error],
      [200, undefined],
    ]);
  });

  it("the server's scripted failures (failNext): a 503 is tried again, an access denial is not", async () => {
    bedrock.failNext('ServiceUnavailableException');
    const retried = await recorded(() => chat().complete({ prompt: 'after a 503' }, AbortSignal.timeout(20_000)));
    expect(retried.value?.text).toBe(`Bedrock ${MODEL} answers: after a 503`);
    expect(retried.requests.map((r) => r.status)).toEqual([503, 200]);
    bedrock.failNext('AccessDeniedException', 2);
    const refused = await recorded(() => chat().complete({ prompt: 'denied' }, AbortSignal.timeout(20_000)));
    expect(refused.error?.message).toBe(
      'Bedrock refused the call (AccessDeniedException): AccessDeniedException (scripted by failNext)',
    );
    expect(refused.requests).toHaveLength(1);
    // The second scripted failure is still queued: the next call meets it.
    const next = await recorded(() => chat().complete({ prompt: 'denied again' }, AbortSignal.timeout(20_000)));
    expect(next.error?.message).toMatch(/^Bedrock refused the call \(AccessDeniedException\)/);
  });

  it("pauses with growing backoff between tries, and after 8 tries fails with Bedrock's reason", async () => {
    const clock = instantClock();
    const { requests, error } = await recorded(() =>
      chat({}, clock).complete({ prompt: unique('THROTTLE') }, AbortSignal.timeout(20_000)),
    );
    expect(error?.message).toBe(
      'Bedrock still refused the call after 8 tries (ThrottlingException): Too many requests, please wait before trying again.',
    );
    // 8 requests: 1 per try (the SDK's own retries are off: 3 attempts each would be 24).
    expect(requests).toHaveLength(8);
    expect(requests.every((r) => r.error === 'ThrottlingException')).toBe(true);
    // Full jitter under 0.5, 1, 2, 4, 8, 8, 8 s.
    expect(clock.pauses).toHaveLength(7);
    for (const [i, pause] of clock.pauses.entries()) {
      expect(pause).toBeGreaterThanOrEqual(0);
      expect(pause).toBeLessThanOrEqual(Math.min(8_000, 500 * 2 ** i));
    }
  });

  it('a call throttled until its signal aborts ends with the timeout, not another try', async () => {
    const { requests, error } = await recorded(() =>
      chat().complete({ prompt: unique('THROTTLE') }, AbortSignal.timeout(1_500)),
    );
    expect(error?.name).toBe('TimeoutError');
    expect(stepFailure(error)).toBe('timed out');
    expect(requests.length).toBeGreaterThanOrEqual(1);
    expect(requests.every((r) => r.error === 'ThrottlingException')).toBe(true);
  });
});

describe("BedrockChatModel: Bedrock's refusals fail at once with its message", () => {
  it('access denied', async () => {
    const { requests, error } = await recorded(() => chat().complete({ prompt: 'DENY' }, AbortSignal.timeout(10_000)));
    expect(error?.message).toBe(
      'Bedrock refused the call (AccessDeniedException): User: arn:aws:sts::123456789012:assumed-role/dpm-crews-worker/session ' +
        `is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:${REGION}::foundation-model/${MODEL} ` +
        'because no identity-based policy allows the bedrock:InvokeModel action',
    );
    expect(requests).toHaveLength(1);
  });

  it('an unknown model', async () => {
    const unknown = 'anthropic.claude-unknown-v9:0';
    const { requests, error } = await recorded(() =>
      chat({ model: unknown }).complete({ prompt: 'hello' }, AbortSignal.timeout(10_000)),
    );
    expect(error?.message).toBe(
      `Bedrock refused the call (ResourceNotFoundException): Model not found: the model identifier ${unknown} does not exist.`,
    );
    expect(requests).toMatchObject([{ modelId: unknown, status: 404 }]);
  });

  it('a validation error', async () => {
    const { requests, error } = await recorded(() =>
      chat().complete({ prompt: 'INVALID' }, AbortSignal.timeout(10_000)),
    );
    expect(error?.message).toBe(
      'Bedrock refused the call (ValidationException): The provided request is not valid: INVALID was asked for.',
    );
    expect(requests).toHaveLength(1);
  });

  it('a server fault is not retried either', async () => {
    const { requests, error } = await recorded(() => chat().complete({ prompt: 'FAIL' }, AbortSignal.timeout(10_000)));
    expect(error?.message).toBe(
      'Bedrock failed the call (InternalServerException): The server encountered an internal error.',
    );
    expect(requests).toHaveLength(1);
  });

  it("Bedrock's message is quoted without credentials or URL secrets, bounded", async () => {
    const { requests, error } = await recorded(() => chat().complete({ prompt: 'LEAK' }, AbortSignal.timeout(10_000)));
    expect(requests).toHaveLength(1);
    expect(error!.message).toMatch(
      /^Bedrock refused the call \(ValidationException\): Request signed with Credential=\*\*\*\/… and x-amz-security-token: \*\*\* \(key \*\*\*, token \*\*\*\); see https:\/\/\*\*\*@docs\.example\.test\/help\?\*\*\* for details\. x{100}/,
    );
    expect(error!.message).not.toMatch(/pw-bedrock|tk-bedrock/);
    expect(error!.message.length).toBeLessThan(600);
  });
});

describe('BedrockChatModel: time and the network', () => {
  it('a call Bedrock does not answer ends when its signal times out, with the timeout (steps.ts: "timed out")', async () => {
    const { requests, error } = await recorded(() => chat().complete({ prompt: 'SLOW' }, AbortSignal.timeout(300)));
    expect(error?.name).toBe('TimeoutError');
    expect(stepFailure(error)).toBe('timed out');
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ modelId: MODEL, verified: true });
    expect(requests[0]!.status).toBeUndefined();
  });

  it('a cancelled call ends with the cancel reason', async () => {
    const cancel = new AbortController();
    const reason = new Error('the run was cancelled');
    const mark = bedrock.requests.length;
    const call = chat().complete({ prompt: 'SLOW' }, cancel.signal);
    await eventually(() => bedrock.requests.length > mark, 10_000, 'the SLOW request to arrive', 20);
    cancel.abort(reason);
    expect(await rejection(call)).toBe(reason);
  });

  it('an endpoint that refuses the connection: "Bedrock endpoint did not answer"', async () => {
    const error = await rejection(
      chat({ endpoint: 'http://127.0.0.1:1' }).complete({ prompt: 'hello' }, AbortSignal.timeout(10_000)),
    );
    thrown.push(error.message);
    expect(error.message).toMatch(/^Bedrock endpoint did not answer: .*ECONNREFUSED/);
  });
});

describe('the local Bedrock checks the signature', () => {
  it('refuses a request signed with a wrong secret key', async () => {
    const { requests, error } = await recorded(() =>
      chat({ credentials: { ...CREDENTIALS, secretAccessKey: 'not-the-secret-key' } }).complete(
        { prompt: 'hello' },
        AbortSignal.timeout(10_000),
      ),
    );
    expect(error?.message).toMatch(
      /^Bedrock refused the call \(InvalidSignatureException\): The request signature we calculated does not match the signature you provided\./,
    );
    expect(requests).toMatchObject([
      {
        modelId: MODEL,
        accessKeyId: CREDENTIALS.accessKeyId,
        verified: false,
        status: 403,
        error: 'InvalidSignatureException',
      },
    ]);
  });

  it('refuses another access key, another session token and another region', async () => {
    const cases = [
      [{ credentials: { ...CREDENTIALS, accessKeyId: 'AKIAZZOTHERKEY000001' } }, 'UnrecognizedClientException'],
      [{ credentials: { ...CREDENTIALS, sessionToken: 'another-session-token-0123' } }, 'UnrecognizedClientException'],
      [{ region: 'us-east-1' }, 'InvalidSignatureException'],
    ] as const;
    for (const [settings, refusal] of cases) {
      const { requests, error } = await recorded(() =>
        chat(settings).complete({ prompt: 'hello' }, AbortSignal.timeout(10_000)),
      );
      expect(error?.message).toMatch(new RegExp(`^Bedrock refused the call \\(${refusal}\\): `));
      expect(requests).toMatchObject([{ verified: false, status: 403, error: refusal }]);
    }
  });

  it('refuses an unsigned request (HTTP/1.1 too)', async () => {
    const res = await fetch(`${bedrock.endpoint}/model/${encodeURIComponent(MODEL)}/converse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hello' }] }] }),
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('x-amzn-errortype')).toMatch(/^MissingAuthenticationTokenException:/);
    expect(await res.json()).toEqual({ message: 'Missing Authentication Token' });
    expect(bedrock.requests.at(-1)).toMatchObject({ protocol: 'http/1.1', verified: false, accessKeyId: undefined });
  });
});

describe('BedrockChatModel failures quote no credentials', () => {
  it('no message thrown in this file holds the access key id, the secret key or the session token', () => {
    expect(thrown.length).toBeGreaterThanOrEqual(12);
    const secrets = [
      CREDENTIALS.accessKeyId,
      CREDENTIALS.secretAccessKey,
      CREDENTIALS.sessionToken!,
      'AKIAZZOTHERKEY000001',
      'not-the-secret-key',
      'another-session-token-0123',
    ];
    for (const message of thrown) for (const secret of secrets) expect(message).not.toContain(secret);
  });
});
