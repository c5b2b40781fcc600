import { Unavailable } from '../errors.js';
import { FETCH_REDIRECTS, type HttpAnswer, httpGet } from './http-get.js';

/** The parts of an issuer's OpenID Connect discovery document the service uses. */
export interface Discovery {
  readonly jwks_uri?: unknown;
  readonly authorization_endpoint?: unknown;
  readonly token_endpoint?: unknown;
}

/** The issuer's `/.well-known/openid-configuration` (503 when it does not answer). */
export async function fetchDiscovery(issuer: string, timeoutMs = 3_000): Promise<Discovery> {
  const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  let res: HttpAnswer;
  try {
    // redirects followed, as fetch's default did
    res = await httpGet(url, { signal: AbortSignal.timeout(timeoutMs), redirects: FETCH_REDIRECTS });
  } catch {
    throw new Unavailable('Identity provider did not answer');
  }
  if (!res.ok) throw new Unavailable('Identity provider discovery failed');
  const doc = (await res.json().catch(() => ({}))) as unknown;
  return doc && typeof doc === 'object' ? (doc as Discovery) : {};
}

/** The issuer's OAuth 2.0 endpoints, for the document's authorization-code flow. */
export interface OAuthEndpoints {
  readonly authorizationUrl: string;
  readonly tokenUrl: string;
}

/**
 * The issuer's authorization and token endpoints, read from its discovery once and kept;
 * undefined while it cannot be read (asked again next time).
 */
export function oauthEndpointsOf(issuer: string | undefined): () => Promise<OAuthEndpoints | undefined> {
  let known: OAuthEndpoints | undefined;
  return async () => {
    if (!issuer) return undefined;
    if (known) return known;
    try {
      const doc = await fetchDiscovery(issuer);
      if (typeof doc.authorization_endpoint === 'string' && typeof doc.token_endpoint === 'string') {
        known = { authorizationUrl: doc.authorization_endpoint, tokenUrl: doc.token_endpoint };
      }
    } catch {
      // the document is served with the placeholders until the issuer answers
    }
    return known;
  };
}
