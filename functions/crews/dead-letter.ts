import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { SQSRecord } from 'aws-lambda';
import { logger } from '../../shared/logger.js';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { crewRunner } from './compose-worker.js';
import type { CrewRunner } from './runner.js';
import { correlationIdOf, type SqsHandler } from './worker.js';

/** Consumes the crew-run dead-letter queue: each abandoned run ends with `run.failed`. */
export function createDeadLetterHandler(runner: CrewRunner): SqsHandler {
  const processor = new BatchProcessor(EventType.SQS);
  const processRecord = async (record: SQSRecord) => {
    let correlationId: string;
    try {
      correlationId = correlationIdOf(record);
    } catch {
      logger.error('malformed message in the crew-run dead-letter queue dropped', { message_id: record.messageId });
      return;
    }
    const receives = record.attributes.ApproximateReceiveCount;
    logger.warn('crew run abandoned in the dead-letter queue', {
      correlation_id: correlationId,
      receive_count: receives,
    });
    await runner.failAbandoned(correlationId, `its message failed ${receives ?? 'several'} deliveries`);
  };
  return (event, context) => processPartialResponse(event, processRecord, processor, context ? { context } : {});
}

let lambdaHandler: SqsHandler | undefined;

export const handler: SqsHandler = (event, context) => {
  lambdaHandler ??= createDeadLetterHandler(crewRunner(lambdaRuntimeFromEnv()));
  return lambdaHandler(event, context);
};
