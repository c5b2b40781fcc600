import { secrets, type Runtime } from '../composition.js';
import type { WebhooksDeps } from './app.js';
import { deliveryQueue, deliveryStore, webhookHttp, webhookStore } from './compose-stores.js';
import { WebhookService } from './service.js';

/** The service wired to DynamoDB, the delivery queue and the secret box. */
function webhookService(runtime: Runtime): WebhookService {
  return new WebhookService({
    endpoints: webhookStore(runtime),
    deliveries: deliveryStore(runtime),
    queue: deliveryQueue(runtime),
    box: secrets(runtime),
    urls: webhookHttp(runtime),
    source: runtime.eventsTable.source,
  });
}

export function webhooksDeps(runtime: Runtime): WebhooksDeps {
  return { authenticator: runtime.authenticator, service: webhookService(runtime) };
}
