import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import type { GroupName, LambdaDefinition } from '../../infra/groups.js';
import type { TableKey } from '../../infra/tables.js';

/**
 * The cold start of each HTTP group's main request, with its real AWS calls: a fresh Node
 * process imports the group's Lambda bundle and answers one API Gateway (HTTP API, payload 2.0)
 * event of that request, against the local platform's emulators, with the environment the
 * Lambda has on AWS. Beside it, in a fresh process of its own, a bare handler (Hono and the same
 * AWS SDK v3 clients and commands, bundled the same way) making the same calls. The AWS SDK
 * clients the bundles leave to the Lambda runtime (RUNTIME_SDK_CLIENTS) resolve from this
 * repository's node_modules (the bundles are written inside it) and load inside the measured
 * time, where the handler first imports them.
 */

/** What the cold starts reach: the platform (for seeding), the emulators and the issuer. */
export interface ColdStartTargets {
  /** The local platform's base URL: requests that seed what the cold starts read or change. */
  readonly baseUrl: string;
  /** The platform's stage: table and queue names. */
  readonly stage: string;
  readonly region: string;
  /** The test issuer (a loopback server): AUTH_ISSUER of every child, and its tokens. */
  readonly issuer: string;
  readonly audience: string;
  token(name: string, roles?: string[]): Promise<string>;
  tableName(table: TableKey): string;
  readonly queueUrls: {
    readonly crewRuns: string;
    readonly webhookDeliveries: string;
    readonly runWebhookDeliveries: string;
  };
  readonly artifactsBucket: string;
  /** Where the child's clients send: the emulators, each behind a recording proxy (aws-call-recorder.ts). */
  readonly endpoints: { readonly dynamodb: string; readonly sqs: string; readonly s3: string; readonly kms: string };
  /** The KMS key ARN of KMS_KEY_ID (the KMS stand-in takes any). */
  readonly kmsKeyArn: string;
  /** A loopback server of the bench that answers 204: the URL of the webhook endpoints created. */
  readonly receiverUrl: string;
  /** Makes a queue of the bench's own on the SQS emulator (for a bare handler's sends); its URL. */
  queue(name: string): Promise<string>;
}

/** One request to a handler: a path, a Bearer token, a JSON body. */
export interface HandlerRequest {
  readonly method: string;
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  readonly token?: string;
  readonly body?: unknown;
}

/** What one fresh process measured: importing the bundle (module init), then answering the request. */
export interface ChildAnswer {
  /** From before the import to the answer: the cold start. */
  readonly ms: number;
  readonly initMs: number;
  readonly status: number;
  readonly body: string;
}

/** The API Gateway HTTP API (payload 2.0) event of `req`, as API Gateway hands it to the Lambda. */
export function httpApiEvent(req: HandlerRequest, requestId: string) {
  const rawQueryString = new URLSearchParams(req.query ?? {}).toString();
  const body = req.body === undefined ? undefined : JSON.stringify(req.body);
  const headers: Record<string, string> = {
    host: 'bench.execute-api.us-east-1.amazonaws.com',
    'user-agent': 'bench',
    accept: 'application/json',
    'x-forwarded-for': '127.0.0.1',
    'x-forwarded-proto': 'https',
    ...(req.token ? { authorization: `Bearer ${req.token}` } : {}),
    ...(body !== undefined
      ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
      : {}),
  };
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: req.path,
    rawQueryString,
    ...(req.query ? { queryStringParameters: { ...req.query } } : {}),
    headers,
    requestContext: {
      accountId: '123456789012',
      apiId: 'bench',
      domainName: 'bench.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'bench',
      http: { method: req.method, path: req.path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: '01/Jan/2025:00:00:00 +0000',
      timeEpoch: 1735689600000,
    },
    ...(body !== undefined ? { body, isBase64Encoded: false } : { isBase64Encoded: false }),
  };
}

const lambdaContext = (functionName: string, requestId: string) => `{
  callbackWaitsForEmptyEventLoop: true,
  functionName: ${JSON.stringify(functionName)},
  functionVersion: '$LATEST',
  invokedFunctionArn: ${JSON.stringify(`arn:aws:lambda:us-east-1:123456789012:function:${functionName}`)},
  memoryLimitInMB: '1024',
  awsRequestId: ${JSON.stringify(requestId)},
  logGroupName: ${JSON.stringify(`/aws/lambda/${functionName}`)},
  logStreamName: 'bench',
  getRemainingTimeInMillis: () => 30000,
}`;

/** Preloaded into every child: connections to loopback only (loopback-only.mjs). */
export const LOOPBACK_ONLY = new URL('./loopback-only.mjs', import.meta.url).href;
const REFUSED_MARK = '@@refused-connection';
const ANSWER_MARK = '@@cold-start ';
/** A child that has not answered by then is stuck (the handler's own timeouts are far shorter). */
const CHILD_TIMEOUT_MS = 30_000;
/**
 * A diagnosis, not a measurement: with BENCH_CPU_PROF=<dir>, every measured child writes a V8 CPU
 * profile of its import and request under <dir>/<bundle's name>/ (the bundles carry source
 * maps beside them). Profiling slows the children: the figures of such a run say nothing.
 */
const profileDir = (bundle: string): string | undefined =>
  process.env.BENCH_CPU_PROF ? join(process.env.BENCH_CPU_PROF, basename(bundle, '.mjs')) : undefined;
const cpuProfileArgs = (dir: string | undefined): string[] =>
  dir ? ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', dir] : [];

/** The request id of a process that seeds what a cold start reads (through a group's bundle): not measured. */
export const SEED_REQUEST_ID = 'bench-seed';

/**
 * With BENCH_CPU_PROF, the child also writes when its import ended and its answer came (µs
 * on the monotonic clock V8's profile samples are stamped with) beside its profile, so that a
 * reading of the profile can tell the import from the request.
 */
const profileMarks = (dir: string | undefined): string[] =>
  dir
    ? [
        'const answeredNs = process.hrtime.bigint();',
        "const fs = await import('node:fs');",
        `fs.mkdirSync(${JSON.stringify(dir)}, { recursive: true });`,
        `fs.writeFileSync(${JSON.stringify(dir)} + '/marks-' + process.pid + '.json', JSON.stringify({ startUs: Number(startedNs / 1000n), importedUs: Number(importedNs / 1000n), answeredUs: Number(answeredNs / 1000n) }));`,
      ]
    : [];

/**
 * Imports `bundle` in a fresh Node process with `env` and nothing else, and hands it `req`:
 * the time from before the import to the handler's answer. The figure goes out on stderr (the
 * handler logs its request on stdout); a connection anywhere but loopback fails the child.
 */
export function runChild(
  bundle: string,
  env: Readonly<Record<string, string>>,
  req: HandlerRequest,
  requestId = 'bench-cold-start',
): Promise<ChildAnswer> {
  const functionName = env.AWS_LAMBDA_FUNCTION_NAME ?? 'bench';
  // the measured processes only: not one that seeds what a cold start reads
  const profiled = requestId === SEED_REQUEST_ID ? undefined : profileDir(bundle);
  const script = [
    'const t = performance.now();',
    'const startedNs = process.hrtime.bigint();',
    `const { handler } = await import(${JSON.stringify(bundle)});`,
    'const imported = performance.now();',
    'const importedNs = process.hrtime.bigint();',
    `const res = await handler(${JSON.stringify(httpApiEvent(req, requestId))}, ${lambdaContext(functionName, requestId)});`,
    'const ms = performance.now() - t;',
    ...profileMarks(profiled),
    `process.stderr.write('\\n${ANSWER_MARK}' + JSON.stringify({ ms, initMs: imported - t, status: res.statusCode, body: String(res.body ?? '').slice(0, 4000) }) + '\\n');`,
    // Keep-alive sockets and timers must not hold the process: the answer is all it had to give.
    'process.exit(0);',
  ].join('\n');
  return new Promise((resolve, reject) => {
    const args = [...cpuProfileArgs(profiled), '--import', LOOPBACK_ONLY, '--input-type=module', '-e', script];
    const child = spawn(process.execPath, args, {
      env: { ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout = (stdout + c.toString()).slice(-4000);
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const lines = stderr.split('\n');
      const refused = lines.filter((l) => l.startsWith(REFUSED_MARK));
      const answer = lines.find((l) => l.startsWith(ANSWER_MARK));
      if (refused.length > 0) {
        reject(new Error(`${bundle} tried to connect outside loopback: ${refused.join('; ')}`));
      } else if (code !== 0 || !answer) {
        reject(new Error(`${bundle} failed (exit ${code}): ${stderr.slice(-2000)}\nstdout: ${stdout.slice(-1000)}`));
      } else {
        resolve(JSON.parse(answer.slice(ANSWER_MARK.length)) as ChildAnswer);
      }
    });
  });
}

/** The variable through which a sending Lambda learns each queue's URL (infra/aws/lambdas.ts). */
const QUEUE_URL_VARIABLE = {
  crewRuns: 'CREW_RUN_QUEUE_URL',
  webhookDeliveries: 'WEBHOOK_QUEUE_URL',
  runWebhookDeliveries: 'RUN_WEBHOOK_QUEUE_URL',
} as const;

/**
 * The environment of the group's Lambda, as infra/aws/lambdas.ts (`lambdaFor`) and
 * service-function.ts build it from its definition, with what the Lambda runtime adds (region,
 * the role's credentials, the function's name and memory); then the emulators' endpoints, which
 * on AWS are absent: DYNAMODB_ENDPOINT, SQS_ENDPOINT and S3_ENDPOINT (shared/config.ts), and
 * the SDK's own AWS_ENDPOINT_URL_KMS for KMS, which the service has no variable for. Left out:
 * the secrets' ARNs (DPM_ADMIN_PSK_ARN, the model's and the identity provider's), as no main
 * request reads them (the bootstrap key is read only for an unknown pre-shared key, and every
 * request here carries a Bearer token), and a Secrets Manager call would have nowhere local to go.
 * test/infra/bench-environment.test.ts holds the names to the synthesized stack's.
 */
export function lambdaEnvironment(group: LambdaDefinition, t: ColdStartTargets): Record<string, string> {
  const functionName = `dpm-${t.stage}-${group.name}`;
  const env: Record<string, string> = {
    // the Lambda runtime's
    AWS_REGION: t.region,
    AWS_DEFAULT_REGION: t.region,
    AWS_ACCESS_KEY_ID: 'ASIABENCHCOLDSTART00',
    AWS_SECRET_ACCESS_KEY: 'bench-cold-start-secret-access-key-00000',
    AWS_SESSION_TOKEN: 'bench-cold-start-session-token',
    AWS_LAMBDA_FUNCTION_NAME: functionName,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1024',
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    AWS_LAMBDA_LOG_FORMAT: 'JSON',
    TZ: ':UTC',
    // ServiceFunction's
    STAGE: t.stage,
    POWERTOOLS_SERVICE_NAME: `dpm-${group.name}`,
    // every Lambda's (sharedEnvironment): the bench's stage allows webhooks to loopback over http
    AUTH_ISSUER: t.issuer,
    AUTH_AUDIENCE: t.audience,
    EVENTS_TTL_DAYS: '30',
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    // what the definition declares
    ...Object.fromEntries((group.sendsTo ?? []).map((queue) => [QUEUE_URL_VARIABLE[queue], t.queueUrls[queue]])),
    ...(group.buckets?.artifacts ? { ARTIFACTS_BUCKET: t.artifactsBucket } : {}),
    ...(group.usesKms ? { KMS_KEY_ID: t.kmsKeyArn } : {}),
    ...(group.managesSchedules
      ? {
          SCHEDULE_GROUP_NAME: `dpm-${t.stage}`,
          SCHEDULER_ROLE_ARN: `arn:aws:iam::123456789012:role/dpm-${t.stage}-scheduler`,
          CREW_RUN_QUEUE_ARN: `arn:aws:sqs:${t.region}:123456789012:dpm-${t.stage}-crew-runs`,
        }
      : {}),
    // the emulators (absent on AWS)
    DYNAMODB_ENDPOINT: t.endpoints.dynamodb,
    SQS_ENDPOINT: t.endpoints.sqs,
    S3_ENDPOINT: t.endpoints.s3,
    AWS_ENDPOINT_URL_KMS: t.endpoints.kms,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  return env;
}

/**
 * The bare handler of an authenticated request, signed in the bare way: `bareSource`'s handler
 * behind the fewest steps that check a Bearer token as docs/identity-and-keys.md asks, making the same two
 * calls the service's sign-in makes on a cold start (the issuer's discovery document, then
 * its JWKS, over node:http) and checking the RS256 signature, issuer, audience and expiry
 * with node:crypto. Without a token (the platform's ping) it is the bare handler itself.
 */
export const signedInBare = (bareSource: string) => `
import { get } from 'node:http';
import { createPublicKey, verify } from 'node:crypto';
import { handler as answer } from ${JSON.stringify(bareSource)};
const getJson = (url) => new Promise((resolve, reject) => {
  get(url, (res) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk) => (text += chunk));
    res.on('end', () => { try { resolve(JSON.parse(text)); } catch (err) { reject(err); } });
  }).on('error', reject);
});
const issuer = process.env.AUTH_ISSUER;
const audience = process.env.AUTH_AUDIENCE;
let keys;
async function signedIn(authorization) {
  const token = /^Bearer (\\S+)$/i.exec(authorization ?? '')?.[1];
  if (!token) return false;
  const [h, p, sig] = token.split('.');
  const header = JSON.parse(Buffer.from(h, 'base64url').toString());
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  keys ??= getJson(issuer + '/.well-known/openid-configuration').then((d) => getJson(d.jwks_uri));
  const jwk = (await keys).keys.find((k) => k.kid === header.kid);
  return Boolean(jwk) && header.alg === 'RS256' &&
    verify('RSA-SHA256', Buffer.from(h + '.' + p), createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(sig, 'base64url')) &&
    claims.iss === issuer && [claims.aud].flat().includes(audience) && claims.exp * 1000 > Date.now();
}
export const handler = async (event, context) =>
  !event.headers?.authorization || (await signedIn(event.headers.authorization))
    ? answer(event, context)
    : { statusCode: 401, headers: { 'content-type': 'application/json' }, body: '{"detail":"Invalid token"}' };
`;

/** A loopback receiver answering 204: the webhook URL of the endpoints the cold starts create. */
export async function startReceiver(): Promise<{ url: string; stop(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A request to the platform that seeds what a cold start needs; anything but `expect` throws. */
export async function seed<T>(t: ColdStartTargets, req: HandlerRequest, expect: number): Promise<T> {
  const query = req.query ? `?${new URLSearchParams(req.query).toString()}` : '';
  const res = await fetch(`${t.baseUrl}${req.path}${query}`, {
    method: req.method,
    headers: {
      ...(req.token ? { authorization: `Bearer ${req.token}` } : {}),
      ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`seeding ${req.method} ${req.path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/**
 * A group's main request and its bare twin. `prepare` runs once (tokens, what every run reads);
 * `request` before each fresh process, the group's and the bare handler's alike (what one run
 * changes, such as the submitted version E1 approves, is seeded anew for each, outside the
 * measured time). `bare` is the bare handler's module: Hono and the same AWS SDK v3 clients and
 * commands, table and queue names as constants, endpoints from the environment like the
 * service's. `settle` waits, after the group's run, for what it started elsewhere (a crew run
 * in the platform's worker), so that it does not weigh on the next process; `cleanup` runs
 * once after all of them.
 */
export interface ColdStartCase<S = unknown> {
  readonly group: GroupName;
  /** The request, as the row names it. */
  readonly what: string;
  readonly status: number;
  prepare(t: ColdStartTargets, viaLambda: (req: HandlerRequest) => Promise<ChildAnswer>): Promise<S>;
  request(t: ColdStartTargets, state: S, run: number): Promise<HandlerRequest>;
  bare(t: ColdStartTargets, state: S): string;
  settle?(t: ColdStartTargets, state: S, answer: ChildAnswer): Promise<void>;
  /**
   * Once the runs are over (or one failed), with what every process answered: takes out what
   * they left that would act on the rest of the bench (webhooks that would be sent the later
   * phases' events, with secrets the platform cannot open).
   */
  cleanup?(t: ColdStartTargets, state: S, answers: readonly ChildAnswer[]): Promise<void>;
}
