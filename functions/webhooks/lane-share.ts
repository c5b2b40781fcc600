/*
 * A starter's fair share of the per-run delivery lane (the fair-use limits): the rules, apart
 * from the store that holds the shares (delivery-store.ts) and the worker that takes them
 * (delivery.ts). The crew runs' own endpoints of one principal (their `created_by_principal`)
 * have at most a few attempts in flight at once, whatever number of runs it started; a
 * delivery that finds its starter's share held waits parked until one of those attempts ends.
 */

import { holds, lapsedEntries, liveEntries } from '../../shared/aws/leased-slots.js';

/** A principal's share of the per-run lane: at most `slots` of its runs' attempts in flight at once. */
export interface LaneShare {
  readonly principal: string;
  readonly slots: number;
}

/** An entry of a principal's share: the endpoint slot's holder (a queue message) and its lease end. */
export interface ShareEntry {
  readonly holder: string;
  readonly until: number;
}

/** A principal's share as stored: entry `<endpoint>#<slot>` → its holder. */
export type ShareEntries = Readonly<Record<string, ShareEntry>>;

/** The name of an endpoint's slot `slot` among its principal's entries. */
export const shareEntryName = (endpointId: string, slot: number) => `${endpointId}#${slot}`;

/** Whether an entry is held: its holder's lease has not run out (a holder that died lapses then). */
const live = (e: ShareEntry | undefined, nowMs: number): e is ShareEntry => holds(e?.until, nowMs);

const untilOf = (e: ShareEntry) => e.until;

/**
 * What a try at a crew run endpoint's slot takes, seen the principal's entries as a refused
 * write answered them: the slot the holder already holds (a message handed again), or the
 * endpoint's first free one (absent or lapsed) with the lapsed entries to drop (their holders
 * died); undefined when the endpoint's `slots` are held, or the principal holds its `share`.
 */
export function nextShareTry(
  entries: ShareEntries,
  endpointId: string,
  holder: string,
  nowMs: number,
  slots: number,
  share: number,
): { slot: number; dropping: [string, number][] } | undefined {
  const range = Array.from({ length: slots }, (_, slot) => slot);
  const held = range.find((slot) => entries[shareEntryName(endpointId, slot)]?.holder === holder);
  if (held !== undefined) return { slot: held, dropping: [] };
  const slot = range.find((s) => !live(entries[shareEntryName(endpointId, s)], nowMs));
  if (slot === undefined) return undefined;
  if (liveEntries(entries, untilOf, nowMs).length >= share) return undefined;
  return { slot, dropping: lapsedEntries(entries, untilOf, nowMs, shareEntryName(endpointId, slot)) };
}

/**
 * How many of the principal's parked deliveries an attempt that ends wakes: as many as its
 * share has slots free once that attempt's entry is gone (one, usually; more when a wake
 * before was spent on a delivery that took no slot, or holders died).
 */
export const freeShareSlots = (entries: ShareEntries, nowMs: number, share: number): number =>
  Math.max(0, share - liveEntries(entries, untilOf, nowMs).length);
