import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import { PageQuery } from '../../shared/params.js';
import {
  Connection,
  ConnectionParams,
  ConnectionRequest,
  ConnectionTestRequest,
  ConnectionTestResult,
  InfrastructureConfig,
  InfrastructureConfigUpdate,
} from './schemas.js';
import type { MigrationService } from './service.js';

export interface MigrationDeps {
  readonly authenticator: RequestAuthenticator;
  readonly service: MigrationService;
}

const CONFIG = ['migration infrastructure'];
const CONNECTIONS = ['migration connections'];
const ADMIN = { anyRole: ['admin'] } as const;

export function createMigrationApp({ authenticator, service }: MigrationDeps): ServiceApp {
  return createServiceApp(authenticator)
    .endpoint(
      {
        name: 'get_infrastructure_config',
        method: 'get',
        path: '/api/migration/infrastructure-config',
        summary: 'Read the migration infrastructure configuration (without write-only fields)',
        tags: CONFIG,
        access: ADMIN,
        success: { status: 200, description: 'The configuration', schema: InfrastructureConfig },
      },
      async (c) => c.json(await service.getConfig(), 200),
    )
    .endpoint(
      {
        name: 'update_infrastructure_config',
        method: 'put',
        path: '/api/migration/infrastructure-config',
        summary: 'Update the migration infrastructure configuration (E3): only the given fields change',
        tags: CONFIG,
        access: ADMIN,
        request: {
          body: InfrastructureConfigUpdate,
          bodyRequired: true,
          secretFields: ['objstore_source_secret_key', 'objstore_dest_secret_key'],
        },
        success: { status: 200, description: 'The configuration after the update', schema: InfrastructureConfig },
      },
      async (c, { body, caller }) => c.json(await service.updateConfig(body, caller), 200),
    )
    .endpoint(
      {
        name: 'test_connection',
        method: 'post',
        path: '/api/migration/infrastructure-config/test-connection',
        summary: 'Test one workflow connection (E4); a failed probe answers ok: false',
        tags: CONFIG,
        access: ADMIN,
        request: { body: ConnectionTestRequest, bodyRequired: true },
        success: { status: 200, description: 'The probe result', schema: ConnectionTestResult },
        errors: [404],
      },
      async (c, { body, caller }) => c.json(await service.testConnection(body.conn_id, body.conn_type, caller), 200),
    )
    .endpoint(
      {
        name: 'list_connections',
        method: 'get',
        path: '/api/migration/connections',
        summary: 'List workflow connections, oldest first (never with passwords)',
        tags: CONNECTIONS,
        access: ADMIN,
        request: { query: PageQuery },
        success: { status: 200, description: 'Connections; more in `X-Next-Cursor`', schema: z.array(Connection) },
      },
      async (c, { query }) => {
        const page = await service.listConnections(query.limit, query.cursor);
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        name: 'get_connection',
        method: 'get',
        path: '/api/migration/connections/{conn_id}',
        summary: 'Read one workflow connection (without its password)',
        tags: CONNECTIONS,
        access: ADMIN,
        request: { params: ConnectionParams },
        success: { status: 200, description: 'The connection', schema: Connection },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.getConnection(params.conn_id), 200),
    )
    .endpoint(
      {
        name: 'put_connection',
        method: 'put',
        path: '/api/migration/connections/{conn_id}',
        summary: 'Create or replace a workflow connection; the password is write-only',
        tags: CONNECTIONS,
        access: ADMIN,
        request: { params: ConnectionParams, body: ConnectionRequest, bodyRequired: true, secretFields: ['password'] },
        success: { status: 200, description: 'The connection (without its password)', schema: Connection },
      },
      async (c, { params, body, caller }) => c.json(await service.putConnection(params.conn_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_connection',
        method: 'delete',
        path: '/api/migration/connections/{conn_id}',
        summary: 'Delete a workflow connection',
        tags: CONNECTIONS,
        access: ADMIN,
        request: { params: ConnectionParams },
        success: { status: 204, description: 'Deleted' },
        errors: [404],
      },
      async (c, { params, caller }) => {
        await service.deleteConnection(params.conn_id, caller);
        return c.body(null, 204);
      },
    );
}
