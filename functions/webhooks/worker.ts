import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { logger } from '../../shared/logger.js';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { webhookDeliverer } from './compose-worker.js';
import type { DeliveryMessage } from './delivery-queue.js';
import type { WebhookDeliverer } from './delivery.js';

export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** The message a record carries; undefined for one this service never sends. */
export function deliveryMessageOf(record: SQSRecord): DeliveryMessage | undefined {
  try {
    const m = JSON.parse(record.body) as Partial<DeliveryMessage>;
    const valid =
      typeof m.endpoint_id === 'string' &&
      typeof m.delivery_id === 'string' &&
      Number.isInteger(m.series) &&
      Number.isInteger(m.attempt) &&
      typeof m.due === 'number';
    return valid ? (m as DeliveryMessage) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The webhook delivery worker (API.md §14), with partial batch responses: a record fails
 * only when a dependency did not answer (it comes back after the visibility timeout); failed
 * attempts are retried by new messages, not by failing the record.
 */
export function createWebhookWorkerHandler(deliverer: WebhookDeliverer): SqsHandler {
  const processor = new BatchProcessor(EventType.SQS);
  const processRecord = async (record: SQSRecord) => {
    const message = deliveryMessageOf(record);
    if (!message) {
      logger.error('webhook delivery message not understood; dropped', { message_id: record.messageId });
      return;
    }
    try {
      await deliverer.handle(message, record.messageId);
    } catch (err) {
      logger.error('webhook delivery step failed; it will be handed again', {
        webhook_id: message.endpoint_id,
        delivery_id: message.delivery_id,
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
  lambdaHandler ??= createWebhookWorkerHandler(webhookDeliverer(lambdaRuntimeFromEnv()));
  return lambdaHandler(event, context);
};
