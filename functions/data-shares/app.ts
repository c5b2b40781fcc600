import { z } from '@hono/zod-openapi';
import { BuiltinIdentityProvider } from '../../shared/adapters/builtin-idp.js';
import { KeycloakIdentityProvider } from '../../shared/adapters/keycloak.js';
import { secretValue } from '../../shared/aws/secrets-manager.js';
import type { Authenticator } from '../../shared/auth/authenticator.js';
import { secretBox } from '../../shared/aws/kms.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/app.js';
import { PageQuery } from '../../shared/http/params.js';
import type { IdentityProvider } from '../../shared/ports/idp.js';
import type { Runtime } from '../../shared/runtime.js';
import { CreateShareRequest, SharedClient, ShareParams } from './schemas.js';
import { DataShareService } from './service.js';
import { DataShareStore } from './store.js';

export interface DataSharesDeps {
  readonly authenticator: Authenticator;
  readonly service: DataShareService;
}

const TAGS = ['data shares'];

export function createDataSharesApp({ authenticator, service }: DataSharesDeps): ServiceApp {
  return createServiceApp(authenticator)
    .endpoint(
      {
        name: 'create_data_share',
        method: 'post',
        path: '/api/data_shares',
        summary: 'Share data: create a confidential client with a service account (the caller owns it)',
        tags: TAGS,
        access: 'user',
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
        path: '/api/data_shares/{name}',
        summary: 'Read one shared client, including its secret (E8); owner or admin',
        tags: TAGS,
        access: 'user',
        request: { params: ShareParams },
        success: { status: 200, description: 'The shared client with its secret', schema: SharedClient },
        errors: [403, 404],
      },
      async (c, { params, caller }) => c.json(await service.get(params.name, caller), 200),
    )
    .endpoint(
      {
        name: 'rotate_data_share_secret',
        method: 'post',
        path: '/api/data_shares/{name}/rotate-secret',
        summary: "Replace a shared client's secret; the old one stops working. Owner or admin",
        tags: TAGS,
        access: 'user',
        request: { params: ShareParams },
        success: { status: 200, description: 'The shared client with its new secret', schema: SharedClient },
        errors: [403, 404, 409],
      },
      async (c, { params, caller }) => c.json(await service.rotateSecret(params.name, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_data_share',
        method: 'delete',
        path: '/api/data_shares/{name}',
        summary: 'Delete a data share and its identity-provider client; owner or admin',
        tags: TAGS,
        access: 'user',
        request: { params: ShareParams },
        success: { status: 204, description: 'Deleted' },
        errors: [403, 404],
      },
      async (c, { params, caller }) => {
        await service.delete(params.name, caller);
        return c.body(null, 204);
      },
    );
}

/** The identity provider chosen by `IDP`: Keycloak's admin API, or clients in DynamoDB. */
export function identityProvider(runtime: Runtime): IdentityProvider {
  const { config } = runtime;
  if (config.adapters.idp === 'keycloak') {
    if (!config.keycloak) throw new Error('IDP=keycloak needs the KEYCLOAK_* settings');
    const { clientSecret, ...settings } = config.keycloak;
    return new KeycloakIdentityProvider({
      ...settings,
      clientSecret: 'value' in clientSecret ? clientSecret.value : () => secretValue(config.region, clientSecret.arn),
    });
  }
  return new BuiltinIdentityProvider(runtime.db, runtime.tableName('idpClients'), secretBox(config));
}

/** The service wired to the registry table and the configured identity provider. */
export function dataShareService(runtime: Runtime): DataShareService {
  return new DataShareService(
    new DataShareStore(runtime.db, runtime.tableName('dataShares')),
    identityProvider(runtime),
  );
}

/** The composition root used by the Lambda handler and the local platform. */
export function dataSharesApp(runtime: Runtime): ServiceApp {
  return createDataSharesApp({ authenticator: runtime.authenticator, service: dataShareService(runtime) });
}
