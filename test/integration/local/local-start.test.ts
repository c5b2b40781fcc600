import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCK_FILE, processStart } from '../../../infra/local/data-lock.js';
import {
  dynamoDbPid,
  LocalProcess,
  localProcessScratch,
  processAlive,
  waitForDeath,
} from '../../support/local-process.js';

/**
 * A running `npm start` owns its data directory (DPM_DATA_DIR/dpm.lock names its PID). A
 * second start on the same directory refuses in one line and touches nothing, in
 * particular not the first one's DynamoDB Local; a lock left by a process that is gone is
 * taken over. Everything runs in child processes started the way a user starts the service.
 */

const ADMIN_PSK = 'local-start-admin-key-0123456789abcdef';
const ENV = { STAGE: 'safestart', DPM_ADMIN_PSK: ADMIN_PSK };

const { dataDir, logFile, started, decoys, printLogOnFailure, lockPid } = localProcessScratch('dpm-local-start-');

function spawnPlatform(): LocalProcess {
  const p = LocalProcess.spawn({ dataDir, logFile, env: ENV });
  started.push(p);
  return p;
}

async function call(base: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'authorization-psk': ADMIN_PSK, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function createServer(base: string, name: string): Promise<Record<string, unknown>> {
  const res = await call(base, '/api/mcps', { name, command: 'npx', args: ['-y', name], enabled: true });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** A PID that no process has: a child that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn('true', { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  expect(processAlive(child.pid!)).toBe(false);
  return child.pid!;
}

describe('safe start of the local platform (npm start)', () => {
  it('refuses a second start on the same data directory in one line, leaving the running one and its data alone', async () => {
    printLogOnFailure();
    const first = spawnPlatform();
    await first.waitUntilReady(60_000);
    expect(lockPid()).toBe(first.pid);
    const firstJava = dynamoDbPid(dataDir);
    expect(processAlive(firstJava)).toBe(true);
    const created = await createServer(first.baseUrl, 'before-second-start');

    // The second start (LocalProcess gives each its own free port) on the same directory.
    // The first instance's own stream checkpoints come and go as it works: not the second's doing.
    const dataFiles = () =>
      readdirSync(dataDir)
        .filter((f) => !/^streams-.*\.json$/.test(f))
        .sort();
    const files = dataFiles();
    const lock = readFileSync(join(dataDir, LOCK_FILE), 'utf8');
    const second = spawnPlatform();
    const exit = await second.exited;
    expect(exit.code, second.output()).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(second.output().trim()).toBe(
      `dpm: the data directory ${dataDir} is in use by a running instance (pid ${first.pid}); stop it first or set DPM_DATA_DIR`,
    );

    // Nothing of the first was touched: its process, its DynamoDB Local, its lock, its data.
    expect(first.running).toBe(true);
    expect(processAlive(firstJava), "the first instance's DynamoDB Local survived").toBe(true);
    expect(dynamoDbPid(dataDir)).toBe(firstJava);
    expect(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).toBe(lock);
    expect(dataFiles()).toEqual(files);
    const read = await call(first.baseUrl, `/api/mcps/${created.id}`);
    expect(read).toEqual({ status: 200, body: created });
    await createServer(first.baseUrl, 'after-second-start');

    // A clean stop removes the lock.
    first.killMain('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    expect(await waitForDeath(firstJava, 5_000)).toBe(true);
  }, 120_000);

  it('takes over a lock whose process is gone, and one whose PID now belongs to another process', async () => {
    printLogOnFailure();
    const lockFile = join(dataDir, LOCK_FILE);

    // As left by a kill -9: the PID in the lock is dead.
    writeFileSync(lockFile, `${await deadPid()}\n${processStart(process.pid)}\n`);
    const afterDeath = spawnPlatform();
    await afterDeath.waitUntilReady(60_000);
    expect(lockPid()).toBe(afterDeath.pid);
    const servers = (await call(afterDeath.baseUrl, '/api/mcps')).body as { name: string }[];
    expect(servers.map((s) => s.name).sort()).toEqual(['after-second-start', 'before-second-start']);
    afterDeath.killGroup('SIGKILL');
    await afterDeath.exited;

    // As after a reboot: the lock's PID was given to an unrelated process (another start time).
    const decoy = spawn('sleep', ['120'], { stdio: 'ignore' });
    decoys.push(decoy.pid!);
    expect(processAlive(decoy.pid!)).toBe(true);
    writeFileSync(lockFile, `${decoy.pid}\n${Number(processStart(decoy.pid!)) - 1}\n`);
    const afterReuse = spawnPlatform();
    await afterReuse.waitUntilReady(60_000);
    expect(lockPid()).toBe(afterReuse.pid);
    expect(processAlive(decoy.pid!), 'the unrelated process is left alone').toBe(true);
    expect((await call(afterReuse.baseUrl, '/api/mcps')).status).toBe(200);
  }, 150_000);
});
