import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { storedEvent } from '../../shared/events/events-table.js';
import type { StreamHandler } from '../../shared/aws/lambda.js';
import { tableOfStream } from '../../shared/events/stream.js';
import type { DomainEvent } from '../../shared/events/types.js';
import { logger } from '../../shared/logger.js';
import type { EventBus } from '../../shared/ports/event-bus.js';
import type { BusinessMetrics } from '../../shared/ports/metrics.js';

/** Where the dispatcher hands events besides the bus: webhooks (docs/events-and-webhooks.md). */
export interface EventFanout {
  /** The ids of the events it could not take (they are handed again, with what follows them). */
  fanOut(events: readonly DomainEvent[]): Promise<ReadonlySet<string>>;
  /** A crew run's E13 events (envelopes in index order) to the run's own webhook, if it has one. */
  fanOutToRun(correlationId: string, events: readonly DomainEvent[]): Promise<ReadonlySet<string>>;
  /** The webhook endpoints changed (the local platform's writes): the next fan-out reads them again. */
  endpointsChanged?(): void;
}

/**
 * The run log (E13), whose stream feeds per-run webhooks: its table and how an entry becomes
 * the envelope a run's webhook receives (crews and webhooks know; the composition hands it in).
 */
export interface RunLogStream {
  /** Physical table name. */
  readonly table: string;
  /** A run log item as its run's webhook's envelope; undefined when its run has no webhook (nothing is read). */
  envelopeOf(item: Record<string, unknown>): DomainEvent | undefined;
}

type Image = Parameters<typeof unmarshall>[0];

/** The envelope of an events-table item as its stream carries it (new events only). */
export function recordedEvent(record: DynamoDBRecord): DomainEvent | undefined {
  if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) return undefined;
  return storedEvent(unmarshall(record.dynamodb.NewImage as Image));
}

/** A run log entry, as its run's webhook's envelope, from the run log's stream (new entries only). */
function runEventOf(record: DynamoDBRecord, runLog: RunLogStream): DomainEvent | undefined {
  if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) return undefined;
  return runLog.envelopeOf(unmarshall(record.dynamodb.NewImage as Image));
}

/**
 * The events table's stream consumer: every recorded event goes to the stage's bus and to the webhook endpoints that take it
 * (docs/events-and-webhooks.md). Events the bus still refuses after
 * its retries, or that could not be fanned out, are batch item failures, handed again in
 * order (with what follows them) until they are taken or the record expires; the bus may
 * then get an event twice (at least once), the fan-out makes each delivery once.
 *
 * With `runLog`, it also reads the crew runs' E13 events table: each event of a run
 * started with a `webhook_url` goes to that run's webhook alone (never to the bus).
 */
export function createDispatcher(
  bus: EventBus,
  webhooks?: EventFanout,
  runLog?: RunLogStream,
  /**
   * Counts `DomainEvents` by type, once per event: the events the dispatcher is done with
   * before the first it hands back (Lambda hands a stream's batch again from its first
   * failure, so those are never handed again); flushed at the end of each batch.
   */
  metrics?: BusinessMetrics,
): StreamHandler {
  const runRecords = (records: readonly DynamoDBRecord[]) =>
    runLog !== undefined && records.length > 0 && tableOfStream(records[0]!.eventSourceARN) === runLog.table;
  const dispatch: StreamHandler = async (event) => {
    // One shard of one stream per call (as Lambda hands them).
    if (runRecords(event.Records)) return dispatchRunEvents(event.Records, runLog!, webhooks);
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
    const firstFailed = recorded.findIndex((r) => failedIds.has(r.event.id));
    for (const r of firstFailed < 0 ? recorded : recorded.slice(0, firstFailed))
      metrics?.count('DomainEvents', { type: r.event.type });
    return {
      batchItemFailures: recorded
        .filter((r) => failedIds.has(r.event.id))
        .map((r) => ({ itemIdentifier: r.record.dynamodb?.SequenceNumber ?? '' })),
    };
  };
  return async (event) => {
    try {
      return await dispatch(event);
    } finally {
      await metrics?.flush();
    }
  };
}

/** A crew run's E13 events to the run's own webhook, one run after another, each in index order. */
async function dispatchRunEvents(
  records: readonly DynamoDBRecord[],
  runLog: RunLogStream,
  webhooks: EventFanout | undefined,
): Promise<DynamoDBBatchResponse> {
  const byRun = new Map<string, { record: DynamoDBRecord; event: DomainEvent }[]>();
  for (const record of records) {
    let e: DomainEvent | undefined;
    try {
      e = runEventOf(record, runLog);
    } catch (err) {
      logger.error('crew run event record not understood', { error: err as Error });
      continue;
    }
    if (!e) continue;
    const correlationId = String((e.data as { correlation_id: unknown }).correlation_id);
    byRun.set(correlationId, [...(byRun.get(correlationId) ?? []), { record, event: e }]);
  }
  if (!webhooks || byRun.size === 0) return { batchItemFailures: [] };
  const failedIds = new Set<string>();
  await Promise.all(
    [...byRun].map(async ([correlationId, list]) => {
      const failed = await webhooks
        .fanOutToRun(
          correlationId,
          list.map((r) => r.event),
        )
        .catch((err: unknown) => {
          logger.warn("crew run events not fanned out to the run's webhook; handed again", {
            correlation_id: correlationId,
            error: err as Error,
          });
          return new Set(list.map((r) => r.event.id));
        });
      for (const id of failed) failedIds.add(id);
    }),
  );
  return {
    batchItemFailures: [...byRun.values()]
      .flat()
      .filter((r) => failedIds.has(r.event.id))
      .map((r) => ({ itemIdentifier: r.record.dynamodb?.SequenceNumber ?? '' })),
  };
}
