/**
 * The local identity provider (docs/identity-and-keys.md, principals): `npm start` without AUTH_ISSUER serves a real
 * OpenID Connect provider at /oidc, and the service trusts its tokens like any issuer's.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/emulators.js';
import { localUserToken, SignInError } from '../../../infra/local/local-sign-in.js';
import { type RunningPlatform, startPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';

const run = promisify(execFile);
const ADMIN_PSK = 'local-idp-admin-key-0123456789';

let dataDir: string;
let port: number;
let platform: RunningPlatform;

const start = () =>
  startPlatform(
    loadConfig({
      STAGE: 'localidp',
      PORT: String(port),
      // Any free TLS port: PORT + 443 (the default) may be a port another test's platform holds.
      HTTPS_PORT: '0',
      HOST: '127.0.0.1',
      DPM_DATA_DIR: dataDir,
      DPM_ADMIN_PSK: ADMIN_PSK,
      // `dpm-scripts` is also the scripts client's id: the two must stay two principals
      DPM_LOCAL_USERS: 'alice:approver;bob:approver;carol:;dana:admin,approver;dpm-scripts:',
    }),
    { inMemory: true },
  );

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'dpm-local-idp-'));
  port = await freePort();
  platform = await start();
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

const call = (path: string, token: string, init: RequestInit = {}) =>
  fetch(`${platform.baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  });

/** A client-credentials token of the scripts client (`secret` its secret unless given). */
const scriptsToken = (secret = platform.identity!.scriptsClientSecret) =>
  fetch(`${platform.baseUrl}/oidc/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`dpm-scripts:${secret}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials',
  });

describe('the local OpenID Connect provider', () => {
  it('publishes discovery with authorization code + PKCE and client credentials, and the service trusts it', async () => {
    expect(platform.identity?.issuer).toBe(`${platform.baseUrl}/oidc`);
    expect(platform.config.auth).toMatchObject({ issuer: `${platform.baseUrl}/oidc`, audience: 'dpm-api' });
    const res = await fetch(`${platform.baseUrl}/oidc/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const discovery = (await res.json()) as Record<string, unknown>;
    expect(discovery).toMatchObject({
      issuer: `${platform.baseUrl}/oidc`,
      authorization_endpoint: `${platform.baseUrl}/oidc/auth`,
      token_endpoint: `${platform.baseUrl}/oidc/token`,
      jwks_uri: `${platform.baseUrl}/oidc/jwks`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(discovery.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'client_credentials']),
    );
  });

  it('requires PKCE of the /docs client: an authorization request without a code challenge is refused', async () => {
    const authorize = (extra: string) =>
      fetch(
        `${platform.baseUrl}/oidc/auth?client_id=dpm-docs&response_type=code&scope=openid&state=s` +
          `&redirect_uri=${encodeURIComponent(`${platform.baseUrl}/docs/oauth2-redirect.html`)}${extra}`,
        { redirect: 'manual' },
      );
    const without = await authorize('');
    const refused = new URL(without.headers.get('location')!, platform.baseUrl);
    expect(refused.pathname).toBe('/docs/oauth2-redirect.html');
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    expect(refused.searchParams.get('error_description')).toMatch(/PKCE/);
    expect(refused.searchParams.has('code')).toBe(false);
    // With one, the same request goes on to the sign-in page.
    const challenge = '&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256';
    const withChallenge = await authorize(challenge);
    expect(new URL(withChallenge.headers.get('location')!, platform.baseUrl).pathname).toMatch(
      /^\/oidc\/interaction\//,
    );
  });

  it('signs a local user in and issues an RFC 9068 access token with the user’s name and roles', async () => {
    const token = await localUserToken(platform.baseUrl, 'dana');
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
    expect(decodeJwt(token)).toMatchObject({
      iss: `${platform.baseUrl}/oidc`,
      aud: 'dpm-api',
      sub: 'dana',
      preferred_username: 'dana',
      roles: ['admin', 'approver'],
      exp: expect.any(Number),
    });
    // An admin session: lists every document, carol's too, which another user cannot read.
    const carol = await localUserToken(platform.baseUrl, 'carol');
    const made = await call('/api/documents', carol, {
      method: 'POST',
      body: JSON.stringify({ filename: 'carol.txt', mime_type: 'text/plain', size_bytes: 1 }),
    });
    expect(made.status).toBe(201);
    const { id } = (await made.json()) as { id: string };
    const listed = await call('/api/documents?limit=1000', token);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { id: string }[]).map((d) => d.id)).toContain(id);
    expect((await call(`/api/documents/${id}`, await localUserToken(platform.baseUrl, 'alice'))).status).toBe(403);
  });

  it('refuses a name that is not a local user, and a sign-in form without its interaction', async () => {
    await expect(localUserToken(platform.baseUrl, 'mallory')).rejects.toThrow(SignInError);
    await expect(localUserToken(platform.baseUrl, 'mallory')).rejects.toThrow(/No local user 'mallory'/);
    const forged = await fetch(`${platform.baseUrl}/oidc/interaction/forged/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'login=dana',
    });
    expect(forged.status).toBe(400);
    expect(forged.headers.get('set-cookie')).toBeNull();
  });

  it('walks create → submit → approve with two local users; the author cannot approve', async () => {
    const carol = await localUserToken(platform.baseUrl, 'carol');
    const alice = await localUserToken(platform.baseUrl, 'alice');
    const base = '/api/decisions/walkthrough/credit-limit/versions';
    const created = await call(base, alice, { method: 'POST', body: JSON.stringify({ content: { limit: 100 } }) });
    expect(created.status).toBe(201);
    const { version } = (await created.json()) as { version: number };
    expect((await call(`${base}/${version}/submit`, alice, { method: 'POST' })).status).toBe(200);
    // alice is an approver but the author: the four-eyes rule.
    expect((await call(`${base}/${version}/approve`, alice, { method: 'POST' })).status).toBe(403);
    // carol is no approver.
    expect((await call(`${base}/${version}/approve`, carol, { method: 'POST' })).status).toBe(403);
    const bob = await localUserToken(platform.baseUrl, 'bob');
    const approved = await call(`${base}/${version}/approve`, bob, { method: 'POST' });
    expect(approved.status).toBe(200);
    expect(await approved.json()).toMatchObject({ status: 'approved', created_by: 'alice', approved_by: 'bob' });
  });

  it('gives scripts a client-credentials token (no user, no roles)', async () => {
    const res = await scriptsToken();
    expect(res.status).toBe(200);
    const { access_token: token } = (await res.json()) as { access_token: string };
    expect(decodeJwt(token)).toMatchObject({
      sub: 'client:dpm-scripts',
      client_id: 'dpm-scripts',
      aud: 'dpm-api',
      preferred_username: 'dpm-scripts',
      roles: [],
    });
    expect((await call('/api/documents', token)).status).toBe(200);
    expect((await scriptsToken('wrong')).status).toBe(401);
  });

  it('keeps a client apart from a local user of the same name: neither owns what the other made', async () => {
    const res = await scriptsToken();
    const client = ((await res.json()) as { access_token: string }).access_token;
    const user = await localUserToken(platform.baseUrl, 'dpm-scripts');
    expect(decodeJwt(user)).toMatchObject({ sub: 'dpm-scripts', preferred_username: 'dpm-scripts' });
    const make = async (token: string) => {
      const made = await call('/api/documents', token, {
        method: 'POST',
        body: JSON.stringify({ filename: 'mine.txt', mime_type: 'text/plain', size_bytes: 1 }),
      });
      expect(made.status).toBe(201);
      return ((await made.json()) as { id: string }).id;
    };
    const own = async (token: string) =>
      ((await (await call('/api/documents?limit=1000', token)).json()) as { id: string }[]).map((d) => d.id);
    const byUser = await make(user);
    const byClient = await make(client);
    expect((await call(`/api/documents/${byUser}`, user)).status).toBe(200);
    expect((await call(`/api/documents/${byUser}`, client)).status).toBe(403);
    expect((await call(`/api/documents/${byClient}`, client)).status).toBe(200);
    expect((await call(`/api/documents/${byClient}`, user)).status).toBe(403);
    expect(await own(user)).toContain(byUser);
    expect(await own(user)).not.toContain(byClient);
    expect(await own(client)).toContain(byClient);
    expect(await own(client)).not.toContain(byUser);
  });

  it('npm run -s token prints exactly one line: an access token of that user the service accepts', async () => {
    const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', AUTH_ISSUER: '' };
    const out = await run('npm', ['run', '-s', 'token', '--', 'alice'], { env, timeout: 60_000 });
    const lines = out.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(out.stderr).toBe('');
    expect(decodeProtectedHeader(lines[0]!)).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
    expect(decodeJwt(lines[0]!)).toMatchObject({
      iss: `${platform.baseUrl}/oidc`,
      aud: 'dpm-api',
      client_id: 'dpm-cli',
      sub: 'alice',
      preferred_username: 'alice',
      roles: ['approver'],
    });
    expect((await call('/api/documents', lines[0]!)).status).toBe(200);

    type Failed = { code: number; stdout: string; stderr: string };
    const refuse = (args: string[], extra: Record<string, string> = {}) =>
      run('npm', ['run', '-s', 'token', '--', ...args], { env: { ...env, ...extra }, timeout: 60_000 }).then(
        () => expect.unreachable('the token script succeeded') as never,
        (err: Failed) => err,
      );
    const unknown = await refuse(['mallory']);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toBe("dpm: No local user 'mallory'\n");
    // Not for another issuer's service, and never beyond loopback (the local sign-in serves loopback only).
    const otherIssuer = await refuse(['alice'], { AUTH_ISSUER: 'https://id.example.com/realms/dpm' });
    expect(otherIssuer).toMatchObject({ code: 1, stdout: '' });
    expect(otherIssuer.stderr).toMatch(/^dpm: AUTH_ISSUER is set \(https:\/\/id\.example\.com\/realms\/dpm\)/);
    const remote = await refuse(['alice'], { HOST: '0.0.0.0' });
    expect(remote).toMatchObject({ code: 1, stdout: '' });
    expect(remote.stderr).toMatch(/^dpm: HOST 0\.0\.0\.0 is not a loopback address/);
    expect(await refuse([])).toMatchObject({ code: 2, stdout: '' });
  }, 90_000);

  it('keeps its signing key in the data directory: tokens survive a restart', async () => {
    const token = await localUserToken(platform.baseUrl, 'alice');
    await platform.stop();
    platform = await start();
    expect((await call('/api/documents', token)).status).toBe(200);
  }, 120_000);
});
