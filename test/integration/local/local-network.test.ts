import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import {
  commandLineOf,
  isLoopbackAddress,
  listeningSockets,
  LocalProcess,
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
