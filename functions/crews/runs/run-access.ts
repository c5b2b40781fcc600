import { type Caller, isAdmin, isPrincipal } from '../../../shared/auth/caller.js';
import { Forbidden, NotFound } from '../../../shared/errors.js';
import type { RunItem, RunStore } from './run-store.js';

/**
 * A run the caller may read (docs/reviewing.md): its starter's, an admin's, and a holder of the
 * role of one of its approval steps that has waited (an eligible approver, who keeps the
 * right after deciding). Nobody else; changing it stays the starter's or an admin's.
 */
export async function readableRun(
  runs: Pick<RunStore, 'get'>,
  correlationId: string,
  caller: Caller,
): Promise<RunItem> {
  const run = await runs.get(correlationId);
  if (!run) throw new NotFound(`No crew run ${correlationId}`);
  if (
    !isPrincipal(run.created_by_principal, caller) &&
    !isAdmin(caller) &&
    !(run.approval_roles ?? []).some((role) => caller.roles.has(role))
  )
    throw new Forbidden("Only the run's starter, an admin or an approver of one of its approval steps may read it");
  return run;
}

/** A run the caller may change: its starter's or an admin's. */
export async function ownRun(runs: Pick<RunStore, 'get'>, correlationId: string, caller: Caller): Promise<RunItem> {
  const run = await runs.get(correlationId);
  if (!run) throw new NotFound(`No crew run ${correlationId}`);
  if (!isPrincipal(run.created_by_principal, caller) && !isAdmin(caller))
    throw new Forbidden("Only the run's starter or an admin may read it");
  return run;
}
