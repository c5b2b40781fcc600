import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import {
  CreatedKey,
  CreateKeyRequest,
  CreateProductRequest,
  DataProduct,
  ExtendedKey,
  ExtendKeyRequest,
  KeyInfo,
  PskParams,
  ListKeysQuery,
  ListProductsQuery,
  ProductParams,
} from './schemas.js';
import type { KeyService } from './key-service.js';
import type { DataProductService } from './service.js';

export interface DataproductDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  /** Pre-shared keys (docs/identity-and-keys.md, E7). */
  readonly keys: KeyService;
  readonly products: DataProductService;
}

const TAGS = ['pre-shared keys'];
const PRODUCT_TAGS = ['data products'];

export function createDataproductApp({ authenticator, idempotency, keys, products }: DataproductDeps): ServiceApp {
  return createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'list_dataproducts',
        method: 'get',
        path: '/api/dataproduct',
        summary: 'List data products by name; with `roles`, only those of these roles',
        tags: PRODUCT_TAGS,
        access: 'user',
        request: { query: ListProductsQuery },
        success: { status: 200, description: 'Data products; more in `X-Next-Cursor`', schema: z.array(DataProduct) },
      },
      async (c, { query }) => pageJson(c, await products.list(query.roles, query.limit, query.cursor)),
    )
    .endpoint(
      {
        name: 'create_dataproduct',
        method: 'post',
        path: '/api/dataproduct',
        summary:
          'Create a data product from a read-only query, an E12 suggestion, or neither: an owner of keys (admin)',
        tags: PRODUCT_TAGS,
        access: { anyRole: ['admin'] },
        idempotent: true,
        request: { body: CreateProductRequest, bodyRequired: true },
        success: { status: 201, description: 'The new data product', schema: DataProduct },
        errors: [404, 409],
      },
      async (c, { body, caller }) => c.json(await products.create(body, caller), 201),
    )
    .endpoint(
      {
        name: 'delete_dataproduct',
        method: 'delete',
        path: '/api/dataproduct/{dataproduct_id}',
        summary: 'Delete a data product (admin); its pre-shared keys stop working. `default` cannot be deleted',
        tags: PRODUCT_TAGS,
        access: { anyRole: ['admin'] },
        request: { params: ProductParams },
        success: { status: 204, description: 'Deleted' },
        errors: [404, 409],
      },
      async (c, { params, caller }) => {
        await products.delete(params.dataproduct_id, caller);
        return c.body(null, 204);
      },
    )
    .endpoint(
      {
        name: 'create_psk',
        method: 'post',
        path: '/api/dataproduct/{dataproduct_id}/psk',
        summary: 'Create a pre-shared key for an existing data product (or `default`); the secret is shown once',
        tags: TAGS,
        access: 'user',
        idempotent: 'sealed',
        request: { params: ProductParams, body: CreateKeyRequest, bodyRequired: true },
        success: { status: 201, description: 'The key with its secret', schema: CreatedKey },
        errors: [404],
      },
      async (c, { params, body, caller }) => c.json(await keys.create(params.dataproduct_id, body, caller), 201),
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
        const page = await keys.list(caller, query.include_deleted ?? false, query.limit, query.cursor);
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
        request: { params: PskParams },
        success: { status: 204, description: 'Deleted' },
        errors: [403, 404],
      },
      async (c, { params, caller }) => {
        await keys.delete(params.psk_id, caller);
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
        request: { params: PskParams, body: ExtendKeyRequest, bodyRequired: true },
        success: { status: 200, description: 'The new validity', schema: ExtendedKey },
        errors: [403, 404, 409],
      },
      async (c, { params, body, caller }) => c.json(await keys.extend(params.psk_id, body.validity_days, caller), 200),
    );
}
