import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { connect, createServer, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/emulators.js';
import { TLS_CERT_FILE, TLS_KEY_FILE } from '../../../infra/local/tls.js';
import { callPlatform, type LocalProcess, localProcessScratch } from '../../support/local-process.js';
import { api, slug } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * HTTPS locally (docs/sdk.md, issue 27 item 1): the platform serves the same API over TLS on
 * HTTPS_PORT (default PORT + 443) with a self-signed certificate for 127.0.0.1, ::1 and
 * localhost, made at the first start and kept in DPM_DATA_DIR (key mode 0600), the same
 * after a restart.
 */

interface HttpsAnswer {
  status: number;
  text: string;
  body: any;
  /** The certificate the server presented. */
  peer: X509Certificate;
}

/** One call over TLS trusting `ca` (the platform's certificate file's content) only. */
function httpsCall(
  base: string,
  path: string,
  options: { ca?: string; psk?: string; method?: string; body?: unknown; servername?: string } = {},
): Promise<HttpsAnswer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: options.method ?? 'GET',
        ca: options.ca,
        servername: options.servername,
        headers: {
          ...(options.psk ? { 'authorization-psk': options.psk } : {}),
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        const peer = new X509Certificate((res.socket as TLSSocket).getPeerCertificate().raw);
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode!, text, body: parsed, peer });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url.href}`)));
    req.on('error', reject);
    req.end(body);
  });
}

const ca = () => readFileSync(provided('caCertFile'), 'utf8');
const https = () => provided('httpsBaseUrl');
const psk = () => provided('adminPsk');

describe('the test platform over HTTPS', () => {
  it('serves on its own port, with its certificate in the data directory', () => {
    const http = new URL(provided('baseUrl'));
    const tls = new URL(https());
    expect(tls.protocol).toBe('https:');
    expect(tls.hostname).toBe(http.hostname);
    expect(tls.port).not.toBe(http.port);
    expect(provided('caCertFile')).toBe(join(provided('platformDataDir'), TLS_CERT_FILE));
  });

  it('answers as over HTTP, trusting only the certificate file', async () => {
    // Open, authenticated, refused and unknown: the same status and body on both ports.
    for (const path of ['/api/health/ping', '/openapi.json', '/api/no-such-route']) {
      const [plain, secure] = await Promise.all([api(path), httpsCall(https(), path, { ca: ca() })]);
      expect(secure.status, path).toBe(plain.status);
      expect(secure.text, path).toBe(plain.text);
    }
    const [plain401, secure401] = await Promise.all([
      api('/api/data_shares'),
      httpsCall(https(), '/api/data_shares', { ca: ca() }),
    ]);
    expect(secure401.status).toBe(401);
    expect(secure401.text).toBe(plain401.text);

    // A change over HTTPS is what HTTP reads: one app, one store.
    const name = slug('https-share');
    const created = await httpsCall(https(), '/api/data_shares', {
      ca: ca(),
      psk: psk(),
      method: 'POST',
      body: { name, description: 'over TLS' },
    });
    expect(created.status, created.text).toBe(201);
    const read = await api(`/api/data_shares/${name}`, { psk: psk() });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    const removed = await httpsCall(https(), `/api/data_shares/${name}`, { ca: ca(), psk: psk(), method: 'DELETE' });
    expect(removed.status).toBe(204);
    expect((await api(`/api/data_shares/${name}`, { psk: psk() })).status).toBe(404);
  });

  it('presents the self-signed certificate for 127.0.0.1, ::1 and localhost', async () => {
    const byIp = await httpsCall(https(), '/api/health/ping', { ca: ca() });
    const cert = byIp.peer;
    expect(cert.fingerprint256).toBe(new X509Certificate(ca()).fingerprint256);
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBe('::1');
    expect(cert.checkHost('localhost', { subject: 'never' })).toBe('localhost');
    expect(cert.subjectAltName).toMatch(/DNS:localhost/);
    // Verified under the name localhost too (the address is 127.0.0.1 either way).
    expect((await httpsCall(https(), '/api/health/ping', { ca: ca(), servername: 'localhost' })).status).toBe(200);
    await expect(
      httpsCall(https(), '/api/health/ping', { ca: ca(), servername: 'dpm.example.com' }),
    ).rejects.toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    // Self-signed: not trusted by default.
    await expect(httpsCall(https(), '/api/health/ping')).rejects.toMatchObject({
      code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    });
  });

  it('keeps the key readable by its owner only (mode 0600)', () => {
    const keyFile = join(dirname(provided('caCertFile')), TLS_KEY_FILE);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
  });

  it('ends a plain-HTTP request to the TLS port at once instead of hanging', async () => {
    const { port } = new URL(https());
    const socket: Socket = connect({ host: '127.0.0.1', port: Number(port) });
    const ended = new Promise<string>((resolve) => {
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('close', () => resolve(received));
      socket.on('error', () => undefined);
    });
    socket.write('GET /api/health/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const bound = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 10_000).unref());
    const outcome = await Promise.race([ended, bound]);
    socket.destroy();
    expect(outcome).not.toBe('hung');
    // Whatever came back (a TLS alert, or nothing) is no HTTP answer.
    expect(outcome).not.toMatch(/^HTTP\//);
  });
});

describe('npm start over HTTPS', () => {
  const { dataDir, spawn, printLogOnFailure } = localProcessScratch('dpm-local-https-');

  /** A free port whose + 443 is free as well (the default HTTPS_PORT). */
  async function portPair(): Promise<number> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const port = await freePort();
      if (port + 443 > 65535) continue;
      const free = await new Promise<boolean>((resolve) => {
        const probe = createServer();
        probe.once('error', () => resolve(false));
        probe.listen(port + 443, '127.0.0.1', () => probe.close(() => resolve(true)));
      });
      if (free) return port;
    }
    throw new Error('no free port p with p + 443 free');
  }

  async function start(port: number): Promise<LocalProcess> {
    // HTTPS_PORT blank is unset: the default, PORT + 443.
    const p = spawn({
      env: { STAGE: 'https', PORT: String(port), HTTPS_PORT: '', DPM_ADMIN_PSK: 'local-https-admin-key-0123456789' },
    });
    await p.waitUntilReady(180_000);
    return p;
  }

  async function stop(p: LocalProcess): Promise<void> {
    p.killMain('SIGTERM');
    expect(await p.exited).toEqual({ code: 0, signal: null });
  }

  it('serves on PORT + 443 with a certificate made at the first start and the same after a restart', async () => {
    printLogOnFailure();
    const port = await portPair();
    const first = await start(port);
    expect(first.httpsBaseUrl).toBe(`https://127.0.0.1:${port + 443}`);
    expect(first.output()).toContain(`certificate: ${join(dataDir, TLS_CERT_FILE)}`);
    expect(first.output()).toContain('made a self-signed certificate for 127.0.0.1, ::1 and localhost');
    const certFile = join(dataDir, TLS_CERT_FILE);
    const cert = readFileSync(certFile, 'utf8');
    const key = readFileSync(join(dataDir, TLS_KEY_FILE), 'utf8');
    expect(statSync(join(dataDir, TLS_KEY_FILE)).mode & 0o777).toBe(0o600);
    const served = await httpsCall(first.httpsBaseUrl, '/api/health/ping', { ca: cert });
    expect(served.status).toBe(200);
    expect(served.body).toEqual((await callPlatform(first.baseUrl, '/api/health/ping')).body);
    expect(served.peer.fingerprint256).toBe(new X509Certificate(cert).fingerprint256);
    await stop(first);

    const second = await start(port);
    expect(second.httpsBaseUrl).toBe(`https://127.0.0.1:${port + 443}`);
    expect(second.output()).not.toContain('made a');
    expect(readFileSync(certFile, 'utf8')).toBe(cert);
    expect(readFileSync(join(dataDir, TLS_KEY_FILE), 'utf8')).toBe(key);
    // A client that trusted the first start's certificate trusts this one.
    const again = await httpsCall(second.httpsBaseUrl, '/api/health/ping', { ca: cert });
    expect(again.status).toBe(200);
    expect(again.peer.fingerprint256).toBe(served.peer.fingerprint256);
    await stop(second);
  }, 400_000);
});
