import type { SQSRecord } from 'aws-lambda';
import { type SqsHandler, sqsBatchHandler } from '../../shared/aws/lambda.js';
import { logger } from '../../shared/logger.js';
import type { BusinessMetrics } from '../../shared/ports/metrics.js';
import type { DeliveryMessage } from './delivery-queue.js';
import type { WebhookDeliverer } from './delivery.js';

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
 * The webhook delivery worker (docs/events-and-webhooks.md), with partial batch responses: a record fails
 * only when a dependency did not answer (it comes back after the visibility timeout); failed
 * attempts are retried by new messages, not by failing the record. Each outcome a message
 * settles is counted in `WebhookDeliveries` (when `metrics` is given), flushed at the end
 * of each batch.
 */
export function createWebhookWorkerHandler(deliverer: WebhookDeliverer, metrics?: BusinessMetrics): SqsHandler {
  const processBatch = sqsBatchHandler(async (record: SQSRecord) => {
    const message = deliveryMessageOf(record);
    if (!message) {
      logger.error('webhook delivery message not understood; dropped', { message_id: record.messageId });
      return;
    }
    try {
      const outcome = await deliverer.handle(message, record.messageId);
      if (outcome) metrics?.count('WebhookDeliveries', { outcome });
    } catch (err) {
      logger.error('webhook delivery step failed; it will be handed again', {
        webhook_id: message.endpoint_id,
        delivery_id: message.delivery_id,
        receive_count: record.attributes.ApproximateReceiveCount,
        error: err as Error,
      });
      throw err;
    }
  });
  return async (event, context) => {
    try {
      return await processBatch(event, context);
    } finally {
      await metrics?.flush();
    }
  };
}
