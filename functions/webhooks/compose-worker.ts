import type { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import { secrets, type Runtime } from '../composition.js';
import { deliveryQueue, deliveryStore, runWebhookHttp, webhookHttp, webhookStore } from './compose.js';
import { WebhookDeliverer, type WebhookPoster } from './delivery.js';

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

const posterOver = (http: OutboundHttp): WebhookPoster => ({
  post: async (url, headers, body, signal) =>
    (await http.request({ method: 'POST', url, headers, body }, signal)).status,
});
