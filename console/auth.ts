/**
 * Sign-in with the issuer's authorization-code flow and PKCE (oauth4webapi), as the public
 * client the page's settings name. Tokens live in sessionStorage: they end with the tab.
 */
import * as oauth from 'oauth4webapi';

export interface Settings {
  readonly issuer: string | null;
  readonly clientId: string;
}

interface Session {
  readonly accessToken: string;
  readonly idToken: string | undefined;
  /** Epoch milliseconds. */
  readonly expiresAt: number;
}

interface Pending {
  readonly verifier: string;
  readonly state: string;
  /** The view to return to after sign-in. */
  readonly hash: string;
}

const SESSION_KEY = 'dpm-console.session';
const PENDING_KEY = 'dpm-console.pending';

export function readSettings(): Settings {
  const element = document.getElementById('dpm-console-settings');
  const parsed = JSON.parse(element?.textContent ?? '{}') as Partial<Settings>;
  return { issuer: parsed.issuer ?? null, clientId: parsed.clientId ?? 'dpm-console' };
}

/** The console's own address: the redirect URI registered for its client. */
const redirectUri = () => `${location.origin}/console/`;

/** Plain http is only accepted for an issuer on this machine (the local identity provider). */
function httpOptions(issuer: URL): { [oauth.allowInsecureRequests]?: boolean } {
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
  return issuer.protocol === 'http:' && loopback ? { [oauth.allowInsecureRequests]: true } : {};
}

let discovered: Promise<oauth.AuthorizationServer> | undefined;
function authorizationServer(issuer: URL): Promise<oauth.AuthorizationServer> {
  discovered ??= oauth
    .discoveryRequest(issuer, httpOptions(issuer))
    .then((res) => oauth.processDiscoveryResponse(issuer, res))
    .catch((err: unknown) => {
      discovered = undefined;
      throw err;
    });
  return discovered;
}

function stored<T>(key: string): T | undefined {
  const text = sessionStorage.getItem(key);
  if (!text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** The access token, while it is valid. */
export function accessToken(): string | undefined {
  const session = stored<Session>(SESSION_KEY);
  if (!session || session.expiresAt <= Date.now()) return undefined;
  return session.accessToken;
}

/** Sends the browser to the issuer's sign-in page. */
export async function signIn(settings: Settings): Promise<void> {
  if (!settings.issuer) throw new Error('Sign-in is not configured: the service has no AUTH_ISSUER.');
  const issuer = new URL(settings.issuer);
  const as = await authorizationServer(issuer);
  if (!as.authorization_endpoint) throw new Error('The identity provider names no authorization endpoint.');
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const pending: Pending = { verifier, state, hash: location.hash };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: settings.clientId,
    redirect_uri: redirectUri(),
    response_type: 'code',
    scope: 'openid',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  }).toString();
  location.assign(url.href);
}

/**
 * When the issuer has just sent the browser back with a code: exchanges it for tokens and
 * returns to the view the sign-in started from. False when this load is no such return.
 */
export async function completeSignIn(settings: Settings): Promise<boolean> {
  const current = new URL(location.href);
  if (!current.searchParams.has('code') && !current.searchParams.has('error')) return false;
  const pending = stored<Pending>(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  // The code is used once: the address loses it whatever happens next.
  history.replaceState(null, '', `/console/${pending?.hash ?? ''}`);
  if (!pending || !settings.issuer) throw new Error('This sign-in was not started here: sign in again.');
  const issuer = new URL(settings.issuer);
  const as = await authorizationServer(issuer);
  const client: oauth.Client = { client_id: settings.clientId };
  const params = oauth.validateAuthResponse(as, client, current, pending.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    redirectUri(),
    pending.verifier,
    httpOptions(issuer),
  );
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  const session: Session = {
    accessToken: tokens.access_token,
    idToken: tokens.id_token,
    expiresAt: Date.now() + (tokens.expires_in ?? 3_600) * 1_000,
  };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  return true;
}

/**
 * Forgets the tokens and ends the identity provider's session too (RP-initiated logout), so
 * the next person to sign in on this browser is asked who they are.
 */
export async function signOut(settings: Settings): Promise<void> {
  const session = stored<Session>(SESSION_KEY);
  sessionStorage.removeItem(SESSION_KEY);
  const as = settings.issuer ? await authorizationServer(new URL(settings.issuer)).catch(() => undefined) : undefined;
  if (!as?.end_session_endpoint) {
    location.reload();
    return;
  }
  const url = new URL(as.end_session_endpoint);
  url.search = new URLSearchParams({
    client_id: settings.clientId,
    post_logout_redirect_uri: redirectUri(),
    ...(session?.idToken && { id_token_hint: session.idToken }),
  }).toString();
  location.assign(url.href);
}

/** A readable sentence for a failed sign-in. */
export function signInFailure(err: unknown): string {
  if (err instanceof oauth.AuthorizationResponseError || err instanceof oauth.ResponseBodyError) {
    return `Sign-in failed: ${err.error_description ?? err.error}`;
  }
  return `Sign-in failed: ${err instanceof Error ? err.message : String(err)}`;
}
