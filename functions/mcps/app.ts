import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import { PageQuery } from '../../shared/params.js';
import { McpServer, McpServerParams, McpServerRequest } from './schemas.js';
import type { McpServerService } from './service.js';

export interface McpsDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  readonly service: McpServerService;
}

const TAGS = ['mcp servers'];

export function createMcpsApp({ authenticator, idempotency, service }: McpsDeps): ServiceApp {
  return createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'create_mcp_server',
        method: 'post',
        path: '/api/mcps',
        summary: 'Register an MCP server configuration',
        tags: TAGS,
        access: { anyRole: ['admin'] },
        idempotent: true,
        request: { body: McpServerRequest, bodyRequired: true },
        success: { status: 201, description: 'The new server configuration', schema: McpServer },
      },
      async (c, { body, caller }) => c.json(await service.create(body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_mcp_servers',
        method: 'get',
        path: '/api/mcps',
        summary: 'List MCP server configurations, oldest first',
        tags: TAGS,
        access: 'user',
        request: { query: PageQuery },
        success: { status: 200, description: 'Servers; more in `X-Next-Cursor`', schema: z.array(McpServer) },
      },
      async (c, { query }) => {
        const page = await service.list(query.limit, query.cursor);
        return pageJson(c, page);
      },
    )
    .endpoint(
      {
        name: 'get_mcp_server',
        method: 'get',
        path: '/api/mcps/{server_id}',
        summary: 'Read one MCP server configuration (E9)',
        tags: TAGS,
        access: 'user',
        request: { params: McpServerParams },
        success: { status: 200, description: 'The server configuration', schema: McpServer },
        errors: [404],
      },
      async (c, { params }) => c.json(await service.get(params.server_id), 200),
    )
    .endpoint(
      {
        name: 'update_mcp_server',
        method: 'put',
        path: '/api/mcps/{server_id}',
        summary: 'Replace an MCP server configuration as a whole',
        tags: TAGS,
        access: { anyRole: ['admin'] },
        request: { params: McpServerParams, body: McpServerRequest, bodyRequired: true },
        success: { status: 200, description: 'The server configuration', schema: McpServer },
        errors: [404],
      },
      async (c, { params, body, caller }) => c.json(await service.replace(params.server_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'delete_mcp_server',
        method: 'delete',
        path: '/api/mcps/{server_id}',
        summary: 'Delete an MCP server configuration',
        tags: TAGS,
        access: { anyRole: ['admin'] },
        request: { params: McpServerParams },
        success: { status: 204, description: 'Deleted' },
        errors: [404],
      },
      async (c, { params, caller }) => {
        await service.delete(params.server_id, caller);
        return c.body(null, 204);
      },
    );
}
