/**
 * Signing in to the local identity provider without a browser: the authorization code +
 * PKCE flow a browser goes through (authorization request, the sign-in, the code, the token
 * request), by the public `dpm-cli` client. `npm run token` prints the result.
 *
 * Plain JavaScript with no dependencies (types in local-sign-in.d.mts): `npm run token` runs
 * it with node directly, with nothing to compile or load first.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Where the provider is served, under the service's base URL. */
export const OIDC_PATH = '/oidc';
/** The public client `npm run token` signs in with (authorization code + PKCE). */
export const CLI_CLIENT_ID = 'dpm-cli';
export const CLI_REDIRECT_URI = 'http://127.0.0.1/dpm-cli-callback';

export class SignInError extends Error {}

/**
 * An access token for the local user `user` from the provider at `<baseUrl>/oidc`, in four
 * requests: the authorization request (answered with the sign-in interaction), the sign-in
 * as `user` (the form's post, which is also the consent), the authorization's resumption
 * (answered with the code), the token request.
 * @param {string} baseUrl
 * @param {string} user
 * @returns {Promise<string>}
 */
export async function localUserToken(baseUrl, user) {
  /** @type {Map<string, string>} */
  const cookies = new Map();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const state = randomBytes(16).toString('base64url');
  const authorize = new URL(`${baseUrl}${OIDC_PATH}/auth`);
  authorize.search = new URLSearchParams({
    client_id: CLI_CLIENT_ID,
    response_type: 'code',
    redirect_uri: CLI_REDIRECT_URI,
    scope: 'openid',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  }).toString();

  /**
   * One request, redirects not followed (cookies go along).
   * @param {string} url
   * @param {RequestInit} [init]
   */
  const step = async (url, init = {}) => {
    let res;
    try {
      res = await fetch(url, {
        ...init,
        redirect: 'manual',
        headers: { ...init.headers, cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      throw new SignInError(`no service answers at ${baseUrl}: start it with npm start (the same HOST and PORT)`);
    }
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    const location = res.headers.get('location');
    return { location: location ? new URL(location, url).toString() : undefined, res };
  };
  /**
   * Follows redirects until the callback or a page.
   * @param {{ location?: string; res: Response }} start
   */
  const follow = async (start) => {
    let current = start;
    for (let hops = 0; current.location && !current.location.startsWith(CLI_REDIRECT_URI); hops++) {
      if (hops > 10) throw new SignInError('too many redirects while signing in');
      current = await step(current.location);
    }
    return current;
  };

  const asked = await step(authorize.toString());
  if (asked.location?.startsWith(CLI_REDIRECT_URI)) return exchange(baseUrl, asked.location, state, verifier);
  // The sign-in interaction: its form posts the user's name to `<interaction>/login`.
  const interaction = asked.location ? new URL(asked.location) : undefined;
  if (
    !interaction ||
    interaction.origin !== new URL(baseUrl).origin ||
    !interaction.pathname.startsWith(`${OIDC_PATH}/interaction/`)
  ) {
    const why = asked.res.status === 400 ? await errorText(asked.res) : undefined;
    throw new SignInError(why ?? `${baseUrl}${OIDC_PATH} is not the local identity provider (is AUTH_ISSUER set?)`);
  }
  const signedIn = await follow(
    await step(`${interaction.origin}${interaction.pathname}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login: user }).toString(),
    }),
  );
  if (signedIn.location === undefined) {
    const text = await signedIn.res.text();
    const why =
      /class="error">([^<]+)</.exec(text)?.[1] ?? `sign-in answered ${signedIn.res.status}: ${text.slice(0, 400)}`;
    throw new SignInError(why.replaceAll('&#39;', "'"));
  }
  return exchange(baseUrl, signedIn.location, state, verifier);
}

/**
 * The text of the provider's error page, when it is one.
 * @param {Response} res
 */
async function errorText(res) {
  const text = await res.text().catch(() => '');
  const message = /<p>([^<]+)<\/p>/.exec(text)?.[1];
  return message ? `sign-in refused: ${message.replaceAll('&#39;', "'")}` : undefined;
}

/**
 * The code of the callback exchanged for the access token.
 * @param {string} baseUrl
 * @param {string} callback
 * @param {string} state
 * @param {string} verifier
 * @returns {Promise<string>}
 */
async function exchange(baseUrl, callback, state, verifier) {
  const params = new URL(callback).searchParams;
  if (params.get('error'))
    throw new SignInError(`sign-in refused: ${params.get('error_description') ?? params.get('error')}`);
  if (params.get('state') !== state) throw new SignInError('sign-in answered with another state');
  const code = params.get('code');
  if (!code) throw new SignInError('sign-in gave no authorization code');
  const res = await fetch(`${baseUrl}${OIDC_PATH}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CLI_REDIRECT_URI,
      client_id: CLI_CLIENT_ID,
      code_verifier: verifier,
    }).toString(),
    signal: AbortSignal.timeout(10_000),
  }).catch(() => {
    throw new SignInError(`no service answers at ${baseUrl}: start it with npm start (the same HOST and PORT)`);
  });
  /** @type {{ access_token?: string; error_description?: string }} */
  const body = await res.json().catch(() => ({}));
  if (!res.ok || !body.access_token) {
    throw new SignInError(`the token request failed: ${body.error_description ?? res.status}`);
  }
  return body.access_token;
}
