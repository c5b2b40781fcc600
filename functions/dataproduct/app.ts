import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/app.js';
import {
  CreatedKey,
  CreateKeyRequest,
  ExtendedKey,
  ExtendKeyRequest,
  KeyInfo,
  KeyParams,
  ListKeysQuery,
  ProductParams,
} from './schemas.js';
import type { KeyService } from './service.js';

export interface DataproductDeps {
  readonly authenticator: RequestAuthenticator;
  readonly service: KeyService;
}

const TAGS = ['pre-shared keys'];

export function createDataproductApp({ authenticator, service }: DataproductDeps): ServiceApp {
  return createServiceApp(authenticator)
    .endpoint(
      {
        name: 'create_psk',
        method: 'post',
        path: '/api/dataproduct/{dataproduct_id}/psk',
        summary: 'Create a pre-shared key for a data product; the secret is shown once',
        tags: TAGS,
        access: 'user',
        request: { params: ProductParams, body: CreateKeyRequest, bodyRequired: true },
        success: { status: 201, description: 'The key with its secret', schema: CreatedKey },
      },
      async (c, { params, body, caller }) => c.json(await service.create(params.dataproduct_id, body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_psks',
        method: 'get',
        path: '/api/dataproduct/psk',
        summary: 'List pre-shared keys: your own (an admin: all), without secrets',
        tags: TAGS,
        access: 'user',
        request: { query: ListKeysQuery },
        success: { status: 200, description: 'Keys; more in `X-Next-Cursor`', schema: z.array(KeyInfo) },
      },
      async (c, { query, caller }) => {
        const page = await service.list(caller, query.include_deleted ?? false, query.limit, query.cursor);
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        name: 'delete_psk',
        method: 'delete',
        path: '/api/dataproduct/psk/{psk_id}',
        summary: 'Delete a pre-shared key (creator or admin); it stops working at once',
        tags: TAGS,
        access: 'user',
        request: { params: KeyParams },
        success: { status: 204, description: 'Deleted' },
        errors: [403, 404],
      },
      async (c, { params, caller }) => {
        await service.delete(params.psk_id, caller);
        return c.body(null, 204);
      },
    )
    .endpoint(
      {
        name: 'extend_psk',
        method: 'post',
        path: '/api/dataproduct/psk/{psk_id}/extend',
        summary: 'Extend a pre-shared key (E7): valid_until = max(valid_until, now) + validity_days',
        tags: TAGS,
        access: 'user',
        request: { params: KeyParams, body: ExtendKeyRequest, bodyRequired: true },
        success: { status: 200, description: 'The new validity', schema: ExtendedKey },
        errors: [403, 404, 409],
      },
      async (c, { params, body, caller }) =>
        c.json(await service.extend(params.psk_id, body.validity_days, caller), 200),
    );
}
