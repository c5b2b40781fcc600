import type { TestProject } from 'vitest/node';
import type { JWK } from 'jose';
import type { IntegrationRun } from '../hygiene/run-record.js';

export const ADMIN_PSK = 'test-admin-key-0123456789abcdef';
export const AUDIENCE = 'dpm-api';
export const LLM_API_KEY = 'test-llm-key';
/** Webhook retries after 1, 1, 2, 2 and 3 s (API.md §14's schedule is hours long). */
export const WEBHOOK_RETRY_SCHEDULE = [1, 1, 2, 2, 3] as const;
/** Names under this suffix resolve to the cloud metadata address in the test platform (see below). */
export const REBINDING_SUFFIX = '.rebind.test';
/** Names under this suffix resolve to 127.0.0.1 in the test platform: loopback by resolution only. */
export const LOOPBACK_SUFFIX = '.loopback.test';

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
    /** The same API over TLS (API.md §17), on a free port. */
    httpsBaseUrl: string;
    /** The platform's self-signed certificate (PEM), in its temporary data dir: what a client trusts. */
    caCertFile: string;
    issuer: string;
    audience: string;
    privateJwk: JWK;
    adminPsk: string;
    dynamodbEndpoint: string;
    sqsEndpoint: string;
    stage: string;
    crewRunQueueUrl: string;
    s3Endpoint: string;
    artifactsBucket: string;
    dataDir: string;
    logFile: string;
    llmBaseUrl: string;
    llmModel: string;
    /** Given to the hygiene project when it runs in the same invocation (see below). */
    integrationRun: IntegrationRun | undefined;
  }
}

/** Starts the local platform once for the integration suite: DynamoDB Local (in memory) and fauxqs. */
export default async function setup(project: TestProject) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { appendFileSync, mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  // The local secret key file (and the service log, nothing else: DynamoDB stays in
  // memory) lives here.
  const dataDir = mkdtempSync(join(tmpdir(), 'dpm-test-'));
  const logFile = join(dataDir, 'service.log');
  // The service's structured logs go to a file that tests can search (for leaked
  // secrets, request ids), not to the test report.
  process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      if (text.startsWith('{"level":')) {
        appendFileSync(logFile, text);
        return true;
      }
      return write(chunk, ...rest);
    }) as typeof stream.write;
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
  const { loadConfig } = await import('../../shared/config.js');
  const { startTestIssuer } = await import('../support/identity-provider.js');
  const { startFakeModel } = await import('../support/openai-server.js');
  const model = await startFakeModel();
  const idp = await startTestIssuer();
  const config = loadConfig({
    DPM_DATA_DIR: dataDir,
    STAGE: 'test',
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
  const platform = await startPlatform(config, { inMemory: true, retryDelaySeconds: 1 });
  project.provide('baseUrl', platform.baseUrl);
  project.provide('httpsBaseUrl', platform.httpsBaseUrl);
  project.provide('caCertFile', platform.tls.certFile);
  project.provide('issuer', idp.issuer);
  project.provide('audience', AUDIENCE);
  project.provide('privateJwk', idp.privateJwk);
  project.provide('adminPsk', ADMIN_PSK);
  project.provide('dynamodbEndpoint', platform.config.endpoints.dynamodb!);
  project.provide('sqsEndpoint', platform.config.endpoints.sqs!);
  project.provide('stage', config.stage);
  project.provide('crewRunQueueUrl', platform.config.crewRunQueueUrl!);
  project.provide('s3Endpoint', platform.config.endpoints.s3!);
  project.provide('artifactsBucket', platform.config.artifactsBucket!);
  project.provide('dataDir', dataDir);
  project.provide('logFile', logFile);
  project.provide('llmBaseUrl', model.baseUrl);
  project.provide('llmModel', 'test-model');
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
      { kind: 'admin-psk', value: ADMIN_PSK, source: 'DPM_ADMIN_PSK of the test platform' },
      { kind: 'llm-api-key', value: LLM_API_KEY, source: 'LLM_API_KEY of the test platform' },
    ],
  };
  writeRunRecord(run);
  project.vitest.projects.find((p) => p.name === 'hygiene')?.provide('integrationRun', run);
  return async () => {
    await platform.stop();
    await idp.stop();
    await model.stop();
    dns.lookup = realLookup;
    syncBuiltinESMExports();
    finishRunRecord(run.runId);
  };
}
