import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { serve, type ServerType } from '@hono/node-server';
import { serviceApps } from '../../functions/apps.js';
import { crewService } from '../../functions/crews/app.js';
import { createDeadLetterHandler } from '../../functions/crews/dead-letter.js';
import { createWorkerHandler, crewRunner } from '../../functions/crews/worker.js';
import { ensureConfiguredAdminKey, ensureGeneratedAdminKey } from '../../shared/auth/bootstrap.js';
import { emulatorOptions } from '../../shared/aws/clients.js';
import { s3Client } from '../../shared/aws/s3.js';
import { sqsClient } from '../../shared/aws/sqs.js';
import type { Config } from '../../shared/config.js';
import { createRuntime, type Runtime } from '../../shared/runtime.js';
import { groupForPath, type GroupName } from '../groups.js';
import { type RunningEmulator, StartupError, startDynamoDb, startSqs } from './emulators.js';
import { ensureBuckets, ensureQueues, ensureTables, type QueueUrls } from './provision.js';
import { startQueuePoller } from './queue-poller.js';

export interface RunningPlatform {
  readonly baseUrl: string;
  /** The configuration in effect, with the emulators' endpoints filled in. */
  readonly config: Config;
  readonly runtime: Runtime;
  /** The bootstrap admin key when this start generated it (shown once), else undefined. */
  readonly generatedAdminKey: string | undefined;
  /** Unfinished crew runs queued again at start-up. */
  readonly requeuedRuns: number;
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
  const emulators: RunningEmulator[] = [];
  const stopEmulators = async () => {
    for (const e of emulators.reverse()) await e.stop().catch(() => undefined);
  };
  try {
    const dynamodb =
      config.endpoints.dynamodb ??
      (await startDynamoDb(options.inMemory ? {} : { dataDir: config.dataDir }).then(track)).endpoint;
    const sqs = config.endpoints.sqs ?? (await startSqs().then(track)).endpoint;
    // fauxqs serves S3 on the same endpoint as SQS.
    const s3 = config.endpoints.s3 ?? (config.endpoints.sqs ? undefined : sqs);
    const withEndpoints: Config = { ...config, endpoints: { ...config.endpoints, dynamodb, sqs, s3 } };

    const admin = new DynamoDBClient(emulatorOptions({ region: config.region, endpoint: dynamodb }));
    await ensureTables(admin, config.stage);
    admin.destroy();
    const queues = await ensureQueues(sqsClient(withEndpoints), config.stage);
    const buckets = await ensureBuckets(s3Client(withEndpoints), config.stage);
    const effective: Config = {
      ...withEndpoints,
      crewRunQueueUrl: config.crewRunQueueUrl ?? queues.crewRuns.url,
      artifactsBucket: config.artifactsBucket ?? buckets.artifacts,
    };

    const runtime = createRuntime(effective);
    let generatedAdminKey: string | undefined;
    if (effective.adminPsk) await ensureConfiguredAdminKey(runtime.keys, effective.adminPsk);
    else generatedAdminKey = await ensureGeneratedAdminKey(runtime.keys);

    const workers = startWorkers(runtime, queues.crewRuns, options.retryDelaySeconds ?? 2);
    // The emulated queue forgets its messages on restart; the runs themselves are kept.
    const requeued = await crewService(runtime).requeueOpenRuns();
    const server = await listen(runtime, effective).catch(async (err) => {
      await workers.stop();
      throw err;
    });
    const { port } = server.address() as AddressInfo;
    const host = effective.host.includes(':') ? `[${effective.host}]` : effective.host;
    return {
      baseUrl: `http://${host}:${port}`,
      config: effective,
      runtime,
      generatedAdminKey,
      requeuedRuns: requeued,
      stop: async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await workers.stop();
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

/** The crew worker and dead-letter handler, fed by polling the queues as Lambda would. */
function startWorkers(runtime: Runtime, queue: QueueUrls, retryDelaySeconds: number) {
  const sqs = sqsClient(runtime.config);
  const runner = crewRunner(runtime);
  const arn = (url: string) => `arn:aws:sqs:${runtime.config.region}:000000000000:${url.split('/').pop()}`;
  const pollers = [
    startQueuePoller({
      sqs,
      queueUrl: queue.url,
      queueArn: arn(queue.url),
      handler: createWorkerHandler(runner),
      loops: 4,
      retryDelaySeconds,
    }),
    startQueuePoller({
      sqs,
      queueUrl: queue.deadLetterUrl,
      queueArn: arn(queue.deadLetterUrl),
      handler: createDeadLetterHandler(runner),
      loops: 1,
      retryDelaySeconds,
    }),
  ];
  return { stop: async () => void (await Promise.all(pollers.map((p) => p.stop()))) };
}

function listen(runtime: Runtime, config: Config): Promise<ServerType> {
  const apps = serviceApps(runtime);
  const fetch = (request: Request) => {
    const group = groupForPath(new URL(request.url).pathname);
    return apps[(group?.name ?? 'platform') as GroupName].fetch(request);
  };
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: config.port, hostname: config.host }, () => resolve(server));
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new StartupError(
              `port ${config.port} on ${config.host} is already in use: stop the other process or set PORT`,
            )
          : new StartupError(`cannot listen on ${config.host}:${config.port}: ${err.message}`),
      );
    });
  });
}
