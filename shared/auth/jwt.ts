import type { JWTVerifyGetKey } from 'jose';
import { Unauthenticated, Unavailable } from '../errors.js';
import { type Caller, nameFromClaims, rolesFromClaims, tokenPrincipal } from './caller.js';
import { fetchDiscovery } from './discovery.js';
import { jwksFetch } from './http-get.js';

/** Asymmetric algorithms only: `none` and HMAC (`HS*`) tokens are refused. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export interface JwtSettings {
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  readonly jwksUrl: string | undefined;
}

/** The `typ` header values that declare an access token (RFC 9068 section 2.1). */
const DECLARED_ACCESS_TOKEN_TYPES = new Set(['at+jwt', 'application/at+jwt']);
/** `typ` header values of access tokens: those, and the usual `JWT`. */
const ACCESS_TOKEN_TYPES = new Set(['jwt', ...DECLARED_ACCESS_TOKEN_TYPES]);
/** Hashes only an ID token carries (OpenID Connect Core section 3.1.3.6, section 3.3.2.11; FAPI's `s_hash`). */
const ID_TOKEN_HASHES = ['at_hash', 'c_hash', 's_hash'];

/**
 * An issuer signs its ID tokens with the same keys as its access tokens, often for a client
 * whose id is the API's audience: only access tokens pass (docs/identity-and-keys.md). A token is refused when
 * - its header `typ` is present and neither `JWT` nor `at+jwt`;
 * - its `typ` claim (Keycloak: `ID`, `Refresh`, `Bearer`) is present and not `Bearer`;
 * - its `token_use` claim (Cognito: `id`, `access`) is present and not `access`;
 * - it carries `at_hash`, `c_hash` or `s_hash`, which only ID tokens do;
 * - it carries `nonce` (the ID token's echo of the sign-in request, OpenID Connect Core section 2)
 *   without declaring itself an access token (header `at+jwt`, claim `typ: Bearer` or
 *   `token_use: access`): Keycloak before 25 also copied the nonce into access tokens.
 * `auth_time`, `acr`, `amr` and `azp` tell nothing: RFC 9068 section 2.2.1 lets access tokens carry them.
 */
function isAccessToken(header: { typ?: unknown }, payload: Record<string, unknown>): boolean {
  const headerType = header.typ === undefined ? undefined : String(header.typ).toLowerCase();
  if (headerType !== undefined && !ACCESS_TOKEN_TYPES.has(headerType)) return false;
  if (payload.typ !== undefined && String(payload.typ).toLowerCase() !== 'bearer') return false;
  if (payload.token_use !== undefined && payload.token_use !== 'access') return false;
  if (ID_TOKEN_HASHES.some((claim) => payload[claim] !== undefined)) return false;
  const declared =
    (headerType !== undefined && DECLARED_ACCESS_TOKEN_TYPES.has(headerType)) ||
    payload.typ !== undefined ||
    payload.token_use !== undefined;
  return payload.nonce === undefined || declared;
}

/**
 * Whether the token is for `audience`: `aud` names it (or lists it). Cognito's access tokens
 * have no `aud` and name their app client in `client_id`: one passes when that client is
 * the audience. A token whose `aud` names others never passes by its `client_id`.
 */
function isFor(payload: Record<string, unknown>, audience: string): boolean {
  const aud = payload.aud;
  if (aud !== undefined) return Array.isArray(aud) ? aud.includes(audience) : aud === audience;
  return payload.token_use === 'access' && payload.client_id === audience;
}

type Jose = typeof import('./jose.js');
let joseModule: Promise<Jose> | undefined;

/** jose, loaded with the first Bearer token: a cold start without one never evaluates it. */
const loadJose = (): Promise<Jose> => (joseModule ??= import('./jose.js'));

/** JOSE failures that mean "the identity provider did not answer", not "bad token". */
const PROVIDER_DOWN = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JOSE_GENERIC']);

/**
 * A client sends the same access token with many requests, and checking its signature is
 * most of what authenticating a Bearer request costs (WebCrypto, off the event loop and
 * back). A token that passed is remembered for at most a minute and never past its expiry
 * (with the same clock tolerance as the check), so a key the provider withdraws stops
 * working within the JWKS cache's own bounds. Only exact token strings that verified hit;
 * refused tokens are never kept. Bounded: the oldest entry leaves first.
 */
const VERIFIED_FOR_MS = 60_000;
const VERIFIED_MAX = 2_000;
const CLOCK_TOLERANCE_S = 60;

/**
 * Concurrent requests share one fetch of the discovery document and of the JWKS (jose shares
 * its reload), so a request can wait on a fetch begun before it came: one begun while the
 * identity provider was down, which fails after the provider is back (a blackholed fetch
 * times out 3 s after it began). Its failure says nothing about the provider now, so a
 * request that came while a fetch was under way and saw it fail tries once more, with a
 * fetch begun after it came; only that one's failure is its 503. The retry (discovery and
 * JWKS, 3 s each at most) is made only while it still fits the 10 s an answer has (the API conventions).
 */
const RETRY_WITHIN_MS = 3_500;

export class JwtVerifier {
  private jwks: Promise<JWTVerifyGetKey> | undefined;
  /** Fetches of the discovery document or the JWKS under way (see RETRY_WITHIN_MS). */
  private fetching = 0;
  private readonly verified = new Map<string, { readonly caller: Caller; readonly until: number }>();

  constructor(private readonly settings: JwtSettings) {}

  async verify(token: string): Promise<Caller> {
    const now = Date.now();
    const known = this.verified.get(token);
    if (known) {
      if (now < known.until) return known.caller;
      this.verified.delete(token);
    }
    const { caller, exp } = await this.check(token);
    if (this.verified.size >= VERIFIED_MAX) this.verified.delete(this.verified.keys().next().value as string);
    this.verified.set(token, { caller, until: Math.min(now + VERIFIED_FOR_MS, (exp + CLOCK_TOLERANCE_S) * 1000) });
    return caller;
  }

  private async check(token: string): Promise<{ caller: Caller; exp: number }> {
    const { issuer, audience } = this.settings;
    if (!issuer) throw new Unauthenticated('Bearer sessions are not configured on this service');
    // read before anything is awaited: a fetch under way now began before this request
    const cameDuringFetch = this.fetching > 0;
    const started = Date.now();
    const jose = await loadJose();
    let signed: { payload: Record<string, unknown>; protectedHeader: { typ?: unknown } };
    try {
      signed = await this.verifySignature(token, issuer, jose);
    } catch (err) {
      if (!(err instanceof Unavailable) || !cameDuringFetch || Date.now() - started > RETRY_WITHIN_MS) throw err;
      signed = await this.verifySignature(token, issuer, jose);
    }
    const { payload, protectedHeader: header } = signed;
    if (audience && !isFor(payload, audience)) throw new Unauthenticated('Invalid token');
    if (!isAccessToken(header, payload)) throw new Unauthenticated('Invalid token: not an access token');
    const subject = payload.sub;
    const name = nameFromClaims(payload);
    if (typeof subject !== 'string' || subject === '' || !name) throw new Unauthenticated('Token names no subject');
    return {
      caller: {
        principal: tokenPrincipal(issuer, subject),
        name,
        roles: rolesFromClaims(payload, audience),
        via: 'bearer',
      },
      // requiredClaims makes jose refuse a token without a numeric exp
      exp: payload.exp as number,
    };
  }

  /** The token's signature and registered claims checked against the issuer's JWKS. */
  private async verifySignature(token: string, issuer: string, jose: Jose) {
    const set = this.keySet(issuer, jose);
    const keys = await set;
    try {
      // the audience is checked by check(): a Cognito access token names it in `client_id`
      return await jose.jwtVerify(token, keys, {
        issuer,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        // A token without an expiry would be valid forever.
        requiredClaims: ['exp', 'sub'],
      });
    } catch (err) {
      throw this.translate(err, jose.errors, set);
    }
  }

  /** The answer to a failed check with the key set `set`; one the provider did not answer drops that set. */
  private translate(err: unknown, errors: Jose['errors'], set: Promise<JWTVerifyGetKey>): Error {
    // connection failures (refused, DNS) surface as TypeError from the JWKS fetch (jwksFetch rejects as fetch does)
    const providerDown =
      err instanceof errors.JOSEError
        ? PROVIDER_DOWN.has(err.code) || err instanceof errors.JWKSTimeout
        : err instanceof TypeError;
    if (providerDown) {
      // Only the set that failed: one made since (by a request after the provider came back) is kept.
      if (this.jwks === set) this.jwks = undefined;
      return new Unavailable('Identity provider did not answer');
    }
    if (err instanceof errors.JWTExpired) return new Unauthenticated('Token expired');
    return new Unauthenticated('Invalid token');
  }

  /** The JWKS, from AUTH_JWKS_URL or the issuer's OIDC discovery document (cached). */
  private keySet(issuer: string, jose: Jose): Promise<JWTVerifyGetKey> {
    this.jwks ??= this.resolveJwksUrl(issuer).then((url) =>
      jose.createRemoteJWKSet(new URL(url), {
        timeoutDuration: 3_000,
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
        // node:http, not the global fetch: no undici set-up on a cold start's first Bearer request
        [jose.customFetch]: (url, init) => this.counted(jwksFetch(url, init)),
      }),
    );
    const pending = this.jwks;
    pending.catch(() => {
      if (this.jwks === pending) this.jwks = undefined;
    });
    return pending;
  }

  private async resolveJwksUrl(issuer: string): Promise<string> {
    if (this.settings.jwksUrl) return this.settings.jwksUrl;
    const doc = await this.counted(fetchDiscovery(issuer));
    if (typeof doc.jwks_uri !== 'string') throw new Unavailable('Identity provider discovery has no jwks_uri');
    return doc.jwks_uri;
  }

  /** `fetch`, counted in `fetching` while it is under way. */
  private async counted<T>(fetch: Promise<T>): Promise<T> {
    this.fetching += 1;
    try {
      return await fetch;
    } finally {
      this.fetching -= 1;
    }
  }
}
