import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type {
  Context,
  DynamoDBBatchResponse,
  DynamoDBStreamEvent,
  SQSBatchResponse,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
import { logger } from '../logger.js';
import { lazy } from './lazy.js';

/*
 * The queue and stream Lambdas' entries (an HTTP Lambda's is `handle(app)`, whose context the
 * app's request context logs). The same handlers run on the local platform's pollers, which
 * hand no context.
 */

/** An SQS consumer answering partial batch responses: only the records that failed come back. */
export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** A DynamoDB stream consumer with partial batch failures (the domain-event publisher and dispatcher). */
export type StreamHandler = (event: DynamoDBStreamEvent, context?: Context) => Promise<DynamoDBBatchResponse>;

/**
 * An SQS consumer of one record at a time (Powertools' `processPartialResponse`): a record whose
 * `processRecord` throws is a batch item failure, delivered again; the others are done.
 */
export function sqsBatchHandler(processRecord: (record: SQSRecord, context?: Context) => Promise<void>): SqsHandler {
  const processor = new BatchProcessor(EventType.SQS);
  return (event, context) => processPartialResponse(event, processRecord, processor, context ? { context } : {});
}

/** A queue Lambda's `handler`: see `lambdaEntry`. */
export const sqsEntry = (build: () => SqsHandler): SqsHandler => lambdaEntry(build);

/** A DynamoDB stream Lambda's `handler`: see `lambdaEntry`. */
export const streamEntry = (build: () => StreamHandler): StreamHandler => lambdaEntry(build);

/**
 * A Lambda entry: the handler is built on the first invocation and reused by the next ones
 * (a build that failed is tried again), so a module import builds nothing. Every log line of
 * an invocation names the function and its request id (Powertools' `addContext`).
 */
function lambdaEntry<E, R>(
  build: () => (event: E, context?: Context) => Promise<R>,
): (event: E, context?: Context) => Promise<R> {
  const built = lazy(async () => build());
  return async (event, context) => {
    if (context) logger.addContext(context);
    return (await built())(event, context);
  };
}
