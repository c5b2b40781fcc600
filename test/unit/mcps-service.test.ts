import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_SERVER_BYTES, type McpServer, type McpServerRequest } from '../../functions/mcps/schemas.js';
import { checkSize, McpServerService } from '../../functions/mcps/service.js';
import type { McpServerStore } from '../../functions/mcps/store.js';
import { jsonBytes } from '../../shared/json.js';
import { NotFound } from '../../shared/errors.js';
import type { Change } from '../../shared/events/types.js';
import { rejection } from '../support/rejection.js';
import { adminCaller, invalidIssues } from './fakes.js';

/**
 * MCP server configurations (docs/data-and-catalog.md, E9) over an in-memory table: the size rule across
 * fields (422 before any write), whole replacement keeping id and created_at, 404s, and
 * what each change records.
 */

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function world() {
  const servers = new Map<string, McpServer>();
  const changes: { id: string; change: Change }[] = [];
  const lists: { limit: number; cursor: string | undefined }[] = [];
  const store: McpServerStore = {
    create: async (server, change) => {
      servers.set(server.id, server);
      changes.push({ id: server.id, change });
    },
    get: async (id) => servers.get(id),
    list: async (limit, cursor) => {
      lists.push({ limit, cursor });
      return { items: [...servers.values()], nextCursor: 'next' };
    },
    replace: async (id, fields, change) => {
      const current = servers.get(id);
      if (!current) return undefined;
      const next = { ...current, ...fields };
      servers.set(id, next);
      changes.push({ id, change });
      return next;
    },
    delete: async (id, change) => {
      const current = servers.get(id);
      if (!current) return undefined;
      servers.delete(id);
      changes.push({ id, change });
      return current;
    },
  };
  return { store, servers, changes, lists, service: new McpServerService(store) };
}

const request = (over: Partial<McpServerRequest> = {}): McpServerRequest => ({
  name: 'filesystem',
  command: 'npx',
  args: ['-y', '@modelcontextprotocol/server-filesystem'],
  enabled: true,
  env: { ROOT: '/data' },
  ...over,
});

/** A request whose JSON is exactly `bytes` long (padded in one env value). */
function requestOf(bytes: number): McpServerRequest {
  const base = request({ env: { PAD: '' } });
  return request({ env: { PAD: 'x'.repeat(bytes - jsonBytes(base)) } });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('McpServerService', () => {
  it('creates a server with a new id and one timestamp, and records its creation', async () => {
    const w = world();
    const server = await w.service.create(request(), adminCaller('dana'));
    expect(server).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      ...request(),
      created_at: iso(T0),
      updated_at: iso(T0),
    });
    expect(w.servers.get(server.id)).toEqual(server);
    expect(w.changes).toEqual([{ id: server.id, change: { type: 'mcp.server.created', actor: 'dana', at: iso(T0) } }]);
  });

  it('takes a configuration of exactly the most bytes, and refuses one byte more (422 at body) before writing', async () => {
    expect(jsonBytes(requestOf(MAX_SERVER_BYTES))).toBe(MAX_SERVER_BYTES);
    expect(() => checkSize(requestOf(MAX_SERVER_BYTES))).not.toThrow();
    const w = world();
    const big = requestOf(MAX_SERVER_BYTES + 1);
    const error = `the configuration is ${MAX_SERVER_BYTES + 1} bytes as JSON; at most ${MAX_SERVER_BYTES} are allowed`;
    expect(await invalidIssues(w.service.create(big, adminCaller()))).toEqual([
      { type: 'value_error', loc: ['body'], msg: `Value error, ${error}`, input: big, ctx: { error } },
    ]);
    expect(w.servers.size).toBe(0);
    expect(w.changes).toEqual([]);
  });

  it('measures the size in UTF-8 bytes, not characters', async () => {
    const ascii = requestOf(MAX_SERVER_BYTES);
    // The same number of characters, two bytes each where the padding was one.
    const wide = request({ env: { PAD: 'é'.repeat(ascii.env.PAD!.length) } });
    expect(() => checkSize(ascii)).not.toThrow();
    expect(await invalidIssues(world().service.create(wide, adminCaller()))).toHaveLength(1);
  });

  it('lists in the store’s order, passing limit and cursor on', async () => {
    const w = world();
    const a = await w.service.create(request({ name: 'a' }), adminCaller());
    const b = await w.service.create(request({ name: 'b' }), adminCaller());
    expect(await w.service.list(2, 'c1')).toEqual({ items: [a, b], nextCursor: 'next' });
    expect(w.lists).toEqual([{ limit: 2, cursor: 'c1' }]);
  });

  it('answers E9 for a known server and 404 for an unknown one', async () => {
    const w = world();
    const server = await w.service.create(request(), adminCaller());
    expect(await w.service.get(server.id)).toEqual(server);
    const missing = await rejection(w.service.get('nope'));
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing.message).toBe('No MCP server nope');
  });

  it('replaces every field but id and created_at, and records the update', async () => {
    const w = world();
    const server = await w.service.create(request(), adminCaller());
    vi.setSystemTime(T0 + 60_000);
    const replaced = await w.service.replace(
      server.id,
      request({ name: 'search', command: 'uvx', args: [], enabled: false, env: {} }),
      adminCaller('erin'),
    );
    expect(replaced).toEqual({
      id: server.id,
      name: 'search',
      command: 'uvx',
      args: [],
      enabled: false,
      env: {},
      created_at: iso(T0),
      updated_at: iso(T0 + 60_000),
    });
    expect(w.changes.at(-1)).toEqual({
      id: server.id,
      change: { type: 'mcp.server.updated', actor: 'erin', at: iso(T0 + 60_000) },
    });
  });

  it('answers 404 for replacing an unknown server, and checks the size before the store', async () => {
    const w = world();
    expect(await rejection(w.service.replace('nope', request(), adminCaller()))).toBeInstanceOf(NotFound);
    const server = await w.service.create(request(), adminCaller());
    expect(
      await invalidIssues(w.service.replace(server.id, requestOf(MAX_SERVER_BYTES + 1), adminCaller())),
    ).toHaveLength(1);
    expect(w.servers.get(server.id)).toEqual(server);
  });

  it('deletes with its event, and answers 404 for a server that is not there', async () => {
    const w = world();
    const server = await w.service.create(request(), adminCaller());
    await w.service.delete(server.id, adminCaller('dana'));
    expect(w.servers.has(server.id)).toBe(false);
    expect(w.changes.at(-1)).toEqual({
      id: server.id,
      change: { type: 'mcp.server.deleted', actor: 'dana', at: iso(T0) },
    });
    expect(await rejection(w.service.delete(server.id, adminCaller()))).toBeInstanceOf(NotFound);
  });
});
