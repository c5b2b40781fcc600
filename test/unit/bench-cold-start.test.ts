import { randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { exportJWK, generateKeyPair } from 'jose';
import { KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUPS } from '../../infra/groups.js';
import { KmsKeyWrapper } from '../../shared/aws/kms.js';
import { SecretBox } from '../../shared/secrets.js';
import { COLD_START_CASES } from '../bench/cold-start-cases.js';
import { signedInBare } from '../bench/cold-start.js';
import { startTestIssuer } from '../support/identity-provider.js';
import { mintToken, type TokenOptions } from '../support/tokens.js';
import { startKmsStandIn, type KmsStandIn } from '../bench/kms-stand-in.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/*
 * What the benchmark's cold starts (test/bench/cold-start.ts) rely on: a case per HTTP group,
 * a child connects to loopback only, and the KMS stand-in answers the service's own KMS client
 * as KMS would.
 */

describe('the cold-start cases', () => {
  it('give every HTTP group its main request, once', () => {
    expect(COLD_START_CASES.map((c) => c.group).sort()).toEqual(GROUPS.map((g) => g.name).sort());
  });
});

describe("the cold-start children's loopback-only guard", () => {
  // The guard wraps Socket.prototype.connect: a stand-in that records instead of connecting
  // sits under it, so nothing here can reach any address.
  const reached: unknown[][] = [];
  const original = net.Socket.prototype.connect;
  let isLoopbackAddress: (address: string) => boolean;
  let mark: string;
  /** What the guard wrote on stderr, where the bench looks for refusals. */
  const written: string[] = [];
  const stderrWrite = process.stderr.write;
  beforeAll(async () => {
    process.stderr.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof process.stderr.write;
    net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
      reached.push(args);
      return this;
    } as typeof net.Socket.prototype.connect;
    ({ isLoopbackAddress, REFUSED_MARK: mark } = await import('../bench/loopback-only.mjs'));
  });
  afterAll(() => {
    net.Socket.prototype.connect = original;
    process.stderr.write = stderrWrite;
  });

  const refusal = (socket: net.Socket) =>
    new Promise<NodeJS.ErrnoException>((resolve) => socket.once('error', resolve));

  it('tells loopback addresses from every other', () => {
    for (const a of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', '::ffff:127.0.0.1'])
      expect(isLoopbackAddress(a), a).toBe(true);
    for (const a of [
      '10.0.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '::',
      '192.0.2.1',
      '::ffff:10.0.0.1',
      'fd00::1',
      'localhost',
    ])
      expect(isLoopbackAddress(a), a).toBe(false);
  });

  it('refuses an address literal outside loopback before connecting, in both call forms', async () => {
    reached.length = 0;
    const direct = new net.Socket();
    const directError = refusal(direct);
    direct.connect({ host: '169.254.169.254', port: 80 });
    expect((await directError).code).toBe('ECONNREFUSED');
    // net.connect hands its normalized [options, callback] array
    const normalized = new net.Socket();
    const normalizedError = refusal(normalized);
    (normalized.connect as (...args: unknown[]) => net.Socket)([{ host: '10.1.2.3', port: 443 }, null]);
    expect((await normalizedError).code).toBe('ECONNREFUSED');
    const byPort = new net.Socket();
    const byPortError = refusal(byPort);
    byPort.connect(80, '192.0.2.1');
    expect((await byPortError).code).toBe('ECONNREFUSED');
    expect(reached).toEqual([]);
    expect(written.filter((w) => w.includes(mark))).toEqual([
      `\n${mark} 169.254.169.254:80\n`,
      `\n${mark} 10.1.2.3:443\n`,
      `\n${mark} 192.0.2.1:80\n`,
    ]);
  });

  it('lets loopback through untouched', () => {
    reached.length = 0;
    new net.Socket().connect({ host: '127.0.0.1', port: 1 });
    new net.Socket().connect({ host: '::1', port: 1 });
    expect(reached.map((args) => (args[0] as { host: string }).host)).toEqual(['127.0.0.1', '::1']);
    expect((reached[0]![0] as { lookup?: unknown }).lookup).toBeUndefined();
  });

  it('checks what a host name resolves to, single or all addresses', async () => {
    reached.length = 0;
    const answers: Record<string, string[]> = {
      'local.test': ['127.0.0.1'],
      'metadata.test': ['127.0.0.1', '169.254.169.254'],
    };
    const fakeLookup = (host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
      const addresses = answers[host]!;
      if (options.all)
        cb(
          null,
          addresses.map((address) => ({ address, family: 4 })),
        );
      else cb(null, addresses.at(-1), 4);
    };
    for (const host of Object.keys(answers)) new net.Socket().connect({ host, port: 80, lookup: fakeLookup as never });
    const lookups = reached.map((args) => (args[0] as { lookup: typeof fakeLookup }).lookup);
    const resolve = (lookup: typeof fakeLookup, host: string, all: boolean) =>
      new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[] }>((done) =>
        lookup(host, { all }, (err, address) =>
          done({ err: err as NodeJS.ErrnoException | null, address: address as string }),
        ),
      );
    expect(await resolve(lookups[0]!, 'local.test', false)).toEqual({ err: null, address: '127.0.0.1' });
    expect((await resolve(lookups[0]!, 'local.test', true)).err).toBeNull();
    expect((await resolve(lookups[1]!, 'metadata.test', false)).err?.code).toBe('ECONNREFUSED');
    // one stray address among loopback ones is enough to refuse
    expect((await resolve(lookups[1]!, 'metadata.test', true)).err?.code).toBe('ECONNREFUSED');
  });
});

describe('the KMS stand-in', () => {
  let kms: KmsStandIn;
  const operations: string[] = [];
  beforeAll(async () => {
    kms = await startKmsStandIn((operation) => operations.push(operation));
  });
  afterAll(() => kms.stop());

  const client = () =>
    new KMSClient({
      region: 'us-east-1',
      endpoint: kms.endpoint,
      credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
    });

  it("seals and opens a secret through the service's own KMS key wrapper, one call each", async () => {
    operations.length = 0;
    const box = new SecretBox(new KmsKeyWrapper(client(), kms.keyArn));
    const secret = randomBytes(24).toString('base64');
    const sealed = await box.seal(secret, 'idp-client:cold-start');
    expect(JSON.stringify(sealed)).not.toContain(secret);
    expect(await new SecretBox(new KmsKeyWrapper(client(), kms.keyArn)).open(sealed, 'idp-client:cold-start')).toBe(
      secret,
    );
    expect(operations).toEqual(['GenerateDataKey', 'Decrypt']);
  });

  it('refuses a data key it did not wrap as KMS does', async () => {
    const box = new SecretBox(new KmsKeyWrapper(client(), kms.keyArn));
    const sealed = await box.seal('x', 'ctx');
    const forged = { ...sealed, key: randomBytes(60).toString('base64') };
    await expect(box.open(forged, 'ctx')).rejects.toMatchObject({ name: 'InvalidCiphertextException' });
  });
});

describe("the bare handler's sign-in (the cold starts' yardstick makes the service's sign-in calls)", () => {
  let idp: Awaited<ReturnType<typeof startTestIssuer>>;
  let dir: string;
  let handler: (event: unknown, context: unknown) => Promise<{ statusCode: number; body: string }>;
  const audience = 'dpm-api';
  const event = (authorization?: string) => ({ headers: authorization ? { authorization } : {} });
  beforeAll(async () => {
    idp = await startTestIssuer();
    process.env.AUTH_ISSUER = idp.issuer;
    process.env.AUTH_AUDIENCE = audience;
    dir = mkdtempSync(join(tmpdir(), 'dpm-bare-sign-in-'));
    // the bare handler it wraps answers 200
    writeFileSync(join(dir, 'bare.mjs'), "export const handler = async () => ({ statusCode: 200, body: 'ok' });");
    writeFileSync(join(dir, 'signed.mjs'), signedInBare('./bare.mjs'));
    ({ handler } = await import(pathToFileURL(join(dir, 'signed.mjs')).href));
  });
  afterAll(async () => {
    delete process.env.AUTH_ISSUER;
    delete process.env.AUTH_AUDIENCE;
    rmSync(dir, { recursive: true, force: true });
    await idp.stop();
  });
  const token = (options: TokenOptions = {}) =>
    mintToken(idp.privateJwk, { issuer: idp.issuer, audience }, 'bare', options);

  it('answers a request with a valid token', async () => {
    expect((await handler(event(`Bearer ${await token()}`), {})).statusCode).toBe(200);
  });

  it('refuses a token of another key, issuer or audience, an expired one and a tampered one', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const tampered = (await token()).split('.');
    tampered[1] = Buffer.from(JSON.stringify({ sub: 'x', iss: idp.issuer, aud: audience, exp: 9e9 })).toString(
      'base64url',
    );
    for (const bad of [
      await token({ key: { ...(await exportJWK(privateKey)), kid: 'test-key-1' } }),
      await token({ issuer: 'http://127.0.0.1:1/other' }),
      await token({ audience: 'another-api' }),
      await token({ expiresIn: '-1m' }),
      tampered.join('.'),
    ])
      expect((await handler(event(`Bearer ${bad}`), {})).statusCode).toBe(401);
  });
});
