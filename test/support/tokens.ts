import { importJWK, type JWK, SignJWT } from 'jose';

export interface TokenOptions {
  roles?: string[];
  issuer?: string;
  /** The token's `aud` (default the suite's audience); null leaves it out (Cognito's access tokens have none). */
  audience?: string | string[] | null;
  expiresIn?: string | number;
  notBefore?: string | number;
  claims?: Record<string, unknown>;
  /** The token's `sub` (default `sub-<name>`): the principal is issuer + subject. */
  subject?: string;
  /** The protected header's `typ` (default `JWT`); null leaves it out. */
  typ?: string | null;
  /** Leave out `exp` (a token that never expires). */
  noExpiry?: boolean;
  /** Sign with another key (bad signature tests). */
  key?: JWK;
}

/** Mints an RS256 access token shaped like Keycloak's (roles in realm_access). */
export async function mintToken(
  privateJwk: JWK,
  defaults: { issuer: string; audience: string },
  name: string,
  options: TokenOptions = {},
): Promise<string> {
  const jwk = options.key ?? privateJwk;
  const key = await importJWK(jwk, 'RS256');
  let jwt = new SignJWT({
    preferred_username: name,
    realm_access: { roles: options.roles ?? [] },
    ...options.claims,
  })
    .setProtectedHeader({
      alg: 'RS256',
      kid: jwk.kid ?? 'test-key-1',
      ...(options.typ === null ? {} : { typ: options.typ ?? 'JWT' }),
    })
    .setSubject(options.subject ?? `sub-${name}`)
    .setIssuer(options.issuer ?? defaults.issuer)
    .setIssuedAt();
  if (options.audience !== null) jwt = jwt.setAudience(options.audience ?? defaults.audience);
  if (!options.noExpiry) jwt = jwt.setExpirationTime(options.expiresIn ?? '10m');
  if (options.notBefore !== undefined) jwt = jwt.setNotBefore(options.notBefore);
  return jwt.sign(key);
}

/**
 * The WWW-Authenticate of every 401 (the API conventions: errors, the value of shared/http/errors.ts):
 * the two schemes the service takes, Bearer and the PSK header. Written out, not imported, so
 * that a change to it shows in the tests.
 */
export const WWW_AUTHENTICATE = 'Bearer, PSK realm="dpm" header="Authorization-PSK"';
