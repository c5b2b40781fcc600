import type { DynamoDBRecord } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { storedEvent } from '../../shared/events/outbox.js';
import type { DomainEvent } from '../../shared/events/types.js';
import { logger } from '../../shared/logger.js';
import type { EventBus } from '../../shared/ports/event-bus.js';
import { eventBus, lambdaRuntimeFromEnv } from '../composition.js';
import { webhookFanout } from '../webhooks/compose-fanout.js';
import type { StreamHandler } from './publisher.js';

/** Where the dispatcher hands events besides the bus: webhooks (API.md §14). */
export interface EventFanout {
  /** The ids of the events it could not take (they are handed again, with what follows them). */
  fanOut(events: readonly DomainEvent[]): Promise<ReadonlySet<string>>;
}

type Image = Parameters<typeof unmarshall>[0];

/** The envelope of an events-table item as its stream carries it (new events only). */
export function recordedEvent(record: DynamoDBRecord): DomainEvent | undefined {
  if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) return undefined;
  return storedEvent(unmarshall(record.dynamodb.NewImage as Image));
}

/**
 * The events table's stream consumer: every recorded event goes to the stage's bus (API.md
 * §13) and to the webhook endpoints that take it (§14). Events the bus still refuses after
 * its retries, or that could not be fanned out, are batch item failures, handed again in
 * order (with what follows them) until they are taken or the record expires; the bus may
 * then get an event twice (at least once), the fan-out makes each delivery once.
 */
export function createDispatcher(bus: EventBus, webhooks?: EventFanout): StreamHandler {
  return async (event) => {
    const recorded: { record: DynamoDBRecord; event: DomainEvent }[] = [];
    for (const record of event.Records) {
      const e = recordedEvent(record);
      if (e) recorded.push({ record, event: e });
    }
    if (recorded.length === 0) return { batchItemFailures: [] };
    const events = recorded.map((r) => r.event);
    const [onBus, toWebhooks] = await Promise.all([
      bus.publish(events).then(
        ({ failed }) => new Set(failed.map((e) => e.id)),
        (err: unknown) => {
          logger.warn('events not put on the bus; handed again', { count: recorded.length, error: err as Error });
          return new Set(events.map((e) => e.id));
        },
      ),
      webhooks
        ? webhooks.fanOut(events).catch((err: unknown) => {
            logger.warn('events not fanned out to webhooks; handed again', {
              count: events.length,
              error: err as Error,
            });
            return new Set(events.map((e) => e.id));
          })
        : new Set<string>(),
    ]);
    const failedIds = new Set([...onBus, ...toWebhooks]);
    return {
      batchItemFailures: recorded
        .filter((r) => failedIds.has(r.event.id))
        .map((r) => ({ itemIdentifier: r.record.dynamodb?.SequenceNumber ?? '' })),
    };
  };
}

let lambdaHandler: StreamHandler | undefined;

export const handler: StreamHandler = (event) => {
  if (!lambdaHandler) {
    const runtime = lambdaRuntimeFromEnv();
    lambdaHandler = createDispatcher(eventBus(runtime), webhookFanout(runtime));
  }
  return lambdaHandler(event);
};
