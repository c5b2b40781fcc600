import type { DynamoDBRecord } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DomainEvent } from '../../shared/events/types.js';
import { logger } from '../../shared/logger.js';
import type { EventBus } from '../../shared/ports/event-bus.js';
import { eventBus, lambdaRuntimeFromEnv } from '../composition.js';
import type { StreamHandler } from './publisher.js';

type Image = Parameters<typeof unmarshall>[0];

/** The envelope of an events-table item as its stream carries it (new events only). */
export function recordedEvent(record: DynamoDBRecord): DomainEvent | undefined {
  if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) return undefined;
  const item = unmarshall(record.dynamodb.NewImage as Image);
  return {
    specversion: '1.0',
    id: String(item.id),
    source: String(item.source),
    type: String(item.type),
    subject: String(item.subject),
    time: String(item.time),
    datacontenttype: 'application/json',
    actor: typeof item.actor === 'string' ? item.actor : null,
    sequence: Number(item.sequence),
    data: (item.data as Record<string, unknown> | undefined) ?? {},
  };
}

/**
 * The events table's stream consumer: every recorded event goes to the stage's bus (API.md
 * §13). Events the bus still refuses after its retries are batch item failures, handed
 * again in order (with what follows them) until they are put or the record expires.
 */
export function createDispatcher(bus: EventBus): StreamHandler {
  return async (event) => {
    const recorded: { record: DynamoDBRecord; event: DomainEvent }[] = [];
    for (const record of event.Records) {
      const e = recordedEvent(record);
      if (e) recorded.push({ record, event: e });
    }
    if (recorded.length === 0) return { batchItemFailures: [] };
    let failedIds: ReadonlySet<string>;
    try {
      const { failed } = await bus.publish(recorded.map((r) => r.event));
      failedIds = new Set(failed.map((e) => e.id));
    } catch (err) {
      logger.warn('events not put on the bus; handed again', { count: recorded.length, error: err as Error });
      failedIds = new Set(recorded.map((r) => r.event.id));
    }
    return {
      batchItemFailures: recorded
        .filter((r) => failedIds.has(r.event.id))
        .map((r) => ({ itemIdentifier: r.record.dynamodb?.SequenceNumber ?? '' })),
    };
  };
}

let lambdaHandler: StreamHandler | undefined;

export const handler: StreamHandler = (event) => {
  lambdaHandler ??= createDispatcher(eventBus(lambdaRuntimeFromEnv()));
  return lambdaHandler(event);
};
