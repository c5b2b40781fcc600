import type { TestProject } from 'vitest/node';
import type { JWK } from 'jose';
import type { IntegrationRun } from '../hygiene/run-record.js';

export const ADMIN_PSK = 'test-admin-key-0123456789abcdef';
export const AUDIENCE = 'dpm-api';
export const LLM_API_KEY = 'test-llm-key';
/** Webhook retries after 1, 1, 2, 2 and 3 s (the default schedule, docs/events-and-webhooks.md, is hours long). */
export const WEBHOOK_RETRY_SCHEDULE = [1, 1, 2, 2, 3] as const;
/** Names under this suffix resolve to the cloud metadata address in the test platform (see below). */
export const REBINDING_SUFFIX = '.rebind.test';
/** Names under this suffix resolve to 127.0.0.1 in the test platform: loopback by resolution only. */
export const LOOPBACK_SUFFIX = '.loopback.test';

/** What differs between the platforms of one run: each serves one vitest worker (see below). */
export interface PlatformSlot {
  readonly baseUrl: string;
  /** The same API over TLS (docs/sdk.md), on a free port. */
  readonly httpsBaseUrl: string;
  /** The platform's self-signed certificate (PEM), in its own data dir: what a client trusts. */
  readonly caCertFile: string;
  /** The platform's own data directory (DPM_DATA_DIR): its certificate and local key file. */
  readonly platformDataDir: string;
  /** The platform's own stage: its tables, queues and bucket carry it in their names. */
  readonly stage: string;
  readonly crewRunQueueUrl: string;
  readonly artifactsBucket: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** One platform per worker slot (`VITEST_POOL_ID` − 1): test/integration/provided.ts picks a file's. */
    platforms: PlatformSlot[];
    issuer: string;
    audience: string;
    privateJwk: JWK;
    adminPsk: string;
    /** The run's one DynamoDB Local and one fauxqs (SQS and S3), shared by every platform. */
    dynamodbEndpoint: string;
    sqsEndpoint: string;
    s3Endpoint: string;
    /** The run's directory: the exchange records of every worker and the service log. */
    dataDir: string;
    /** Every platform's structured log lines, in the order they were written. */
    logFile: string;
    llmBaseUrl: string;
    llmModel: string;
    /** Given to the hygiene project when it runs in the same invocation (see below). */
    integrationRun: IntegrationRun | undefined;
  }
}

/** The integration projects whose files run against these platforms (vitest.config.ts). */
const INTEGRATION_PROJECTS = ['integration', 'integration-alone'];

type Provided = Omit<import('vitest').ProvidedContext, 'integrationRun'>;

/** Started once per vitest process, whichever integration project asks first; stopped after the last. */
interface SharedRun {
  readonly ready: Promise<{ provided: Provided; run: IntegrationRun }>;
  users: number;
  stop?: () => Promise<void>;
}
const SHARED = Symbol.for('dpm.test.integration-run');
const holder = globalThis as { [SHARED]?: SharedRun };

/**
 * Starts the local platform for the integration projects: one DynamoDB Local (in memory)
 * and one fauxqs for the run, then one platform per worker slot, each on its own stage
 * (`test`, `test2`, …: its own tables, queues, bucket and ports), so files that run side by
 * side never see each other's items, events or call counts. Both integration projects list
 * this file; the second one to ask gets what the first started.
 */
export default async function setup(project: TestProject) {
  let shared = holder[SHARED];
  if (!shared) {
    const slots = Math.max(1, ...(await Promise.all(INTEGRATION_PROJECTS.map((name) => slotsFor(project, name)))));
    shared = { users: 0 } as SharedRun;
    (shared as { ready: SharedRun['ready'] }).ready = startRun(slots, (stop) => (shared!.stop = stop));
    holder[SHARED] = shared;
  }
  shared.users += 1;
  const { provided, run } = await shared.ready;
  for (const [key, value] of Object.entries(provided)) project.provide(key as keyof Provided, value as never);
  project.vitest.projects.find((p) => p.name === 'hygiene')?.provide('integrationRun', run);
  return async () => {
    if (--shared!.users > 0) return;
    delete holder[SHARED];
    await shared!.stop?.();
  };
}

/**
 * The platforms a project's files need: one per worker it runs them in (its own maxWorkers,
 * else the run's), and no more than the files of this run (`vitest run <one file>` starts one).
 */
async function slotsFor(project: TestProject, name: string): Promise<number> {
  const other = project.vitest.projects.find((p) => p.name === name);
  if (!other) return 0;
  const own = other.config.maxWorkers || project.vitest.config.maxWorkers;
  const workers = typeof own === 'number' && own > 0 ? own : 1;
  // The run's file filters (`vitest run test/integration/events`); none: every file.
  const filters = (project.vitest as { filenamePattern?: string[] }).filenamePattern ?? [];
  const files = await other.globTestFiles(filters).then(
    ({ testFiles }) => testFiles.length,
    () => workers,
  );
  return Math.min(workers, files);
}

async function startRun(
  slots: number,
  onStop: (stop: () => Promise<void>) => void,
): Promise<{ provided: Provided; run: IntegrationRun }> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { createWriteStream, mkdirSync, mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  // The platforms' local secret key files and certificates (and the service log, nothing
  // else: DynamoDB stays in memory) live here.
  const dataDir = mkdtempSync(join(tmpdir(), 'dpm-test-'));
  const logFile = join(dataDir, 'service.log');
  // The service's structured logs go to a file that tests can search (for leaked secrets,
  // request ids), not to the test report: written in order, off the request's path (an
  // append stream, flushed when the run stops). helpers.ts `serviceLog()` reads it after a
  // marker request of its own has been logged.
  process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
  const log = createWriteStream(logFile, { flags: 'a' });
  const restores: (() => void)[] = [];
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write;
    stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      if (text.startsWith('{"level":')) return (log.write(text), true);
      return write.call(stream, chunk, ...rest);
    }) as typeof stream.write;
    restores.push(() => (stream.write = write));
  }
  // No DNS here: a name of REBINDING_SUFFIX resolves to 169.254.169.254 for the platform (and
  // one of LOOPBACK_SUFFIX to 127.0.0.1), so the webhook worker's connect-time checks (no DNS
  // rebinding) meet a real resolution.
  const dns = (await import('node:dns')).default;
  const { syncBuiltinESMExports } = await import('node:module');
  const realLookup = dns.lookup;
  dns.lookup = ((hostname: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    const address = hostname.endsWith(REBINDING_SUFFIX)
      ? '169.254.169.254'
      : hostname.endsWith(LOOPBACK_SUFFIX)
        ? '127.0.0.1'
        : undefined;
    if (!address) return (realLookup as (...args: unknown[]) => void)(hostname, options, callback);
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    process.nextTick(() => (all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4)));
  }) as typeof dns.lookup;
  syncBuiltinESMExports();
  // Imported after the log level is set: the logger reads it when it is created.
  const { startPlatform } = await import('../../infra/local/platform.js');
  const { startDynamoDb, startSqs } = await import('../../infra/local/emulators.js');
  const { loadConfig } = await import('../../shared/config.js');
  const { startTestIssuer } = await import('../support/identity-provider.js');
  const { startFakeModel } = await import('../support/openai-server.js');
  const model = await startFakeModel();
  const idp = await startTestIssuer();
  const [dynamodb, sqs] = await Promise.all([startDynamoDb({ host: '127.0.0.1' }), startSqs({ host: '127.0.0.1' })]);
  const platforms = await Promise.all(
    Array.from({ length: slots }, (_, i) => {
      const dir = join(dataDir, `platform-${i + 1}`);
      mkdirSync(dir);
      const config = loadConfig({
        DPM_DATA_DIR: dir,
        STAGE: i === 0 ? 'test' : `test${i + 1}`,
        PORT: '0',
        HOST: '127.0.0.1',
        AUTH_ISSUER: idp.issuer,
        AUTH_AUDIENCE: AUDIENCE,
        DPM_ADMIN_PSK: ADMIN_PSK,
        // Crew http steps may call test servers on loopback; llm steps go to the fake model.
        CREW_HTTP_ALLOWED_HOSTS: '127.0.0.1,localhost',
        // Webhook receivers of the tests listen on loopback over plain http.
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1,localhost',
        WEBHOOK_RETRY_SCHEDULE: WEBHOOK_RETRY_SCHEDULE.join(','),
        // A browser portal on another origin (test/integration/api/cors.test.ts).
        CORS_ORIGINS: 'https://portal.example.com',
        LLM_BASE_URL: model.baseUrl,
        LLM_MODEL: 'test-model',
        LLM_API_KEY: LLM_API_KEY,
      });
      return startPlatform(
        {
          ...config,
          endpoints: { ...config.endpoints, dynamodb: dynamodb.endpoint, sqs: sqs.endpoint, s3: sqs.endpoint },
        },
        { inMemory: true, retryDelaySeconds: 1 },
      );
    }),
  );
  const provided: Provided = {
    platforms: platforms.map((platform) => ({
      baseUrl: platform.baseUrl,
      httpsBaseUrl: platform.httpsBaseUrl,
      caCertFile: platform.tls.certFile,
      platformDataDir: platform.config.dataDir,
      stage: platform.config.stage,
      crewRunQueueUrl: platform.config.crewRunQueueUrl!,
      artifactsBucket: platform.config.artifactsBucket!,
    })),
    issuer: idp.issuer,
    audience: AUDIENCE,
    privateJwk: idp.privateJwk,
    adminPsk: ADMIN_PSK,
    dynamodbEndpoint: dynamodb.endpoint,
    sqsEndpoint: sqs.endpoint,
    s3Endpoint: platforms[0]!.config.endpoints.s3!,
    dataDir,
    logFile,
    llmBaseUrl: model.baseUrl,
    llmModel: 'test-model',
  };
  // The secret hygiene check (test/hygiene) reads this run's records after the integration
  // files: in the same invocation it gets them directly (this run, even if another run has
  // since written the record file); on its own it reads the record file.
  const { randomUUID } = await import('node:crypto');
  const { finishRunRecord, writeRunRecord } = await import('../hygiene/run-record.js');
  const run: IntegrationRun = {
    runId: randomUUID(),
    startedAt: new Date().toISOString(),
    dataDir,
    logFile,
    secrets: [
      { kind: 'admin-psk', value: ADMIN_PSK, source: 'DPM_ADMIN_PSK of the test platforms' },
      { kind: 'llm-api-key', value: LLM_API_KEY, source: 'LLM_API_KEY of the test platforms' },
    ],
  };
  writeRunRecord(run);
  onStop(async () => {
    await Promise.all(platforms.map((platform) => platform.stop()));
    await Promise.all([dynamodb.stop(), sqs.stop()]);
    await idp.stop();
    await model.stop();
    dns.lookup = realLookup;
    syncBuiltinESMExports();
    for (const restore of restores) restore();
    await new Promise<void>((resolve) => log.end(resolve));
    finishRunRecord(run.runId);
  });
  return { provided, run };
}
