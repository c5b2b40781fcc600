import { randomUUID } from 'node:crypto';
import type { Caller } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { Invalid, NotFound, valueError } from '../../shared/errors.js';
import { MAX_SERVER_BYTES, type McpServer, type McpServerRequest } from './schemas.js';
import type { McpServerStore } from './store.js';
import { jsonBytes } from '../../shared/json.js';

/**
 * The size rule across fields: a configuration must fit in one stored item. Measured as
 * UTF-8 JSON, which is never smaller than what DynamoDB counts for the same fields.
 */
export function checkSize(req: McpServerRequest): void {
  const bytes = jsonBytes(req);
  if (bytes <= MAX_SERVER_BYTES) return;
  const error = `the configuration is ${bytes} bytes as JSON; at most ${MAX_SERVER_BYTES} are allowed`;
  throw new Invalid([valueError(['body'], error, req)]);
}

/** MCP server configurations (E9): admins write them, any user reads them. */
export class McpServerService {
  constructor(
    private readonly servers: McpServerStore,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  async create(req: McpServerRequest, caller: Caller): Promise<McpServer> {
    checkSize(req);
    const at = this.clock.iso();
    const server: McpServer = {
      id: randomUUID(),
      name: req.name,
      command: req.command,
      args: req.args,
      enabled: req.enabled,
      env: req.env,
      created_at: at,
      updated_at: at,
    };
    await this.servers.create(server, { type: 'mcp.server.created', actor: caller.name, at });
    return server;
  }

  list(limit: number, cursor: string | undefined): Promise<Page<McpServer>> {
    return this.servers.list(limit, cursor);
  }

  async get(id: string): Promise<McpServer> {
    const server = await this.servers.get(id);
    if (!server) throw new NotFound(`No MCP server ${id}`);
    return server;
  }

  /** Whole replacement: every field from the request; id and created_at are kept. */
  async replace(id: string, req: McpServerRequest, caller: Caller): Promise<McpServer> {
    checkSize(req);
    const at = this.clock.iso();
    const server = await this.servers.replace(
      id,
      { name: req.name, command: req.command, args: req.args, enabled: req.enabled, env: req.env, updated_at: at },
      { type: 'mcp.server.updated', actor: caller.name, at },
    );
    if (!server) throw new NotFound(`No MCP server ${id}`);
    return server;
  }

  async delete(id: string, caller: Caller): Promise<void> {
    const deleted = await this.servers.delete(id, {
      type: 'mcp.server.deleted',
      actor: caller.name,
      at: this.clock.iso(),
    });
    if (!deleted) throw new NotFound(`No MCP server ${id}`);
  }
}
