import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { logger } from '../../shared/logger.js';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { crewRunner, runQueue } from './compose-worker.js';
import type { CrewRunner } from './runner.js';
import type { RunQueue } from './service.js';

export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** The run a crew-run message carries; a malformed body throws (and ends in the DLQ). */
export function correlationIdOf(record: SQSRecord): string {
  const body = JSON.parse(record.body) as { correlation_id?: unknown };
  if (typeof body.correlation_id !== 'string' || body.correlation_id.length !== 36) {
    throw new Error(`message ${record.messageId} carries no correlation_id`);
  }
  return body.correlation_id;
}

/**
 * Partial batch responses: only the records that failed are delivered again. A run that
 * needs more time than this invocation has left is queued again and acknowledged.
 */
export function createWorkerHandler(runner: CrewRunner, queue?: RunQueue): SqsHandler {
  const processor = new BatchProcessor(EventType.SQS);
  const processRecord = async (record: SQSRecord, context?: Context) => {
    const correlationId = correlationIdOf(record);
    try {
      const deadline = context && queue ? { remainingMs: () => context.getRemainingTimeInMillis() } : undefined;
      if ((await runner.process(correlationId, deadline)) === 'continue-later') {
        logger.info('crew run continues in a new delivery', { correlation_id: correlationId });
        await queue!.send(correlationId);
      }
    } catch (err) {
      logger.error('crew run delivery failed; it will be retried', {
        correlation_id: correlationId,
        receive_count: record.attributes.ApproximateReceiveCount,
        error: err as Error,
      });
      throw err;
    }
  };
  return (event, context) => processPartialResponse(event, processRecord, processor, context ? { context } : {});
}

let lambdaHandler: SqsHandler | undefined;

export const handler: SqsHandler = (event, context) => {
  if (!lambdaHandler) {
    const runtime = lambdaRuntimeFromEnv();
    lambdaHandler = createWorkerHandler(crewRunner(runtime), runQueue(runtime));
  }
  return lambdaHandler(event, context);
};
