import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BOOTSTRAP_PRINCIPAL, tokenPrincipal } from '../../shared/auth/caller.js';
import { JwtVerifier } from '../../shared/auth/jwt.js';

// principals, docs/identity-and-keys.md: a caller's principal is the token's `iss` and `sub` together, never
// `preferred_username`, `email` or another claim a user can edit or share.

const AUDIENCE = 'dpm-api';
let server: Server;
let jwksUrl: string;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A token with exactly these claims besides iss, iat and exp (no `aud` unless given). */
const signed = (issuer: string, claims: Record<string, unknown>, typ = 'JWT') =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', typ, kid: 'k1' })
    .setIssuer(issuer)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);

/** A token for the API's audience. */
const sign = (issuer: string, claims: Record<string, unknown>) => signed(issuer, { aud: AUDIENCE, ...claims });

const verifier = (issuer: string) => new JwtVerifier({ issuer, audience: AUDIENCE, jwksUrl });

describe('a Bearer caller’s principal (identity)', () => {
  it('is the issuer and subject together: the same subject and name at another issuer is someone else', async () => {
    const a = 'https://idp-a.test/realms/x';
    const b = 'https://idp-b.test/realms/x';
    const claims = { sub: 'same-subject', preferred_username: 'alice' };
    const fromA = await verifier(a).verify(await sign(a, claims));
    const fromB = await verifier(b).verify(await sign(b, claims));
    expect(fromA.name).toBe('alice');
    expect(fromB.name).toBe('alice');
    expect(fromA.principal).toBe(tokenPrincipal(a, 'same-subject'));
    expect(fromB.principal).toBe(tokenPrincipal(b, 'same-subject'));
    expect(fromA.principal).not.toBe(fromB.principal);
  });

  it('ignores the editable claims: the name follows them, the principal does not', async () => {
    const iss = 'https://idp.test';
    const v = verifier(iss);
    const one = await v.verify(await sign(iss, { sub: 's1', preferred_username: 'alice', email: 'a@x.test' }));
    const renamed = await v.verify(await sign(iss, { sub: 's1', preferred_username: 'mallory', email: 'm@x.test' }));
    const namesake = await v.verify(await sign(iss, { sub: 's2', preferred_username: 'alice', email: 'a@x.test' }));
    expect([one.name, renamed.name, namesake.name]).toEqual(['alice', 'mallory', 'alice']);
    expect(renamed.principal).toBe(one.principal);
    expect(namesake.principal).not.toBe(one.principal);
  });

  it('can never be the bootstrap key’s reserved principal, whatever the issuer and subject say', async () => {
    const iss = 'https://idp.test';
    const v = verifier(iss);
    for (const sub of [BOOTSTRAP_PRINCIPAL, `${iss}${BOOTSTRAP_PRINCIPAL}`, 'admin']) {
      const caller = await v.verify(await sign(iss, { sub, preferred_username: BOOTSTRAP_PRINCIPAL }));
      expect(caller.principal, sub).not.toBe(BOOTSTRAP_PRINCIPAL);
    }
    expect(tokenPrincipal('dpm:bootstrap', '-admin')).not.toBe(BOOTSTRAP_PRINCIPAL);
    expect(tokenPrincipal('', BOOTSTRAP_PRINCIPAL)).not.toBe(BOOTSTRAP_PRINCIPAL);
  });

  it('keeps issuer and subject apart: no two different pairs give the same principal', () => {
    const pairs: [string, string][] = [
      ['a', 'b:c'],
      ['a:b', 'c'],
      ['a", "b', 'c'],
      ['a', '", "b", "c'],
      ['a\\', 'b'],
      ['a', '\\b'],
      ['ab', ''],
      ['', 'ab'],
    ];
    const principals = pairs.map(([iss, sub]) => tokenPrincipal(iss, sub));
    expect(new Set(principals).size).toBe(pairs.length);
  });
});

describe('a verified token remembered for the next requests', () => {
  afterEach(() => vi.useRealTimers());

  const signExpiring = (issuer: string, exp: number) =>
    new SignJWT({ sub: 's1', preferred_username: 'alice' })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(AUDIENCE)
      .setExpirationTime(exp)
      .sign(privateKey);

  it('is never accepted past its expiry and the clock tolerance, however recently it passed', async () => {
    const iss = 'https://idp.test';
    const v = verifier(iss);
    const t0 = Date.now();
    vi.useFakeTimers({ toFake: ['Date'], now: t0 });
    // expired 30 s ago: still inside the 60 s tolerance, so it passes now...
    const token = await signExpiring(iss, Math.floor(t0 / 1000) - 30);
    expect((await v.verify(token)).principal).toBe(tokenPrincipal(iss, 's1'));
    vi.setSystemTime(t0 + 20_000);
    expect((await v.verify(token)).principal).toBe(tokenPrincipal(iss, 's1'));
    // ...and not 45 s later, although the remembering window (a minute) has not run out
    vi.setSystemTime(t0 + 45_000);
    await expect(v.verify(token)).rejects.toThrow('Token expired');
  });

  it('is remembered only when it passed: a refused token stays refused, a good one keeps passing', async () => {
    const iss = 'https://idp.test';
    const v = verifier(iss);
    const good = await sign(iss, { sub: 's1', preferred_username: 'alice' });
    const forged = `${good.slice(0, good.lastIndexOf('.'))}.${'A'.repeat(342)}`;
    for (let i = 0; i < 3; i++) {
      await expect(v.verify(forged)).rejects.toThrow('Invalid token');
      expect((await v.verify(good)).principal).toBe(tokenPrincipal(iss, 's1'));
    }
  });

  it('is remembered per verifier and token: another issuer’s verifier checks it afresh and refuses it', async () => {
    const iss = 'https://idp.test';
    const token = await sign(iss, { sub: 's1', preferred_username: 'alice' });
    expect((await verifier(iss).verify(token)).name).toBe('alice');
    await expect(verifier('https://other.test').verify(token)).rejects.toThrow('Invalid token');
  });
});

describe('only access tokens pass (ID tokens of the same issuer do not)', () => {
  const iss = 'https://idp.test';
  const bare = (claims: Record<string, unknown>, typ?: string) => signed(iss, claims, typ);
  const refused = async (claims: Record<string, unknown>, message: string, typ?: string) =>
    expect(verifier(iss).verify(await bare(claims, typ)), JSON.stringify(claims)).rejects.toThrow(
      new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
    );
  const user = { sub: 'u1', preferred_username: 'alice' };

  it('refuses Cognito ID tokens, Keycloak ID and refresh tokens, and tokens with an ID token’s nonce or hashes', async () => {
    const notAccess = 'Invalid token: not an access token';
    await refused({ ...user, aud: AUDIENCE, token_use: 'id', 'cognito:groups': ['approver'] }, notAccess);
    await refused({ ...user, aud: AUDIENCE, typ: 'ID' }, notAccess);
    await refused({ ...user, aud: AUDIENCE, typ: 'Refresh' }, notAccess);
    await refused({ ...user, aud: AUDIENCE, nonce: 'n-0S6_WzA2Mj' }, notAccess);
    await refused({ ...user, aud: AUDIENCE, at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q' }, notAccess);
    await refused({ ...user, aud: AUDIENCE, c_hash: 'LDktKdoQak3Pk0cnXxCltA' }, notAccess);
    // declaring itself an access token does not excuse an ID token's hash
    await refused({ ...user, aud: AUDIENCE, typ: 'Bearer', at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q' }, notAccess);
    await refused({ ...user, aud: AUDIENCE }, notAccess, 'id_token+jwt');
  });

  it('accepts access tokens: plain, with a nonce when declared as one, with RFC 9068’s authentication claims', async () => {
    const v = verifier(iss);
    const accepted = [
      await bare({ ...user, aud: AUDIENCE }),
      await bare({ ...user, aud: [AUDIENCE, 'account'], auth_time: 1, acr: '1', amr: ['pwd'], azp: 'dpm-docs' }),
      // Keycloak before 25 copies the sign-in's nonce into its access tokens, typed Bearer
      await bare({ ...user, aud: AUDIENCE, typ: 'Bearer', nonce: 'n-1', azp: 'dpm-docs' }),
      await bare({ ...user, aud: AUDIENCE, nonce: 'n-2' }, 'at+jwt'),
    ];
    for (const token of accepted) expect((await v.verify(token)).principal).toBe(tokenPrincipal(iss, 'u1'));
  });

  it('accepts a Cognito access token (no aud) when its client_id is the audience, and no other aud-less token', async () => {
    const cognito = {
      sub: 'c-sub',
      username: 'carol',
      token_use: 'access',
      scope: 'openid',
      'cognito:groups': ['approver'],
    };
    const caller = await verifier(iss).verify(await bare({ ...cognito, client_id: AUDIENCE }));
    expect(caller).toMatchObject({
      principal: tokenPrincipal(iss, 'c-sub'),
      roles: new Set(['approver']),
      via: 'bearer',
    });
    await refused({ ...cognito, client_id: 'another-app-client' }, 'Invalid token');
    await refused({ ...user, client_id: AUDIENCE }, 'Invalid token');
    await refused({ ...user }, 'Invalid token');
    // an aud naming another API is never made good by client_id
    await refused({ ...cognito, aud: 'other-api', client_id: AUDIENCE }, 'Invalid token');
  });
});
