/**
 * The local OpenID Connect provider (docs/identity-and-keys.md, the local identity provider): when no
 * `AUTH_ISSUER` is configured, `npm start` serves a real OIDC implementation
 * (`oidc-provider`) at `/oidc` on the service's own port, with the users of
 * `DPM_LOCAL_USERS`. The service verifies its tokens like any issuer's: discovery, JWKS,
 * signature, audience. It is never part of an AWS deployment (only infra/local imports it).
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { errors, type Configuration, type InteractionResults, type KoaContextWithOIDC } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import { escapeHtml } from '../../functions/platform/docs.js';
import type { LocalUser } from '../../shared/config.js';
// Where the provider is served under the service's base URL (`/oidc`), and the public client
// `npm run token` signs in with (authorization code + PKCE), as that client (local-sign-in.mjs) knows them.
import { CLI_CLIENT_ID, CLI_REDIRECT_URI, OIDC_PATH } from './local-sign-in.mjs';

/** The `aud` of its access tokens: the service's AUTH_AUDIENCE in local mode. */
const LOCAL_AUDIENCE = 'dpm-api';
/** The resource indicator of the API (RFC 8707): access tokens for it are JWTs. */
const API_RESOURCE = 'urn:dpm:api';
/** The confidential client for scripts (client credentials); its secret is kept in the data dir. */
const SCRIPTS_CLIENT_ID = 'dpm-scripts';
/** Swagger UI's page that receives the authorization code (served by the platform app). */
const DOCS_REDIRECT_PATH = '/docs/oauth2-redirect.html';
/** Where the review console receives the authorization code, and returns after signing out. */
const CONSOLE_PATH = '/console/';
const ACCESS_TOKEN_SECONDS = 3_600;
/** The scopes it knows: `api` is the API's (its resource server's). */
const SCOPES = ['openid', 'profile', 'api'] as const;

/** What survives restarts: the signing key (tokens stay valid), cookie keys, the scripts client's secret. */
interface ProviderSecrets {
  signingKey: JWK;
  cookieKeys: string[];
  scriptsClientSecret: string;
}

export interface LocalIdentityProvider {
  /** The issuer identifier: `<base URL>/oidc`. */
  readonly issuer: string;
  readonly audience: string;
  /** The scripts client's secret (client credentials). */
  readonly scriptsClientSecret: string;
  /** Serves the request when its path is the provider's; false otherwise. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
}

/** The file holding the provider's keys in the data directory (mode 0600). */
const secretsFile = (dataDir: string) => join(dataDir, 'oidc-provider.json');

async function loadSecrets(dataDir: string): Promise<ProviderSecrets> {
  const file = secretsFile(dataDir);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as ProviderSecrets;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: `local-${Date.now()}` };
  const secrets: ProviderSecrets = {
    signingKey,
    cookieKeys: [randomBytes(32).toString('base64url')],
    scriptsClientSecret: randomBytes(32).toString('base64url'),
  };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 });
  chmodSync(file, 0o600);
  return secrets;
}

/**
 * The provider for a service reachable at `origins` (the first is the base URL the issuer
 * is built on; the others are other names of the same server, for browser redirects).
 */
export async function startLocalIdentityProvider(options: {
  baseUrl: string;
  otherOrigins?: readonly string[];
  users: readonly LocalUser[];
  dataDir: string;
  /** The public client Swagger UI signs in with (authorization code + PKCE): AUTH_DOCS_CLIENT_ID. */
  docsClientId: string;
  /** The public client the review console signs in with (authorization code + PKCE): AUTH_CONSOLE_CLIENT_ID. */
  consoleClientId: string;
}): Promise<LocalIdentityProvider> {
  const issuer = `${options.baseUrl}${OIDC_PATH}`;
  const secrets = await loadSecrets(options.dataDir);
  const users = new Map(options.users.map((u) => [u.name, u]));
  const origins = [options.baseUrl, ...(options.otherOrigins ?? [])];

  const configuration: Configuration = {
    // Sign-in sessions, grants and codes in memory: a restart signs people out, nothing more
    // (access tokens are JWTs the service verifies by the signing key, which is kept).
    adapter: KeptInMemory,
    clients: [
      {
        client_id: options.docsClientId,
        client_name: 'API reference (/docs)',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: origins.map((o) => `${o}${DOCS_REDIRECT_PATH}`),
        post_logout_redirect_uris: origins.map((o) => `${o}/docs`),
      },
      {
        client_id: options.consoleClientId,
        client_name: 'Review console (/console)',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: origins.map((o) => `${o}${CONSOLE_PATH}`),
        post_logout_redirect_uris: origins.map((o) => `${o}${CONSOLE_PATH}`),
      },
      {
        client_id: CLI_CLIENT_ID,
        client_name: 'npm run token',
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [CLI_REDIRECT_URI],
      },
      {
        client_id: SCRIPTS_CLIENT_ID,
        client_name: 'scripts',
        client_secret: secrets.scriptsClientSecret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
      },
    ],
    jwks: { keys: [secrets.signingKey] },
    cookies: { keys: secrets.cookieKeys },
    scopes: [...SCOPES],
    claims: { openid: ['sub'], profile: ['preferred_username', 'roles'] },
    features: {
      devInteractions: { enabled: false },
      // RP-initiated logout ends the provider's session, so the next sign-in asks who signs in.
      rpInitiatedLogout: { enabled: true, logoutSource, postLogoutSuccessSource },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => API_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource !== API_RESOURCE) throw new errors.InvalidTarget();
          return {
            scope: 'api',
            audience: LOCAL_AUDIENCE,
            accessTokenFormat: 'jwt',
            accessTokenTTL: ACCESS_TOKEN_SECONDS,
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    pkce: { required: () => true },
    // The browser's token request comes from /docs or /console, on the service's own origin(s).
    clientBasedCORS: (_ctx, origin) => origins.includes(origin),
    findAccount: (_ctx, id) => {
      const user = users.get(id);
      if (!user) return undefined;
      return {
        accountId: user.name,
        claims: () => ({ sub: user.name, preferred_username: user.name, roles: user.roles }),
      };
    },
    formats: {
      customizers: {
        // A client-credentials token's subject would be the client id (RFC 9068 section 2.2), which a
        // user could also be named: a client acts as `client:<id>`, and no user name has a ':'
        // (DPM_LOCAL_USERS), so no user is ever the same principal as a client.
        jwt: (_ctx, token, jwt) => {
          const { accountId, clientId } = token as { accountId?: string; clientId?: string };
          if (!accountId && clientId) jwt.payload.sub = clientSubject(clientId);
          return jwt;
        },
      },
    },
    // The service reads the caller's name and roles from the access token itself.
    extraTokenClaims: (_ctx, token) => {
      const accountId = (token as { accountId?: string }).accountId;
      const user = accountId ? users.get(accountId) : undefined;
      if (user) return { preferred_username: user.name, roles: user.roles };
      return { preferred_username: (token as { clientId?: string }).clientId, roles: [] };
    },
    interactions: { url: (_ctx, interaction) => `${OIDC_PATH}/interaction/${interaction.uid}` },
    ttl: {
      AccessToken: ACCESS_TOKEN_SECONDS,
      ClientCredentials: ACCESS_TOKEN_SECONDS,
      AuthorizationCode: 60,
      Grant: 86_400,
      IdToken: ACCESS_TOKEN_SECONDS,
      Interaction: 3_600,
      Session: 86_400,
    },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = page('Sign-in failed', `<p>${escapeHtml(String(out.error_description ?? out.error))}</p>`);
    },
  };
  const provider = new Provider(issuer, configuration);
  // Clients that ask for no scope (Swagger UI: the contract's scheme declares none) get
  // `openid`, as real issuers apply a client's default scopes; without any scope
  // oidc-provider grants nothing.
  provider.use(async (ctx, next) => {
    if (ctx.path === '/auth' && ctx.method === 'GET' && !ctx.query.scope) {
      ctx.querystring = `${ctx.querystring}${ctx.querystring ? '&' : ''}scope=openid`;
      // The mounted path is told apart from the original URL: both must say the same.
      const req = ctx.req as IncomingMessage & { originalUrl?: string };
      req.originalUrl = `${OIDC_PATH}${ctx.url}`;
    }
    await next();
  });
  const callback = provider.callback();

  const interaction = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    try {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'consent') {
        // First-party clients only: signing in is the consent (to what they asked for).
        await provider.interactionFinished(req, res, await consent(provider, details), {
          mergeWithLastSubmission: true,
        });
        return;
      }
      if (req.method === 'POST' && path.endsWith('/login')) {
        const login = new URLSearchParams(await readBody(req)).get('login')?.trim() ?? '';
        if (!users.has(login)) {
          send(res, 200, loginPage(details.uid, [...users.values()], `No local user '${login}'`));
          return;
        }
        // First-party clients only: signing in is also the consent to what the client asked,
        // given at once (one interaction instead of two; what it leaves out is asked for next).
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: login }, consent: { grantId: await signInGrant(provider, details, login) } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      send(res, 200, loginPage(details.uid, [...users.values()]));
    } catch (err) {
      send(
        res,
        400,
        page(
          'Sign-in failed',
          `<p>${escapeHtml((err as Error).message)}</p><p><a href="/docs">Back to the API reference</a></p>`,
        ),
      );
    }
  };

  return {
    issuer,
    audience: LOCAL_AUDIENCE,
    scriptsClientSecret: secrets.scriptsClientSecret,
    handle(req, res) {
      const url = req.url ?? '/';
      const path = url.split('?')[0]!;
      if (path !== OIDC_PATH && !path.startsWith(`${OIDC_PATH}/`)) return false;
      if (path.startsWith(`${OIDC_PATH}/interaction/`)) {
        void interaction(req, res, path);
        return true;
      }
      // Mounted at /oidc (oidc-provider's "mounting" recipe): it sees the path below it.
      const mounted = req as IncomingMessage & { originalUrl?: string };
      mounted.originalUrl = url;
      req.url = url.slice(OIDC_PATH.length) || '/';
      void callback(req, res);
      return true;
    },
  };
}

/** The subject of a client acting as itself (client credentials): never a local user's name. */
const clientSubject = (clientId: string) => `client:${clientId}`;

/** oidc-provider's memory adapter, chosen on purpose (its default would warn that it is in use). */
class KeptInMemory extends MemoryAdapter {}

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

/** The grant for what the client asked and does not hold yet (oidc-provider's consent recipe). */
async function consent(provider: Provider, details: Details): Promise<InteractionResults> {
  const { prompt, params, session } = details;
  const missing = prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session!.accountId, clientId: params.client_id as string });
  if (!grant) throw new Error('the grant of this sign-in expired: start again');
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  return { consent: details.grantId ? {} : { grantId } };
}

/**
 * The grant, at sign-in, of what the authorization request asks (the scopes it knows, and the
 * API's scope for the API), as consent() would give it after the sign-in.
 */
async function signInGrant(provider: Provider, details: Details, accountId: string): Promise<string> {
  const { params } = details;
  const asked = new Set(typeof params.scope === 'string' ? params.scope.split(' ') : []);
  const known = SCOPES.filter((s) => asked.has(s));
  const grant = new provider.Grant({ accountId, clientId: params.client_id as string });
  if (known.length) grant.addOIDCScope(known.join(' '));
  if (asked.has('api')) grant.addResourceScope(API_RESOURCE, 'api');
  return grant.save();
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > 10_000) req.destroy(new Error('sign-in form too large'));
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
  });
  res.end(html);
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}
button{display:block;width:100%;margin:.4rem 0;padding:.6rem;font-size:1rem;cursor:pointer}
input{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}.roles{color:#666;font-size:.85rem}
.error{color:#b00}</style></head><body>${body}</body></html>`;
}

/**
 * The sign-out page of RP-initiated logout. Asked by a client with the ID token it was given
 * (`id_token_hint`, checked by the provider), it signs out at once; otherwise the person
 * confirms, so that no other page can sign them out behind their back.
 */
function logoutSource(ctx: KoaContextWithOIDC, form: string): void {
  const who = ctx.oidc.session?.accountId;
  const button = '<button type="submit" form="op.logoutForm" name="logout" value="yes" autofocus>Sign out</button>';
  const script = ctx.oidc.params?.id_token_hint ? "document.querySelector('button[name=logout]').click();" : '';
  ctx.type = 'html';
  ctx.set('cache-control', 'no-store');
  ctx.set(
    'content-security-policy',
    `default-src 'none'; style-src 'unsafe-inline'${script ? `; script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'` : ''}`,
  );
  ctx.body = page(
    'Sign out (local identity provider)',
    `<h1>Sign out</h1><p>${who ? `Sign out <strong>${escapeHtml(who)}</strong> from` : 'Sign out of'} the local identity provider: the next sign-in on this browser asks who signs in.</p>
${form}${button}${script ? `<script>${script}</script>` : ''}`,
  );
}

/** The page after a sign-out that names no page to return to. */
function postLogoutSuccessSource(ctx: KoaContextWithOIDC): void {
  ctx.type = 'html';
  ctx.set('cache-control', 'no-store');
  ctx.set('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'");
  ctx.body = page(
    'Signed out',
    '<h1>Signed out</h1><p>You are signed out of the local identity provider.</p><p><a href="/console/">Review console</a> &middot; <a href="/docs">API reference</a></p>',
  );
}

/** The sign-in page: one button per local user (each signs in with their name), or a name typed in. */
function loginPage(uid: string, users: readonly LocalUser[], error?: string): string {
  const action = `${OIDC_PATH}/interaction/${encodeURIComponent(uid)}/login`;
  const buttons = users
    .map(
      (u) =>
        `<button type="submit" name="login" value="${escapeHtml(u.name)}">Sign in as ${escapeHtml(u.name)} <span class="roles">${u.roles.length ? escapeHtml(u.roles.join(', ')) : 'no roles'}</span></button>`,
    )
    .join('\n');
  return page(
    'Sign in (local identity provider)',
    `<h1>Sign in</h1><p>Local identity provider of the Data Platform Management Service: choose a local user (<code>DPM_LOCAL_USERS</code>).</p>
${error ? `<p class="error">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${action}">${buttons}</form>
<form method="post" action="${action}"><label>or a user name <input name="login" autocomplete="username" required></label><button type="submit">Sign in</button></form>`,
  );
}
