/**
 * Signing in to the local identity provider without a browser: the very authorization code
 * + PKCE flow a browser goes through (authorization request, the sign-in form, the code,
 * the token request), by the public `dpm-cli` client. `npm run token` prints the result.
 */
import { createHash, randomBytes } from 'node:crypto';
import { CLI_CLIENT_ID, CLI_REDIRECT_URI, OIDC_PATH } from './identity-provider.js';

export class SignInError extends Error {}

/** An access token for the local user `user` from the provider at `<baseUrl>/oidc`. */
export async function localUserToken(baseUrl: string, user: string): Promise<string> {
  const cookies = new Map<string, string>();
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

  // Follow redirects by hand (cookies go along) until the sign-in form or the callback.
  const step = async (url: string, init: RequestInit = {}): Promise<{ location?: string; res: Response }> => {
    let res: Response;
    try {
      res = await fetch(url, {
        ...init,
        redirect: 'manual',
        headers: { ...(init.headers as Record<string, string>), cookie: cookieHeader(cookies) },
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      throw new SignInError(`no service answers at ${baseUrl}: start it with npm start (the same HOST and PORT)`);
    }
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq > 0) cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
    const location = res.headers.get('location') ?? undefined;
    return { location: location ? new URL(location, url).toString() : undefined, res };
  };
  const follow = async (start: { location?: string; res: Response }) => {
    let current = start;
    for (let hops = 0; current.location && !current.location.startsWith(CLI_REDIRECT_URI); hops++) {
      if (hops > 10) throw new SignInError('too many redirects while signing in');
      current = await step(current.location);
    }
    return current;
  };

  const atForm = await follow(await step(authorize.toString()));
  if (atForm.location === undefined) {
    const form = await atForm.res.text();
    const action = /<form method="post" action="([^"]+)"/.exec(form)?.[1];
    if (!action)
      throw new SignInError(`${baseUrl}${OIDC_PATH} is not the local identity provider (is AUTH_ISSUER set?)`);
    const signedIn = await follow(
      await step(new URL(action.replaceAll('&#38;', '&'), baseUrl).toString(), {
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
  return exchange(baseUrl, atForm.location, state, verifier);
}

async function exchange(baseUrl: string, callback: string, state: string, verifier: string): Promise<string> {
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
  });
  const body = (await res.json().catch(() => ({}))) as { access_token?: string; error_description?: string };
  if (!res.ok || !body.access_token) {
    throw new SignInError(`the token request failed: ${body.error_description ?? res.status}`);
  }
  return body.access_token;
}

const cookieHeader = (cookies: ReadonlyMap<string, string>) =>
  [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
