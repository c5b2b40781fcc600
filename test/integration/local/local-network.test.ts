import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import {
  commandLineOf,
  type Exit,
  isLoopbackAddress,
  listeningSockets,
  LocalProcess,
  localProcessScratch,
  processTree,
} from '../../support/local-process.js';

/**
 * The local platform (`npm start`, HOST=127.0.0.1) opens no port to the network: neither
 * its API, nor fauxqs (in-process), nor DynamoDB Local (a JVM child, whose own command line
 * cannot bind it to one address). Every TCP port its process tree listens on is found in
 * /proc (as `ss -ltnp` shows them), and each is tried on this machine's own non-loopback
 * addresses, where it must not answer.
 */

let tmp: string | undefined;
let platform: LocalProcess | undefined;

afterAll(async () => {
  if (platform) {
    platform.killGroup('SIGKILL');
    await Promise.race([platform.exited, new Promise((r) => setTimeout(r, 5_000))]);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** This machine's addresses other than loopback (link-local IPv6 ones with their interface). */
function nonLoopbackAddresses(): string[] {
  return Object.entries(networkInterfaces()).flatMap(([name, addresses]) =>
    (addresses ?? [])
      .filter((a) => !a.internal)
      .map((a) => (a.family === 'IPv6' && a.address.startsWith('fe80:') ? `${a.address}%${name}` : a.address)),
  );
}

/** 'connected', or the error code of the attempt ('no answer' after 5 s). */
function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(5_000, () => {
      socket.destroy();
      resolve('no answer');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('the local platform stays local', () => {
  it('listens on loopback only: no port of its process tree answers on a non-loopback address of this machine', async (ctx) => {
    const addresses = nonLoopbackAddresses();
    ctx.skip(
      addresses.length === 0,
      'this machine has no non-loopback address, so there is nothing to show the ports are not reachable on',
    );
    tmp = mkdtempSync(join(tmpdir(), 'dpm-local-network-'));
    const logFile = join(tmp, 'platform.log');
    platform = LocalProcess.spawn({
      dataDir: join(tmp, 'data'),
      logFile,
      env: { STAGE: 'network', DPM_ADMIN_PSK: 'local-network-admin-key-0123456789' },
    });
    const started = platform;
    onTestFailed(() => console.error(`--- ${logFile} ---\n${started.tail(40)}`));
    await started.waitUntilReady(60_000);

    const tree = processTree(started.pid);
    const javaPids = tree.filter((pid) => commandLineOf(pid).includes('DynamoDBLocal'));
    expect(javaPids, 'DynamoDB Local runs as a child of the platform').toHaveLength(1);
    const sockets = listeningSockets(tree);
    const described = sockets.map((s) => `${s.address}:${s.port} (pid ${s.pid}: ${commandLineOf(s.pid).slice(0, 60)})`);

    // What must be there: the API, fauxqs (both in the Node process) and DynamoDB Local.
    const apiPort = Number(new URL(started.baseUrl).port);
    expect(
      sockets.map((s) => s.port),
      described.join('\n'),
    ).toContain(apiPort);
    expect(sockets.filter((s) => s.pid === started.pid).length, described.join('\n')).toBeGreaterThanOrEqual(2);
    expect(
      sockets.filter((s) => s.pid === javaPids[0]),
      described.join('\n'),
    ).toHaveLength(1);

    // Bound to loopback, as the kernel has it...
    expect(sockets.filter((s) => !isLoopbackAddress(s.address)).map((s) => `${s.address}:${s.port}`)).toEqual([]);
    // ...so each port answers on loopback (the probe works) and on no other address of this machine.
    for (const socket of sockets) {
      const loopback = socket.address === '::1' ? '::1' : '127.0.0.1';
      expect(await tryConnect(loopback, socket.port), `${loopback}:${socket.port}`).toBe('connected');
    }
    const answered: string[] = [];
    for (const socket of sockets) {
      for (const address of addresses) {
        if ((await tryConnect(address, socket.port)) === 'connected') answered.push(`${address} port ${socket.port}`);
      }
    }
    expect(answered, `ports listened on:\n${described.join('\n')}`).toEqual([]);
  }, 90_000);
});

/**
 * The local sign-in lets anyone in by name, with no password (docs/identity-and-keys.md): a HOST beyond
 * loopback without AUTH_ISSUER is refused at start, in one line that says to set AUTH_ISSUER,
 * before anything listens (the configuration is read before any port, data directory or
 * emulator). Each run here has listen-loopback-only.mjs preloaded: had the start not refused,
 * its first listen beyond loopback would have ended it before binding, and a run still going
 * is killed with its group. So these runs are never reachable from another machine, whatever
 * the code does. Loopback spellings start as before.
 */
describe('the passwordless local sign-in serves loopback only', () => {
  const scratch = localProcessScratch('dpm-local-host-');
  const ENV = {
    STAGE: 'hosts',
    DPM_ADMIN_PSK: 'local-hosts-admin-key-0123456789ab',
    NODE_OPTIONS: `--import=${new URL('../../support/listen-loopback-only.mjs', import.meta.url).href}`,
  };

  /** The run's exit; a run still going after `ms` is killed with its group, and fails the test. */
  async function exitOf(run: LocalProcess, ms: number): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const exit = await Promise.race([
      run.exited,
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms))),
    ]);
    clearTimeout(timer);
    if (exit) return exit;
    run.killGroup('SIGKILL');
    await run.exited;
    throw new Error(`still running after ${ms / 1000} s (killed):\n${run.tail()}`);
  }

  it.each(['0.0.0.0', '::', '192.0.2.10'])(
    'refuses HOST=%s without AUTH_ISSUER: one line, exit 1, nothing started',
    async (host) => {
      scratch.printLogOnFailure();
      // 192.0.2.10 is TEST-NET-1 (RFC 5737): a LAN-like address no machine has.
      const dataDir = join(scratch.tmp, `refused-${host.replaceAll(':', '_')}`);
      const refused = scratch.spawn({ host, dataDir, env: ENV });
      expect(await exitOf(refused, 30_000), refused.output()).toEqual({ code: 1, signal: null });
      expect(refused.output().trim()).toBe(
        `dpm: invalid configuration: HOST ${host} is not a loopback address, and the local sign-in (no AUTH_ISSUER) lets anyone who reaches it in as any user, admins too, with no password: set AUTH_ISSUER (and AUTH_AUDIENCE) to serve beyond this machine, or use HOST=127.0.0.1`,
      );
      // Nothing was started: no data directory (no lock, no DynamoDB Local).
      expect(existsSync(dataDir), `${dataDir} exists`).toBe(false);
    },
    60_000,
  );

  it.each(['::1', 'localhost'])(
    'starts on the loopback HOST %s, its sign-in there',
    async (host) => {
      scratch.printLogOnFailure();
      const started = scratch.spawn({
        host,
        dataDir: join(scratch.tmp, `started-${host.replaceAll(':', '_')}`),
        env: ENV,
      });
      await started.waitUntilReady(60_000);
      expect(new URL(started.baseUrl).hostname).toBe(host === '::1' ? '[::1]' : 'localhost');
      const discovery = await fetch(`${started.baseUrl}/oidc/.well-known/openid-configuration`, {
        signal: AbortSignal.timeout(10_000),
      });
      expect(discovery.status).toBe(200);
      started.killMain('SIGTERM');
      expect(await exitOf(started, 30_000), started.tail()).toEqual({ code: 0, signal: null });
    },
    90_000,
  );
});
