import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { OpenAiChatModel } from '../../shared/adapters/openai.js';
import { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import { logger } from '../../shared/logger.js';
import { lambdaRuntimeFromEnv, type Runtime } from '../../shared/runtime.js';
import { CrewRunner } from './runner.js';
import { StepExecutor } from './steps.js';
import { RunStore } from './store.js';

export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** The run a crew-run message carries; a malformed body throws (and ends in the DLQ). */
export function correlationIdOf(record: SQSRecord): string {
  const body = JSON.parse(record.body) as { correlation_id?: unknown };
  if (typeof body.correlation_id !== 'string' || body.correlation_id.length !== 36) {
    throw new Error(`message ${record.messageId} carries no correlation_id`);
  }
  return body.correlation_id;
}

/** Partial batch responses: only the records that failed are delivered again. */
export function createWorkerHandler(runner: CrewRunner): SqsHandler {
  const processor = new BatchProcessor(EventType.SQS);
  const processRecord = async (record: SQSRecord) => {
    const correlationId = correlationIdOf(record);
    try {
      await runner.process(correlationId);
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
  const { config } = runtime;
  const llm = config.llm.baseUrl
    ? new OpenAiChatModel({ baseUrl: config.llm.baseUrl, model: config.llm.model, apiKey: config.llm.apiKey })
    : undefined;
  return new CrewRunner(
    new RunStore(runtime.db, runtime.tableName('crewRuns'), runtime.tableName('events')),
    new StepExecutor(new OutboundHttp(config.crewHttpAllowedHosts), llm),
  );
}

let lambdaHandler: SqsHandler | undefined;

export const handler: SqsHandler = (event, context) => {
  lambdaHandler ??= createWorkerHandler(crewRunner(lambdaRuntimeFromEnv()));
  return lambdaHandler(event, context);
};
