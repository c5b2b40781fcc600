import { type Runtime, secrets } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import type { WebhooksDeps } from './app.js';
import { deliveryQueue, deliveryStore, webhookHttp, webhookStore } from './compose.js';
import { WebhookService } from './service.js';

/* The webhooks API's builders (its Lambda and the local platform): the service and the app's deps. */

/** The service wired to DynamoDB, the delivery queue and the secret box. */
function webhookService(runtime: Runtime): WebhookService {
  return new WebhookService({
    endpoints: webhookStore(runtime),
    deliveries: deliveryStore(runtime),
    queue: deliveryQueue(runtime),
    box: secrets(runtime),
    urls: webhookHttp(runtime),
    source: runtime.eventsTable.source,
    clock: runtime.clock,
  });
}

export function webhooksDeps(runtime: Runtime): WebhooksDeps {
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime, secrets(runtime)),
    service: webhookService(runtime),
  };
}
