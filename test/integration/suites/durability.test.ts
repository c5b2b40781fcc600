import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../../infra/local/data-lock.js';
import { eventually, notYet } from '../../support/eventually.js';
import {
  callPlatform,
  dynamoDbPid,
  listAllOf,
  type LocalProcess,
  localProcessScratch,
  type PlatformCall,
  processAlive,
  waitForDeath,
} from '../../support/local-process.js';

/**
 * Durability of the local platform (`npm start`, file-backed DynamoDB Local under
 * DPM_DATA_DIR): writers create resources of several kinds under load, the platform is
 * killed with SIGKILL while requests are in flight, and after a restart on the same data
 * directory every write that was acknowledged must read back unchanged. Writes that never
 * got an answer may or may not exist. Everything runs in child processes started the way
 * a user starts the service.
 */

const ADMIN_PSK = 'durability-admin-key-0123456789abcdef';
const WRITERS = 8;
/** Acknowledged writes before each kill. */
const MIN_ACKED = 60;
const WORKSPACE = 'durability';
const DECISION_KEYS = ['alpha', 'beta', 'gamma'];
const PRODUCT = 'default';

const {
  tmp,
  dataDir,
  spawn: spawnPlatform,
  decoys,
  printLogOnFailure,
  lockPid,
} = localProcessScratch('dpm-durability-');

const PLATFORM_ENV = {
  STAGE: 'durable',
  DPM_ADMIN_PSK: ADMIN_PSK,
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

async function start(): Promise<LocalProcess> {
  const p = spawnPlatform({ env: PLATFORM_ENV });
  await p.waitUntilReady(60_000);
  return p;
}

/** A call with the admin key unless `options` give another key (given up after 20 s). */
const call = <T = any>(base: string, path: string, options: PlatformCall = {}) =>
  callPlatform<T>(base, path, { ...options, psk: options.psk ?? ADMIN_PSK, timeoutMs: 20_000 });

/** Every item of a list endpoint, read with the admin key. */
const listAll = <T>(base: string, path: string) => listAllOf<T>(base, path, { psk: ADMIN_PSK, timeoutMs: 20_000 });

type Json = Record<string, any>;

/** What the writers were told: acknowledged writes with their answers, and the ones never answered. */
interface Ledger {
  mcps: Map<string, Json>;
  /** `key/version` → the created VersionDetail. */
  decisions: Map<string, Json>;
  /** Last acknowledged state of each document, and a status move that was in flight at the kill. */
  documents: Map<string, { acked: Json; pending?: string }>;
  psks: Map<string, Json>;
  shares: Map<string, Json>;
  /** Data share names whose creation never got an answer. */
  sharesInFlight: Set<string>;
  /** Requests that never got an answer (the kill). */
  unanswered: number;
  /** Answers that were not the expected 2xx: each one is a failure. */
  unexpected: string[];
}

const newLedger = (): Ledger => ({
  mcps: new Map(),
  decisions: new Map(),
  documents: new Map(),
  psks: new Map(),
  shares: new Map(),
  sharesInFlight: new Set(),
  unanswered: 0,
  unexpected: [],
});

const acknowledged = (l: Ledger) => l.mcps.size + l.decisions.size + l.documents.size + l.psks.size + l.shares.size;

/** Content that a lossy or truncating store would not give back unchanged. */
const payload = (writer: number, n: number) => ({
  writer,
  n,
  text: `écrit par ${writer} — ${'x'.repeat(n % 7)} 🚀`,
  nested: { list: [1, 2.5, null, true, 'z'], empty: {}, deep: { a: [{ b: n }] } },
});

/**
 * Writers that loop until stopped: each round creates one resource of the next kind.
 * A request that fails without an answer (the platform was killed) ends its writer.
 */
function startWriters(base: string, ledger: Ledger, round: string) {
  let stopped = false;
  let inFlight = 0;

  /** One request; undefined when it got no answer. */
  const send = async (what: string, path: string, options: PlatformCall, expected: number) => {
    inFlight++;
    try {
      const res = await call(base, path, options);
      if (res.status !== expected) ledger.unexpected.push(`${what}: ${res.status} ${res.text}`);
      return res.status === expected ? res : undefined;
    } catch {
      ledger.unanswered++;
      stopped = true;
      return null;
    } finally {
      inFlight--;
    }
  };

  const kinds = [
    async (w: number, n: number) => {
      const body = {
        name: `mcp ${round}-${w}-${n}`,
        command: 'npx',
        args: ['-y', `server-${n}`, '--flag=ä'],
        enabled: n % 2 === 0,
        env: { WRITER: String(w), Api_Key2: `sk-${randomUUID()}` },
      };
      const res = await send('create mcp', '/api/mcps', { method: 'POST', body }, 201);
      if (res) ledger.mcps.set(res.body.id, res.body);
      return res !== null;
    },
    async (w: number, n: number) => {
      const key = DECISION_KEYS[(w + n) % DECISION_KEYS.length]!;
      const body = { content: payload(w, n), notes: `round ${round}`, source_instance: `writer-${w}` };
      const res = await send(
        'create decision version',
        `/api/decisions/${WORKSPACE}/${key}/versions`,
        { method: 'POST', body },
        201,
      );
      if (res) ledger.decisions.set(`${key}/${res.body.version}`, res.body);
      return res !== null;
    },
    async (w: number, n: number) => {
      const body = { filename: `report-${round}-${w}-${n}.pdf`, mime_type: 'application/pdf', size_bytes: 1000 + n };
      const created = await send('create document', '/api/documents', { method: 'POST', body }, 201);
      if (!created) return created !== null;
      const entry: { acked: Json; pending?: string } = { acked: created.body };
      ledger.documents.set(created.body.id, entry);
      // Forward moves: each acknowledged one must survive; the one in flight may or may not.
      for (const status of n % 2 === 0 ? ['extracting', 'indexed'] : ['extracting']) {
        entry.pending = status;
        const moved = await send(
          'move document',
          `/api/documents/${created.body.id}/status`,
          { method: 'POST', body: { status, ...(status === 'indexed' ? { page_count: n, chunk_count: 2 * n } : {}) } },
          200,
        );
        if (moved === null) return false;
        delete entry.pending;
        if (!moved) return true;
        entry.acked = moved.body;
      }
      return true;
    },
    async (w: number, n: number) => {
      const body = { description: `key ${round}-${w}-${n}`, validity_days: 1 + (n % 30) };
      const res = await send('create psk', `/api/dataproduct/${PRODUCT}/psk`, { method: 'POST', body }, 201);
      if (res) ledger.psks.set(res.body.psk, res.body);
      return res !== null;
    },
    async (w: number, n: number) => {
      const name = `share-${round}-${w}-${n}-${randomUUID().slice(0, 6)}`;
      const body = { name, description: `share ${n}`, tables: [`sales.orders_${w}`, 'sales.customers'] };
      ledger.sharesInFlight.add(name);
      const res = await send('create data share', '/api/data_shares', { method: 'POST', body }, 201);
      if (res === null) return false;
      ledger.sharesInFlight.delete(name);
      if (res) ledger.shares.set(name, res.body);
      return true;
    },
  ];

  const loops = Array.from({ length: WRITERS }, async (_, w) => {
    for (let n = 0; !stopped; n++) {
      const ok = await kinds[(w + n) % kinds.length]!(w, n);
      if (!ok) return;
    }
  });
  return {
    get inFlight() {
      return inFlight;
    },
    /** Waits until the writers have ended (every request answered or failed). */
    done: () => Promise.all(loops),
    stop: () => {
      stopped = true;
    },
  };
}

/**
 * Lets the writers run until MIN_ACKED more writes are acknowledged, runs `kill` while
 * requests are in flight, and waits for the writers to end.
 */
async function writeThenKill(p: LocalProcess, ledger: Ledger, round: string, kill: () => void) {
  const before = acknowledged(ledger);
  const writers = startWriters(p.baseUrl, ledger, round);
  // Kill once enough writes are acknowledged (at least a second of load), whatever the machine's speed.
  const since = Date.now();
  while (Date.now() - since < 1_000 || (acknowledged(ledger) - before < MIN_ACKED && Date.now() - since < 20_000)) {
    if (ledger.unexpected.length > 0 || !p.running) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const inFlightAtKill = writers.inFlight;
  kill();
  const exit = await p.exited;
  writers.stop();
  await writers.done();
  expect(exit.signal, 'the platform died of the SIGKILL').toBe('SIGKILL');
  expect(ledger.unexpected, 'every answered write was a success').toEqual([]);
  // The kill must have hit the writers mid-flight, after a real amount of acknowledged work.
  expect(inFlightAtKill).toBeGreaterThan(0);
  expect(ledger.unanswered).toBeGreaterThan(0);
  expect(acknowledged(ledger) - before).toBeGreaterThanOrEqual(MIN_ACKED);
}

/** Runs `fn` over `items`, `limit` at a time. */
async function inParallel<T>(items: Iterable<T>, fn: (item: T) => Promise<void>, limit = WRITERS): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: limit }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

/** The acknowledged decision versions of `key`. */
const versionsOf = (ledger: Ledger, key: string) =>
  [...ledger.decisions].filter(([k]) => k.startsWith(`${key}/`)).map(([, v]) => v);

/** Checks that every acknowledged write reads back with the same content. */
async function verify(base: string, ledger: Ledger): Promise<void> {
  // MCP servers: each read equals its creation answer; the list holds them all.
  const mcpIds = new Set((await listAll<Json>(base, '/api/mcps')).map((s) => s.id));
  await inParallel(ledger.mcps, async ([id, created]) => {
    const res = await call(base, `/api/mcps/${id}`);
    expect(res.status, `mcp ${id}: ${res.text}`).toBe(200);
    expect(res.body).toEqual(created);
    expect(mcpIds.has(id), `mcp ${id} listed`).toBe(true);
  });

  // Decision versions: the detail is unchanged and the list holds each version once.
  for (const key of DECISION_KEYS) {
    const acked = versionsOf(ledger, key);
    const list = await call<Json[]>(base, `/api/decisions/${WORKSPACE}/${key}/versions`);
    expect(list.status, `versions of ${key}: ${list.text}`).toBe(200);
    const listed = list.body.map((v) => v.version as number);
    expect(new Set(listed).size, `versions of ${key} are unique`).toBe(listed.length);
    await inParallel(acked, async (created) => {
      expect(listed, `${key} lists version ${created.version}`).toContain(created.version);
      const res = await call(base, `/api/decisions/${WORKSPACE}/${key}/versions/${created.version}`);
      expect(res.status, `${key} v${created.version}: ${res.text}`).toBe(200);
      expect(res.body).toEqual(created);
    });
  }

  // Documents: the last acknowledged state, or the status move that was in flight.
  const docIds = new Set((await listAll<Json>(base, '/api/documents')).map((d) => d.id));
  await inParallel(ledger.documents, async ([id, { acked, pending }]) => {
    const res = await call(base, `/api/documents/${id}`);
    expect(res.status, `document ${id}: ${res.text}`).toBe(200);
    if (pending && res.body.status === pending) {
      const { status: _s, updated_at: _u, page_count: _p, chunk_count: _c, ...rest } = acked;
      expect(res.body).toMatchObject(rest);
    } else {
      expect(res.body).toEqual(acked);
    }
    expect(docIds.has(id), `document ${id} listed`).toBe(true);
  });

  // Pre-shared keys: listed unchanged, and each secret still authenticates.
  const keys = new Map((await listAll<Json>(base, '/api/dataproduct/psk')).map((k) => [k.psk, k]));
  await inParallel(ledger.psks, async ([psk, created]) => {
    const { key, ...info } = created;
    expect(keys.get(psk), `psk ${psk} listed`).toEqual({ ...info, deleted_at: null });
    const viaKey = await call(base, '/api/mcps?limit=1', { psk: key });
    expect(viaKey.status, `psk ${psk} still authenticates: ${viaKey.text}`).toBe(200);
  });

  // Data shares: the same client and secret (encrypted with the key file under the data dir).
  const shareNames = new Set((await listAll<Json>(base, '/api/data_shares')).map((s) => s.name));
  await inParallel(ledger.shares, async ([name, created]) => {
    const res = await call(base, `/api/data_shares/${name}`);
    expect(res.status, `data share ${name}: ${res.text}`).toBe(200);
    expect(res.body).toEqual(created);
    expect(shareNames.has(name), `data share ${name} listed`).toBe(true);
  });
  // A creation cut short leaves either a whole share or none: never an error on read.
  await inParallel(ledger.sharesInFlight, async (name) => {
    const res = await call(base, `/api/data_shares/${name}`);
    expect([200, 404], `data share ${name} (in flight at the kill): ${res.text}`).toContain(res.status);
  });
}

/**
 * After a restart, a new decision version never reuses a number handed out before the
 * kill (the counter survived with the versions).
 */
async function expectVersionsContinue(base: string, ledger: Ledger): Promise<void> {
  for (const key of DECISION_KEYS) {
    const versions = versionsOf(ledger, key).map((v) => v.version as number);
    expect(versions.length, `some versions of ${key} were acknowledged`).toBeGreaterThan(0);
    const res = await call(base, `/api/decisions/${WORKSPACE}/${key}/versions`, {
      method: 'POST',
      body: { content: { after: 'restart' } },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.version).toBeGreaterThan(Math.max(...versions));
    const listed = (await call<Json[]>(base, `/api/decisions/${WORKSPACE}/${key}/versions`)).body;
    expect(listed.filter((v) => v.version === res.body.version)).toHaveLength(1);
  }
}

/** The DynamoDB Local pid in the data directory's dynamodb.pid (0 when there is none). */
const javaPid = (dir = dataDir) => dynamoDbPid(dir);

/** The PID the data directory's lock names. */

const errorLines = (p: LocalProcess) =>
  p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{"level":"ERROR"'));

describe('durability of the local platform (npm start) across SIGKILL', () => {
  it('keeps every acknowledged write through a kill -9 of the process group and of the Node process alone', async () => {
    printLogOnFailure();
    const ledger = newLedger();

    // 1. Under load, kill the whole process group: Node dies, and DynamoDB Local's JVM (in a
    // group of its own, so that a Ctrl-C reaches Node only) exits with it.
    const first = await start();
    const firstJava = javaPid();
    expect(processAlive(firstJava)).toBe(true);
    await writeThenKill(first, ledger, 'a', () => first.killGroup('SIGKILL'));
    expect(await waitForDeath(firstJava, 10_000), 'the JVM exited with the Node process').toBe(true);
    // The kill left the pid file behind (nothing could remove it).
    expect(javaPid()).toBe(firstJava);

    // The kill left the lock too; its process is gone, so the restart takes it over.
    expect(lockPid()).toBe(first.pid);
    // The restart on the same data directory starts cleanly and has every acknowledged write.
    const second = await start();
    expect(lockPid()).toBe(second.pid);
    expect(javaPid()).not.toBe(firstJava);
    await verify(second.baseUrl, ledger);
    await expectVersionsContinue(second.baseUrl, ledger);
    // The admin key is still the one configured, not duplicated.
    const adminKeys = (await listAll<Json>(second.baseUrl, '/api/dataproduct/psk')).filter(
      (k) => k.dataproduct_id !== PRODUCT,
    );
    expect(adminKeys).toMatchObject([{ description: 'bootstrap admin key', deleted_at: null }]);

    // 2. Kill the Node process alone: DynamoDB Local does not outlive it (its launcher reads
    // the stdin pipe from Node to its end), and leaves its pid file behind.
    const secondJava = javaPid();
    await writeThenKill(second, ledger, 'b', () => second.killMain('SIGKILL'));
    expect(await waitForDeath(secondJava, 10_000), 'the JVM exited with its parent').toBe(true);
    expect(javaPid()).toBe(secondJava);

    // The restart finds the pid file's process gone and starts its own DynamoDB Local.
    const third = await start();
    expect(lockPid()).toBe(third.pid);
    expect(javaPid()).not.toBe(secondJava);
    await verify(third.baseUrl, ledger);
    await expectVersionsContinue(third.baseUrl, ledger);
    expect(errorLines(second).concat(errorLines(third)), 'no errors logged after the restarts').toEqual([]);

    // 3. A normal stop after all this still exits cleanly and removes the pid file and the lock.
    const thirdJava = javaPid();
    third.killMain('SIGTERM');
    expect(await third.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, 'dynamodb.pid'))).toBe(false);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    expect(await waitForDeath(thirdJava, 5_000)).toBe(true);
    // Three start-ups of DynamoDB Local's JVM (about 5 s each on an idle 2-core machine, far
    // more on a loaded one) take most of the time: the timeout leaves room for the latter.
  }, 150_000);

  /**
   * infra/local/emulators.ts `stopOrphan` SIGKILLs the pid in a stale dynamodb.pid. After a
   * reboot or plain pid reuse, that pid may belong to an unrelated process, which must survive.
   */
  it('leaves alone an unrelated process whose pid is in a stale dynamodb.pid', async () => {
    printLogOnFailure();
    const dir = join(tmp, 'stale-pid');
    mkdirSync(dir, { recursive: true });
    const decoy = spawn('sleep', ['120'], { stdio: 'ignore' });
    decoys.push(decoy.pid!);
    expect(processAlive(decoy.pid!)).toBe(true);
    // As left by a kill -9 before a reboot (in the file's older form, the bare pid, whose
    // owner is unknown): the pid now belongs to someone else.
    writeFileSync(join(dir, 'dynamodb.pid'), String(decoy.pid));
    const p = spawnPlatform({ dataDir: dir, env: PLATFORM_ENV });
    // The orphan check runs before DynamoDB Local starts, whose pid then replaces the stale one.
    await eventually(
      () => javaPid(dir) !== decoy.pid || !p.running || notYet(p.tail()),
      45_000,
      'DynamoDB Local started (or the platform ended)',
      50,
    );
    expect(javaPid(dir), `DynamoDB Local started:\n${p.tail()}`).not.toBe(decoy.pid);
    expect(processAlive(decoy.pid!), 'the unrelated process survived the start').toBe(true);
    p.killGroup('SIGKILL');
    await p.exited;
  }, 60_000);
});
