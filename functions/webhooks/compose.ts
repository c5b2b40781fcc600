import { OutboundHttp, RUN_WEBHOOK_RULES, WEBHOOK_RULES } from '../../shared/adapters/outbound-http.js';
import { sqsAccess } from '../../shared/aws/sqs.js';
import type { Runtime } from '../composition.js';
import { DynamoDeliveryStore } from './delivery-store.js';
import { SqsDeliveryQueue } from './delivery-queue.js';
import { DynamoWebhookStore } from './endpoint-store.js';
import { WebhookFanout } from './fanout.js';

/*
 * The webhooks group's builders: the stores, the delivery queue and outbound HTTP, and the
 * fan-out the domain-event dispatcher runs. The API's are apart (compose-api.ts), so the
 * queue and stream Lambdas that build from these carry none of its idempotency keys; the
 * delivery worker's are apart too (compose-worker.ts), so the bundles of the API, the
 * dispatcher and crews leave the signing code out.
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

/** The domain-event dispatcher's fan-out to webhook endpoints (`endpointsFreshMs`: ENDPOINTS_FRESH_MS unless given). */
export function webhookFanout(runtime: Runtime, endpointsFreshMs?: number): WebhookFanout {
  return new WebhookFanout({
    endpoints: webhookStore(runtime),
    deliveries: deliveryStore(runtime),
    queue: deliveryQueue(runtime),
    endpointsFreshMs,
    clock: runtime.clock,
  });
}
