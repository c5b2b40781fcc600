/**
 * `/docs`: Swagger UI served by the service itself (no CDN: it works offline), set up to
 * sign in with the OpenAPI document's OAuth 2.0 authorization-code flow (PKCE) or to take
 * a pre-shared key.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The files of `swagger-ui-dist` the page uses, with their content types. */
export const SWAGGER_UI_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
  'oauth2-redirect.html': 'text/html; charset=utf-8',
  'oauth2-redirect.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/** Where a bundled Lambda keeps the assets: a `swagger-ui` folder beside its code (see infra). */
export const BUNDLED_ASSET_DIR = 'swagger-ui';

let assetDir: string | undefined;
const cache = new Map<string, Buffer>();

/** The folder holding the assets: beside the bundle on Lambda, else the installed package. */
function swaggerUiDir(): string {
  if (assetDir) return assetDir;
  const beside = join(dirname(fileURLToPath(import.meta.url)), BUNDLED_ASSET_DIR);
  assetDir = existsSync(join(beside, 'swagger-ui-bundle.js'))
    ? beside
    : dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  return assetDir;
}

/** One asset's bytes and type, read once; undefined for a name that is not one. */
export function swaggerUiAsset(name: string): { body: Buffer; type: string } | undefined {
  const type = Object.hasOwn(SWAGGER_UI_ASSETS, name) ? SWAGGER_UI_ASSETS[name] : undefined;
  if (!type) return undefined;
  let body = cache.get(name);
  if (!body) {
    body = readFileSync(join(swaggerUiDir(), name));
    cache.set(name, body);
  }
  return { body, type };
}

/** Text made safe inside HTML text and attribute values. */
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page: Swagger UI on /openapi.json, its OAuth client the given public client (PKCE),
 * under a link to the domain events' /asyncapi.json and a line saying who is signed in (the
 * credential Swagger UI holds, asked of /api/me). Each sign-in asks who signs in
 * (`prompt=login`): after Logout the issuer's session would otherwise sign the same person
 * in again. An optional request body starts empty instead of with an invented sample. The
 * Authorize dialog shows the public client's id, no client_secret and no scope text (none declared).
 */
export function docsPage(options: { title: string; clientId: string }): string {
  const settings = JSON.stringify({ clientId: options.clientId }).replaceAll('<', '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
<style>
.dpm-links { box-sizing: border-box; max-width: 1460px; margin: 0 auto; padding: 12px 20px 0; font-family: sans-serif; font-size: 14px; color: #3b4151; }
.dpm-links a { color: #4990e2; }
.dpm-links #dpm-who { margin: 6px 0 0; font-weight: bold; }
/* Swagger UI prints a text on choosing scopes above every OAuth2 scheme: this one declares none. */
.auth-container .scope-def { display: none; }
</style>
</head>
<body>
<nav class="dpm-links" aria-label="Machine-readable documents">
Domain events (EventBridge, webhooks): <a id="asyncapi-link" href="/asyncapi.json">AsyncAPI 3.0 document (/asyncapi.json)</a>
&middot; HTTP API: <a href="/openapi.json">OpenAPI 3.1 document (/openapi.json)</a>
&middot; People in the loop: <a href="/console/">review console (/console)</a>
<p id="dpm-who" role="status">Not signed in: Authorize to try the endpoints.</p>
</nav>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>
const settings = ${settings};
const who = document.getElementById('dpm-who');
async function showWho() {
  const held = Object.values(window.ui.authSelectors.authorized().toJS());
  const bearer = held.find((a) => a.token && a.token.access_token);
  const key = held.find((a) => a.schema && a.schema.type === 'apiKey' && a.value);
  const headers = bearer ? { authorization: 'Bearer ' + bearer.token.access_token } : key ? { [key.schema.name]: key.value } : undefined;
  if (!headers) { who.textContent = 'Not signed in: Authorize to try the endpoints.'; return; }
  const res = await fetch('/api/me', { headers }).catch(() => undefined);
  if (!res || !res.ok) { who.textContent = 'Authorized, but /api/me answered ' + (res ? res.status : 'nothing') + ': the credential may have expired.'; return; }
  const me = await res.json();
  who.textContent = 'Signed in as ' + me.name + ' (' + (me.roles.length ? me.roles.join(', ') : 'no roles') + '; ' + (me.credential === 'psk' ? 'pre-shared key' : 'sign-in session') + ')';
}
// Each change of the credentials Swagger UI holds updates the line above.
const SignedInPlugin = () => ({
  statePlugins: {
    auth: {
      wrapActions: Object.fromEntries(
        ['authorize', 'authorizeOauth2', 'logout', 'restoreAuthorization'].map((name) => [
          name,
          (action) => (...args) => { const result = action(...args); setTimeout(showWho); return result; },
        ]),
      ),
    },
  },
});
// An optional body (lifecycle notes) starts empty: no sample is invented for it.
const EmptyOptionalBodyPlugin = () => ({
  wrapComponents: {
    RequestBody: (Original, system) => (props) =>
      system.React.createElement(
        Original,
        props.requestBody && props.requestBody.get('required') ? props : { ...props, fn: { ...props.fn, getSampleSchema: () => '' } },
      ),
  },
});
// The sign-in client is public (a page keeps no secret; PKCE instead): no client_secret row.
// Swagger UI has no setting for it (its Authorize form always has one for this flow), so the
// form's rows are filtered here; the client_id row and the rest stay Swagger UI's own.
const CLIENT_SECRET_IDS = ['client_secret_authorizationCode', 'client_secret_authorization_code'];
const PublicClientPlugin = () => ({
  wrapComponents: {
    Row: (Original, system) => (props) =>
      system.React.Children.toArray(props.children).some((child) => child && child.props && CLIENT_SECRET_IDS.includes(child.props.htmlFor))
        ? null
        : system.React.createElement(Original, props),
  },
});
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: true,
  oauth2RedirectUrl: window.location.origin + '/docs/oauth2-redirect.html',
  plugins: [SignedInPlugin, EmptyOptionalBodyPlugin, PublicClientPlugin],
  onComplete: showWho,
});
window.ui.initOAuth({
  clientId: settings.clientId,
  // A public client: no clientSecret is configured or asked for; the code is bound by PKCE.
  usePkceWithAuthorizationCodeGrant: true,
  scopes: [],
  additionalQueryStringParams: { prompt: 'login' },
});
</script>
</body>
</html>
`;
}
