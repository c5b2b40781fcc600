import { secrets, type Runtime } from '../composition.js';
import { deliveryQueue, deliveryStore, webhookHttp, webhookStore } from './compose-stores.js';
import { WebhookDeliverer } from './delivery.js';

/** What the delivery worker runs (the Lambda, and the local platform's poller). */
export function webhookDeliverer(runtime: Runtime): WebhookDeliverer {
  const http = webhookHttp(runtime);
  return new WebhookDeliverer({
    endpoints: webhookStore(runtime),
    deliveries: deliveryStore(runtime),
    queue: deliveryQueue(runtime),
    box: secrets(runtime),
    poster: {
      post: async (url, headers, body, signal) =>
        (await http.request({ method: 'POST', url, headers, body }, signal)).status,
    },
    retrySchedule: runtime.config.webhookRetrySchedule,
  });
}
