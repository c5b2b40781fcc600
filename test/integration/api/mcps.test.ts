import { beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import { adminPsk, adminToken, api, insertKey, slug, token } from '../helpers.js';

let admin: string;
let alice: string;

beforeAll(async () => {
  admin = await adminToken('mcp-admin');
  alice = await token('alice');
});

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ENV_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

const filesystem = {
  name: 'filesystem',
  command: 'npx',
  args: ['-y', '@modelcontextprotocol/server-filesystem', '/data'],
  enabled: false,
  env: { NODE_ENV: 'production', _PRIVATE: '', Api_Key2: 'sk-123' },
};

interface Server {
  id: string;
  name: string;
  command: string;
  args: string[];
  enabled: boolean;
  env: Record<string, string>;
  created_at: string;
  updated_at: string;
}

async function createServer(body: unknown = { ...filesystem, name: slug('mcp') }): Promise<Server> {
  const res = await api<Server>('/api/mcps', { method: 'POST', token: admin, body });
  expect(res.status).toBe(201);
  return res.body;
}

/** The `[loc, type]` of each validation entry, in order. */
const locTypes = (detail: { loc: unknown[]; type: string }[]) => detail.map((d) => [d.loc, d.type]);

describe('MCP servers', () => {
  it('creates a server with every field, readable by any user (E9)', async () => {
    const body = { ...filesystem, name: slug('fs') };
    const created = await createServer(body);
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      ...body,
      created_at: expect.stringMatching(ISO_MS),
      updated_at: expect.stringMatching(ISO_MS),
    });
    expect(Object.keys(created)).toEqual([
      'id',
      'name',
      'command',
      'args',
      'enabled',
      'env',
      'created_at',
      'updated_at',
    ]);
    expect(created.created_at).toBe(created.updated_at);
    const read = await api<Server>(`/api/mcps/${created.id}`, { token: alice });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created);
    expect(read.headers.get('x-request-id')).toMatch(/\S/);
  });

  it('fills in defaults: args [], enabled true, env {}', async () => {
    const created = await createServer({ name: 'minimal', command: 'mcp-server' });
    expect(created).toMatchObject({ name: 'minimal', command: 'mcp-server', args: [], enabled: true, env: {} });
    expect((await api(`/api/mcps/${created.id}`, { token: alice })).body).toEqual(created);
  });

  it('answers 401 without credentials, on every endpoint', async () => {
    const id = randomUUID();
    const calls = [
      api('/api/mcps', { method: 'POST', body: filesystem }),
      api('/api/mcps'),
      api(`/api/mcps/${id}`),
      api(`/api/mcps/${id}`, { method: 'PUT', body: filesystem }),
      api(`/api/mcps/${id}`, { method: 'DELETE' }),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 401 });
      expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    }
  });

  it('lets only admins write: 403 for a plain user, by Bearer token or pre-shared key', async () => {
    const created = await createServer();
    const { secret: userPsk } = await insertKey({ createdBy: slug('plain') });
    for (const auth of [{ token: alice }, { psk: userPsk }]) {
      const post = await api('/api/mcps', { method: 'POST', ...auth, body: filesystem });
      expect(post.status).toBe(403);
      expect(post.body).toEqual({ error: expect.stringContaining('admin'), code: 403 });
      expect((await api(`/api/mcps/${created.id}`, { method: 'PUT', ...auth, body: filesystem })).status).toBe(403);
      expect((await api(`/api/mcps/${created.id}`, { method: 'DELETE', ...auth })).status).toBe(403);
      // ... but reading is for any user.
      expect((await api(`/api/mcps/${created.id}`, auth)).status).toBe(200);
      expect((await api('/api/mcps?limit=1', auth)).status).toBe(200);
    }
    // Roles are checked before the body: a bad body from a plain user is still 403.
    expect((await api('/api/mcps', { method: 'POST', token: alice, body: { colour: 'red' } })).status).toBe(403);
    expect((await api(`/api/mcps/${created.id}`, { token: alice })).body).toEqual(created);
  });

  it('lets an admin write with the admin pre-shared key', async () => {
    const psk = adminPsk();
    const created = await api<Server>('/api/mcps', { method: 'POST', psk, body: filesystem });
    expect(created.status).toBe(201);
    const replaced = await api<Server>(`/api/mcps/${created.body.id}`, {
      method: 'PUT',
      psk,
      body: { name: 'via-psk', command: 'uvx' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.name).toBe('via-psk');
    expect((await api(`/api/mcps/${created.body.id}`, { method: 'DELETE', psk })).status).toBe(204);
  });

  it('answers 404 for unknown servers on get, put and delete', async () => {
    for (const id of [randomUUID(), 'no-such-server']) {
      const get = await api(`/api/mcps/${id}`, { token: alice });
      expect(get.status).toBe(404);
      expect(get.body).toEqual({ error: expect.stringContaining(id), code: 404 });
      const put = await api(`/api/mcps/${id}`, { method: 'PUT', token: admin, body: filesystem });
      expect(put.status).toBe(404);
      expect(put.body).toEqual({ error: expect.any(String), code: 404 });
      const del = await api(`/api/mcps/${id}`, { method: 'DELETE', token: admin });
      expect(del.status).toBe(404);
      expect(del.body).toEqual({ error: expect.any(String), code: 404 });
    }
    // A PUT never creates: the unknown id is still unknown.
    const id = randomUUID();
    await api(`/api/mcps/${id}`, { method: 'PUT', token: admin, body: filesystem });
    expect((await api(`/api/mcps/${id}`, { token: alice })).status).toBe(404);
  });

  it('replaces as a whole: keeps id and created_at, moves updated_at, resets omitted fields', async () => {
    const created = await createServer();
    await new Promise((r) => setTimeout(r, 5));
    const replaced = await api<Server>(`/api/mcps/${created.id}`, {
      method: 'PUT',
      token: admin,
      body: { name: 'renamed', command: 'uvx', args: ['mcp-server-git'] },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({
      id: created.id,
      name: 'renamed',
      command: 'uvx',
      args: ['mcp-server-git'],
      enabled: true,
      env: {},
      created_at: created.created_at,
      updated_at: expect.stringMatching(ISO_MS),
    });
    expect(Date.parse(replaced.body.updated_at)).toBeGreaterThan(Date.parse(created.updated_at));
    expect((await api(`/api/mcps/${created.id}`, { token: alice })).body).toEqual(replaced.body);
  });

  it('deletes: 204 with no body, then 404', async () => {
    const created = await createServer();
    const del = await api(`/api/mcps/${created.id}`, { method: 'DELETE', token: admin });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await api(`/api/mcps/${created.id}`, { token: alice })).status).toBe(404);
    expect((await api(`/api/mcps/${created.id}`, { method: 'DELETE', token: admin })).status).toBe(404);
  });

  it('lists oldest first, paginated by cursor', async () => {
    const ids = [(await createServer()).id, (await createServer()).id, (await createServer()).id];
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<typeof api<Server[]>>> = await api(
        `/api/mcps?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: alice },
      );
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.map((s) => s.id));
      cursor = page.headers.get('x-next-cursor');
      pages++;
    } while (cursor && pages < 500);
    expect(cursor).toBeNull();
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(new Set(seen).size).toBe(seen.length);
    const positions = ids.map((id) => seen.indexOf(id));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('sends X-Next-Cursor only when more remain: never after the last item, even on a full page', async () => {
    await createServer();
    await createServer();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<typeof api<Server[]>>> = await api(
        `/api/mcps?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: alice },
      );
      expect(page.status).toBe(200);
      // Every page a cursor leads to has the item it promised: none is an empty last page.
      expect(page.body).toHaveLength(1);
      cursor = page.headers.get('x-next-cursor');
      pages++;
    } while (cursor && pages < 1000);
    expect(cursor).toBeNull();
    // One page per server: the cursors led through all of them, and stopped at the last.
    const all = await api<Server[]>('/api/mcps?limit=1000', { token: alice });
    expect(pages).toBe(all.body.length);
    expect(pages).toBeGreaterThanOrEqual(2);
  });

  it('answers 404, not 405, to a path with a trailing slash', async () => {
    const { id } = await createServer();
    for (const [method, path] of [
      ['GET', '/api/mcps/'],
      ['POST', '/api/mcps/'],
      ['GET', `/api/mcps/${id}/`],
      ['DELETE', `/api/mcps/${id}/`],
    ] as const) {
      const res = await api(path, { method, token: admin, ...(method === 'POST' ? { body: filesystem } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String), code: 404 });
      expect(res.headers.get('allow')).toBeNull();
    }
    // nothing was deleted or created through the slash
    expect((await api(`/api/mcps/${id}`, { token: alice })).status).toBe(200);
  });

  it('answers 422 for bad list parameters', async () => {
    const limit = await api('/api/mcps?limit=0', { token: alice });
    expect(limit.status).toBe(422);
    expect(locTypes(limit.body.detail)).toEqual([[['query', 'limit'], 'greater_than_equal']]);
    const cursor = await api('/api/mcps?cursor=not-a-cursor', { token: alice });
    expect(cursor.status).toBe(422);
    expect(locTypes(cursor.body.detail)).toEqual([[['query', 'cursor'], 'value_error']]);
  });
});

describe('MCP server validation', () => {
  const post = (body: unknown) => api('/api/mcps', { method: 'POST', token: admin, body });

  it('requires name and command', async () => {
    const res = await post({});
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} },
      { type: 'missing', loc: ['body', 'command'], msg: 'Field required', input: {} },
    ]);
  });

  it('bounds name and command', async () => {
    const res = await post({ name: '', command: 'x'.repeat(4001) });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_short', loc: ['body', 'name'], ctx: { min_length: 1 } }),
      expect.objectContaining({ type: 'string_too_long', loc: ['body', 'command'], ctx: { max_length: 4000 } }),
    ]);
    const long = await post({ name: 'n'.repeat(201), command: 'x' });
    expect(locTypes(long.body.detail)).toEqual([[['body', 'name'], 'string_too_long']]);
  });

  // As pydantic reports a bad dict key: `string_pattern_mismatch` at ["body","env",<name>,"[key]"]
  // with the name as input; names longer than 256 are `string_too_long`.
  it('refuses env names that are not shell variable names', async () => {
    const res = await post({ name: 'n', command: 'c', env: { GOOD: 'ok', 'BAD-NAME': 'v', '9LIVES': 'v', '': 'v' } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: 'string_pattern_mismatch',
        loc: ['body', 'env', 'BAD-NAME', '[key]'],
        msg: `String should match pattern '${ENV_PATTERN}'`,
        input: 'BAD-NAME',
        ctx: { pattern: ENV_PATTERN },
      },
      expect.objectContaining({
        type: 'string_pattern_mismatch',
        loc: ['body', 'env', '9LIVES', '[key]'],
        input: '9LIVES',
      }),
      expect.objectContaining({ type: 'string_pattern_mismatch', loc: ['body', 'env', '', '[key]'], input: '' }),
    ]);
    const long = 'V'.repeat(257);
    const tooLong = await post({ name: 'n', command: 'c', env: { [long]: 'v' } });
    expect(tooLong.body.detail).toEqual([
      expect.objectContaining({
        type: 'string_too_long',
        loc: ['body', 'env', long, '[key]'],
        ctx: { max_length: 256 },
      }),
    ]);
  });

  it('requires env values to be strings and env to be an object', async () => {
    const res = await post({ name: 'n', command: 'c', env: { PORT: 8080, DEBUG: true, OK: 'yes', NOTHING: null } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { type: 'string_type', loc: ['body', 'env', 'PORT'], msg: 'Input should be a valid string', input: 8080 },
      { type: 'string_type', loc: ['body', 'env', 'DEBUG'], msg: 'Input should be a valid string', input: true },
      { type: 'string_type', loc: ['body', 'env', 'NOTHING'], msg: 'Input should be a valid string', input: null },
    ]);
    const list = await post({ name: 'n', command: 'c', env: ['A=1'] });
    expect(locTypes(list.body.detail)).toEqual([[['body', 'env'], 'dict_type']]);
  });

  it('requires args to be a list of strings', async () => {
    const notList = await post({ name: 'n', command: 'c', args: '-y server' });
    expect(notList.status).toBe(422);
    expect(notList.body.detail).toEqual([
      { type: 'list_type', loc: ['body', 'args'], msg: 'Input should be a valid list', input: '-y server' },
    ]);
    const items = await post({ name: 'n', command: 'c', args: ['-y', 3, { a: 1 }] });
    expect(items.status).toBe(422);
    expect(locTypes(items.body.detail)).toEqual([
      [['body', 'args', 1], 'string_type'],
      [['body', 'args', 2], 'string_type'],
    ]);
    const nul = await post({ name: 'n', command: 'c', args: null });
    expect(locTypes(nul.body.detail)).toEqual([[['body', 'args'], 'list_type']]);
  });

  it('requires enabled to be a boolean', async () => {
    const res = await post({ name: 'n', command: 'c', enabled: [true] });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { type: 'bool_type', loc: ['body', 'enabled'], msg: 'Input should be a valid boolean', input: [true] },
    ]);
    for (const enabled of ['maybe', 'true ', 2]) {
      const unreadable = await post({ name: 'n', command: 'c', enabled });
      expect(unreadable.body.detail, String(enabled)).toEqual([
        {
          type: 'bool_parsing',
          loc: ['body', 'enabled'],
          msg: 'Input should be a valid boolean, unable to interpret input',
          input: enabled,
        },
      ]);
    }
  });

  it('reads enabled as pydantic does in lax mode: "no", "ON", "f", 0, 1', async () => {
    for (const [enabled, value] of [
      ['no', false],
      ['ON', true],
      ['f', false],
      ['True', true],
      [0, false],
      [1, true],
    ] as const) {
      const res = await post({ name: slug('lax'), command: 'c', enabled });
      expect(res.status, String(enabled)).toBe(201);
      expect(res.body.enabled, String(enabled)).toBe(value);
      const read = await api(`/api/mcps/${res.body.id}`, { token: alice });
      expect(read.body.enabled).toBe(value);
    }
  });

  it('refuses unknown fields, id and timestamps included', async () => {
    const res = await post({ name: 'n', command: 'c', id: randomUUID(), created_at: '2026-01-01T00:00:00.000Z' });
    expect(res.status).toBe(422);
    expect(locTypes(res.body.detail)).toEqual([
      [['body', 'id'], 'extra_forbidden'],
      [['body', 'created_at'], 'extra_forbidden'],
    ]);
    expect(res.body.detail[0].msg).toBe('Extra inputs are not permitted');
  });

  it('lists every failure of one request together', async () => {
    const res = await post({ command: 5, args: 'x', enabled: 'maybe', env: { 'A B': 'v', N: 1 }, colour: 'red' });
    expect(res.status).toBe(422);
    expect(locTypes(res.body.detail)).toEqual([
      [['body', 'name'], 'missing'],
      [['body', 'command'], 'string_type'],
      [['body', 'args'], 'list_type'],
      [['body', 'enabled'], 'bool_parsing'],
      [['body', 'env', 'A B', '[key]'], 'string_pattern_mismatch'],
      [['body', 'env', 'N'], 'string_type'],
      [['body', 'colour'], 'extra_forbidden'],
    ]);
  });

  it('answers json_invalid for malformed JSON and missing for an absent body', async () => {
    const malformed = await api('/api/mcps', { method: 'POST', token: admin, rawBody: '{"name": "n",' });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail).toEqual([
      expect.objectContaining({ type: 'json_invalid', loc: ['body', 13], msg: 'JSON decode error' }),
    ]);
    const absent = await api('/api/mcps', { method: 'POST', token: admin });
    expect(absent.status).toBe(422);
    expect(absent.body.detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
    const notObject = await post(['name', 'command']);
    expect(locTypes(notObject.body.detail)).toEqual([[['body'], 'dict_type']]);
  });

  it('refuses a configuration too large to store', async () => {
    const res = await post({ name: 'big', command: 'c', env: { BLOB: 'x'.repeat(300 * 1024) } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ type: 'value_error', loc: ['body'] })]);
    expect(res.body.detail[0].msg).toMatch(/at most 262144/);
  });

  it('validates PUT bodies and the path the same way, after authentication and before 404', async () => {
    const id = randomUUID();
    expect((await api(`/api/mcps/${id}`, { method: 'PUT', body: {} })).status).toBe(401);
    const res = await api(`/api/mcps/${id}`, { method: 'PUT', token: admin, body: { name: 'n', env: { X: 1 } } });
    expect(res.status).toBe(422);
    expect(locTypes(res.body.detail)).toEqual([
      [['body', 'command'], 'missing'],
      [['body', 'env', 'X'], 'string_type'],
    ]);
    const longId = await api(`/api/mcps/${'a'.repeat(65)}`, { token: alice });
    expect(longId.status).toBe(422);
    expect(longId.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_long', loc: ['path', 'server_id'], ctx: { max_length: 64 } }),
    ]);
  });
});
