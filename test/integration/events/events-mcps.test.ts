import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, slug, token } from '../helpers.js';
import { type Envelope, eventsOf as feedEvents, expectNothingMore, storedItems } from '../event-feed.js';

// docs/events-and-webhooks.md for MCP server configurations: mcp.server.created / .updated / .deleted about
// `mcps/{id}`, data as GET answers (for a deletion: as it answered before); none for a
// refused change.

let admin: string;
let editor: string;
let alice: string;
let feedReader: string;

beforeAll(async () => {
  admin = await adminToken('mcp-events-admin');
  editor = await adminToken('mcp-events-editor');
  alice = await token('alice');
  feedReader = await adminToken('mcp-events-reader');
});

const eventsOf = (subject: string, count: number) => feedEvents(subject, count, feedReader);

// Every env here is non-empty: DynamoDB Local streams an empty map as a value of no type
// (`{}`), which infra/local/stream-poller.ts hands on as is and no reader understands.
const config = (name: string) => ({
  name,
  command: 'npx',
  args: ['-y', '@modelcontextprotocol/server-filesystem', '/data'],
  enabled: true,
  env: { NODE_ENV: 'production' },
});

describe('MCP server events', () => {
  it('created, updated, deleted: in order, the GET answer as data, the caller as actor; none when refused', async () => {
    const created = await api('/api/mcps', { method: 'POST', token: admin, body: config(slug('mcp')) });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const subject = `mcps/${id}`;
    const afterCreate = await api(`/api/mcps/${id}`, { token: alice });

    const replaced = await api(`/api/mcps/${id}`, {
      method: 'PUT',
      token: editor,
      body: { ...config('renamed'), enabled: false, env: { LOG_LEVEL: 'debug' } },
    });
    expect(replaced.status).toBe(200);
    const beforeDelete = await api(`/api/mcps/${id}`, { token: alice });
    expect(beforeDelete.body).toEqual(replaced.body);
    // GET and list answers carry no change stamp (no stamp attribute as a key; a name may hold "ev_")
    expect(beforeDelete.text).not.toMatch(/"ev_(id|type|at|actor|about|seq)":/);
    const list = await api('/api/mcps?limit=1000', { token: alice });
    expect(list.text).not.toMatch(/"ev_(id|type|at|actor|about|seq)":/);

    // refused: no admin role (403), a bad body (422)
    expect((await api(`/api/mcps/${id}`, { method: 'PUT', token: alice, body: config('x') })).status).toBe(403);
    expect((await api(`/api/mcps/${id}`, { method: 'PUT', token: admin, body: { name: '' } })).status).toBe(422);
    expect((await api(`/api/mcps/${id}`, { method: 'DELETE', token: alice })).status).toBe(403);

    expect((await api(`/api/mcps/${id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    // refused: already gone (404)
    expect((await api(`/api/mcps/${id}`, { method: 'DELETE', token: admin })).status).toBe(404);
    expect((await api(`/api/mcps/${id}`, { method: 'PUT', token: admin, body: config('x') })).status).toBe(404);

    const events = await eventsOf(subject, 3);
    // A deleted server's id never comes back: no later change can mark the end. The store's
    // own record says that the refused changes after the deletion made no event.
    await expectNothingMore(subject, events, { table: 'mcpServers', key: { id }, is: 'gone' });
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.mcp.server.created', 1, 'mcp-events-admin'],
      ['dpm.mcp.server.updated', 2, 'mcp-events-editor'],
      ['dpm.mcp.server.deleted', 3, 'mcp-events-admin'],
    ]);
    expect(events[0]!.data).toEqual(afterCreate.body);
    expect(events[0]!.data).toEqual(created.body);
    expect(events[1]!.data).toEqual(replaced.body);
    expect(events[2]!.data).toEqual(beforeDelete.body);
    expect(events[0]!.time).toBe(created.body.created_at);
    expect(events[1]!.time).toBe(replaced.body.updated_at);
    for (const e of events) {
      expect(e).toMatchObject({
        specversion: '1.0',
        source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
        subject,
        datacontenttype: 'application/json',
      });
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(e.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(JSON.stringify(e.data)).not.toMatch(/ev_|list_pk|created_key/);
    }
    const one = await api(`/api/domain-events/${events[2]!.id}`, { token: feedReader });
    expect(one.body).toEqual(events[2]);
  });

  it('records nothing for a refused creation or a server that never was', async () => {
    const since = new Date().toISOString();
    expect((await api('/api/mcps', { method: 'POST', token: alice, body: config('nope') })).status).toBe(403);
    expect(
      (await api('/api/mcps', { method: 'POST', token: admin, body: { ...config('x'), env: { '1bad': 'v' } } })).status,
    ).toBe(422);
    const ghost = randomUUID();
    expect((await api(`/api/mcps/${ghost}`, { method: 'DELETE', token: admin })).status).toBe(404);
    expect((await api(`/api/mcps/${ghost}`, { method: 'PUT', token: admin, body: config('x') })).status).toBe(404);
    // No later change can mark these ends (no server takes a given id; a refused creation has
    // no subject): the store's own record, read at once, says that nothing was recorded.
    await expectNothingMore(`mcps/${ghost}`, [], { table: 'mcpServers', key: { id: ghost }, is: 'gone' });
    expect(await eventsOf(`mcps/${ghost}`, 0)).toEqual([]);
    const after = await api<Envelope[]>(
      `/api/domain-events?type=mcp.server.*&since=${encodeURIComponent(since)}&limit=1000`,
      { token: feedReader },
    );
    expect(after.status).toBe(200);
    // other files create servers meanwhile; this file's callers (its tests run one by one) made none
    const mine = new Set(['alice', 'mcp-events-admin', 'mcp-events-editor']);
    expect(after.body.filter((e) => mine.has(e.actor ?? '') || e.subject === `mcps/${ghost}`)).toEqual([]);
    // The store's own record, read at once: no server stored by them (a creation is stamped on
    // its item, with its actor, which the publisher makes the event of); an event written with
    // a change is in the feed once the change answered.
    expect(await storedItems('mcpServers', (m) => m.created_at >= since && mine.has(m.ev_actor))).toEqual([]);
  });

  it('keeps one gap-free sequence when replacements and a deletion race', async () => {
    const created = await api('/api/mcps', { method: 'POST', token: admin, body: config(slug('race')) });
    const id = created.body.id as string;
    const results = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) =>
        api(`/api/mcps/${id}`, { method: 'PUT', token: editor, body: config(`v${i}`) }).then((r) => r.status),
      ),
      api(`/api/mcps/${id}`, { method: 'DELETE', token: admin }).then((r) => r.status),
    ]);
    expect(results.at(-1)).toBe(204);
    const replacedCount = results.slice(0, -1).filter((s) => s === 200).length;
    expect(results.slice(0, -1).every((s) => s === 200 || s === 404)).toBe(true);
    expect((await api(`/api/mcps/${id}`, { token: alice })).status).toBe(404);

    const total = 1 + replacedCount + 1;
    const events = await eventsOf(`mcps/${id}`, total);
    // the store's own record: nothing more than these, and no server left (a replacement after
    // the deletion would have made one again)
    await expectNothingMore(`mcps/${id}`, events, { table: 'mcpServers', key: { id }, is: 'gone' });
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(events.at(-1)!.type).toBe('dpm.mcp.server.deleted');
    expect(events.slice(1, -1).every((e) => e.type === 'dpm.mcp.server.updated')).toBe(true);
    // the deletion's data is the state the last change before it left
    expect(events.at(-1)!.data).toEqual(events.at(-2)!.data);
  });
});
