import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { CORS } from '../../shared/cors.js';
import { serviceApps } from '../../functions/apps.js';
import { createRuntime, type Runtime, stopLocalScheduler } from '../../functions/composition.js';
import { publisherFor } from '../../functions/domain-events/compose-publisher.js';
import { dispatcherDeps, dispatcherFor } from '../../functions/domain-events/compose-worker.js';
import { plainRunService, scheduleService, templateService } from '../../functions/crews/compose.js';
import { crewRunner } from '../../functions/crews/worker/compose-worker.js';
import { createDeadLetterHandler } from '../../functions/crews/worker/dead-letter.js';
import { createWorkerHandler } from '../../functions/crews/worker/worker.js';
import { webhookDeliverer } from '../../functions/webhooks/compose-worker.js';
import { LANE_CONSUMERS } from '../../functions/webhooks/delivery.js';
import { isRunEndpointId } from '../../functions/webhooks/run-endpoint.js';
import { createWebhookWorkerHandler } from '../../functions/webhooks/worker.js';
import { ensureConfiguredAdminKey, ensureGeneratedAdminKey } from '../../shared/auth/bootstrap.js';
import { emulatorOptions } from '../../shared/aws/client-options.js';
import { s3Access } from '../../shared/aws/s3.js';
import { sqsAccess } from '../../shared/aws/sqs.js';
import { settledWithin } from '../../shared/concurrency.js';
import { checkLocalSignIn, type Config } from '../../shared/config.js';
import { STAND_IN_MODEL, startStandInModel } from './stand-in-model.js';
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
import { ensureLocalCertificate } from './tls.js';

export interface RunningPlatform {
  readonly baseUrl: string;
  /** The same API over TLS (docs/sdk.md): `https://<host>:<HTTPS_PORT>`. */
  readonly httpsBaseUrl: string;
  /** The self-signed certificate it serves, kept in DPM_DATA_DIR (infra/local/tls.ts). */
  readonly tls: {
    readonly certFile: string;
    readonly fingerprint256: string;
    /** Why this start made it; undefined when the kept one is served. */
    readonly created: string | undefined;
  };
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
  /**
   * Stops everything: no new work (the queue and stream consumers and the port stop taking
   * it, running crew steps are abandoned), what is under way drains for at most DRAIN_MS,
   * then the open connections are closed and the emulators stopped, last.
   */
  stop(): Promise<void>;
}

export interface PlatformOptions {
  /** Keep DynamoDB Local in memory instead of under DPM_DATA_DIR (tests). */
  readonly inMemory?: boolean;
  /** Seconds before a failed crew-run message is delivered again (default 2). */
  readonly retryDelaySeconds?: number;
  /**
   * Aborted: the start gives up at its next step, stops what it started and rejects with a
   * StartupError (a Ctrl-C during start-up).
   */
  readonly signal?: AbortSignal;
  /**
   * Wraps each local Lambda's handler (the API groups, the queue workers, the stream
   * consumers), named as in infra/groups.ts: the benchmark counts invocations and handler
   * time with it. Without it the handlers run as they are.
   */
  readonly instrument?: Instrument;
  /**
   * How long the dispatcher keeps the webhook endpoints it read (ENDPOINTS_FRESH_MS unless
   * given; the platform's own writes of them are seen at once either way): a test counting
   * calls gives a long one, so the periodic re-read does not fall in what it counts.
   */
  readonly endpointsFreshMs?: number;
}

/** Returns `handler` or a function that calls it (and may observe the call). */
export type Instrument = <H extends (...args: never[]) => Promise<unknown>>(lambda: string, handler: H) => H;

/** How long a stop waits for the work under way (messages, stream batches, requests) before it stops the emulators. */
const DRAIN_MS = 5_000;

/**
 * The whole service in one process: emulators (unless endpoints are configured), every
 * table and queue, the bootstrap admin key, and every group's app on one port, routed by
 * path prefix exactly as API Gateway routes to the Lambdas.
 */
export async function startPlatform(config: Config, options: PlatformOptions = {}): Promise<RunningPlatform> {
  // loadConfig refuses it already; a Config made otherwise is held to the same rule, before
  // anything listens: the passwordless local sign-in serves loopback only (docs/identity-and-keys.md).
  checkLocalSignIn(config.host, config.auth.issuer);
  // A running instance owns its data directory, checked before anything starts; in-memory
  // platforms (tests) keep nothing there that two of them could not share.
  const lock = options.inMemory ? undefined : lockDataDir(config.dataDir);
  const emulators: RunningEmulator[] = [];
  /** Aborted when the platform stops: the crew worker abandons the steps it runs. */
  const stopping = new AbortController();
  /** The API's servers, HTTP and HTTPS (an https.Server is an http.Server): one app, stopped and drained together. */
  const servers: Server[] = [];
  let consumers: { stop(drainMs: number): Promise<void> } | undefined;
  let stopped: Promise<void> | undefined;
  let stopSchedules = () => {};
  const stopAll = () =>
    (stopped ??= (async () => {
      stopping.abort();
      stopSchedules();
      const closed = servers.map(closeServer);
      await Promise.all([consumers?.stop(DRAIN_MS), settledWithin(closed, DRAIN_MS)]);
      // Requests still open (long polls) are cut: nothing may use the emulators once they stop.
      for (const server of servers) server.closeAllConnections();
      await Promise.all(closed);
      for (const e of emulators.reverse()) await e.stop().catch(() => undefined);
      lock?.release();
    })());
  const throwIfStopped = () => {
    if (options.signal?.aborted) throw new StartupError('stopped during start-up');
  };
  try {
    const dynamoDbOptions = {
      host: config.host,
      dataDir: options.inMemory ? undefined : config.dataDir,
      signal: options.signal,
    };
    const dynamodb = config.endpoints.dynamodb ?? (await startDynamoDb(dynamoDbOptions).then(track)).endpoint;
    throwIfStopped();
    const sqs =
      config.endpoints.sqs ??
      (await phase('could not start fauxqs (SQS and S3)', () => startSqs({ host: config.host })).then(track)).endpoint;
    // fauxqs serves S3 on the same endpoint as SQS.
    const s3 = config.endpoints.s3 ?? (config.endpoints.sqs ? undefined : sqs);
    const withEndpoints: Config = { ...config, endpoints: { ...config.endpoints, dynamodb, sqs, s3 } };

    const admin = new DynamoDBClient(emulatorOptions({ region: config.region, endpoint: dynamodb }));
    await phase(`could not create the tables in DynamoDB at ${dynamodb}`, () =>
      ensureTables(admin, config.stage),
    ).finally(() => admin.destroy());
    throwIfStopped();
    const { client: sqsClient } = await sqsAccess(withEndpoints)();
    const queues = await phase(`could not create the queues at ${sqs}`, () => ensureQueues(sqsClient, config.stage));
    const buckets = await phase(`could not create the buckets at ${s3 ?? 'S3'}`, async () =>
      ensureBuckets((await s3Access(withEndpoints)()).client, config.stage),
    );
    throwIfStopped();
    let effective: Config = {
      ...withEndpoints,
      crewRunQueueUrl: config.crewRunQueueUrl ?? queues.crewRuns.url,
      webhookQueueUrl: config.webhookQueueUrl ?? queues.webhookDeliveries.url,
      runWebhookQueueUrl: config.runWebhookQueueUrl ?? queues.runWebhookDeliveries.url,
      artifactsBucket: config.artifactsBucket ?? buckets.artifacts,
    };
    // LLM_PROVIDER=local: the stand-in model on loopback, spoken to by the OpenAI-compatible adapter.
    if (effective.llm.provider === 'local' && !effective.llm.baseUrl) {
      const standIn = await phase('could not start the local stand-in model', () => startStandInModel());
      track({ endpoint: standIn.baseUrl, stop: () => standIn.stop() });
      effective = { ...effective, llm: { ...effective.llm, baseUrl: standIn.baseUrl, model: STAND_IN_MODEL } };
    }

    // The ports first (PORT may be 0): the local identity provider's issuer is on it. Closed
    // before the emulators stop, also when what follows fails.
    const server = await bind(createServer(), effective.host, effective.port, 'PORT');
    servers.push(server);
    const { port } = server.address() as AddressInfo;
    const baseUrl = `http://${urlHost(effective.host)}:${port}`;
    const certificate = await phase(`could not make the TLS certificate in ${effective.dataDir}`, () =>
      ensureLocalCertificate(effective.dataDir),
    );
    const tlsServer = await bind(
      createTlsServer({ cert: certificate.cert, key: certificate.key }),
      effective.host,
      effective.httpsPort,
      'HTTPS_PORT',
    );
    servers.push(tlsServer);
    const httpsBaseUrl = `https://${urlHost(effective.host)}:${(tlsServer.address() as AddressInfo).port}`;
    throwIfStopped();
    const identity = effective.auth.issuer
      ? undefined
      : await startLocalIdentityProvider({
          baseUrl,
          otherOrigins: isLoopback(effective.host) ? [`http://localhost:${port}`] : [],
          users: effective.localUsers,
          dataDir: effective.dataDir,
          docsClientId: effective.auth.docsClientId,
          consoleClientId: effective.auth.consoleClientId,
        });
    if (identity) {
      effective = {
        ...effective,
        auth: {
          issuer: identity.issuer,
          audience: identity.audience,
          jwksUrl: undefined,
          docsClientId: effective.auth.docsClientId,
          consoleClientId: effective.auth.consoleClientId,
        },
      };
    }

    const runtime = createRuntime(effective);
    const generatedAdminKey = await phase('could not store the bootstrap admin key', async () => {
      if (effective.adminPsk) await ensureConfiguredAdminKey(runtime.keys, effective.adminPsk, runtime.clock);
      else return ensureGeneratedAdminKey(runtime.keys, runtime.clock);
      return undefined;
    });
    throwIfStopped();

    // The built-in crew templates (docs/sdk.md): created when missing, so at the first start.
    await phase('could not create the built-in crew templates', () =>
      templateService(runtime).ensureBuiltInTemplates(),
    );
    throwIfStopped();

    // The emulated queues forget their messages on restart; the runs and deliveries are kept.
    // All are queued again first, in one batched pass, and only then do the consumers start:
    // started before, after a kill -9 under load they took DynamoDB Local's capacity from
    // this pass, and the start failed.
    const [requeuedRuns, requeuedDeliveries] = await phase(
      'could not queue the unfinished crew runs and webhook deliveries again',
      () => Promise.all([plainRunService(runtime).requeueOpenRuns(), webhookDeliverer(runtime).requeueOpen()]),
    );
    throwIfStopped();
    const instrument: Instrument = options.instrument ?? ((_, handler) => handler);
    const workers = startWorkers(
      runtime,
      sqsClient,
      queues,
      options.retryDelaySeconds ?? 2,
      stopping.signal,
      instrument,
    );
    // Crew schedules fire from this process's timers (docs/crews.md): set from what is stored.
    stopSchedules = () => stopLocalScheduler(runtime);
    await phase('could not set the crew schedules', () => scheduleService(runtime).armAll());
    const events = startEventPipeline(
      runtime,
      options.inMemory ? undefined : effective.dataDir,
      instrument,
      options.endpointsFreshMs,
    );
    consumers = {
      stop: async (drainMs) => void (await Promise.all([workers.stop(drainMs), events.stop(drainMs)])),
    };
    serveApps(servers, runtime, identity, options.instrument);
    return {
      baseUrl,
      httpsBaseUrl,
      tls: { certFile: certificate.certFile, fingerprint256: certificate.fingerprint256, created: certificate.created },
      config: effective,
      runtime,
      generatedAdminKey,
      identity,
      requeuedRuns,
      requeuedDeliveries,
      stopEventPipeline: () => events.stop(),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }

  function track(e: RunningEmulator): RunningEmulator {
    emulators.push(e);
    return e;
  }
}

/** Crew runs one worker process carries at once (a run in a `wait` or an `http` call holds one). */
const CREW_WORKER_CONCURRENCY = 64;

/**
 * The crew worker, its dead-letter handler and the webhook worker, fed by polling the queues
 * as Lambda would. `stop` (the process is stopping) abandons the crew steps under way.
 */
function startWorkers(
  runtime: Runtime,
  sqs: SQSClient,
  queues: Record<QueueKey, QueueUrls>,
  retryDelaySeconds: number,
  stop: AbortSignal,
  instrument: Instrument,
) {
  const runner = crewRunner(runtime, { stop });
  const queue = queues.crewRuns;
  const arn = (url: string) => `arn:aws:sqs:${runtime.config.region}:000000000000:${url.split('/').pop()}`;
  const pollers = [
    startQueuePoller({
      sqs,
      queueUrl: queue.url,
      queueArn: arn(queue.url),
      handler: instrument('crews-worker', createWorkerHandler(runner, undefined, scheduleService(runtime))),
      concurrency: CREW_WORKER_CONCURRENCY,
      retryDelaySeconds,
    }),
    startQueuePoller({
      sqs,
      queueUrl: queue.deadLetterUrl,
      queueArn: arn(queue.deadLetterUrl),
      handler: instrument('crews-dead-letter', createDeadLetterHandler(runner)),
      concurrency: 4,
      retryDelaySeconds,
    }),
    // The two webhook lanes, each with consumers of its own (the fair-use limits): the
    // API's endpoints, and crew runs' own, whose receivers any user chooses (each starter
    // holds at most PRINCIPAL_SHARE of these consumers with attempts: a quarter).
    ...(
      [
        ['webhookDeliveries', 'webhooks-worker'],
        ['runWebhookDeliveries', 'run-webhooks-worker'],
      ] as const
    ).map(([lane, lambda]) =>
      startQueuePoller({
        sqs,
        queueUrl: queues[lane].url,
        queueArn: arn(queues[lane].url),
        handler: instrument(lambda, createWebhookWorkerHandler(webhookDeliverer(runtime))),
        concurrency: LANE_CONSUMERS,
        retryDelaySeconds,
      }),
    ),
  ];
  return { stop: async (drainMs?: number) => void (await Promise.all(pollers.map((p) => p.stop(drainMs)))) };
}

/**
 * The domain events pipeline as on AWS (docs/events-and-webhooks.md), fed by polling the tables' streams as
 * Lambda's event sources would: the publisher over every domain table, the dispatcher over
 * the events table. Checkpoints live beside the database, so a restart goes on where the
 * last run stopped (in memory for an in-memory database, which forgets its streams too).
 */
function startEventPipeline(
  runtime: Runtime,
  dataDir: string | undefined,
  instrument: Instrument,
  endpointsFreshMs: number | undefined,
) {
  const streamsOf = (name: (typeof STREAM_CONSUMERS)[number]['name']): readonly TableKey[] =>
    STREAM_CONSUMERS.find((c) => c.name === name)!.streams;
  const { config } = runtime;
  const endpoint = config.endpoints.dynamodb!;
  const dispatcher = dispatcherDeps(runtime, endpointsFreshMs);
  // A webhook endpoint this process writes (its API) is used by the next fan-out, not up to
  // ENDPOINTS_FRESH_MS later (functions/webhooks/fanout.ts): the write is seen as it is made.
  // Crew runs' own endpoints are none of the fan-out's (a run's events go to its own): their
  // writes (made with the run, each failed attempt noted) leave the endpoints it read alone.
  const webhooksTable = runtime.tableName('webhooks');
  const watcher = `localWebhookEndpoints-${randomUUID()}`;
  runtime.db.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (!READS.test(context.commandName ?? '') && writesApiEndpoints(args.input, webhooksTable))
        dispatcher.fanout.endpointsChanged?.();
      return out;
    },
    { step: 'initialize', name: watcher },
  );
  const pollers = [
    // The checkpoint files keep their names from before the consumers' rename: a data dir goes on where it stopped.
    startStreamPoller({
      endpoint,
      region: config.region,
      tables: streamsOf('domain-events-publisher').map((t) => runtime.tableName(t)),
      handler: instrument('domain-events-publisher', publisherFor(runtime)),
      ...(dataDir ? { checkpointFile: join(dataDir, 'streams-events-publisher.json') } : {}),
    }),
    startStreamPoller({
      endpoint,
      region: config.region,
      tables: streamsOf('domain-events-dispatcher').map((t) => runtime.tableName(t)),
      handler: instrument('domain-events-dispatcher', dispatcherFor(runtime, dispatcher)),
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
    stop: async (drainMs?: number) => {
      wakers.delete(wake);
      runtime.db.middlewareStack.remove(watcher);
      await Promise.all(pollers.map((p) => p.stop(drainMs)));
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

/**
 * Whether a write command writes an endpoint of the webhooks API to `webhooksTable`: any item
 * of that table but a crew run's own endpoint (an id `run-…`), whose key or item it names.
 */
function writesApiEndpoints(input: unknown, webhooksTable: string): boolean {
  type Write = { TableName?: unknown; Key?: { id?: unknown }; Item?: { id?: unknown } };
  const i = input as Write & {
    TransactItems?: readonly Record<string, Write | undefined>[];
    RequestItems?: Record<string, readonly Record<string, Write | undefined>[] | undefined>;
  };
  const writes: Write[] = [i];
  for (const item of i.TransactItems ?? []) for (const op of Object.values(item)) if (op) writes.push(op);
  for (const request of i.RequestItems?.[webhooksTable] ?? [])
    for (const op of Object.values(request)) if (op) writes.push({ ...op, TableName: webhooksTable });
  return writes.some((w) => {
    if (w.TableName !== webhooksTable) return false;
    const id = w.Key?.id ?? w.Item?.id;
    return typeof id !== 'string' || !isRunEndpointId(id);
  });
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
 * Runs a step of the start; what it throws becomes a StartupError saying which step failed
 * (printed as one line), unless it is one already.
 */
async function phase<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof StartupError) throw err;
    const { name, message } = err as Error;
    throw new StartupError(`${what}: ${name}: ${message}`.replace(/\s*\n\s*/g, ' '));
  }
}

/** Stops taking connections (idle ones are closed); settles once the open ones have ended. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Listens on host:port at once; requests are answered 503 until the apps are served (the
 * port comes first because the local identity provider's issuer URL names it). `variable`
 * is the setting that chose the port, named when it is taken.
 */
function bind(server: Server, host: string, port: number, variable: 'PORT' | 'HTTPS_PORT'): Promise<Server> {
  server.on('request', (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify({ error: 'Service Unavailable: starting', code: 503 }));
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new StartupError(`port ${port} on ${host} is already in use: stop the other process or set ${variable}`)
          : new StartupError(`cannot listen on ${host}:${port} (${variable}): ${err.message}`),
      );
    });
    server.listen(port, host, () => resolve(server));
  });
}

/**
 * Every group's app on the bound servers (HTTP and HTTPS alike), routed by path prefix; `/oidc`
 * to the local identity provider.
 */
function serveApps(
  servers: readonly Server[],
  runtime: Runtime,
  identity: LocalIdentityProvider | undefined,
  instrument: Instrument | undefined,
): void {
  const apps = serviceApps(runtime);
  type Fetch = (request: Request, env: HttpBindings) => Response | Promise<Response>;
  const fetchOf = Object.fromEntries(
    Object.entries(apps).map(([name, app]): [string, Fetch] => [
      name,
      instrument ? instrument(name, async (request: Request, env: HttpBindings) => app.fetch(request, env)) : app.fetch,
    ]),
  );
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
    // env: the group's app may read a body from the incoming message (shared/http/request-input.ts)
    return fetchOf[(group?.name ?? 'platform') as GroupName]!(c.req.raw, c.env);
  });
  const listener = getRequestListener(root.fetch);
  for (const server of servers) {
    server.removeAllListeners('request');
    server.on('request', (req, res) => {
      if (identity?.handle(req, res)) return;
      void listener(req, res);
    });
  }
}
