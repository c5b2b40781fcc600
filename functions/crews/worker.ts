import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { configuredChatModel } from '../../shared/adapters/openai.js';
import { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import { sqsClient } from '../../shared/aws/sqs.js';
import { logger } from '../../shared/logger.js';
import { lambdaRuntimeFromEnv, type Runtime } from '../../shared/runtime.js';
import { CrewRunner } from './runner.js';
import { StepExecutor } from './steps.js';
import type { RunQueue } from './service.js';
import { RunStore, SqsRunQueue } from './store.js';

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

/** The worker's composition root, shared by the Lambda and the local platform. */
export function crewRunner(runtime: Runtime): CrewRunner {
  const llm = configuredChatModel(runtime.config);
  return new CrewRunner(
    new RunStore(runtime.db, runtime.tableName('crewRuns'), runtime.tableName('events')),
    new StepExecutor(new OutboundHttp(runtime.config.crewHttpAllowedHosts), llm),
  );
}

let lambdaHandler: SqsHandler | undefined;

export const handler: SqsHandler = (event, context) => {
  if (!lambdaHandler) {
    const runtime = lambdaRuntimeFromEnv();
    lambdaHandler = createWorkerHandler(
      crewRunner(runtime),
      new SqsRunQueue(sqsClient(runtime.config), runtime.config.crewRunQueueUrl),
    );
  }
  return lambdaHandler(event, context);
};
