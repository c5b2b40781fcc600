/*
 * Leased slots: a bounded set of holders kept in one item's map attribute (`holders`), each
 * entry with the end of its holder's lease (epoch ms). A holder renews its lease while it
 * works; one that died lapses when its lease ends, and the next write that takes a slot
 * drops it (conditioned on its entry being as read, so a holder that renewed meanwhile
 * keeps it). The one design behind crew runs' concurrency limits (functions/crews/runs/
 * slot-store.ts) and a starter's share of the webhooks' per-run lane (functions/webhooks/
 * delivery-store.ts, lane-share.ts): the rules of a lease here, the items' keys and their
 * other conditions with their stores.
 */

/** Lapsed entries dropped in one write at most (a bound on the write's size). */
export const MAX_DROPPED = 25;

/** Whether a lease ending at `until` still holds at `now`: until it ends, not at its end. */
export const holds = (until: number | undefined, now: number): boolean => until !== undefined && until > now;

/** The names of the entries whose leases hold at `now`. */
export function liveEntries<V>(
  entries: Readonly<Record<string, V>>,
  untilOf: (entry: V) => number,
  now: number,
): string[] {
  return Object.entries(entries)
    .filter(([, entry]) => holds(untilOf(entry), now))
    .map(([name]) => name);
}

/**
 * The entries whose leases lapsed by `now` (but `except`, the entry a write takes itself), at
 * most MAX_DROPPED: each name with its lease end as read, what its drop is conditioned on.
 */
export function lapsedEntries<V>(
  entries: Readonly<Record<string, V>>,
  untilOf: (entry: V) => number,
  now: number,
  except?: string,
): [name: string, until: number][] {
  return Object.entries(entries)
    .filter(([name, entry]) => name !== except && !holds(untilOf(entry), now))
    .slice(0, MAX_DROPPED)
    .map(([name, entry]): [string, number] => [name, untilOf(entry)]);
}

/** The parts of an UpdateItem that drop lapsed entries of `#holders`, each only while it is as read. */
export interface Drops {
  /** One condition per entry (its lease end unchanged), to be joined with AND. */
  readonly conditions: readonly string[];
  /** The REMOVE clauses. */
  readonly removes: readonly string[];
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, unknown>>;
}

/**
 * Drops `dropping` (from lapsedEntries) from the map `#holders`. Entry names hold ids of the
 * service's (runs, endpoints): placeholders, never expression text. `untilField` names the
 * lease end within an entry (`#until`) when an entry is an object; without it the entry is the
 * lease end itself.
 */
export function dropLapsed(dropping: readonly (readonly [string, number])[], untilField?: string): Drops {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const conditions = dropping.map(([name, until], i) => {
    names[`#d${i}`] = name;
    values[`:d${i}`] = until;
    return `#holders.#d${i}${untilField ? `.${untilField}` : ''} = :d${i}`;
  });
  return { conditions, removes: dropping.map((_, i) => `#holders.#d${i}`), names, values };
}
