import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningPlatform, startPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';

/**
 * /console over HTTP (docs/reviewing.md): the page, its files and its Content-Security-Policy, and
 * the local identity provider's side of its sign-in: the `dpm-console` client (authorization
 * code + PKCE from the console's redirect URI) and RP-initiated logout that ends the session.
 */
let platform: RunningPlatform;
let base: string;

beforeAll(async () => {
  platform = await startPlatform(
    loadConfig({
      STAGE: 'console',
      PORT: '0',
      HOST: '127.0.0.1',
      DPM_DATA_DIR: mkdtempSync(join(tmpdir(), 'dpm-console-')),
      DPM_ADMIN_PSK: 'console-admin-key-0123456789',
    }),
    { inMemory: true },
  );
  base = platform.baseUrl;
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe('GET /console', () => {
  it('redirects to /console/', async () => {
    const res = await fetch(`${base}/console`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(new URL(res.headers.get('location')!, base).pathname).toBe('/console/');
  });

  it('serves the page with a policy that allows only its own origin, and its settings as data, not script', async () => {
    const res = await fetch(`${base}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = Object.fromEntries(
      csp.split(';').map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name!, values];
      }),
    );
    expect(directives['default-src']).toEqual(["'self'"]);
    expect(directives['script-src']).toEqual(["'self'"]);
    expect(directives['style-src']).toEqual(["'self'"]);
    // The local issuer lives on the same origin: nothing else is reachable.
    expect(directives['connect-src']).toEqual(["'self'", base]);
    expect(directives['frame-ancestors']).toEqual(["'none'"]);
    expect(csp).not.toContain('unsafe-inline');

    const html = await res.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBe(2);
    for (const [, attributes, body] of scripts) {
      // Either a file of its own origin, or JSON data the browser never runs.
      if (/\bsrc=/.test(attributes!)) expect(attributes).toMatch(/src="\/console\/main\.js"/);
      else expect(attributes).toMatch(/type="application\/json"/);
      if (/type="application\/json"/.test(attributes!)) {
        expect(JSON.parse(body!)).toEqual({ issuer: `${base}/oidc`, clientId: 'dpm-console' });
      }
    }
    expect(html).toContain('href="/console/main.css"');
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
  });

  it('serves its built script and style sheet with their types, bundled (no import of another file)', async () => {
    const js = await fetch(`${base}/console/main.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    const script = await js.text();
    expect(script.length).toBeGreaterThan(1_000);
    // One file: every library is inside it (no bare or remote import left for the browser).
    expect(script).not.toMatch(/(^|[;}])\s*(import|export)\s*[{*"']|\bimport\(/);
    expect(script).toContain('/api/approvals');

    const css = await fetch(`${base}/console/main.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toContain(':focus-visible');
  });

  it('answers an unknown file 404 with an ErrorResponse', async () => {
    for (const name of ['nope.js', 'main.js.map', 'index.html', '..%2Fpackage.json']) {
      const res = await fetch(`${base}/console/${name}`);
      expect(res.status, name).toBe(404);
      expect(res.headers.get('content-type'), name).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ error: expect.any(String), code: 404 });
    }
  });
});

/** A browser's cookie jar and redirects, by hand. */
class Browser {
  readonly cookies = new Map<string, string>();

  async go(url: string, init: RequestInit = {}): Promise<{ res: Response; location: string | undefined }> {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
      signal: AbortSignal.timeout(10_000),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(pair!.slice(0, eq).trim());
      else this.cookies.set(pair!.slice(0, eq).trim(), value);
    }
    const location = res.headers.get('location');
    return { res, location: location ? new URL(location, url).toString() : undefined };
  }

  /** Follows redirects until one leaves the provider for `stopAt`, or a page answers. */
  async follow(start: { res: Response; location: string | undefined }, stopAt: string) {
    let current = start;
    for (let hops = 0; current.location && !current.location.startsWith(stopAt); hops++) {
      if (hops > 10) throw new Error('too many redirects');
      current = await this.go(current.location);
    }
    return current;
  }
}

const consoleRedirect = () => `${base}/console/`;

async function authorize(browser: Browser, redirectUri = consoleRedirect()) {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(8).toString('base64url');
  const url = new URL(`${base}/oidc/auth`);
  url.search = new URLSearchParams({
    client_id: 'dpm-console',
    response_type: 'code',
    redirect_uri: redirectUri,
    scope: 'openid',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state,
  }).toString();
  return { verifier, state, at: await browser.follow(await browser.go(url.toString()), redirectUri) };
}

async function signIn(browser: Browser, user: string) {
  const { verifier, state, at } = await authorize(browser);
  // The provider asks who signs in: its form, not a redirect back with a code.
  expect(at.location).toBeUndefined();
  const form = await at.res.text();
  expect(form).toContain(`value="${user}"`);
  const action = /<form method="post" action="([^"]+)"/.exec(form)![1]!.replaceAll('&#38;', '&');
  const back = await browser.follow(
    await browser.go(new URL(action, base).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login: user }).toString(),
    }),
    consoleRedirect(),
  );
  const params = new URL(back.location!).searchParams;
  expect(params.get('state')).toBe(state);
  // The token request as the console's page makes it: from its origin, no secret, the verifier.
  const token = await fetch(`${base}/oidc/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: params.get('code')!,
      redirect_uri: consoleRedirect(),
      client_id: 'dpm-console',
      code_verifier: verifier,
    }).toString(),
  });
  return token;
}

describe('the local identity provider and the console', () => {
  it('lists an end_session_endpoint in its discovery', async () => {
    const doc = (await (await fetch(`${base}/oidc/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(doc.end_session_endpoint).toBe(`${base}/oidc/session/end`);
    expect(doc.code_challenge_methods_supported).toEqual(['S256']);
  });

  it('gives the dpm-console client tokens for the authorization code + PKCE of the console redirect URI', async () => {
    const token = await signIn(new Browser(), 'alice');
    expect(token.status).toBe(200);
    // The browser may read the answer: the page's origin is allowed.
    expect(token.headers.get('access-control-allow-origin')).toBe(base);
    const body = (await token.json()) as { access_token: string; id_token: string; token_type: string };
    expect(body.token_type).toBe('Bearer');
    expect(body.id_token).toBeTruthy();
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1]!, 'base64url').toString()) as Record<
      string,
      unknown
    >;
    expect(claims).toMatchObject({ preferred_username: 'alice', roles: ['approver'], client_id: 'dpm-console' });
    // The service takes it as alice's Bearer session.
    const me = await fetch(`${base}/api/decisions/console-test/k/versions`, {
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(me.status).toBe(404);
  });

  it('refuses a redirect URI other than the console’s, and a token request without the verifier', async () => {
    const browser = new Browser();
    const { at } = await authorize(browser, `${base}/elsewhere/`);
    expect(at.location).toBeUndefined();
    expect(at.res.status).toBe(400);
    expect(await at.res.text()).toContain('redirect_uri');
  });

  it('ends the provider session on RP-initiated logout, so the next sign-in asks who signs in', async () => {
    const browser = new Browser();
    const token = (await (await signIn(browser, 'carol')).json()) as { id_token: string };
    // Still signed in at the provider: a new authorization goes straight back with a code.
    const silent = await authorize(browser);
    expect(new URL(silent.at.location!).searchParams.get('code')).toBeTruthy();

    const end = new URL(`${base}/oidc/session/end`);
    end.search = new URLSearchParams({
      id_token_hint: token.id_token,
      post_logout_redirect_uri: consoleRedirect(),
      client_id: 'dpm-console',
    }).toString();
    const confirm = await browser.go(end.toString());
    expect(confirm.res.status).toBe(200);
    const page = await confirm.res.text();
    // Asked with the ID token, the page signs out by itself (its one script, allowed by hash).
    expect(page).toContain('carol');
    expect(confirm.res.headers.get('content-security-policy')).toMatch(/script-src 'sha256-[^']+'/);
    const action = /<form id="op.logoutForm" method="post" action="([^"]+)"/.exec(page)![1]!;
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)![1]!;
    const done = await browser.go(new URL(action, base).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf, logout: 'yes' }).toString(),
    });
    expect(done.res.status).toBe(303);
    expect(done.location).toBe(consoleRedirect());

    const after = await authorize(browser);
    expect(after.at.location).toBeUndefined();
    expect(await after.at.res.text()).toContain('<form method="post"');
  });

  it('accepts /docs as a page to return to after signing out', async () => {
    const end = new URL(`${base}/oidc/session/end`);
    end.search = new URLSearchParams({ client_id: 'dpm-docs', post_logout_redirect_uri: `${base}/docs` }).toString();
    const res = await fetch(end);
    expect(res.status).toBe(200);
    const refused = new URL(end);
    refused.searchParams.set('post_logout_redirect_uri', `${base}/elsewhere`);
    expect((await fetch(refused)).status).toBe(400);
  });
});
