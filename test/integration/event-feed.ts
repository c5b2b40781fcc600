import { GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import type { TABLES } from '../../infra/tables.js';
import { storedEvent } from '../../shared/events/events-table.js';
import { eventually, NotWithin, notYet } from '../support/eventually.js';
import { api, db, table } from './helpers.js';

/** A domain event as the feed answers it (docs/events-and-webhooks.md). */
export type Envelope = {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: string;
  actor: string | null;
  sequence: number;
  data: Record<string, any>;
};

/** How a test reaches the feed: the suite's platform (`api`), or a platform of its own. */
export type FeedCall = (
  path: string,
  options: { token: string },
) => Promise<{ status: number; body: any; text?: string }>;

/** The subject's events as the feed answers them now. */
async function feedOf(subject: string, token: string, call: FeedCall = api): Promise<Envelope[]> {
  const res = await call(`/api/domain-events?subject=${encodeURIComponent(subject)}&limit=1000`, { token });
  expect(res.status).toBe(200);
  return res.body as Envelope[];
}

/**
 * The subject's events once `count` are there (they arrive through the tables' streams,
 * within milliseconds locally), or what there is at the deadline.
 */
export async function eventsOf(
  subject: string,
  count: number,
  token: string,
  options: { call?: FeedCall; deadlineMs?: number } = {},
): Promise<Envelope[]> {
  return eventually(
    async () => {
      const events = await feedOf(subject, token, options.call);
      return events.length >= count ? events : notYet(events);
    },
    options.deadlineMs ?? 15_000,
    `${count} events about ${subject}`,
    50,
  ).catch((err: unknown) => {
    if (err instanceof NotWithin) return err.last as Envelope[];
    throw err;
  });
}

/**
 * The subject's events before a marker, once the marker's event is there: how a test checks
 * that no (further) event came, instead of waiting a while. The test makes one more change of
 * the subject after those it checks; `isMarker` knows that change's event and no earlier one
 * (by its actor, a caller of the test's own). A change takes its subject's next sequence when
 * it commits, without gaps, and the feed answers a subject's events in sequence order: so every
 * change committed before the marker has its event in `before`, and the marker's sequence is
 * the one after the last of them (checked here), with nothing between. Events after the marker
 * (a retried run going on) are left out.
 */
export async function eventsBefore(
  subject: string,
  isMarker: (e: Envelope) => boolean,
  token: string,
  options: { call?: FeedCall } = {},
): Promise<{ before: Envelope[]; marker: Envelope }> {
  const events = await eventually(
    async () => {
      const events = await feedOf(subject, token, options.call);
      return events.some(isMarker) ? events : notYet(events);
    },
    15_000,
    `the marker's event about ${subject}`,
    50,
  );
  const at = events.findIndex(isMarker);
  const through = events.slice(0, at + 1);
  expect(
    through.map((e) => e.sequence),
    `${subject}: the marker's sequence follows the events before it, from 1 without a gap`,
  ).toEqual(through.map((_, i) => i + 1));
  return { before: events.slice(0, at), marker: events[at]! };
}

type TableKey = keyof typeof TABLES;

/** The item of `tableKey` at `key` as the table holds it now (read consistently); undefined: none. */
export async function storedItem(
  tableKey: TableKey,
  key: Record<string, unknown>,
): Promise<Record<string, unknown> | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(tableKey), Key: key, ConsistentRead: true }));
  return out.Item;
}

/** The items of `tableKey` that `keep` keeps, from a consistent scan of the whole table. */
export async function storedItems(
  tableKey: TableKey,
  keep: (item: Record<string, any>) => boolean,
): Promise<Record<string, any>[]> {
  const kept: Record<string, any>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new ScanCommand({ TableName: table(tableKey), ConsistentRead: true, ExclusiveStartKey: start }),
    );
    kept.push(...(out.Items ?? []).filter(keep));
    start = out.LastEvaluatedKey;
  } while (start);
  return kept;
}

/**
 * The subject's events as the events table holds them now, read consistently. An event an
 * outbox writes (a deletion's, a crew run's) is there once its change committed: the
 * transaction that commits the change writes it.
 */
export async function storedEvents(subject: string): Promise<Envelope[]> {
  const events: Envelope[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: table('domainEvents'),
        KeyConditionExpression: 'subject = :s',
        ExpressionAttributeValues: { ':s': subject },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    events.push(...(out.Items ?? []).map((item) => storedEvent(item) as Envelope));
    start = out.LastEvaluatedKey;
  } while (start);
  return events;
}

/**
 * That nothing was recorded about `subject` but `events` (what the feed answered), by the
 * store's own record, read at once: for a subject no later change can mark, such as a deleted
 * key or a server whose id never comes back. An event comes either from an outbox, written
 * into the events table in the transaction that commits its change, or from a stamp, the
 * `ev_*` attributes a write puts on the subject's item, which the publisher copies into the
 * events table later. So: the events table holds exactly `events`, and the item either holds
 * the last one's stamp (`kept`) or is not there (`gone`: a stamped write would have made it).
 */
export async function expectNothingMore(
  subject: string,
  events: readonly Envelope[],
  item: { table: TableKey; key: Record<string, unknown>; is: 'kept' | 'gone' },
): Promise<void> {
  expect(await storedEvents(subject), `${subject}: the events table`).toEqual(events);
  const stored = await storedItem(item.table, item.key);
  if (item.is === 'gone') {
    expect(stored, `${subject}: its item`).toBeUndefined();
    return;
  }
  const last = events.at(-1);
  expect(
    { ev_id: stored?.ev_id, ev_seq: stored?.ev_seq },
    `${subject}: the stamp of its item is its last event's`,
  ).toEqual({ ev_id: last?.id, ev_seq: last?.sequence });
}
