import { z } from '@hono/zod-openapi';

/** An environment variable name, as a POSIX shell accepts it. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The largest configuration stored, in bytes of its JSON: under DynamoDB's 400 KB item
 * limit with room for the id, timestamps and listing attributes.
 */
export const MAX_SERVER_BYTES = 256 * 1024;

const envName = z.string().max(256).regex(ENV_NAME);

export const McpServerRequest = z
  .strictObject({
    name: z.string().min(1).max(200).openapi({ description: 'human-readable name', example: 'filesystem' }),
    command: z.string().min(1).max(4000).openapi({ description: 'executable command', example: 'npx' }),
    args: z
      .array(z.string())
      .default([])
      .openapi({ description: 'command arguments', example: ['-y', '@modelcontextprotocol/server-filesystem'] }),
    enabled: z.boolean().default(true).openapi({ description: 'whether active' }),
    env: z.record(envName, z.string()).default({}).openapi({
      description:
        'environment variables: names match `^[A-Za-z_][A-Za-z0-9_]*$` (at most 256 characters), values are strings',
    }),
  })
  .openapi('McpServerRequest');
export type McpServerRequest = z.infer<typeof McpServerRequest>;

export const McpServer = z
  .object({
    id: z.uuid().openapi({ description: 'the server id (UUID), assigned at creation' }),
    name: z.string().openapi({ description: 'human-readable name' }),
    command: z.string().openapi({ description: 'executable command' }),
    args: z.array(z.string()).openapi({ description: 'command arguments' }),
    enabled: z.boolean().openapi({ description: 'whether active' }),
    env: z.record(z.string(), z.string()).openapi({ description: 'environment variables: name → value' }),
    created_at: z.iso.datetime().openapi({ description: 'when the configuration was created (ISO 8601 UTC)' }),
    updated_at: z.iso.datetime().openapi({ description: 'when it was last replaced (ISO 8601 UTC)' }),
  })
  .openapi('McpServer');
export type McpServer = z.infer<typeof McpServer>;

export const McpServerParams = z.object({
  server_id: z.string().min(1).max(64).openapi({ description: 'the server id returned at creation' }),
});
