import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import { PageQuery } from '../../shared/params.js';
import { CreateShareRequest, SharedClient, ShareParams } from './schemas.js';
import type { DataShareService } from './service.js';

export interface DataSharesDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  readonly service: DataShareService;
}

const TAGS = ['data shares'];

export function createDataSharesApp({ authenticator, idempotency, service }: DataSharesDeps): ServiceApp {
  return createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'create_data_share',
        method: 'post',
        path: '/api/data_shares',
        summary: 'Share data: create a confidential client with a service account (the caller owns it)',
        tags: TAGS,
        access: 'user',
        idempotent: 'sealed',
        request: { body: CreateShareRequest, bodyRequired: true },
        success: { status: 201, description: 'The new shared client, with its secret', schema: SharedClient },
        errors: [409],
      },
      async (c, { body, caller }) => c.json(await service.create(body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_data_shares',
        method: 'get',
        path: '/api/data_shares',
        summary: "List the caller's data shares (an admin's: all), oldest first, without secrets",
        tags: TAGS,
        access: 'user',
        request: { query: PageQuery },
        success: {
          status: 200,
          description: 'Shared clients with `secret` null; more in `X-Next-Cursor`',
          schema: z.array(SharedClient),
        },
      },
      async (c, { query, caller }) => {
        const page = await service.list(caller, query.limit, query.cursor);
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        name: 'get_data_share',
        method: 'get',
        path: '/api/data_shares/{share_id}',
        summary: 'Read one shared client by name or id, including its secret (E8); owner or admin',
        tags: TAGS,
        access: 'user',
        request: { params: ShareParams },
        success: { status: 200, description: 'The shared client with its secret', schema: SharedClient },
        errors: [403, 404],
      },
      async (c, { params, caller }) => c.json(await service.get(params.share_id, caller), 200),
    )
    .endpoint(
      {
        name: 'rotate_data_share_secret',
        method: 'post',
        path: '/api/data_shares/{share_id}/rotate-secret',
        summary: "Replace a shared client's secret; the old one stops working. Owner or admin",
        tags: TAGS,
        access: 'user',
        request: { params: ShareParams },
        success: { status: 200, description: 'The shared client with its new secret', schema: SharedClient },
        errors: [403, 404, 409],
      },
      async (c, { params, caller }) => c.json(await service.rotateSecret(params.share_id, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_data_share',
        method: 'delete',
        path: '/api/data_shares/{share_id}',
        summary: 'Delete a data share (by name or id) and its identity-provider client; owner or admin',
        tags: TAGS,
        access: 'user',
        request: { params: ShareParams },
        success: { status: 204, description: 'Deleted' },
        errors: [403, 404],
      },
      async (c, { params, caller }) => {
        await service.delete(params.share_id, caller);
        return c.body(null, 204);
      },
    );
}
