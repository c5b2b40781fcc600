import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of one dependency, for outage tests. Modes:
 * - `up`: every connection is forwarded to the target, byte for byte;
 * - `down`: the port is closed, so new connections are refused (ECONNREFUSED), and every
 *   open connection (a client's kept-alive socket included) is reset;
 * - `blackhole`: connections are accepted and never answered; open connections stop
 *   being forwarded (their upstream side is closed) and go silent too.
 * Switching back to `up` listens again on the same port and drops the silent sockets.
 */
export type ProxyMode = 'up' | 'down' | 'blackhole';

export interface TcpProxy {
  /** `http://127.0.0.1:<port>`: what the service is configured with instead of the target. */
  readonly url: string;
  readonly port: number;
  readonly mode: ProxyMode;
  /** Connections accepted so far, in any mode (proof that traffic goes through the proxy). */
  readonly accepted: number;
  /** `url` with the target's origin replaced by the proxy's (keeps path and query). */
  rewrite(targetUrl: string): string;
  setMode(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

interface Pair {
  readonly client: Socket;
  upstream: Socket | undefined;
}

/** Starts a proxy on 127.0.0.1 (a free port) forwarding to `target` (an http(s) URL or host:port). */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port: targetPort } = parseTarget(target);
  const pairs = new Set<Pair>();
  let mode: ProxyMode = 'up';
  let accepted = 0;

  const silence = (pair: Pair) => {
    const upstream = pair.upstream;
    pair.upstream = undefined;
    if (upstream) {
      pair.client.unpipe(upstream);
      upstream.unpipe(pair.client);
      upstream.destroy();
    }
    // Whatever the client sends from now on is read and dropped: it never gets an answer.
    pair.client.removeAllListeners('data');
    pair.client.on('data', () => undefined);
    pair.client.resume();
  };

  const forward = (pair: Pair) => {
    const upstream = createConnection({ host: hostname, port: targetPort });
    pair.upstream = upstream;
    upstream.on('error', () => pair.client.destroy());
    upstream.on('close', () => {
      // Closed by the target (not by a switch to blackhole): the client's connection ends too.
      if (pair.upstream === upstream) pair.client.end();
    });
    pair.client.pipe(upstream);
    upstream.pipe(pair.client);
  };

  const server: Server = createServer((client) => {
    accepted += 1;
    const pair: Pair = { client, upstream: undefined };
    pairs.add(pair);
    client.on('error', () => undefined);
    client.on('close', () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    if (mode === 'up') forward(pair);
    else if (mode === 'blackhole') silence(pair);
    else client.resetAndDestroy();
  });
  server.on('error', () => undefined);

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      server.once('error', onError);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', onError);
        resolve();
      });
    });

  const stopListening = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });

  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    port,
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    rewrite(targetUrl: string) {
      const u = new URL(targetUrl);
      u.host = `127.0.0.1:${port}`;
      u.protocol = 'http:';
      return u.toString().replace(/\/$/, targetUrl.endsWith('/') ? '/' : '');
    },
    async setMode(next: ProxyMode) {
      if (next === mode) return;
      const previous = mode;
      mode = next;
      if (next === 'down') {
        const closed = stopListening();
        for (const pair of pairs) {
          pair.upstream?.destroy();
          pair.upstream = undefined;
          pair.client.resetAndDestroy();
        }
        pairs.clear();
        await closed;
      } else if (next === 'blackhole') {
        if (previous === 'down') await listen(port);
        for (const pair of pairs) silence(pair);
      } else {
        // Back up: the silent connections are dropped (their clients gave up long ago).
        for (const pair of pairs) if (!pair.upstream) pair.client.destroy();
        if (previous === 'down') await listen(port);
      }
    },
    async close() {
      const closed = stopListening();
      for (const pair of pairs) {
        pair.upstream?.destroy();
        pair.client.destroy();
      }
      pairs.clear();
      await closed;
    },
  };
}

function parseTarget(target: string): { hostname: string; port: number } {
  if (/^[a-z]+:\/\//i.test(target)) {
    const u = new URL(target);
    const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    return { hostname: u.hostname.replace(/^\[|\]$/g, ''), port };
  }
  const at = target.lastIndexOf(':');
  return { hostname: target.slice(0, at), port: Number(target.slice(at + 1)) };
}
