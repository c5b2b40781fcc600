import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { serve, type ServerType } from '@hono/node-server';
import { serviceApps } from '../../functions/apps.js';
import { ensureConfiguredAdminKey, ensureGeneratedAdminKey } from '../../shared/auth/bootstrap.js';
import { emulatorOptions } from '../../shared/aws/clients.js';
import { sqsClient } from '../../shared/aws/sqs.js';
import type { Config } from '../../shared/config.js';
import { createRuntime, type Runtime } from '../../shared/runtime.js';
import { groupForPath, type GroupName } from '../groups.js';
import { type RunningEmulator, StartupError, startDynamoDb, startSqs } from './emulators.js';
import { ensureQueues, ensureTables } from './provision.js';

export interface RunningPlatform {
  readonly baseUrl: string;
  /** The configuration in effect, with the emulators' endpoints filled in. */
  readonly config: Config;
  readonly runtime: Runtime;
  /** The bootstrap admin key when this start generated it (shown once), else undefined. */
  readonly generatedAdminKey: string | undefined;
  stop(): Promise<void>;
}

export interface PlatformOptions {
  /** Keep DynamoDB Local in memory instead of under DPM_DATA_DIR (tests). */
  readonly inMemory?: boolean;
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
      config.endpoints.dynamodb ?? (await startDynamoDb(options.inMemory ? {} : { dataDir: config.dataDir }).then(track)).endpoint;
    const sqs = config.endpoints.sqs ?? (await startSqs().then(track)).endpoint;
    const withEndpoints: Config = { ...config, endpoints: { ...config.endpoints, dynamodb, sqs } };

    const admin = new DynamoDBClient(emulatorOptions({ region: config.region, endpoint: dynamodb }));
    await ensureTables(admin, config.stage);
    admin.destroy();
    const queues = await ensureQueues(sqsClient(withEndpoints), config.stage);
    const effective: Config = { ...withEndpoints, crewRunQueueUrl: config.crewRunQueueUrl ?? queues.crewRuns };

    const runtime = createRuntime(effective);
    let generatedAdminKey: string | undefined;
    if (effective.adminPsk) await ensureConfiguredAdminKey(runtime.keys, effective.adminPsk);
    else generatedAdminKey = await ensureGeneratedAdminKey(runtime.keys);

    const server = await listen(runtime, effective);
    const { port } = server.address() as AddressInfo;
    const host = effective.host.includes(':') ? `[${effective.host}]` : effective.host;
    return {
      baseUrl: `http://${host}:${port}`,
      config: effective,
      runtime,
      generatedAdminKey,
      stop: async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
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
          ? new StartupError(`port ${config.port} on ${config.host} is already in use: stop the other process or set PORT`)
          : new StartupError(`cannot listen on ${config.host}:${config.port}: ${err.message}`),
      );
    });
  });
}
