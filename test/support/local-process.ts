import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, onTestFailed } from 'vitest';
import { LOCK_FILE } from '../../infra/local/data-lock.js';
import { readPidFile } from '../../infra/local/emulators.js';

/**
 * The local platform as a user runs it: what `npm start` runs, `node --import tsx
 * infra/local/main.ts` (or `npm start` itself, with the `npm` option), in its own process
 * group, with stdout and stderr appended to a log file. DynamoDB Local's JVM runs in a group
 * of its own and exits with the Node process.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What the child inherits from this process: enough to find node and java (and how to run it), nothing that configures the service. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'JAVA_HOME', 'JAVA_TOOL_OPTIONS', 'USER'];

export interface LocalProcessOptions {
  readonly dataDir: string;
  /** stdout and stderr are appended here (it may hold earlier runs). */
  readonly logFile: string;
  /** The service's configuration (STAGE, DPM_ADMIN_PSK, ...); DPM_DATA_DIR is set, and PORT=0 and HTTPS_PORT=0 unless given. */
  readonly env?: Record<string, string>;
  /**
   * HOST (default 127.0.0.1). Only loopback spellings, or a HOST the start refuses before it
   * listens anywhere (a test of that refusal): tests never bind beyond loopback.
   */
  readonly host?: string;
  readonly startTimeoutMs?: number;
  /**
   * Started as `npm start` (npm, then what its script runs) rather than as the Node process
   * itself: the PID is npm's, as `npm start & ... kill $!` has it.
   */
  readonly npm?: boolean;
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export class LocalProcess {
  /** Settles when the Node process (not its group) has exited. */
  readonly exited: Promise<Exit>;
  private exit: Exit | undefined;
  private url: string | undefined;
  private spawnError: Error | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly logFile: string,
    /** Where this run's output starts in the log file. */
    private readonly logOffset: number,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      }),
    );
    child.once('error', (err) => (this.spawnError = err));
  }

  /** Starts the platform and waits until `GET /api/health/ping` answers 200. */
  static async start(options: LocalProcessOptions): Promise<LocalProcess> {
    const started = LocalProcess.spawn(options);
    try {
      await started.waitUntilReady(options.startTimeoutMs ?? 60_000);
    } catch (err) {
      started.killGroup('SIGKILL');
      throw err;
    }
    return started;
  }

  /** Starts the platform without waiting for it. */
  static spawn(options: LocalProcessOptions): LocalProcess {
    const env: Record<string, string> = {};
    for (const name of INHERITED) if (process.env[name]) env[name] = process.env[name]!;
    // PORT=0 (any free port) unless the test fixes one (the local sign-in's issuer is the URL);
    // HTTPS_PORT too, else a fixed PORT would make it PORT + 443, which another test may hold.
    Object.assign(env, { PORT: '0', HTTPS_PORT: '0' }, options.env, {
      DPM_DATA_DIR: options.dataDir,
      HOST: options.host ?? '127.0.0.1',
    });
    const offset = existsSync(options.logFile) ? statSync(options.logFile).size : 0;
    const fd = openSync(options.logFile, 'a');
    let child: ChildProcess;
    try {
      const [command, args]: [string, string[]] = options.npm
        ? ['npm', ['start']]
        : [process.execPath, ['--import', 'tsx', 'infra/local/main.ts']];
      child = spawn(command, args, {
        cwd: ROOT,
        env,
        detached: true,
        stdio: ['ignore', fd, fd],
      });
    } finally {
      closeSync(fd);
    }
    return new LocalProcess(child, options.logFile, offset);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get baseUrl(): string {
    if (!this.url) throw new Error('the platform has not started');
    return this.url;
  }

  /** The same API over TLS (`HTTPS: https://...` in the start-up output). */
  get httpsBaseUrl(): string {
    const url = /^ {2}HTTPS: (https:\/\/\S+)/m.exec(this.output())?.[1];
    if (!url || !this.url) throw new Error('the platform has not started');
    return url;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** This run's output so far. */
  output(): string {
    if (!existsSync(this.logFile)) return '';
    return readFileSync(this.logFile).subarray(this.logOffset).toString('utf8');
  }

  /** The last lines of this run's output. */
  tail(lines = 40): string {
    return this.output()
      .split('\n')
      .slice(-lines - 1)
      .join('\n');
  }

  /** Signals the whole process group (the JVM too); ignores a group that is already gone. */
  killGroup(signal: NodeJS.Signals): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }

  /** Signals the Node process alone: its children (DynamoDB Local) are orphaned. */
  killMain(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** Waits until `GET /api/health/ping` answers 200; fails early when the process exits. */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.spawnError) throw new Error(`could not start the platform: ${this.spawnError.message}`);
      if (this.exit) {
        throw new Error(
          `the platform exited during start-up (code ${this.exit.code}, signal ${this.exit.signal}):\n${this.tail()}`,
        );
      }
      this.url ??= /listening on (http:\/\/\S+)/.exec(this.output())?.[1];
      if (this.url) {
        const ping = await fetch(`${this.url}/api/health/ping`, { signal: AbortSignal.timeout(2_000) }).catch(
          () => undefined,
        );
        if (ping?.status === 200) return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the platform did not answer GET /api/health/ping within ${timeoutMs / 1000}s:\n${this.tail()}`);
  }
}

/** A call to a platform a test started (helpers.ts `api` calls the suite's shared one, and records what it sends). */
export interface PlatformCall {
  readonly method?: string;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** A Bearer token: sent instead of `psk`. */
  readonly token?: string;
  /** A pre-shared key (`Authorization-PSK`), sent when there is no `token`. */
  readonly psk?: string;
  /** Given up after this long (default 30 s). */
  readonly timeoutMs?: number;
}

/** What the platform answered; `body` is the JSON it sent (undefined when it sent none). */
export interface PlatformAnswer<T = any> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
  readonly text: string;
}

/** One HTTP call to a platform a test started (it rejects when no answer comes: the platform was killed). */
export async function callPlatform<T = any>(
  base: string,
  path: string,
  call: PlatformCall = {},
): Promise<PlatformAnswer<T>> {
  const headers: Record<string, string> = call.token
    ? { authorization: `Bearer ${call.token}` }
    : call.psk
      ? { 'authorization-psk': call.psk }
      : {};
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method: call.method ?? 'GET',
    headers,
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
    signal: AbortSignal.timeout(call.timeoutMs ?? 30_000),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body: body as T, text };
}

/**
 * Every item of a list endpoint of a platform a test started, following `X-Next-Cursor`
 * (1,000 a page). Each page must answer 200; with `lenient`, a page that does not makes the
 * answer empty (a platform kept busy may answer 503).
 */
export async function listAllOf<T>(
  base: string,
  path: string,
  call: PlatformCall & { readonly lenient?: boolean } = {},
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = `${path}${sep}limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res: PlatformAnswer<T[]> = await callPlatform<T[]>(base, page, call);
    if (call.lenient && res.status !== 200) return [];
    expect(res.status, `GET ${path}: ${res.text}`).toBe(200);
    items.push(...res.body);
    cursor = res.headers.get('x-next-cursor');
  } while (cursor);
  return items;
}

/** Whether a process is alive: it exists and is not a zombie waiting to be reaped. */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Waits until `pid` is gone (or a zombie); false after `timeoutMs`. */
export async function waitForDeath(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** The DynamoDB Local pid that `<dataDir>/dynamodb.pid` records (0 when there is none). */
export function dynamoDbPid(dataDir: string): number {
  const file = join(dataDir, 'dynamodb.pid');
  if (!existsSync(file)) return 0;
  return readPidFile(file)?.dynamodb.pid ?? 0;
}

/** `pid` and all its descendants (from /proc). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

/** The command line of a process ('' when it is gone). */
export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

export interface ListeningSocket {
  readonly pid: number;
  /** The local address as the kernel has it (IPv4-mapped IPv6 addresses as `::ffff:a.b.c.d`). */
  readonly address: string;
  readonly port: number;
}

/** The TCP sockets in LISTEN state that the processes `pids` hold (from /proc, as `ss -ltnp` shows them). */
export function listeningSockets(pids: readonly number[]): ListeningSocket[] {
  const owner = new Map<string, number>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // exited meanwhile
    }
    for (const fd of fds) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        if (inode) owner.set(inode, pid);
      } catch {
        // closed meanwhile
      }
    }
  }
  const sockets: ListeningSocket[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (cols.length < 10 || cols[3] !== '0A') continue;
      const pid = owner.get(cols[9]!);
      if (pid === undefined) continue;
      const [hexAddress, hexPort] = cols[1]!.split(':') as [string, string];
      sockets.push({ pid, address: kernelAddress(hexAddress), port: parseInt(hexPort, 16) });
    }
  }
  return sockets;
}

/** /proc/net/tcp{,6} addresses: 32-bit words in host (little-endian) byte order. */
function kernelAddress(hex: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < hex.length; i += 8) {
    const word = hex.slice(i, i + 8);
    for (let b = 6; b >= 0; b -= 2) bytes.push(parseInt(word.slice(b, b + 2), 16));
  }
  if (bytes.length === 4) return bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  const v6 = groups.join(':');
  if (v6.startsWith('0:0:0:0:0:ffff:')) return `::ffff:${bytes.slice(12).join('.')}`;
  if (v6 === '0:0:0:0:0:0:0:0') return '::';
  if (v6 === '0:0:0:0:0:0:0:1') return '::1';
  return v6;
}

/** Whether a local address (as listeningSockets gives it) is a loopback address. */
export function isLoopbackAddress(address: string): boolean {
  return address.startsWith('127.') || address.startsWith('::ffff:127.') || address === '::1';
}

/**
 * A scratch directory for tests that start the real service as child processes: its data
 * directory and log file, and the processes started (and decoys spawned) in it. afterAll
 * kills what is left of every process group and removes the directory.
 */
export function localProcessScratch(prefix: string): {
  readonly tmp: string;
  readonly dataDir: string;
  readonly logFile: string;
  /** Every process started, so that afterAll can kill what is left of each group. */
  readonly started: LocalProcess[];
  /**
   * Starts the platform (LocalProcess.spawn) on this scratch's data directory and log file
   * unless `options` name others, without waiting for it; it is among `started`.
   */
  spawn(options?: Partial<LocalProcessOptions>): LocalProcess;
  /** Processes the tests spawned besides the platform (decoys). */
  readonly decoys: number[];
  /** Prints the end of each run the current test starts (stdout and stderr), if the test fails. */
  printLogOnFailure(): void;
  /** The PID the data directory's lock names (infra/local/data-lock.ts). */
  lockPid(): number;
} {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const scratch = {
    tmp,
    dataDir: join(tmp, 'data'),
    logFile: join(tmp, 'platform.log'),
    started: [] as LocalProcess[],
    decoys: [] as number[],
    spawn(options: Partial<LocalProcessOptions> = {}) {
      const p = LocalProcess.spawn({ dataDir: scratch.dataDir, logFile: scratch.logFile, ...options });
      scratch.started.push(p);
      return p;
    },
    printLogOnFailure() {
      const from = scratch.started.length;
      onTestFailed(() => {
        const runs = scratch.started
          .slice(from)
          .map((p, i) => `--- run ${i + 1} (pid ${p.pid}) of ${scratch.logFile} ---\n${p.tail(40)}`);
        console.error(runs.join('\n') || '(no run started)');
      });
    },
    lockPid: () => Number(readFileSync(join(scratch.dataDir, LOCK_FILE), 'utf8').split('\n')[0]),
  };
  afterAll(async () => {
    for (const p of scratch.started) {
      p.killGroup('SIGKILL');
      await Promise.race([p.exited, new Promise((r) => setTimeout(r, 5_000))]);
    }
    for (const pid of scratch.decoys) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(tmp, { recursive: true, force: true });
  });
  return scratch;
}
