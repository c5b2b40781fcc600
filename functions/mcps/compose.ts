import { type Runtime } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import type { McpsDeps } from './app.js';
import { McpServerService } from './service.js';
import { DynamoMcpServerStore } from './store.js';

/** The service wired to DynamoDB. */
function mcpService(runtime: Runtime): McpServerService {
  return new McpServerService(
    new DynamoMcpServerStore(runtime.db, runtime.tableName('mcpServers'), runtime.eventsTable),
    runtime.clock,
  );
}

export function mcpsDeps(runtime: Runtime): McpsDeps {
  return { authenticator: runtime.authenticator, idempotency: idempotencyKeys(runtime), service: mcpService(runtime) };
}
