import type { Runtime } from '../composition.js';
import { deliveryQueue, deliveryStore, webhookStore } from './compose-stores.js';
import { WebhookFanout } from './fanout.js';

/** The events dispatcher's fan-out to webhook endpoints. */
export function webhookFanout(runtime: Runtime): WebhookFanout {
  return new WebhookFanout({
    endpoints: webhookStore(runtime),
    deliveries: deliveryStore(runtime),
    queue: deliveryQueue(runtime),
  });
}
