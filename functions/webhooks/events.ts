import type { EventSource } from '../../shared/events/source.js';
import { RUN_ENDPOINT_KIND } from './run-endpoint.js';
import { toEndpoint } from './endpoint-store.js';

/**
 * Endpoints are the subjects (`webhooks/{id}`); the one change with an event is
 * `webhook.endpoint.disabled`. A crew run's own endpoint is no subject (it is the run's).
 */
export const webhookEvents: EventSource = {
  table: 'webhooks',
  describe(item) {
    if (item.kind === RUN_ENDPOINT_KIND) return undefined;
    const endpoint = toEndpoint(item);
    return { subject: `webhooks/${endpoint.id}`, data: { ...endpoint } };
  },
};
