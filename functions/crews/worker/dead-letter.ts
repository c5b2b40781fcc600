import type { SQSRecord } from 'aws-lambda';
import { type SqsHandler, sqsBatchHandler } from '../../../shared/aws/lambda.js';
import { logger } from '../../../shared/logger.js';
import type { CrewRunner } from './runner.js';
import { correlationIdOf, scheduleFireOf } from './worker.js';

/** Consumes the crew-run dead-letter queue: each abandoned run ends with `run.failed`. */
export function createDeadLetterHandler(runner: CrewRunner): SqsHandler {
  return sqsBatchHandler(async (record: SQSRecord) => {
    let correlationId: string;
    try {
      const fire = scheduleFireOf(record);
      if (fire) {
        // Its run was never started (a started run is the run's own message): the schedule's next fire goes on.
        logger.error('crew schedule fire abandoned in the dead-letter queue: it started no run', {
          ...fire,
          receive_count: record.attributes.ApproximateReceiveCount,
        });
        return;
      }
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
  });
}
