import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import { DomainEventSchema, EventParams, FeedQuery } from './schemas.js';
import type { EventFeedService } from './service.js';

export interface DomainEventsDeps {
  readonly authenticator: RequestAuthenticator;
  readonly service: EventFeedService;
}

const TAGS = ['domain events'];

export function createDomainEventsApp({ authenticator, service }: DomainEventsDeps): ServiceApp {
  return createServiceApp(authenticator)
    .endpoint(
      {
        name: 'list_domain_events',
        method: 'get',
        path: '/api/domain-events',
        summary: 'List domain events, oldest first (kept EVENTS_TTL_DAYS)',
        tags: TAGS,
        access: { anyRole: ['admin'] },
        request: { query: FeedQuery },
        success: { status: 200, description: 'Events; more in `X-Next-Cursor`', schema: z.array(DomainEventSchema) },
      },
      async (c, { query }) => pageJson(c, await service.list(query)),
    )
    .endpoint(
      {
        name: 'get_domain_event',
        method: 'get',
        path: '/api/domain-events/{event_id}',
        summary: 'Read one domain event',
        tags: TAGS,
        access: { anyRole: ['admin'] },
        request: { params: EventParams },
        success: { status: 200, description: 'The event', schema: DomainEventSchema },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.get(params.event_id), 200),
    );
}
