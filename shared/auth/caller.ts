/** Who is calling, as every route and service sees it. */
export type Role = 'admin' | 'approver';

/** The pre-shared key a caller authenticated with, as far as key lineage needs it. */
export interface CallerKey {
  /** The key's public id. */
  readonly pskId: string;
  /** The SHA-256 hash of its secret (the keys table's key); never shown. */
  readonly hash: string;
  readonly validUntilMs: number;
  /** Hashes of the keys this key was made or extended through, oldest first. */
  readonly lineage: readonly string[];
}

export interface Caller {
  /**
   * Who the caller is (docs/identity-and-keys.md, principals): the token's issuer and subject, a key's creator's
   * principal, or the bootstrap key's reserved principal. Every owner check, own-items
   * list and the four-eyes rule compare this, never the name.
   */
  readonly principal: string;
  /** Only for showing: preferred_username, else email, else sub (Bearer); the key's creator (PSK). */
  readonly name: string;
  readonly roles: ReadonlySet<string>;
  /** `bearer` is an identity-provider session; `psk` never is. */
  readonly via: 'bearer' | 'psk';
  /** For PSK callers: the key used. */
  readonly key?: CallerKey;
}

/**
 * A token's principal: issuer and subject, JSON-encoded so that no pair of strings can
 * collide with another pair (or with the reserved principals below, which are not JSON).
 */
export const tokenPrincipal = (issuer: string, subject: string): string => JSON.stringify([issuer, subject]);

/** The bootstrap admin key's principal: not JSON, so no token can ever produce it. */
export const BOOTSTRAP_PRINCIPAL = 'dpm:bootstrap-admin';

/**
 * A key stored by a version that recorded only its creator's name acts as a principal of
 * its own, so it owns what it makes and nothing that anyone else made (fail closed).
 */
export const legacyKeyPrincipal = (pskId: string): string => `dpm:legacy-psk:${pskId}`;

/**
 * Whether the record's stored principal is the caller's. A record written before
 * principals were stored has none and belongs to nobody (only admins reach it).
 */
export const isPrincipal = (stored: string | null | undefined, caller: Caller): boolean =>
  typeof stored === 'string' && stored === caller.principal;

export const isAdmin = (caller: Caller): boolean => caller.roles.has('admin');

/**
 * The credential a request came with, as what it may see again (docs/identity-and-keys.md,
 * idempotency keys): a Bearer caller's is its principal (every session of that person); a PSK caller's
 * is that key alone, by its id and its secret's hash, never its creator's principal. So an
 * answer kept for one credential (a key, a signing secret it showed) is never handed to
 * another: not to a key made through it, a sibling key of the same owner, a data product's
 * key, or another key the bootstrap key made (they all share a principal). The hash tells
 * the bootstrap key's successive secrets apart (they keep one fixed id). Not JSON for a
 * key, so it never equals a token's principal.
 */
export const credentialOf = (caller: Caller): string =>
  caller.via === 'psk' && caller.key ? `dpm:psk:${caller.key.pskId}:${caller.key.hash}` : caller.principal;

/** Roles from the claims the contract lists (Keycloak, Cognito and generic claims). */
export function rolesFromClaims(claims: Record<string, unknown>, audience: string | undefined): Set<string> {
  const roles = new Set<string>();
  const add = (value: unknown) => {
    if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') roles.add(v);
  };
  const realm = claims.realm_access as { roles?: unknown } | undefined;
  add(realm?.roles);
  if (audience) {
    const resource = claims.resource_access;
    if (resource && typeof resource === 'object' && Object.hasOwn(resource, audience)) {
      add((resource as Record<string, { roles?: unknown } | undefined>)[audience]?.roles);
    }
  }
  add(claims['cognito:groups']);
  add(claims.roles);
  add(claims.groups);
  return roles;
}

export function nameFromClaims(claims: Record<string, unknown>): string | undefined {
  for (const claim of ['preferred_username', 'email', 'sub']) {
    const v = claims[claim];
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return undefined;
}
