import { type Caller, type CallerKey, tokenPrincipal } from '../../shared/auth/caller.js';
import { Invalid, type ValidationIssue } from '../../shared/errors.js';
import { rejection } from '../support/rejection.js';

/** What the service unit tests share: callers by principal, and a store method no test may reach. */

export const ISSUER = 'https://issuer.test';

/** The principal of a token user `name` (subject `sub-<name>`), as the JWT verifier makes it. */
export const principalOf = (name: string): string => tokenPrincipal(ISSUER, `sub-${name}`);

/** A Bearer caller; with `subject`, another subject that shows the same name. */
export const userCaller = (name: string, options: { roles?: string[]; subject?: string } = {}): Caller => ({
  principal: options.subject === undefined ? principalOf(name) : tokenPrincipal(ISSUER, options.subject),
  name,
  roles: new Set(options.roles ?? []),
  via: 'bearer',
});

export const adminCaller = (name = 'dana'): Caller => userCaller(name, { roles: ['admin'] });

/** A caller authenticated with a pre-shared key that `name` made. */
export const keyCaller = (name: string, key: CallerKey, roles: string[] = []): Caller => ({
  principal: principalOf(name),
  name,
  roles: new Set(roles),
  via: 'psk',
  key,
});

/** A store method the path under test must not reach: the test fails if it is called. */
export const unused = (): Promise<never> => Promise.reject(new Error('not used by this test'));

/** The issues of the `Invalid` that `promise` rejects with; anything else fails the test. */
export async function invalidIssues(promise: Promise<unknown>): Promise<ValidationIssue[]> {
  const err = await rejection(promise);
  if (!(err instanceof Invalid)) throw new Error(`expected Invalid, got ${err.name}: ${err.message}`);
  return err.issues;
}
