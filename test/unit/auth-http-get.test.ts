import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { tokenPrincipal } from '../../shared/auth/caller.js';
import { fetchDiscovery, oauthEndpointsOf } from '../../shared/auth/discovery.js';
import { httpGet, MAX_ANSWER_BYTES } from '../../shared/auth/http-get.js';
import { JwtVerifier } from '../../shared/auth/jwt.js';
import { Unavailable } from '../../shared/errors.js';

// The issuer's discovery document and JWKS are read over node:http(s), never through the
// global fetch (whose first call in a cold Lambda sets up undici), with fetch's failures,
// timeouts and redirects as before. Every server here is a loopback server of the test's own.

const AUDIENCE = 'dpm-api';
let server: Server;
let base: string;
let jwk: JWK;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
/** The paths the issuer was asked for, in order. */
let asked: string[] = [];
/** Connections held open and never answered (the blackhole routes), closed after each test. */
const held = new Set<Socket>();
/** Another loopback server of the test's: every connection is reset at once. */
let resetting: Server;
let resetBase: string;

const json = (res: ServerResponse, body: unknown, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};

const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/idp/.well-known/openid-configuration': (_req, res) =>
    json(res, {
      issuer: `${base}/idp`,
      jwks_uri: `${base}/idp/jwks`,
      authorization_endpoint: `${base}/idp/auth`,
      token_endpoint: `${base}/idp/token`,
    }),
  '/idp/jwks': (_req, res) => json(res, { keys: [jwk] }),
  // an issuer whose discovery moved: followed, as fetch did
  '/moved/.well-known/openid-configuration': (_req, res) =>
    res.writeHead(302, { location: '/idp/.well-known/openid-configuration' }).end(),
  // a JWKS that moved: jose asks not to follow (redirect: 'manual'), so it is no key set
  '/moved-jwks': (_req, res) => res.writeHead(302, { location: '/idp/jwks' }).end(),
  '/loop/.well-known/openid-configuration': (_req, res) =>
    res.writeHead(307, { location: '/loop/.well-known/openid-configuration' }).end(),
  '/gzip/.well-known/openid-configuration': (_req, res) =>
    res
      .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
      .end(gzipSync(JSON.stringify({ jwks_uri: `${base}/idp/jwks` }))),
  '/huge/.well-known/openid-configuration': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`{"jwks_uri":"${base}/idp/jwks","pad":"${'x'.repeat(MAX_ANSWER_BYTES)}"}`);
  },
  '/down/.well-known/openid-configuration': (_req, res) => json(res, { error: 'unavailable' }, 503),
  '/blackhole/.well-known/openid-configuration': (req) => held.add(req.socket),
  '/blackhole-jwks': (req) => held.add(req.socket),
  // the status line and part of the body, then nothing
  '/stalls/.well-known/openid-configuration': (req, res) => {
    held.add(req.socket);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"jwks_uri":');
  },
};

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  server = createServer((req, res) => {
    asked.push(req.url ?? '');
    const route = routes[req.url ?? ''];
    if (route) route(req, res);
    else json(res, {}, 404);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  resetting = createServer();
  resetting.on('connection', (socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
  resetBase = `http://127.0.0.1:${(resetting.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await new Promise<void>((resolve) => resetting.close(() => resolve()));
});

/** The global fetch throws: any call to it fails the verification under test. */
const fetchCalls = vi.fn(() => {
  throw new Error('global fetch was called');
});

beforeEach(() => {
  asked = [];
  fetchCalls.mockClear();
  vi.stubGlobal('fetch', fetchCalls);
});

afterEach(() => {
  vi.unstubAllGlobals();
  for (const socket of held) socket.destroy();
  held.clear();
});

const token = (issuer: string, sub = 's1') =>
  new SignJWT({ sub, preferred_username: 'alice', aud: AUDIENCE })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: 'k1' })
    .setIssuer(issuer)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);

describe('a Bearer token verified with the issuer’s discovery and JWKS', () => {
  it('reads both over node:http, never through the global fetch, and keeps the key set (jose’s cache)', async () => {
    const issuer = `${base}/idp`;
    const verifier = new JwtVerifier({ issuer, audience: AUDIENCE, jwksUrl: undefined });
    const caller = await verifier.verify(await token(issuer));
    expect(caller.principal).toBe(tokenPrincipal(issuer, 's1'));
    expect(asked).toEqual(['/idp/.well-known/openid-configuration', '/idp/jwks']);
    // another token: the key set is kept, nothing is asked again
    expect((await verifier.verify(await token(issuer, 's2'))).principal).toBe(tokenPrincipal(issuer, 's2'));
    expect(asked).toHaveLength(2);
    expect(fetchCalls).not.toHaveBeenCalled();
  });

  it('sends jose’s headers with the JWKS request', async () => {
    const seen: IncomingMessage['headers'][] = [];
    const listener = (req: IncomingMessage) => req.url === '/idp/jwks' && seen.push(req.headers);
    server.on('request', listener);
    try {
      const issuer = `${base}/idp`;
      await new JwtVerifier({ issuer, audience: AUDIENCE, jwksUrl: `${base}/idp/jwks` }).verify(await token(issuer));
    } finally {
      server.off('request', listener);
    }
    expect(seen).toHaveLength(1);
    expect(seen[0]!['user-agent']).toMatch(/^jose\//);
    expect(seen[0]!.accept).toBe('application/json, application/jwk-set+json');
  });

  it('is 503 when the JWKS redirects (jose does not follow), is reset or does not answer', async () => {
    const issuer = `${base}/idp`;
    const good = await token(issuer);
    for (const jwksUrl of [`${base}/moved-jwks`, `${resetBase}/jwks`]) {
      await expect(new JwtVerifier({ issuer, audience: AUDIENCE, jwksUrl }).verify(good), jwksUrl).rejects.toThrow(
        new Unavailable('Identity provider did not answer'),
      );
    }
    // jose's own timeout (3 s) on a JWKS that never answers
    const started = Date.now();
    await expect(
      new JwtVerifier({ issuer, audience: AUDIENCE, jwksUrl: `${base}/blackhole-jwks` }).verify(good),
    ).rejects.toThrow(new Unavailable('Identity provider did not answer'));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(fetchCalls).not.toHaveBeenCalled();
  });

  it('is 503 when the discovery does not answer, fails or has no jwks_uri', async () => {
    for (const [path, message] of [
      ['/down', 'Identity provider discovery failed'],
      ['/nowhere', 'Identity provider discovery failed'],
      ['/huge', 'Identity provider discovery has no jwks_uri'],
    ] as const) {
      const issuer = `${base}${path}`;
      await expect(
        new JwtVerifier({ issuer, audience: AUDIENCE, jwksUrl: undefined }).verify(await token(issuer)),
        path,
      ).rejects.toThrow(new Unavailable(message));
    }
    await expect(
      new JwtVerifier({ issuer: resetBase, audience: AUDIENCE, jwksUrl: undefined }).verify(await token(resetBase)),
    ).rejects.toThrow(new Unavailable('Identity provider did not answer'));
    expect(fetchCalls).not.toHaveBeenCalled();
  });
});

describe('the discovery document', () => {
  it('follows redirects as fetch did, up to its bound', async () => {
    expect(await fetchDiscovery(`${base}/moved`)).toMatchObject({ jwks_uri: `${base}/idp/jwks` });
    await expect(fetchDiscovery(`${base}/loop`)).rejects.toThrow(new Unavailable('Identity provider did not answer'));
    expect(asked.filter((p) => p.startsWith('/loop/'))).toHaveLength(21);
  });

  it('is decoded when the issuer compresses it anyway', async () => {
    expect(await fetchDiscovery(`${base}/gzip`)).toEqual({ jwks_uri: `${base}/idp/jwks` });
  });

  it('times out with its timeout, before the status line or in the body', async () => {
    await expect(fetchDiscovery(`${base}/blackhole`, 200)).rejects.toThrow(
      new Unavailable('Identity provider did not answer'),
    );
    // a body cut short by the timeout is no document (as fetch's json() failing was)
    expect(await fetchDiscovery(`${base}/stalls`, 200)).toEqual({});
  });

  it('gives the OAuth endpoints of the docs page, and none while the issuer does not answer', async () => {
    expect(await oauthEndpointsOf(`${base}/idp`)()).toEqual({
      authorizationUrl: `${base}/idp/auth`,
      tokenUrl: `${base}/idp/token`,
    });
    expect(await oauthEndpointsOf(resetBase)()).toBeUndefined();
    expect(fetchCalls).not.toHaveBeenCalled();
  });
});

describe('httpGet', () => {
  it('rejects as fetch does: a TypeError for a failed connection, the timeout’s TimeoutError', async () => {
    await expect(httpGet(`${resetBase}/x`, { signal: AbortSignal.timeout(5_000), redirects: 0 })).rejects.toThrow(
      TypeError,
    );
    await expect(httpGet('ftp://127.0.0.1/x', { signal: AbortSignal.timeout(5_000), redirects: 0 })).rejects.toThrow(
      TypeError,
    );
    await expect(
      httpGet(`${base}/blackhole-jwks`, { signal: AbortSignal.timeout(100), redirects: 0 }),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('reads no answer past its bound', async () => {
    const answer = await httpGet(`${base}/huge/.well-known/openid-configuration`, {
      signal: AbortSignal.timeout(5_000),
      redirects: 0,
    });
    expect(answer.status).toBe(200);
    await expect(answer.text()).rejects.toThrow(`answer larger than ${MAX_ANSWER_BYTES} bytes`);
  });

  it('answers a redirect as it is when told not to follow', async () => {
    const answer = await httpGet(`${base}/moved-jwks`, { signal: AbortSignal.timeout(5_000), redirects: 0 });
    expect(answer).toMatchObject({ status: 302, ok: false });
    expect(asked).toEqual(['/moved-jwks']);
  });
});
