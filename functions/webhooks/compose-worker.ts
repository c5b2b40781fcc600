import type { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import type { SqsHandler } from '../../shared/aws/lambda.js';
import { businessMetrics, secrets, type Runtime } from '../composition.js';
import { deliveryQueue, deliveryStore, runWebhookHttp, webhookHttp, webhookStore } from './compose.js';
import { WebhookDeliverer, type WebhookPoster } from './delivery.js';
import { createWebhookWorkerHandler } from './worker.js';

/** What the delivery worker runs (the Lambda, and the local platform's poller). */
export function webhookDeliverer(runtime: Runtime): WebhookDeliverer {
  return new WebhookDeliverer({
    endpoints: webhookStore(runtime),
    deliveries: deliveryStore(runtime),
    queue: deliveryQueue(runtime),
    box: secrets(runtime),
    poster: posterOver(webhookHttp(runtime)),
    runPoster: posterOver(runWebhookHttp(runtime)),
    retrySchedule: runtime.config.webhookRetrySchedule,
    clock: runtime.clock,
  });
}

/** The worker over a runtime (both lanes' Lambda, worker-handler.ts), with the metrics the composition chooses for it. */
export function webhookWorkerFor(runtime: Runtime): SqsHandler {
  return createWebhookWorkerHandler(webhookDeliverer(runtime), businessMetrics(runtime, 'webhooks-worker'));
}

const posterOver = (http: OutboundHttp): WebhookPoster => ({
  post: async (url, headers, body, signal) =>
    (await http.request({ method: 'POST', url, headers, body }, signal)).status,
});
