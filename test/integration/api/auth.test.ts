import { createHmac, createPublicKey, type JsonWebKey } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { eventually, notYet } from '../../support/eventually.js';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import {
  adminPsk,
  adminToken,
  api,
  type ApiResponse,
  approverToken,
  deleteKey,
  insertKey,
  slug,
  token,
} from '../helpers.js';
import { provided } from '../provided.js';

/** Authentication and roles (docs/identity-and-keys.md) over HTTP against the local platform. */

const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** A path of an authenticated endpoint: 404 when authenticated (nothing there), 401 when not. */
const emptyKeyPath = () => `/api/decisions/${slug('ws')}/${slug('k')}/versions`;

function expectUnauthorized(res: ApiResponse): void {
  expect(res.status, res.text).toBe(401);
  expect(res.body).toEqual({ error: expect.any(String), code: 401 });
  expect(res.body.error).not.toBe('');
  expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
}

function expectForbidden(res: ApiResponse): void {
  expect(res.status, res.text).toBe(403);
  expect(res.body).toEqual({ error: expect.any(String), code: 403 });
}

/** A request the platform answered as authenticated: 404 on a key with no versions. */
function expectAuthenticated(res: ApiResponse): void {
  expect(res.status, res.text).toBe(404);
  expect(res.body).toEqual({ error: expect.any(String), code: 404 });
}

/** Claims every valid token carries, for hand-built tokens. */
function standardClaims(name: string) {
  return {
    preferred_username: name,
    sub: `sub-${name}`,
    iss: provided('issuer'),
    aud: provided('audience'),
    iat: now(),
    exp: now() + 600,
  };
}

async function createVersion(auth: { token?: string; psk?: string }, content: unknown = { rule: slug('c') }) {
  const base = `/api/decisions/${slug('ws')}/${slug('k')}`;
  const res = await api(`${base}/versions`, { method: 'POST', ...auth, body: { content } });
  return { base, res };
}

/** A submitted version, created by one person and submitted by another: ready for an approver. */
async function submittedVersion() {
  const { base, res } = await createVersion({ token: await token(slug('author')) });
  expect(res.status, res.text).toBe(201);
  const path = `${base}/versions/${res.body.version}`;
  const submitted = await api(`${path}/submit`, { method: 'POST', token: await token(slug('submitter')) });
  expect(submitted.status, submitted.text).toBe(200);
  expect(submitted.body.status).toBe('submitted');
  return path;
}

async function statusOf(versionPath: string): Promise<string> {
  const res = await api(versionPath, { token: await token(slug('reader')) });
  expect(res.status, res.text).toBe(200);
  return res.body.status;
}

describe('no or malformed credentials', () => {
  it('answers 401 ErrorResponse with WWW-Authenticate when no credentials are sent', async () => {
    const res = await api(emptyKeyPath());
    expectUnauthorized(res);
    expect(Object.keys(res.body).sort()).toEqual(['code', 'error']);
  });

  it('refuses empty credential headers', async () => {
    expectUnauthorized(await api(emptyKeyPath(), { headers: { authorization: '', 'authorization-psk': '' } }));
    expectUnauthorized(await api(emptyKeyPath(), { headers: { authorization: 'Bearer' } }));
  });

  it('refuses Authorization: Basic', async () => {
    const basic = Buffer.from('alice:secret').toString('base64');
    expectUnauthorized(await api(emptyKeyPath(), { headers: { authorization: `Basic ${basic}` } }));
  });

  it('refuses a garbage Bearer token', async () => {
    for (const garbage of ['garbage', 'not.a.jwt', 'a.b.c', `${b64({ alg: 'RS256' })}.${b64({})}.`]) {
      expectUnauthorized(await api(emptyKeyPath(), { token: garbage }));
    }
  });
});

describe('Bearer tokens', () => {
  it('accepts a valid token from the issuer', async () => {
    expectAuthenticated(await api(emptyKeyPath(), { token: await token(slug('alice')) }));
  });

  it('accepts the scheme name in any case', async () => {
    const t = await token(slug('alice'));
    expectAuthenticated(await api(emptyKeyPath(), { headers: { authorization: `bearer ${t}` } }));
  });

  it('refuses a token from another issuer', async () => {
    const t = await token(slug('mallory'), { issuer: 'http://127.0.0.1:9/realms/evil' });
    expectUnauthorized(await api(emptyKeyPath(), { token: t }));
  });

  it('refuses a token for another audience', async () => {
    expectUnauthorized(await api(emptyKeyPath(), { token: await token(slug('mallory'), { audience: 'other-api' }) }));
  });

  it('accepts a token whose audience list contains the configured audience', async () => {
    const t = await token(slug('alice'), { audience: ['account', provided('audience')] });
    expectAuthenticated(await api(emptyKeyPath(), { token: t }));
  });

  it('refuses a token expired beyond the 60 s leeway', async () => {
    const t = await token(slug('late'), { expiresIn: now() - 120 });
    expectUnauthorized(await api(emptyKeyPath(), { token: t }));
  });

  it('accepts a token expired 30 s ago (within the leeway)', async () => {
    const t = await token(slug('late'), { expiresIn: now() - 30 });
    expectAuthenticated(await api(emptyKeyPath(), { token: t }));
  });

  it('refuses a token whose nbf is far in the future', async () => {
    const t = await token(slug('early'), { notBefore: now() + 3600, expiresIn: now() + 7200 });
    expectUnauthorized(await api(emptyKeyPath(), { token: t }));
  });

  it('accepts a token whose nbf is 30 s in the future (within the leeway)', async () => {
    const t = await token(slug('early'), { notBefore: now() + 30 });
    expectAuthenticated(await api(emptyKeyPath(), { token: t }));
  });

  it('refuses a token signed by another key that claims the issuer key id', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const forged: JWK = {
      ...(await exportJWK(privateKey)),
      kid: provided('privateJwk').kid ?? 'test-key-1',
      alg: 'RS256',
    };
    expectUnauthorized(await api(emptyKeyPath(), { token: await token(slug('mallory'), { key: forged }) }));
  });

  it('refuses an unsigned token (alg none)', async () => {
    for (const alg of ['none', 'None', 'NONE']) {
      const unsigned = `${b64({ alg, typ: 'JWT', kid: provided('privateJwk').kid })}.${b64(standardClaims(slug('mallory')))}.`;
      expectUnauthorized(await api(emptyKeyPath(), { token: unsigned }));
    }
  });

  it('refuses an HMAC (HS256) token signed with a shared secret', async () => {
    const t = await new SignJWT(standardClaims(slug('mallory')))
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: provided('privateJwk').kid })
      .sign(new TextEncoder().encode('a-symmetric-secret-of-at-least-32-bytes'));
    expectUnauthorized(await api(emptyKeyPath(), { token: t }));
  });

  it('refuses an HS256 token keyed with the issuer public key (algorithm confusion)', async () => {
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = provided('privateJwk');
    const pem = createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' }).export({
      type: 'spki',
      format: 'pem',
    });
    const header = b64({ alg: 'HS256', typ: 'JWT', kid: provided('privateJwk').kid });
    const payload = b64(standardClaims(slug('mallory')));
    const signature = createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url');
    expectUnauthorized(await api(emptyKeyPath(), { token: `${header}.${payload}.${signature}` }));
  });

  it('refuses a valid token whose signature was tampered with', async () => {
    const t = await token(slug('alice'));
    const [header, payload] = t.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
    const forged = `${header}.${b64({ ...claims, realm_access: { roles: ['approver', 'admin'] } })}.${t.split('.')[2]}`;
    expectUnauthorized(await api(emptyKeyPath(), { token: forged }));
  });
});

describe('ID tokens never pass as access tokens (README: the token rules)', () => {
  it('refuses a Cognito ID token (token_use id) issued for the API’s client', async () => {
    const res = await api(emptyKeyPath(), { token: await token(slug('cog'), { claims: { token_use: 'id' } }) });
    expectUnauthorized(res);
    expect(res.body.error).toBe('Invalid token: not an access token');
  });

  it('refuses a generic OpenID Connect ID token: a nonce, or the hashes only ID tokens carry', async () => {
    for (const claims of [
      { nonce: 'n-0S6_WzA2Mj', auth_time: now() - 5 },
      { at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q' },
      { c_hash: 'LDktKdoQak3Pk0cnXxCltA' },
      { s_hash: 'x2nDT1n8aKr6eb0kqyWSvw' },
    ]) {
      const res = await api(emptyKeyPath(), { token: await token(slug('oidc'), { claims }) });
      expectUnauthorized(res);
      expect(res.body.error, JSON.stringify(claims)).toBe('Invalid token: not an access token');
    }
  });

  it('accepts access tokens with the claims RFC 9068 allows, and a Keycloak (before 25) access token with a nonce', async () => {
    const authenticated = { auth_time: now() - 5, acr: '1', amr: ['pwd'], azp: 'dpm-docs' };
    expectAuthenticated(await api(emptyKeyPath(), { token: await token(slug('at'), { claims: authenticated }) }));
    const keycloak = await token(slug('kc'), { claims: { typ: 'Bearer', nonce: 'n-1', azp: 'dpm-docs' } });
    expectAuthenticated(await api(emptyKeyPath(), { token: keycloak }));
    const typed = await token(slug('rfc9068'), { typ: 'at+jwt', claims: { nonce: 'n-2' } });
    expectAuthenticated(await api(emptyKeyPath(), { token: typed }));
  });

  it('accepts a Cognito access token, which names the API’s client in client_id and has no aud', async () => {
    const cognito = (name: string, claims: Record<string, unknown>) =>
      token(name, { audience: null, roles: [], claims: { token_use: 'access', scope: 'openid', ...claims } });
    const path = await submittedVersion();
    const name = slug('cognito');
    const res = await api(`${path}/approve`, {
      method: 'POST',
      token: await cognito(name, { client_id: provided('audience'), 'cognito:groups': ['approver'] }),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'approved', approved_by: name });
    // another app client's, or without token_use access, or with an aud naming someone else: refused
    expectUnauthorized(await api(emptyKeyPath(), { token: await cognito(slug('c'), { client_id: 'other-client' }) }));
    const untyped = await token(slug('c'), { audience: null, claims: { client_id: provided('audience') } });
    expectUnauthorized(await api(emptyKeyPath(), { token: untyped }));
    const elsewhere = await token(slug('c'), {
      audience: 'other-api',
      claims: { token_use: 'access', client_id: provided('audience') },
    });
    expectUnauthorized(await api(emptyKeyPath(), { token: elsewhere }));
  });
});

describe("the caller's name", () => {
  it('is preferred_username when present', async () => {
    const name = slug('pref');
    const { res } = await createVersion({ token: await token(name, { claims: { email: `${name}@example.com` } }) });
    expect(res.status, res.text).toBe(201);
    expect(res.body.created_by).toBe(name);
  });

  it('falls back to email without preferred_username', async () => {
    const email = `${slug('mail')}@example.com`;
    const t = await token(slug('x'), { claims: { preferred_username: undefined, email } });
    const { res } = await createVersion({ token: t });
    expect(res.status, res.text).toBe(201);
    expect(res.body.created_by).toBe(email);
  });

  it('falls back to sub without preferred_username and email', async () => {
    const name = slug('subonly');
    const { res } = await createVersion({ token: await token(name, { claims: { preferred_username: undefined } }) });
    expect(res.status, res.text).toBe(201);
    expect(res.body.created_by).toBe(`sub-${name}`);
  });
});

describe('roles from token claims', () => {
  const audience = () => provided('audience');
  const sources: [string, () => Record<string, unknown>][] = [
    ['resource_access.<audience>.roles', () => ({ resource_access: { [audience()]: { roles: ['approver'] } } })],
    ['cognito:groups', () => ({ 'cognito:groups': ['approver'] })],
    ['roles', () => ({ roles: ['approver'] })],
    ['groups', () => ({ groups: ['approver'] })],
  ];

  it('realm_access.roles grants approver', async () => {
    const path = await submittedVersion();
    const name = slug('realm');
    const res = await api(`${path}/approve`, { method: 'POST', token: await approverToken(name) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'approved', approved_by: name });
  });

  it.each(sources)('%s grants approver', async (_source, claims) => {
    const path = await submittedVersion();
    const name = slug('appr');
    // token() always sends realm_access.roles; empty here, so the role comes only from `claims`
    const res = await api(`${path}/approve`, {
      method: 'POST',
      token: await token(name, { roles: [], claims: claims() }),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'approved', approved_by: name });
  });

  it('resource_access.<other-client>.roles does not grant approver', async () => {
    const path = await submittedVersion();
    const t = await token(slug('other'), { claims: { resource_access: { 'other-client': { roles: ['approver'] } } } });
    expectForbidden(await api(`${path}/approve`, { method: 'POST', token: t }));
    expect(await statusOf(path)).toBe('submitted');
  });

  it('a caller without roles may not approve', async () => {
    const path = await submittedVersion();
    expectForbidden(await api(`${path}/approve`, { method: 'POST', token: await token(slug('plain')) }));
    expect(await statusOf(path)).toBe('submitted');
  });

  it('admin does not imply approver', async () => {
    const path = await submittedVersion();
    const t = await adminToken(slug('admin'));
    expectForbidden(await api(`${path}/approve`, { method: 'POST', token: t }));
    expect(await statusOf(path)).toBe('submitted');
  });
});

describe('pre-shared keys', () => {
  it('a valid key authenticates and acts as its creator', async () => {
    const creator = slug('creator');
    const { secret } = await insertKey({ createdBy: creator });
    expectAuthenticated(await api(emptyKeyPath(), { psk: secret }));
    const { res } = await createVersion({ psk: secret });
    expect(res.status, res.text).toBe(201);
    expect(res.body.created_by).toBe(creator);
  });

  it('refuses an unknown key', async () => {
    expectUnauthorized(await api(emptyKeyPath(), { psk: `test_${slug('unknown')}-never-stored` }));
  });

  it('refuses an expired key', async () => {
    const { secret } = await insertKey({
      createdBy: slug('creator'),
      validUntil: new Date(Date.now() - 60_000).toISOString(),
    });
    expectUnauthorized(await api(emptyKeyPath(), { psk: secret }));
  });

  it('refuses a key stored as deleted', async () => {
    const { secret } = await insertKey({ createdBy: slug('creator'), deletedAt: new Date().toISOString() });
    expectUnauthorized(await api(emptyKeyPath(), { psk: secret }));
  });

  it('refuses at once a key deleted before it was ever used', async () => {
    const { secret, hash } = await insertKey({ createdBy: slug('creator') });
    await deleteKey(hash);
    expectUnauthorized(await api(emptyKeyPath(), { psk: secret }));
  });

  it('refuses a key within seconds after it is deleted, once it has been used', async () => {
    const { secret, hash } = await insertKey({ createdBy: slug('creator') });
    expectAuthenticated(await api(emptyKeyPath(), { psk: secret }));
    await deleteKey(hash);
    // Authenticated until it is refused: nothing else in between.
    const res = await eventually(
      async () => {
        const res = await api(emptyKeyPath(), { psk: secret });
        if (res.status === 401) return res;
        expectAuthenticated(res);
        return notYet(res.status);
      },
      4_500,
      'the deleted key refused',
    );
    expectUnauthorized(res);
    // and it stays refused
    expectUnauthorized(await api(emptyKeyPath(), { psk: secret }));
  });

  it('the bootstrap admin key works', async () => {
    const psk = adminPsk();
    expectAuthenticated(await api(emptyKeyPath(), { psk }));
    const { res } = await createVersion({ psk });
    expect(res.status, res.text).toBe(201);
    expect(res.body.created_by).toEqual(expect.any(String));
    expect(res.body.created_by).not.toBe('');
  });

  it('a key holding role approver may not approve: a key is not an identity-provider session', async () => {
    const path = await submittedVersion();
    const { secret } = await insertKey({ createdBy: slug('approver'), roles: ['approver'] });
    expectForbidden(await api(`${path}/approve`, { method: 'POST', psk: secret }));
    expect(await statusOf(path)).toBe('submitted');
  });

  it('tells a key holder (the admin key too) that approving needs a Bearer session, and how to get one', async () => {
    const path = await submittedVersion();
    const res = await api(`${path}/approve`, { method: 'POST', psk: adminPsk() });
    expectForbidden(res);
    expect(res.body.error).toMatch(/identity-provider session \(Authorization: Bearer <token>\) with role 'approver'/);
    expect(res.body.error).toMatch(/npm run -s token/);
  });
});

describe('order of checks (401 → 403 → 422)', () => {
  const invalidPath = '/api/decisions/BAD/k/versions/0/approve';

  it('no credentials and an invalid path: 401, not 422', async () => {
    expectUnauthorized(await api(invalidPath, { method: 'POST' }));
  });

  it('invalid credentials and an invalid path: 401', async () => {
    expectUnauthorized(await api(invalidPath, { method: 'POST', token: 'garbage' }));
    expectUnauthorized(await api(invalidPath, { method: 'POST', psk: `test_${slug('nope')}` }));
  });

  it('an authenticated non-approver and an invalid path: 403', async () => {
    expectForbidden(await api(invalidPath, { method: 'POST', token: await token(slug('plain')) }));
  });

  it('a key with role approver and an invalid path: 403 (no session)', async () => {
    const { secret } = await insertKey({ createdBy: slug('approver'), roles: ['approver'] });
    expectForbidden(await api(invalidPath, { method: 'POST', psk: secret }));
  });

  it('an approver Bearer session and an invalid path: 422 naming each bad parameter', async () => {
    const res = await api(invalidPath, {
      method: 'POST',
      token: await approverToken(slug('approver')),
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'string_pattern_mismatch', loc: ['path', 'workspace'], input: 'BAD' }),
        expect.objectContaining({ type: 'greater_than_equal', loc: ['path', 'version'], ctx: { ge: 1 } }),
      ]),
    );
    expect(res.body.detail).toHaveLength(2);
  });
});
