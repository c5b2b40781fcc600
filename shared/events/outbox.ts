import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import type { Change, DomainEvent } from './types.js';

/** Every event is in the one `by_time` partition of the events table: the feed, in recording order. */
export const FEED_PARTITION = 'all';

/** Where events are kept (TABLES.domainEvents), for how long, and the `source` they carry. */
export interface EventsTable {
  readonly tableName: string;
  readonly ttlDays: number;
  /** `dpm/<stage>` */
  readonly source: string;
}

/** The item of an event in the events table. */
export function eventItem(table: EventsTable, event: DomainEvent, now = new Date()): Record<string, unknown> {
  return {
    ...event,
    feed: FEED_PARTITION,
    feed_key: `${now.toISOString()}#${event.id}`,
    expires_at: Math.floor(now.getTime() / 1000) + table.ttlDays * 86_400,
  };
}

/**
 * The envelope of a change whose item is gone (a deletion), made by the store that deletes:
 * `lastSequence` is the subject's `ev_seq` the deletion is conditioned on, `data` what its
 * GET answered before.
 */
export function deletionEvent(
  table: EventsTable,
  subject: string,
  change: Change,
  lastSequence: number,
  data: Record<string, unknown>,
): DomainEvent {
  return {
    specversion: '1.0',
    id: randomUUID(),
    source: table.source,
    type: `dpm.${change.type}`,
    subject,
    time: change.at,
    datacontenttype: 'application/json',
    actor: change.actor,
    sequence: lastSequence + 1,
    data: { ...data, ...change.about },
  };
}

/**
 * The transaction item that records a deletion's event: conditional, so a second event
 * cannot take the sequence.
 */
export function eventPut(table: EventsTable, event: DomainEvent) {
  return {
    Put: {
      TableName: table.tableName,
      Item: eventItem(table, event),
      ConditionExpression: 'attribute_not_exists(subject)',
    },
  };
}

/**
 * The last sequence recorded for `subject` (0 when none): where a subject that comes back
 * (a name used again after a deletion) goes on counting, so its sequence never restarts.
 * Read consistently: the deletion's event was written in the deleting transaction.
 */
export async function lastSequence(db: DynamoDBDocumentClient, table: EventsTable, subject: string): Promise<number> {
  const out = await db.send(
    new QueryCommand({
      TableName: table.tableName,
      KeyConditionExpression: 'subject = :s',
      ExpressionAttributeValues: { ':s': subject },
      ProjectionExpression: '#seq',
      ExpressionAttributeNames: { '#seq': 'sequence' },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  return Number(out.Items?.[0]?.sequence ?? 0);
}
