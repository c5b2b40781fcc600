import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { isConditionFailed } from '../aws/errors.js';
import { type Change, type DomainEvent, envelope, envelopeType } from './types.js';
import { AGAIN, backoffMs, retry } from '../retry.js';

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
  // data as JSON text: any JSON value a resource holds (1e300, an empty key) is kept as it is,
  // where DynamoDB's own types would refuse some
  const { data, ...envelope } = event;
  return {
    ...envelope,
    data_json: JSON.stringify(data),
    feed: FEED_PARTITION,
    feed_key: `${now.toISOString()}#${event.id}`,
    expires_at: Math.floor(now.getTime() / 1000) + table.ttlDays * 86_400,
  };
}

/**
 * The envelope of a change written straight into the events table, in the transaction that
 * makes the change (the outbox), by a store that cannot stamp an item: a deletion (`data` what
 * GET answered before) or a subject changed in more than one table. `lastSequence` is the
 * subject's last sequence, which the transaction's conditions hold to.
 */
export function outboxEvent(
  table: EventsTable,
  subject: string,
  change: Change,
  lastSequence: number,
  data: Record<string, unknown>,
): DomainEvent {
  return envelope({
    id: randomUUID(),
    source: table.source,
    type: envelopeType(change.type),
    subject,
    time: change.at,
    actor: change.actor,
    sequence: lastSequence + 1,
    data: { ...data, ...change.about },
  });
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

/** Writers of one subject race for its next sequence; each lost race reads again. */
const RECORD_ATTEMPTS = 8;

/**
 * Records the event of a change committed in an external system (Trino), which no DynamoDB
 * transaction can join: once that system confirmed the change, the envelope goes into the
 * events table with the subject's next sequence, by the same conditional put a transaction
 * would carry (`eventPut`). As in a transaction the last sequence is read first and the data
 * second, on every attempt; a sequence taken meanwhile is tried again on fresh reads.
 */
export async function recordEvent(
  db: DynamoDBDocumentClient,
  table: EventsTable,
  subject: string,
  change: Change,
  data: () => Promise<Record<string, unknown>>,
): Promise<void> {
  // Another writer took the sequence read: read again, after a pause, until the attempts run out.
  let taken: unknown;
  const recorded = await retry(
    async () => {
      const last = await lastSequence(db, table, subject);
      const event = outboxEvent(table, subject, change, last, await data());
      try {
        await db.send(new PutCommand(eventPut(table, event).Put));
        return true;
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        taken = err;
        return AGAIN;
      }
    },
    {
      attempts: RECORD_ATTEMPTS,
      delayMs: (attempt) => backoffMs(attempt - 1, { baseMs: 10, maxMs: 200, jitter: 'full' }),
    },
  );
  if (!recorded.done) throw taken;
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

/** The envelope of an events-table item (what `eventItem` stored). */
export function storedEvent(item: Record<string, unknown>): DomainEvent {
  return envelope({
    id: String(item.id),
    source: String(item.source),
    type: String(item.type),
    subject: String(item.subject),
    time: String(item.time),
    actor: typeof item.actor === 'string' ? item.actor : null,
    sequence: Number(item.sequence),
    data: typeof item.data_json === 'string' ? (JSON.parse(item.data_json) as Record<string, unknown>) : {},
  });
}
