import { OutboundHttp, RUN_WEBHOOK_RULES, WEBHOOK_RULES } from '../../shared/adapters/outbound-http.js';
import { sqsAccess } from '../../shared/aws/sqs.js';
import type { Runtime } from '../composition.js';
import { SqsDeliveryQueue } from './delivery-queue.js';
import { DynamoDeliveryStore, DynamoWebhookStore } from './store.js';

/*
 * What the webhooks API, the delivery worker and the events dispatcher all build: the
 * stores, the delivery queue and outbound HTTP under the webhook rules. Apart from the
 * worker's builder, so the API's and the dispatcher's bundles leave the signing code out.
 */

export function webhookStore(runtime: Runtime): DynamoWebhookStore {
  return new DynamoWebhookStore(runtime.db, runtime.tableName('webhooks'));
}

export function deliveryStore(runtime: Runtime): DynamoDeliveryStore {
  return new DynamoDeliveryStore(runtime.db, runtime.tableName('webhookDeliveries'), runtime.config.eventsTtlDays);
}

/** Both delivery lanes: each message goes to its endpoint's. */
export function deliveryQueue(runtime: Runtime): SqsDeliveryQueue {
  return new SqsDeliveryQueue(sqsAccess(runtime.config), {
    endpoints: runtime.config.webhookQueueUrl,
    runs: runtime.config.runWebhookQueueUrl,
  });
}

/** Outbound HTTP under the webhook URL rules: https anywhere, http to WEBHOOK_ALLOWED_HOSTS. */
export function webhookHttp(runtime: Runtime): OutboundHttp {
  return new OutboundHttp(runtime.config.webhookAllowedHosts, WEBHOOK_RULES);
}

/** Outbound HTTP under the per-run webhook rules: also nothing internal unless listed in WEBHOOK_ALLOWED_HOSTS. */
export function runWebhookHttp(runtime: Runtime): OutboundHttp {
  return new OutboundHttp(runtime.config.webhookAllowedHosts, RUN_WEBHOOK_RULES);
}
