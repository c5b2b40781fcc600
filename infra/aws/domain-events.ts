import type { StreamConsumerDefinition } from '../groups.js';
import type { StageName } from './stages.js';

/**
 * AWS resources of domain events (docs/events-and-webhooks.md) that infra/tables.ts and infra/groups.ts
 * do not define: the stage's bus, and how the stream consumers' event sources retry and alarm.
 * (The webhook delivery queue is a QUEUES entry, built like the others.)
 */

/** The stage's EventBridge bus; its archive has the same name. */
export const eventBusName = (stage: StageName): string => `dpm-${stage}`;

/**
 * Where a stream consumer's event source sends what it gives up on (the shard and sequence
 * range of the failed batch, not the records): `dpm-<stage>-<consumer>-dlq`, in the stateful
 * stack so that it, and its alarm, survive stateless redeploys.
 */
export const streamDeadLetterQueueName = (stage: StageName, consumer: Pick<StreamConsumerDefinition, 'name'>): string =>
  `dpm-${stage}-${consumer.name}-dlq`;

/** Days a stream consumer's dead-letter queue keeps a failed batch's description. */
export const STREAM_DEAD_LETTER_RETENTION_DAYS = 14;

/**
 * A failing batch is split (bisected) and retried at most this often, and records older than
 * this are not retried any more: then the batch goes to the consumer's dead-letter queue and
 * the shard moves on, instead of one poisoned record blocking its item's later changes until
 * the stream drops them (24 h).
 */
export const STREAM_RETRY = { retryAttempts: 10, maxRecordAgeHours: 24 } as const;

/** A consumer whose oldest record waits this long (maximum over a period) for this many periods alarms. */
export const ITERATOR_AGE_ALARM = { thresholdSeconds: 60, evaluationPeriods: 3 } as const;
