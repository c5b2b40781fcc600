import * as z from 'zod/mini';
import { component, doc } from '../../shared/schema.js';

/** An environment variable name, as a POSIX shell accepts it. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The largest configuration stored, in bytes of its JSON: under DynamoDB's 400 KB item
 * limit with room for the id, timestamps and listing attributes.
 */
export const MAX_SERVER_BYTES = 256 * 1024;

const envName = z.string().check(z.maxLength(256), z.regex(ENV_NAME));

export const McpServerRequest = component(
  'McpServerRequest',
  z.strictObject({
    name: doc(z.string().check(z.minLength(1), z.maxLength(200)), 'human-readable name', { example: 'filesystem' }),
    command: doc(z.string().check(z.minLength(1), z.maxLength(4000)), 'executable command', { example: 'npx' }),
    args: doc(z._default(z.array(z.string()), []), 'command arguments', {
      example: ['-y', '@modelcontextprotocol/server-filesystem'],
    }),
    enabled: doc(z._default(z.boolean(), true), 'whether active'),
    env: doc(
      z._default(z.record(envName, z.string()), {}),
      'environment variables: names match `^[A-Za-z_][A-Za-z0-9_]*$` (at most 256 characters), values are strings',
    ),
  }),
);
export type McpServerRequest = z.infer<typeof McpServerRequest>;

export const McpServer = component(
  'McpServer',
  z.object({
    id: doc(z.uuid(), 'the server id (UUID), assigned at creation'),
    name: doc(z.string(), 'human-readable name'),
    command: doc(z.string(), 'executable command'),
    args: doc(z.array(z.string()), 'command arguments'),
    enabled: doc(z.boolean(), 'whether active'),
    env: doc(z.record(z.string(), z.string()), 'environment variables: name → value'),
    created_at: doc(z.iso.datetime(), 'when the configuration was created (ISO 8601 UTC)'),
    updated_at: doc(z.iso.datetime(), 'when it was last replaced (ISO 8601 UTC)'),
  }),
);
export type McpServer = z.infer<typeof McpServer>;

export const McpServerParams = z.object({
  server_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the server id returned at creation'),
});
