import { createHash, createHmac, type Hash, type Hmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer as createHttp1Server, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { getCanonicalHeaders, SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest, SourceData } from '@smithy/types';

/**
 * A local Amazon Bedrock runtime that answers the Converse API as
 * `@aws-sdk/client-bedrock-runtime` calls it (Bedrock API reference, API_runtime_Converse;
 * the AWS restJson1 protocol), on 127.0.0.1, over HTTP/2 without TLS (what the SDK's default
 * handler speaks to an `http://` endpoint) and HTTP/1.1 on the same port:
 *
 * - `POST /model/{modelId}/converse`, the model id URL-encoded (an inference profile's ARN
 *   carries `:` and `/`), a JSON body `{messages, system?, inferenceConfig?, …}`; answered
 *   `{"output":{"message":{"role":"assistant","content":[{"text"}]}},"stopReason":"end_turn",
 *   "usage":{"inputTokens","outputTokens","totalTokens"},"metrics":{"latencyMs"}}`. The text
 *   says what was received: `Bedrock <modelId> answers: <first line of the last user
 *   message>`, followed by ` (system: <first line of the system text>)` when a system block
 *   came. Tokens are counted as words: input = the words of the system and message texts,
 *   output = the words of the reply.
 * - Every request's SigV4 signature is verified against the credentials the server was given
 *   (service `bedrock`, the server's region), by signing the request again with
 *   @smithy/signature-v4 (the SDK's own signer) over the headers the request says it signed.
 *   No or a malformed `authorization`: 403 MissingAuthenticationTokenException; another
 *   access key id or session token: 403 UnrecognizedClientException; a scope of another
 *   region, service or day, a date more than 15 minutes off, a body that does not match its
 *   `x-amz-content-sha256`, or a signature that does not match: 403
 *   InvalidSignatureException, whose message quotes the canonical string as AWS's does
 *   (with the signed `x-amz-security-token`: an adapter must not pass it on).
 * - Errors as restJson1 sends them: the status, `x-amzn-errortype: <Name>:<namespace>` and
 *   a body `{"message"}`. A model id not in `models`: 404 ResourceNotFoundException. A
 *   body that is not Converse's (no messages, a conversation not starting with a user
 *   message, a content block without text, a field Converse does not have): 400
 *   ValidationException (a body that is not JSON: 400 SerializationException). Any other
 *   path or method: 404 UnknownOperationException.
 *
 * Behaviour scripted by the last user message's text:
 * - `THROTTLE<n>` (e.g. THROTTLE2): the first n requests with this exact text (and model)
 *   answer 429 ThrottlingException, the next ones succeed; `THROTTLE` alone: always.
 *   `UNAVAILABLE<n>` the same with 503 ServiceUnavailableException, `NOTREADY<n>` with 429
 *   ModelNotReadyException.
 * - `DENY`: 403 AccessDeniedException (IAM's wording, naming the model's ARN).
 * - `INVALID`: 400 ValidationException. `FAIL`: 500 InternalServerException.
 * - `LEAK`: 400 ValidationException whose message quotes the request's access key id, its
 *   session token, a URL with credentials and 2,000 characters more: an adapter must strip
 *   and bound it.
 * - `FILTERED`: 200 with no text block (`content: []`, stopReason `content_filtered`).
 * - `SLOW`: no answer, until the client goes away (a timeout) or the server stops.
 * And by the server: `failNext(name, times)` fails the next requests (after the signature
 * and model checks) with that error; `models` may be changed; `reply` chooses the text.
 *
 * Every request is recorded in `requests` (in arrival order, once its body is read).
 */
export interface BedrockServerCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface BedrockServerSettings {
  /** The region requests must be signed for. */
  readonly region: string;
  /** The credentials requests must be signed with. */
  readonly credentials: BedrockServerCredentials;
  /** The model ids, inference profile ids and ARNs that exist (any other: ResourceNotFoundException). */
  readonly models: readonly string[];
  /** The reply's text for a request (undefined: the default text above). */
  readonly reply?: (received: { modelId: string; system?: string; prompt: string }) => string | undefined;
}

/** One request as the server received it. */
export interface BedrockRequest {
  /** The model id of the path, decoded; undefined on another path. */
  readonly modelId: string | undefined;
  /** The path as sent (the model id URL-encoded). */
  readonly path: string;
  readonly method: string;
  /** 'h2' or 'http/1.1'. */
  readonly protocol: string;
  /** The JSON body (undefined when it was not JSON). */
  readonly body: unknown;
  /** The access key id of the signature's `Credential=` (undefined when unsigned). */
  readonly accessKeyId: string | undefined;
  /** Whether the request was signed by the server's credentials, for its region and `bedrock`. */
  readonly verified: boolean;
  /** The status answered (undefined while unanswered: SLOW). */
  status?: number;
  /** The error type answered, if any. */
  error?: string;
}

/** The errors `failNext` can answer, with their status (the SDK's error schemas). */
export const BEDROCK_ERRORS = {
  AccessDeniedException: 403,
  InternalServerException: 500,
  ModelErrorException: 424,
  ModelNotReadyException: 429,
  ModelTimeoutException: 408,
  ResourceNotFoundException: 404,
  ServiceQuotaExceededException: 400,
  ServiceUnavailableException: 503,
  ThrottlingException: 429,
  ValidationException: 400,
} as const;
export type BedrockErrorName = keyof typeof BEDROCK_ERRORS;

export interface FakeBedrock {
  /** `http://127.0.0.1:<port>`: the adapter's `endpoint`. */
  readonly endpoint: string;
  readonly requests: BedrockRequest[];
  /** The known model ids (changeable). */
  readonly models: Set<string>;
  /** Fails the next `times` requests (1 unless told) with `error` (signature and model checks first). */
  failNext(error: BedrockErrorName, times?: number): void;
  /** Closes every connection (SLOW ones too) and the port. */
  stop(): Promise<void>;
}

/** The body fields of ConverseRequest (the model id is in the path). */
const CONVERSE_FIELDS = new Set([
  'messages',
  'system',
  'inferenceConfig',
  'toolConfig',
  'guardrailConfig',
  'additionalModelRequestFields',
  'promptVariables',
  'additionalModelResponseFieldPaths',
  'requestMetadata',
  'performanceConfig',
  'serviceTier',
  'outputConfig',
  'projectIdentifier',
]);

/** How far a request's `x-amz-date` may be from now (SigV4: 15 minutes). */
const MAX_SKEW_MS = 15 * 60 * 1000;

const THROTTLE_MESSAGE = 'Too many requests, please wait before trying again.';

/** The pieces of a request and an answer both protocols' compatibility APIs share. */
type AnyRequest = IncomingMessage | Http2ServerRequest;
type AnyResponse = ServerResponse | Http2ServerResponse;

class ServerError {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly message: string,
  ) {}
}

/** SHA-256 (and its HMAC when given a key) as @smithy/signature-v4 takes it, from node:crypto. */
class Sha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.make();
  }
  private make(): Hash | Hmac {
    if (this.secret === undefined) return createHash('sha256');
    const key =
      typeof this.secret === 'string'
        ? this.secret
        : ArrayBuffer.isView(this.secret)
          ? Buffer.from(this.secret.buffer, this.secret.byteOffset, this.secret.byteLength)
          : Buffer.from(this.secret);
    return createHmac('sha256', key);
  }
  update(data: Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.make();
  }
}

/** The signer, with the canonical request it signs within reach (for InvalidSignatureException's message). */
class Verifier extends SignatureV4 {
  canonicalString(request: HttpRequest, signed: Set<string>, payloadHash: string): string {
    return this.createCanonicalRequest(request, getCanonicalHeaders(request, undefined, signed), payloadHash);
  }
}

interface Authorization {
  readonly accessKeyId: string;
  readonly date: string;
  readonly region: string;
  readonly service: string;
  readonly signedHeaders: string[];
  readonly signature: string;
}

/** `AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/<service>/aws4_request, SignedHeaders=a;b, Signature=<hex>`. */
function parseAuthorization(header: string | undefined): Authorization | undefined {
  const match =
    /^AWS4-HMAC-SHA256\s+Credential=([^/\s,]+)\/(\d{8})\/([^/\s,]+)\/([^/\s,]+)\/aws4_request,\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/.exec(
      header ?? '',
    );
  if (!match) return undefined;
  const [, accessKeyId, date, region, service, signedHeaders, signature] = match as unknown as string[];
  return {
    accessKeyId: accessKeyId!,
    date: date!,
    region: region!,
    service: service!,
    signedHeaders: signedHeaders!.split(';'),
    signature: signature!,
  };
}

/** `20260101T120000Z` → its Date. */
function amzDate(text: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return undefined;
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}

const header = (req: AnyRequest, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

const sha256Hex = (body: Buffer) => createHash('sha256').update(body).digest('hex');

/**
 * Checks the request's signature; answers the ServerError to send when it is not the
 * server's credentials' signature, undefined when it is.
 */
async function verifySignature(
  req: AnyRequest,
  rawPath: string,
  body: Buffer,
  auth: Authorization | undefined,
  settings: BedrockServerSettings,
): Promise<ServerError | undefined> {
  const { credentials, region } = settings;
  if (!auth) {
    return new ServerError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  }
  const token = header(req, 'x-amz-security-token');
  if (auth.accessKeyId !== credentials.accessKeyId || token !== credentials.sessionToken) {
    return new ServerError(
      403,
      'UnrecognizedClientException',
      'The security token included in the request is invalid.',
    );
  }
  const dateText = header(req, 'x-amz-date') ?? '';
  const signingDate = amzDate(dateText);
  if (!signingDate || !auth.signedHeaders.includes('x-amz-date')) {
    return new ServerError(
      403,
      'InvalidSignatureException',
      "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
    );
  }
  if (Math.abs(Date.now() - signingDate.getTime()) > MAX_SKEW_MS) {
    return new ServerError(
      403,
      'InvalidSignatureException',
      `Signature expired: ${dateText} is now earlier than the allowed window (15 minutes).`,
    );
  }
  if (auth.date !== dateText.slice(0, 8)) {
    return new ServerError(
      403,
      'InvalidSignatureException',
      'Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP.',
    );
  }
  if (auth.region !== region) {
    return new ServerError(
      403,
      'InvalidSignatureException',
      `Credential should be scoped to a valid region, not '${auth.region}'.`,
    );
  }
  if (auth.service !== 'bedrock') {
    return new ServerError(
      403,
      'InvalidSignatureException',
      "Credential should be scoped to correct service: 'bedrock'.",
    );
  }
  const contentHash = header(req, 'x-amz-content-sha256');
  if (contentHash !== undefined && contentHash !== 'UNSIGNED-PAYLOAD' && contentHash !== sha256Hex(body)) {
    return new ServerError(
      403,
      'InvalidSignatureException',
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
    );
  }
  // The request as the client signed it: the headers it names as signed (HTTP/2 signs :authority).
  const signed = new Set(auth.signedHeaders);
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const value = header(req, name);
    if (value === undefined) {
      return new ServerError(403, 'InvalidSignatureException', `The signed header ${name} is not in the request.`);
    }
    headers[name] = value;
  }
  const [path, query = ''] = rawPath.split('?', 2) as [string, string?];
  const verifier = new Verifier({ service: 'bedrock', region, credentials, sha256: Sha256, applyChecksum: false });
  const request: HttpRequest = {
    method: req.method ?? 'GET',
    protocol: 'http:',
    hostname: '127.0.0.1',
    path: path!,
    query: Object.fromEntries(new URLSearchParams(query)),
    headers,
    body,
  };
  const expected = await verifier.sign(request, { signingDate, signableHeaders: signed });
  const expectedSignature = /Signature=([0-9a-f]{64})$/.exec(expected.headers.authorization ?? '')?.[1] ?? '';
  const matches =
    expectedSignature.length === auth.signature.length &&
    timingSafeEqual(Buffer.from(expectedSignature), Buffer.from(auth.signature));
  if (matches) return undefined;
  const canonical = verifier.canonicalString(expected, signed, contentHash ?? sha256Hex(body));
  return new ServerError(
    403,
    'InvalidSignatureException',
    'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access ' +
      'Key and signing method. Consult the service documentation for details.\n\nThe Canonical String for this ' +
      `request should have been\n'${canonical}'\n`,
  );
}

interface Received {
  readonly system?: string;
  readonly prompt: string;
  /** Every text received, for the token count. */
  readonly texts: string[];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The Converse body's system text and last user message, or the ValidationException Bedrock would answer. */
function converseRequest(body: unknown): Received | ServerError {
  const invalid = (message: string) => new ServerError(400, 'ValidationException', message);
  if (!isRecord(body))
    return new ServerError(400, 'SerializationException', 'Unable to parse the request body as JSON.');
  for (const key of Object.keys(body)) {
    if (!CONVERSE_FIELDS.has(key)) return invalid(`Malformed input request: extraneous key [${key}] is not permitted.`);
  }
  const { messages, system } = body;
  if (!Array.isArray(messages) || messages.length === 0) {
    return invalid('The model returned the following errors: messages: at least one message is required.');
  }
  const texts: string[] = [];
  let prompt: string | undefined;
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant')) {
      return invalid(
        `1 validation error detected: Value at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`,
      );
    }
    if (i === 0 && message.role !== 'user') {
      return invalid(
        'A conversation must start with a user message. Try again with a conversation that starts with a user message.',
      );
    }
    if (!Array.isArray(message.content) || message.content.length === 0) {
      return invalid(
        `The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`,
      );
    }
    const blockTexts: string[] = [];
    for (const block of message.content) {
      if (!isRecord(block) || typeof block.text !== 'string') {
        return invalid(`messages.${i}.content: only text content blocks are answered by this server.`);
      }
      blockTexts.push(block.text);
    }
    texts.push(...blockTexts);
    if (message.role === 'user') prompt = blockTexts.join('\n');
  }
  let systemText: string | undefined;
  if (system !== undefined) {
    if (!Array.isArray(system) || !system.every((b) => isRecord(b) && typeof b.text === 'string')) {
      return invalid('system: each SystemContentBlock must carry text.');
    }
    systemText = system.map((b) => (b as { text: string }).text).join('\n');
    texts.push(systemText);
  }
  return { prompt: prompt ?? '', texts, ...(systemText !== undefined ? { system: systemText } : {}) };
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
const firstLine = (text: string) => text.split('\n', 1)[0] ?? '';

export async function startBedrockServer(settings: BedrockServerSettings): Promise<FakeBedrock> {
  const requests: BedrockRequest[] = [];
  const models = new Set(settings.models);
  const failures: BedrockErrorName[] = [];
  /** `<modelId>\n<prompt>` → requests of it seen, for THROTTLE<n> and its kin. */
  const seen = new Map<string, number>();

  const answerError = (res: AnyResponse, record: BedrockRequest | undefined, error: ServerError) => {
    if (record) {
      record.status = error.status;
      record.error = error.type;
    }
    res.statusCode = error.status;
    res.setHeader('content-type', 'application/json');
    res.setHeader('x-amzn-requestid', randomUUID());
    res.setHeader('x-amzn-errortype', `${error.type}:http://internal.amazon.com/coral/com.amazon.bedrock/`);
    res.end(JSON.stringify({ message: error.message }));
  };

  const scripted = (
    received: Received,
    modelId: string,
    req: AnyRequest,
  ): ServerError | 'slow' | 'filtered' | undefined => {
    const queued = failures.shift();
    if (queued) return new ServerError(BEDROCK_ERRORS[queued], queued, `${queued} (scripted by failNext)`);
    const { prompt } = received;
    const key = `${modelId}\n${prompt}`;
    const count = (seen.get(key) ?? 0) + 1;
    seen.set(key, count);
    const repeated = (word: string) => {
      const match = new RegExp(`${word}(\\d*)`).exec(prompt);
      if (!match) return false;
      return match[1] === '' || count <= Number(match[1]);
    };
    if (repeated('THROTTLE')) return new ServerError(429, 'ThrottlingException', THROTTLE_MESSAGE);
    if (repeated('UNAVAILABLE')) {
      return new ServerError(503, 'ServiceUnavailableException', 'Bedrock is unable to process your request.');
    }
    if (repeated('NOTREADY')) {
      return new ServerError(
        429,
        'ModelNotReadyException',
        'Model is not ready for inference. Wait and try your request again.',
      );
    }
    if (prompt.includes('DENY')) {
      return new ServerError(
        403,
        'AccessDeniedException',
        `User: arn:aws:sts::123456789012:assumed-role/dpm-crews-worker/session is not authorized to perform: ` +
          `bedrock:InvokeModel on resource: ${modelArn(modelId, settings.region)} because no identity-based policy ` +
          'allows the bedrock:InvokeModel action',
      );
    }
    if (prompt.includes('INVALID')) {
      return new ServerError(400, 'ValidationException', 'The provided request is not valid: INVALID was asked for.');
    }
    if (prompt.includes('FAIL')) {
      return new ServerError(500, 'InternalServerException', 'The server encountered an internal error.');
    }
    if (prompt.includes('LEAK')) {
      const credential = /Credential=([^/\s,]+)/.exec(header(req, 'authorization') ?? '')?.[1] ?? '';
      return new ServerError(
        400,
        'ValidationException',
        `Request signed with Credential=${credential}/… and x-amz-security-token: ${header(req, 'x-amz-security-token') ?? ''} ` +
          `(key ${credential}, token ${header(req, 'x-amz-security-token') ?? ''}); see ` +
          `https://ada:pw-bedrock@docs.example.test/help?token=tk-bedrock for details. ${'x'.repeat(2000)}`,
      );
    }
    if (prompt.includes('FILTERED')) return 'filtered';
    if (prompt.includes('SLOW')) return 'slow';
    return undefined;
  };

  const handle = (req: AnyRequest, res: AnyResponse) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const rawPath = req.url ?? '/';
        const route = /^\/model\/([^/?]+)\/converse(?:\?.*)?$/.exec(rawPath);
        let modelId: string | undefined;
        try {
          modelId = route ? decodeURIComponent(route[1]!) : undefined;
        } catch {
          modelId = undefined;
        }
        let json: unknown;
        try {
          json = JSON.parse(body.toString('utf8'));
        } catch {
          json = undefined;
        }
        const auth = parseAuthorization(header(req, 'authorization'));
        let refusal: ServerError | undefined;
        try {
          refusal = await verifySignature(req, rawPath, body, auth, settings);
        } catch (err) {
          refusal = new ServerError(
            403,
            'InvalidSignatureException',
            `The signature could not be checked: ${String(err)}`,
          );
        }
        const record: BedrockRequest = {
          modelId,
          path: rawPath,
          method: req.method ?? '',
          protocol: req.httpVersion === '2.0' ? 'h2' : 'http/1.1',
          body: json,
          accessKeyId: auth?.accessKeyId,
          verified: refusal === undefined,
        };
        requests.push(record);
        if (refusal) return answerError(res, record, refusal);
        if (req.method !== 'POST' || modelId === undefined) {
          return answerError(
            res,
            record,
            new ServerError(404, 'UnknownOperationException', 'UnknownOperationException'),
          );
        }
        const received = converseRequest(json);
        if (received instanceof ServerError) return answerError(res, record, received);
        if (!models.has(modelId)) {
          return answerError(
            res,
            record,
            new ServerError(
              404,
              'ResourceNotFoundException',
              `Model not found: the model identifier ${modelId} does not exist.`,
            ),
          );
        }
        const script = scripted(received, modelId, req);
        if (script instanceof ServerError) return answerError(res, record, script);
        if (script === 'slow') return; // answered never: the client's abort (or stop) ends it
        const text =
          script === 'filtered'
            ? undefined
            : (settings.reply?.({
                modelId,
                prompt: received.prompt,
                ...(received.system !== undefined ? { system: received.system } : {}),
              }) ??
              `Bedrock ${modelId} answers: ${firstLine(received.prompt)}` +
                (received.system !== undefined ? ` (system: ${firstLine(received.system)})` : ''));
        const inputTokens = received.texts.reduce((n, t) => n + words(t), 0);
        const outputTokens = text === undefined ? 0 : words(text);
        record.status = 200;
        res.statusCode = 200;
        res.setHeader('content-type', 'application/json');
        res.setHeader('x-amzn-requestid', randomUUID());
        res.end(
          JSON.stringify({
            output: { message: { role: 'assistant', content: text === undefined ? [] : [{ text }] } },
            stopReason: text === undefined ? 'content_filtered' : 'end_turn',
            usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
            metrics: { latencyMs: Date.now() - started },
          }),
        );
      })();
    });
  };

  // One port, both protocols: a connection starting with HTTP/2's preface ("PRI * HTTP/2.0")
  // goes to the HTTP/2 server, any other to the HTTP/1.1 one.
  const http1 = createHttp1Server(handle);
  const http2 = createHttp2Server(handle);
  const sockets = new Set<Socket>();
  const front = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.unshift(chunk);
      (chunk.subarray(0, 3).toString('latin1') === 'PRI' ? http2 : http1).emit('connection', socket);
      process.nextTick(() => socket.resume());
    });
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));

  return {
    endpoint: `http://127.0.0.1:${(front.address() as AddressInfo).port}`,
    requests,
    models,
    failNext(error, times = 1) {
      for (let i = 0; i < times; i++) failures.push(error);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        front.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** The ARN IAM names a model by in AccessDeniedException: an ARN as it is, else the foundation model's. */
function modelArn(modelId: string, region: string): string {
  return modelId.startsWith('arn:') ? modelId : `arn:aws:bedrock:${region}::foundation-model/${modelId}`;
}
