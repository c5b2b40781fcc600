/** Who is calling, as every route and service sees it. */
export type Role = 'admin' | 'approver';

export interface Caller {
  /** preferred_username, else email, else sub (Bearer); the key's creator (PSK). */
  readonly name: string;
  readonly roles: ReadonlySet<string>;
  /** `bearer` is an identity-provider session; `psk` never is. */
  readonly via: 'bearer' | 'psk';
  /** For PSK callers: the public id of the key used. */
  readonly pskId?: string;
}

export const hasRole = (caller: Caller, role: Role): boolean => caller.roles.has(role);
export const isAdmin = (caller: Caller): boolean => caller.roles.has('admin');

/** Roles from the claims the contract lists (Keycloak, Cognito and generic claims). */
export function rolesFromClaims(claims: Record<string, unknown>, audience: string | undefined): Set<string> {
  const roles = new Set<string>();
  const add = (value: unknown) => {
    if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') roles.add(v);
  };
  const realm = claims.realm_access as { roles?: unknown } | undefined;
  add(realm?.roles);
  if (audience) {
    const resource = claims.resource_access as Record<string, { roles?: unknown } | undefined> | undefined;
    add(resource?.[audience]?.roles);
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
