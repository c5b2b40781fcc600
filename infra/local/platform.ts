import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createServer, type Server } from 'node:http';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { CORS } from '../../shared/cors.js';
import { serviceApps } from '../../functions/apps.js';
import { createRuntime, type Runtime } from '../../functions/composition.js';
import { dispatcherFor } from '../../functions/events/dispatcher.js';
import { publisherFor } from '../../functions/events/publisher.js';
import { crewService } from '../../functions/crews/compose.js';
import { crewRunner } from '../../functions/crews/compose-worker.js';
import { createDeadLetterHandler } from '../../functions/crews/dead-letter.js';
import { createWorkerHandler } from '../../functions/crews/worker.js';
import { webhookDeliverer } from '../../functions/webhooks/compose-worker.js';
import { createWebhookWorkerHandler } from '../../functions/webhooks/worker.js';
import { ensureConfiguredAdminKey, ensureGeneratedAdminKey } from '../../shared/auth/bootstrap.js';
import { emulatorOptions } from '../../shared/aws/client-options.js';
import { s3Access } from '../../shared/aws/s3.js';
import { sqsAccess } from '../../shared/aws/sqs.js';
import type { Config } from '../../shared/config.js';
import type { QueueKey, TableKey } from '../tables.js';
import { groupForPath, type GroupName, STREAM_CONSUMERS } from '../groups.js';
import { lockDataDir } from './data-lock.js';
import { type RunningEmulator, startDynamoDb, startSqs } from './emulators.js';
import { isLoopback, urlHost } from './hosts.js';
import { ensureBuckets, ensureQueues, ensureTables, type QueueUrls } from './provision.js';
import { type LocalIdentityProvider, startLocalIdentityProvider } from './identity-provider.js';
import { startQueuePoller } from './queue-poller.js';
import { startStreamPoller } from './stream-poller.js';
import { StartupError } from './startup-error.js';

export interface RunningPlatform {
  readonly baseUrl: string;
  /** The configuration in effect, with the emulators' endpoints filled in. */
  readonly config: Config;
  readonly runtime: Runtime;
  /** The bootstrap admin key when this start generated it (shown once), else undefined. */
  readonly generatedAdminKey: string | undefined;
  /** The local identity provider, when no AUTH_ISSUER is configured. */
  readonly identity: LocalIdentityProvider | undefined;
  /** Unfinished crew runs queued again at start-up. */
  readonly requeuedRuns: number;
  /** Open webhook deliveries queued again at start-up. */
  readonly requeuedDeliveries: number;
  /** Stops reading the tables' streams (the benchmark compares writes with and without it). */
  stopEventPipeline(): Promise<void>;
  stop(): Promise<void>;
}

export interface PlatformOptions {
  /** Keep DynamoDB Local in memory instead of under DPM_DATA_DIR (tests). */
  readonly inMemory?: boolean;
  /** Seconds before a failed crew-run message is delivered again (default 2). */
  readonly retryDelaySeconds?: number;
}

/**
 * The whole service in one process: emulators (unless endpoints are configured), every
 * table and queue, the bootstrap admin key, and every group's app on one port, routed by
 * path prefix exactly as API Gateway routes to the Lambdas.
 */
export async function startPlatform(config: Config, options: PlatformOptions = {}): Promise<RunningPlatform> {
  // A running instance owns its data directory, checked before anything starts; in-memory
  // platforms (tests) keep nothing there that two of them could not share.
  const lock = options.inMemory ? undefined : lockDataDir(config.dataDir);
  const emulators: RunningEmulator[] = [];
  const stopEmulators = async () => {
    for (const e of emulators.reverse()) await e.stop().catch(() => undefined);
    lock?.release();
  };
  try {
    const dynamoDbOptions = { host: config.host, dataDir: options.inMemory ? undefined : config.dataDir };
    const dynamodb = config.endpoints.dynamodb ?? (await startDynamoDb(dynamoDbOptions).then(track)).endpoint;
    const sqs = config.endpoints.sqs ?? (await startSqs({ host: config.host }).then(track)).endpoint;
    // fauxqs serves S3 on the same endpoint as SQS.
    const s3 = config.endpoints.s3 ?? (config.endpoints.sqs ? undefined : sqs);
    const withEndpoints: Config = { ...config, endpoints: { ...config.endpoints, dynamodb, sqs, s3 } };

    const admin = new DynamoDBClient(emulatorOptions({ region: config.region, endpoint: dynamodb }));
    await ensureTables(admin, config.stage);
    admin.destroy();
    const { client: sqsClient } = await sqsAccess(withEndpoints)();
    const queues = await ensureQueues(sqsClient, config.stage);
    const buckets = await ensureBuckets((await s3Access(withEndpoints)()).client, config.stage);
    let effective: Config = {
      ...withEndpoints,
      crewRunQueueUrl: config.crewRunQueueUrl ?? queues.crewRuns.url,
      webhookQueueUrl: config.webhookQueueUrl ?? queues.webhookDeliveries.url,
      artifactsBucket: config.artifactsBucket ?? buckets.artifacts,
    };

    // The port first (PORT may be 0): the local identity provider's issuer is on it.
    const server = await bind(effective);
    const { port } = server.address() as AddressInfo;
    const baseUrl = `http://${urlHost(effective.host)}:${port}`;
    // Closed with the emulators, also when what follows fails.
    emulators.push({ endpoint: baseUrl, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    const identity = effective.auth.issuer
      ? undefined
      : await startLocalIdentityProvider({
          baseUrl,
          otherOrigins: isLoopback(effective.host) ? [`http://localhost:${port}`] : [],
          users: effective.localUsers,
          dataDir: effective.dataDir,
          docsClientId: effective.auth.docsClientId,
        });
    if (identity) {
      effective = {
        ...effective,
        auth: {
          issuer: identity.issuer,
          audience: identity.audience,
          jwksUrl: undefined,
          docsClientId: effective.auth.docsClientId,
        },
      };
    }

    const runtime = createRuntime(effective);
    let generatedAdminKey: string | undefined;
    if (effective.adminPsk) await ensureConfiguredAdminKey(runtime.keys, effective.adminPsk);
    else generatedAdminKey = await ensureGeneratedAdminKey(runtime.keys);

    const workers = startWorkers(runtime, sqsClient, queues, options.retryDelaySeconds ?? 2);
    const events = startEventPipeline(runtime, options.inMemory ? undefined : effective.dataDir);
    // The emulated queue forgets its messages on restart; the runs themselves are kept.
    const requeued = await crewService(runtime).requeueOpenRuns();
    const requeuedDeliveries = await webhookDeliverer(runtime).requeueOpen();
    serveApps(server, runtime, identity);
    return {
      baseUrl,
      config: effective,
      runtime,
      generatedAdminKey,
      identity,
      requeuedRuns: requeued,
      requeuedDeliveries,
      stopEventPipeline: () => events.stop(),
      stop: async () => {
        server.closeAllConnections?.();
        await workers.stop();
        await events.stop();
        await stopEmulators();
      },
    };
  } catch (err) {
    await stopEmulators();
    throw err;
  }

  function track(e: RunningEmulator): RunningEmulator {
    emulators.push(e);
    return e;
  }
}

/** Crew runs one worker process carries at once (a run in a `wait` or an `http` call holds one). */
const CREW_WORKER_CONCURRENCY = 64;

/** The crew worker, its dead-letter handler and the webhook worker, fed by polling the queues as Lambda would. */
function startWorkers(
  runtime: Runtime,
  sqs: SQSClient,
  queues: Record<QueueKey, QueueUrls>,
  retryDelaySeconds: number,
) {
  const runner = crewRunner(runtime);
  const queue = queues.crewRuns;
  const arn = (url: string) => `arn:aws:sqs:${runtime.config.region}:000000000000:${url.split('/').pop()}`;
  const pollers = [
    startQueuePoller({
      sqs,
      queueUrl: queue.url,
      queueArn: arn(queue.url),
      handler: createWorkerHandler(runner),
      concurrency: CREW_WORKER_CONCURRENCY,
      retryDelaySeconds,
    }),
    startQueuePoller({
      sqs,
      queueUrl: queue.deadLetterUrl,
      queueArn: arn(queue.deadLetterUrl),
      handler: createDeadLetterHandler(runner),
      concurrency: 4,
      retryDelaySeconds,
    }),
    startQueuePoller({
      sqs,
      queueUrl: queues.webhookDeliveries.url,
      queueArn: arn(queues.webhookDeliveries.url),
      handler: createWebhookWorkerHandler(webhookDeliverer(runtime)),
      concurrency: 16,
      retryDelaySeconds,
    }),
  ];
  return { stop: async () => void (await Promise.all(pollers.map((p) => p.stop()))) };
}

/**
 * The domain events pipeline as on AWS (API.md §13), fed by polling the tables' streams as
 * Lambda's event sources would: the publisher over every domain table, the dispatcher over
 * the events table. Checkpoints live beside the database, so a restart goes on where the
 * last run stopped (in memory for an in-memory database, which forgets its streams too).
 */
function startEventPipeline(runtime: Runtime, dataDir: string | undefined) {
  const streamsOf = (name: (typeof STREAM_CONSUMERS)[number]['name']): readonly TableKey[] =>
    STREAM_CONSUMERS.find((c) => c.name === name)!.streams;
  const { config } = runtime;
  const endpoint = config.endpoints.dynamodb!;
  const pollers = [
    startStreamPoller({
      endpoint,
      region: config.region,
      tables: streamsOf('events-publisher').map((t) => runtime.tableName(t)),
      handler: publisherFor(runtime),
      ...(dataDir ? { checkpointFile: join(dataDir, 'streams-events-publisher.json') } : {}),
    }),
    startStreamPoller({
      endpoint,
      region: config.region,
      tables: streamsOf('events-dispatcher').map((t) => runtime.tableName(t)),
      handler: dispatcherFor(runtime),
      ...(dataDir ? { checkpointFile: join(dataDir, 'streams-events-dispatcher.json') } : {}),
    }),
  ];
  // A write of this process is on a stream at once: read it now, not after the idle back-off.
  const wakers = wakersOf(runtime.db);
  const wake = (tables: ReadonlySet<string>) => {
    for (const p of pollers) p.wake(tables);
  };
  wakers.add(wake);
  return {
    stop: async () => {
      wakers.delete(wake);
      await Promise.all(pollers.map((p) => p.stop()));
    },
  };
}

type Waker = (tables: ReadonlySet<string>) => void;

/**
 * What to wake after a write through `db`, with the tables written. Document clients are
 * shared per endpoint, and platforms of one process (tests) share them: one middleware per
 * client, any number of platforms listening.
 */
const wakerSets = new WeakMap<DynamoDBDocumentClient, Set<Waker>>();
function wakersOf(db: DynamoDBDocumentClient): Set<Waker> {
  let set = wakerSets.get(db);
  if (!set) {
    const wakers = new Set<Waker>();
    // Only the written tables' shards, and at most one wake every WAKE_EVERY_MS: a bulk of
    // writes must not make idle shards read again after each one (DynamoDB Local's
    // GetRecords is slow, tens of ms under load, and saturates it).
    let last = 0;
    let pending: NodeJS.Timeout | undefined;
    let written = new Set<string>();
    const wakeAll = () => {
      last = Date.now();
      pending = undefined;
      const tables = written;
      written = new Set();
      for (const wake of wakers) wake(tables);
    };
    db.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (!READS.test(context.commandName ?? '')) {
          for (const table of tablesWritten(args.input)) written.add(table);
          if (!pending && written.size > 0) {
            const wait = last + WAKE_EVERY_MS - Date.now();
            if (wait <= 0) wakeAll();
            else pending = setTimeout(wakeAll, wait).unref();
          }
        }
        return out;
      },
      { step: 'initialize', name: 'localStreamWake' },
    );
    wakerSets.set(db, wakers);
    set = wakers;
  }
  return set;
}

/** The tables a write command names (single-item writes, transactions and batch writes). */
function tablesWritten(input: unknown): string[] {
  const i = input as {
    TableName?: unknown;
    TransactItems?: readonly Record<string, { TableName?: unknown } | undefined>[];
    RequestItems?: Record<string, unknown>;
  };
  const names: unknown[] = [i.TableName];
  for (const item of i.TransactItems ?? []) for (const op of Object.values(item)) names.push(op?.TableName);
  if (i.RequestItems) names.push(...Object.keys(i.RequestItems));
  return names.filter((n): n is string => typeof n === 'string');
}

/** Wakes of the stream pollers after this process's writes are this far apart at least. */
const WAKE_EVERY_MS = 10;

/** Commands that write nothing. */
const READS = /^(Get|BatchGet|Query|Scan|Describe|List|TransactGet)/;

/**
 * Listens on HOST:PORT at once; requests are answered 503 until the apps are served (the
 * port comes first because the local identity provider's issuer URL names it).
 */
function bind(config: Config): Promise<Server> {
  const server = createServer((_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify({ error: 'Service Unavailable: starting', code: 503 }));
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new StartupError(
              `port ${config.port} on ${config.host} is already in use: stop the other process or set PORT`,
            )
          : new StartupError(`cannot listen on ${config.host}:${config.port}: ${err.message}`),
      );
    });
    server.listen(config.port, config.host, () => resolve(server));
  });
}

/** Every group's app on the bound server, routed by path prefix; `/oidc` to the local identity provider. */
function serveApps(server: Server, runtime: Runtime, identity: LocalIdentityProvider | undefined): void {
  const apps = serviceApps(runtime);
  // As API Gateway: preflights answered and CORS headers added here, for CORS_ORIGINS only.
  const root = new Hono<{ Bindings: HttpBindings }>();
  const origins = runtime.config.corsOrigins;
  if (origins.length > 0) {
    const allowed = cors({
      origin: (origin) => origin,
      allowMethods: [...CORS.allowMethods],
      allowHeaders: [...CORS.allowHeaders],
      exposeHeaders: [...CORS.exposeHeaders],
      maxAge: CORS.maxAgeSeconds,
    });
    // Only a listed origin's requests: anything else (an OPTIONS without one included) is
    // the apps' to answer, as without CORS.
    root.use('*', (c, next) => {
      const origin = c.req.header('origin');
      return origin !== undefined && origins.includes(origin.toLowerCase()) ? allowed(c, next) : next();
    });
  }
  root.all('*', (c) => {
    const group = groupForPath(new URL(c.req.url).pathname);
    // env: the group's app may read a body from the incoming message (shared/http/app.ts)
    return apps[(group?.name ?? 'platform') as GroupName].fetch(c.req.raw, c.env);
  });
  const listener = getRequestListener(root.fetch);
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    if (identity?.handle(req, res)) return;
    void listener(req, res);
  });
}
