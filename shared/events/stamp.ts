import { randomUUID } from 'node:crypto';
import type { Change } from './types.js';

/**
 * How a change becomes its event: the write that commits it also stamps the item with
 * the change (`ev_*` attributes, in the same PutItem or UpdateItem), and the events
 * publisher makes the event from the item's stream record (functions/domain-events/publisher.ts).
 * So an event exists if and only if its change was committed, and no request path waits
 * for a second write. `ev_seq` counts the subject's changes: one more with every stamped
 * write, so the sequence has no gap. A deletion cannot stamp what it removes: it writes its
 * event into the events table in the transaction that deletes (shared/events/events-table.ts).
 */
export const STAMP_ATTRIBUTES = ['ev_id', 'ev_type', 'ev_at', 'ev_actor', 'ev_about', 'ev_seq'] as const;

/** The stamp of the first change of a subject (a new item), or of the one after `previous`. */
export function stampNew(change: Change, previous = 0): Record<string, unknown> {
  return {
    ev_id: randomUUID(),
    ev_type: change.type,
    ev_at: change.at,
    ev_actor: change.actor,
    ev_about: change.about ?? null,
    ev_seq: previous + 1,
  };
}

/**
 * The stamp as UpdateItem clauses: `set` goes after `SET`, `add` after `ADD`; the names
 * and values join the update's own (their placeholders start with `#ev`/`:ev`).
 */
export function stampUpdate(change: Change): {
  set: string;
  add: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
} {
  return {
    set: '#ev_id = :ev_id, #ev_type = :ev_type, #ev_at = :ev_at, #ev_actor = :ev_actor, #ev_about = :ev_about',
    add: '#ev_seq :ev_one',
    names: {
      '#ev_id': 'ev_id',
      '#ev_type': 'ev_type',
      '#ev_at': 'ev_at',
      '#ev_actor': 'ev_actor',
      '#ev_about': 'ev_about',
      '#ev_seq': 'ev_seq',
    },
    values: {
      ':ev_id': randomUUID(),
      ':ev_type': change.type,
      ':ev_at': change.at,
      ':ev_actor': change.actor,
      ':ev_about': change.about ?? null,
      ':ev_one': 1,
    },
  };
}

/** `item` without the stamp: what stores hand to services. */
export function unstamped<T extends Record<string, unknown>>(item: T): T {
  const copy = { ...item };
  for (const a of STAMP_ATTRIBUTES) delete copy[a];
  return copy;
}
