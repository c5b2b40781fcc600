import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureLocalCertificate, TLS_CERT_FILE, TLS_KEY_FILE } from '../../infra/local/tls.js';

/** The local platform's certificate store (infra/local/tls.ts, docs/sdk.md, connecting over HTTPS). */

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'dpm-tls-'));
  dirs.push(dir);
  return join(dir, 'data');
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const DAY_MS = 86_400_000;
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const mode = (file: string) => statSync(file).mode & 0o777;

describe('the local TLS certificate', () => {
  it('is made at the first call: self-signed for 127.0.0.1, ::1 and localhost, key file mode 0600', async () => {
    const dir = scratch();
    const made = await ensureLocalCertificate(dir);
    expect(made.created).toBe('none kept');
    expect(made.certFile).toBe(join(dir, TLS_CERT_FILE));
    expect(made.keyFile).toBe(join(dir, TLS_KEY_FILE));
    expect(mode(made.keyFile)).toBe(0o600);
    expect(readFileSync(made.certFile, 'utf8')).toBe(made.cert);
    expect(readFileSync(made.keyFile, 'utf8')).toBe(made.key);
    expect(made.key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    // No temporary file left beside them.
    expect(readdirSync(dir).sort()).toEqual([TLS_CERT_FILE, TLS_KEY_FILE]);

    const cert = new X509Certificate(made.cert);
    expect(cert.subject).toContain('CN=localhost');
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.verify(cert.publicKey), 'signed by its own key').toBe(true);
    expect(cert.checkHost('localhost', { subject: 'never' })).toBe('localhost');
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBe('::1');
    expect(cert.checkHost('example.com')).toBeUndefined();
    expect(cert.checkIP('10.0.0.1')).toBeUndefined();
    expect(cert.subjectAltName).toMatch(/DNS:localhost/);
    // Its own trust anchor: a CA certificate that also says serverAuth.
    expect(cert.ca).toBe(true);
    expect(cert.keyUsage).toEqual([SERVER_AUTH]);
    expect(made.fingerprint256).toBe(cert.fingerprint256);
    const days = (made.validTo.getTime() - Date.now()) / DAY_MS;
    expect(days).toBeGreaterThan(800);
    expect(days).toBeLessThanOrEqual(825);
    expect(new Date(cert.validFrom).getTime()).toBeLessThan(Date.now());
  });

  it('is the same one at every later call (a restart)', async () => {
    const dir = scratch();
    const first = await ensureLocalCertificate(dir);
    const again = await ensureLocalCertificate(dir);
    expect(again.created).toBeUndefined();
    expect(again.cert).toBe(first.cert);
    expect(again.key).toBe(first.key);
    expect(again.fingerprint256).toBe(first.fingerprint256);
  });

  it('makes the key file mode 0600 again when it was loosened', async () => {
    const dir = scratch();
    const first = await ensureLocalCertificate(dir);
    chmodSync(first.keyFile, 0o644);
    const again = await ensureLocalCertificate(dir);
    expect(again.cert).toBe(first.cert);
    expect(mode(again.keyFile)).toBe(0o600);
  });

  it('is made anew when the kept one cannot serve, saying why', async () => {
    const dir = scratch();
    const first = await ensureLocalCertificate(dir);

    writeFileSync(first.certFile, 'not a certificate');
    const broken = await ensureLocalCertificate(dir);
    expect(broken.created).toBe('the kept one is not a valid PEM certificate and key');
    expect(broken.fingerprint256).not.toBe(first.fingerprint256);

    // Another directory's key: not the pair.
    writeFileSync(broken.keyFile, (await ensureLocalCertificate(scratch())).key);
    const unpaired = await ensureLocalCertificate(dir);
    expect(unpaired.created).toBe('the kept key does not match it');
    expect(new X509Certificate(unpaired.cert).checkPrivateKey(createPrivateKey(unpaired.key))).toBe(true);

    rmSync(unpaired.keyFile);
    expect((await ensureLocalCertificate(dir)).created).toBe('none kept');
  });

  it('is replaced a week before it expires', async () => {
    const dir = scratch();
    const first = await ensureLocalCertificate(dir);
    const kept = await ensureLocalCertificate(dir, new Date(first.validTo.getTime() - 8 * DAY_MS));
    expect(kept.created).toBeUndefined();
    const later = new Date(first.validTo.getTime() - 6 * DAY_MS);
    const renewed = await ensureLocalCertificate(dir, later);
    expect(renewed.created).toMatch(/^the kept one expires on /);
    expect(renewed.validTo.getTime()).toBeGreaterThan(later.getTime() + 800 * DAY_MS);
  });

  it('serves TLS that a client trusting the certificate file accepts, for 127.0.0.1 and localhost', async () => {
    const made = await ensureLocalCertificate(scratch());
    const server = createServer({ cert: made.cert, key: made.key }, (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const get = (options: { servername?: string; ca?: string }) =>
        new Promise<string>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path: '/', ...options, timeout: 10_000 }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve(body));
          });
          req.on('timeout', () => req.destroy(new Error('timed out')));
          req.on('error', reject);
          req.end();
        });
      expect(await get({ ca: made.cert })).toBe('ok');
      expect(await get({ ca: made.cert, servername: 'localhost' })).toBe('ok');
      await expect(get({ ca: made.cert, servername: 'example.com' })).rejects.toMatchObject({
        code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      });
      // Not trusted by default: self-signed.
      await expect(get({})).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
