import type { DynamoDBRecord } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isUnstorableInput } from '../../shared/aws/errors.js';
import type { EventSource } from '../../shared/events/source.js';
import { unstamped } from '../../shared/events/stamp.js';
import type { StreamHandler } from '../../shared/aws/lambda.js';
import { tableOfStream } from '../../shared/events/stream.js';
import { type DomainEvent, envelope, envelopeType } from '../../shared/events/types.js';
import { logger } from '../../shared/logger.js';
import type { EventStore } from './store.js';

type Image = Parameters<typeof unmarshall>[0];

/**
 * The event a stream record carries, if any: a new or changed item whose write stamped a
 * change (a new `ev_id`). Writes that stamp nothing (counters, TTL bookkeeping) and
 * removals (a deletion records its own event) carry none.
 */
export function eventOf(record: DynamoDBRecord, source: EventSource, origin: string): DomainEvent | undefined {
  if (record.eventName !== 'INSERT' && record.eventName !== 'MODIFY') return undefined;
  const image = record.dynamodb?.NewImage;
  if (!image) return undefined;
  const item = unmarshall(image as Image);
  if (typeof item.ev_id !== 'string') return undefined;
  const old = record.dynamodb?.OldImage;
  if (old && unmarshall(old as Image).ev_id === item.ev_id) return undefined;
  const described = source.describe(unstamped(item));
  if (!described) return undefined;
  const about = item.ev_about && typeof item.ev_about === 'object' ? (item.ev_about as Record<string, unknown>) : {};
  return envelope({
    id: item.ev_id,
    source: origin,
    type: envelopeType(String(item.ev_type)),
    subject: described.subject,
    time: String(item.ev_at),
    actor: typeof item.ev_actor === 'string' ? item.ev_actor : null,
    sequence: Number(item.ev_seq),
    data: { ...described.data, ...about },
  });
}

export interface PublisherDeps {
  readonly events: Pick<EventStore, 'record'>;
  /** Physical table name → what its items mean. */
  readonly sources: ReadonlyMap<string, EventSource>;
  /** `dpm/<stage>` */
  readonly origin: string;
}

/**
 * The stream consumer that makes domain events (docs/events-and-webhooks.md): each stamped change of a
 * domain table is recorded once in the events table (a record handed twice finds its own
 * event there). One subject's records are recorded in their order, so the events table's
 * own stream, and what the dispatcher sends from it, keeps that order; subjects go in
 * parallel. A record that fails is answered as a batch item failure: Lambda (or the local
 * poller) hands it and what follows it again, in order. (The dispatcher counts the events,
 * those written by outboxes too.)
 */
export function createPublisher(deps: PublisherDeps): StreamHandler {
  return async (event) => {
    const bySubject = new Map<string, { record: DynamoDBRecord; event: DomainEvent }[]>();
    const failures: string[] = [];
    for (const record of event.Records) {
      const table = tableOfStream(record.eventSourceARN);
      const source = table ? deps.sources.get(table) : undefined;
      if (!source) {
        logger.error('stream record of an unknown table', { table });
        continue;
      }
      let domainEvent: DomainEvent | undefined;
      try {
        domainEvent = eventOf(record, source, deps.origin);
      } catch (err) {
        logger.error('stream record not understood', { table, error: err as Error });
        continue;
      }
      if (!domainEvent) continue;
      const list = bySubject.get(domainEvent.subject) ?? [];
      list.push({ record, event: domainEvent });
      bySubject.set(domainEvent.subject, list);
    }
    await Promise.all(
      [...bySubject.values()].map(async (items) => {
        for (const [i, { event: e }] of items.entries()) {
          try {
            const result = await deps.events.record(e);
            if (result === 'conflict')
              logger.error('an event already holds this sequence', {
                subject: e.subject,
                sequence: e.sequence,
                event_id: e.id,
              });
          } catch (err) {
            if (isUnstorableInput(err)) {
              // no retry could store it: handing it again would hold up its subject for good
              logger.error('event cannot be stored; skipped', {
                subject: e.subject,
                sequence: e.sequence,
                event_id: e.id,
                error: err as Error,
              });
              continue;
            }
            logger.warn('event not recorded; handed again', { event_id: e.id, error: err as Error });
            // this one and the rest of its subject, so the subject's order holds
            for (const later of items.slice(i)) failures.push(later.record.dynamodb?.SequenceNumber ?? '');
            return;
          }
        }
      }),
    );
    return { batchItemFailures: failures.filter((f) => f !== '').map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
