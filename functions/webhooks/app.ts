import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import {
  DeliveriesQuery,
  DeliveryParams,
  WebhookCreateRequest,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookParams,
  WebhooksQuery,
  WebhookUpdateRequest,
} from './schemas.js';
import type { WebhookService } from './service.js';

export interface WebhooksDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  readonly service: WebhookService;
}

const TAGS = ['webhooks'];
const ADMIN = { anyRole: ['admin'] } as const;

export function createWebhooksApp({ authenticator, idempotency, service }: WebhooksDeps): ServiceApp {
  return createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'create_webhook',
        method: 'post',
        path: '/api/webhooks',
        summary: 'Register a webhook endpoint; its signing secret is shown only in this answer',
        tags: TAGS,
        access: ADMIN,
        idempotent: 'sealed',
        request: { body: WebhookCreateRequest, bodyRequired: true },
        success: { status: 201, description: 'The new endpoint with its secret', schema: WebhookEndpointWithSecret },
      },
      async (c, { body, caller }) => c.json(await service.create(body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_webhooks',
        method: 'get',
        path: '/api/webhooks',
        summary: "List webhook endpoints, oldest first: the API's, or with `kind=run` the crew runs' own",
        tags: TAGS,
        access: ADMIN,
        request: { query: WebhooksQuery },
        success: { status: 200, description: 'Endpoints; more in `X-Next-Cursor`', schema: z.array(WebhookEndpoint) },
      },
      async (c, { query }) => pageJson(c, await service.list(query.kind ?? 'admin', query.limit, query.cursor)),
    )
    .endpoint(
      {
        name: 'get_webhook',
        method: 'get',
        path: '/api/webhooks/{webhook_id}',
        summary: 'Read a webhook endpoint',
        tags: TAGS,
        access: ADMIN,
        request: { params: WebhookParams },
        success: { status: 200, description: 'The endpoint', schema: WebhookEndpoint },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.get(params.webhook_id), 200),
    )
    .endpoint(
      {
        name: 'update_webhook',
        method: 'patch',
        path: '/api/webhooks/{webhook_id}',
        summary:
          "Change the fields given of a webhook endpoint (enabled: false disables it, true enables it again); a crew run's own endpoint keeps its URL and event types",
        tags: TAGS,
        access: ADMIN,
        request: { params: WebhookParams, body: WebhookUpdateRequest, bodyRequired: true },
        success: { status: 200, description: 'The endpoint', schema: WebhookEndpoint },
        errors: [404, 409],
      },
      async (c, { params, body, caller }) => c.json(await service.update(params.webhook_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_webhook',
        method: 'delete',
        path: '/api/webhooks/{webhook_id}',
        summary: 'Delete a webhook endpoint; its pending deliveries stop',
        tags: TAGS,
        access: ADMIN,
        request: { params: WebhookParams },
        success: { status: 204, description: 'Deleted' },
        errors: [404],
      },
      async (c, { params }) => {
        await service.delete(params.webhook_id);
        return c.body(null, 204);
      },
    )
    .endpoint(
      {
        name: 'rotate_webhook_secret',
        method: 'post',
        path: '/api/webhooks/{webhook_id}/rotate-secret',
        summary: 'A new signing secret, shown only in this answer; for 24 h deliveries carry signatures by both',
        tags: TAGS,
        access: ADMIN,
        request: { params: WebhookParams },
        success: { status: 200, description: 'The endpoint with its new secret', schema: WebhookEndpointWithSecret },
        errors: [404, 409],
      },
      async (c, { params }) => c.json(await service.rotateSecret(params.webhook_id), 200),
    )
    .endpoint(
      {
        name: 'test_webhook',
        method: 'post',
        path: '/api/webhooks/{webhook_id}/test',
        summary: 'Send a `dpm.webhook.test` event to this endpoint alone',
        tags: TAGS,
        access: ADMIN,
        idempotent: true,
        request: { params: WebhookParams },
        success: { status: 202, description: 'Queued: the delivery of the test event', schema: WebhookDelivery },
        errors: [404, 409],
      },
      async (c, { params, caller }) => c.json(await service.test(params.webhook_id, caller), 202),
    )
    .endpoint(
      {
        name: 'list_webhook_deliveries',
        method: 'get',
        path: '/api/webhooks/{webhook_id}/deliveries',
        summary: "List an endpoint's deliveries, newest first",
        tags: TAGS,
        access: ADMIN,
        request: { params: WebhookParams, query: DeliveriesQuery },
        success: {
          status: 200,
          description: 'Deliveries; more in `X-Next-Cursor`',
          schema: z.array(WebhookDelivery),
        },
        errors: [404],
      },
      async (c, { params, query }) => pageJson(c, await service.deliveries(params.webhook_id, query)),
    )
    .endpoint(
      {
        name: 'redeliver_webhook_delivery',
        method: 'post',
        path: '/api/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
        summary: 'Deliver that event again: a new attempt series',
        tags: TAGS,
        access: ADMIN,
        idempotent: true,
        request: { params: DeliveryParams },
        success: { status: 202, description: 'Queued: the delivery, pending again', schema: WebhookDelivery },
        errors: [404, 409],
      },
      async (c, { params }) => c.json(await service.redeliver(params.webhook_id, params.delivery_id), 202),
    );
}
