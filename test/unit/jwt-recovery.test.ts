import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { tokenPrincipal } from '../../shared/auth/caller.js';
import { JwtVerifier } from '../../shared/auth/jwt.js';
import { Unavailable } from '../../shared/errors.js';

// An identity provider that comes back after an outage: the first request after it is back
// verifies, also when it came while a fetch begun during the outage was still under way
// (requests share one fetch of the discovery document and of the JWKS). The provider is a
// loopback server of the test's own; the outage's fetch is held by it and failed on cue (as
// a blackholed fetch times out), so nothing here waits on a clock.

const AUDIENCE = 'dpm-api';
let server: Server;
let base: string;
let jwk: JWK;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

/**
 * What the provider does with a request: answer it, hold it unanswered (until the test
 * fails it) or reset its connection at once.
 */
let mode: 'up' | 'hold' | 'reset';
/** The paths asked for, in order, whatever the mode. */
let asked: string[];
/** The requests held, and a wait for the next one. */
let held: ServerResponse[];
let heldNext: Promise<void>;
let onHeld: () => void;
const expectHeld = () => (heldNext = new Promise<void>((resolve) => (onHeld = resolve)));

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    asked.push(req.url ?? '');
    if (mode === 'reset') return void req.socket.resetAndDestroy();
    if (mode === 'hold') {
      held.push(res);
      return onHeld();
    }
    res.setHeader('content-type', 'application/json');
    if (req.url === '/idp/.well-known/openid-configuration') {
      res.end(JSON.stringify({ issuer: `${base}/idp`, jwks_uri: `${base}/idp/jwks` }));
    } else if (req.url === '/idp/jwks') {
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.writeHead(404).end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  mode = 'up';
  asked = [];
  held = [];
  expectHeld();
});

const issuer = () => `${base}/idp`;

const token = (sub: string) =>
  new SignJWT({ aud: AUDIENCE, preferred_username: sub })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: 'k1' })
    .setIssuer(issuer())
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);

/** Lets every request under way go as far as it can without the provider (microtasks and I/O callbacks). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The held fetches fail: their connections are cut before an answer. */
const failHeld = () => {
  for (const res of held) res.socket?.destroy();
  held = [];
};

const DOWN = new Unavailable('Identity provider did not answer');

const DISCOVERY = '/idp/.well-known/openid-configuration';
const JWKS = '/idp/jwks';

describe.each([
  ['the JWKS (AUTH_JWKS_URL given)', false],
  ['the discovery document (no AUTH_JWKS_URL)', true],
] as const)('a fetch of %s begun during an outage', (_what, discovered) => {
  const verifier = () =>
    new JwtVerifier({ issuer: issuer(), audience: AUDIENCE, jwksUrl: discovered ? undefined : `${base}${JWKS}` });
  /** What the held fetch asked for, and what a verification asks for once the provider answers. */
  const heldPaths = discovered ? [DISCOVERY] : [JWKS];
  const afterRecovery = discovered ? [DISCOVERY, JWKS] : [JWKS];

  it('fails only the request that began it: one that came after the provider was back verifies', async () => {
    const v = verifier();
    const [during, after] = await Promise.all([token('during'), token('after')]);
    mode = 'hold';
    const first = v.verify(during);
    await heldNext;
    // The provider is back; a request comes while the outage's fetch is still under way.
    mode = 'up';
    const second = v.verify(after);
    await settle();
    failHeld();
    await expect(first).rejects.toThrow(DOWN);
    expect((await second).principal).toBe(tokenPrincipal(issuer(), 'after'));
    // the outage's fetch, then the second request's own
    expect(asked).toEqual([...heldPaths, ...afterRecovery]);
    // and the keys are kept: nothing more is asked
    expect((await v.verify(await token('later'))).principal).toBe(tokenPrincipal(issuer(), 'later'));
    expect(asked).toHaveLength(heldPaths.length + afterRecovery.length);
  });

  it('is a 503 for every request while the provider stays down, each tried once more at most', async () => {
    const v = verifier();
    const [during, after] = await Promise.all([token('during'), token('after')]);
    mode = 'hold';
    const first = v.verify(during);
    await heldNext;
    // Still down: the fetch of the second request's own try is refused too.
    mode = 'reset';
    const second = v.verify(after);
    await settle();
    failHeld();
    await expect(first).rejects.toThrow(DOWN);
    await expect(second).rejects.toThrow(DOWN);
    expect(asked).toEqual([...heldPaths, heldPaths[0]]);
  });
});

describe('a provider that refused a fetch', () => {
  it('is asked again by the very next request once it is back: no failure is remembered', async () => {
    for (const jwksUrl of [`${base}${JWKS}`, undefined]) {
      asked = [];
      const v = new JwtVerifier({ issuer: issuer(), audience: AUDIENCE, jwksUrl });
      mode = 'reset';
      await expect(v.verify(await token('refused')), jwksUrl).rejects.toThrow(DOWN);
      // a request that came with no fetch under way is not tried again
      expect(asked, jwksUrl).toHaveLength(1);
      mode = 'up';
      expect((await v.verify(await token('back'))).principal, jwksUrl).toBe(tokenPrincipal(issuer(), 'back'));
    }
  });
});
