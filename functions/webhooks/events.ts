import type { EventSource } from '../../shared/events/source.js';
import { toEndpoint } from './store.js';

/** Endpoints are the subjects (`webhooks/{id}`); the one change with an event is `webhook.endpoint.disabled`. */
export const webhookEvents: EventSource = {
  table: 'webhooks',
  describe(item) {
    const endpoint = toEndpoint(item);
    return { subject: `webhooks/${endpoint.id}`, data: { ...endpoint } };
  },
};
