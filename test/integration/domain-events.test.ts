import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { api, slug, token } from './helpers.js';
import { type Envelope, eventsOf as feedEvents, settle } from './event-feed.js';

// API.md §13: every committed change is a domain event (CloudEvents 1.0), with a gap-free
// per-subject sequence; none for a refused change. The feed is admin-only.

let admin: string;
let alice: string;
let bob: string;
let carol: string;

beforeAll(async () => {
  admin = await token('events-admin', { roles: ['admin'] });
  alice = await token('alice');
  bob = await token('bob');
  carol = await token('carol', { roles: ['approver'] });
});

const eventsOf = (subject: string, count: number) => feedEvents(subject, count, admin);

describe('decision events', () => {
  it('one event per committed change, in order, with the GET answer as data and the caller as actor', async () => {
    const ws = slug('ws');
    const key = slug('key');
    const base = `/api/decisions/${ws}/${key}/versions`;
    const created = await api(base, { method: 'POST', token: alice, body: { content: { limit: 1 } } });
    expect(created.status).toBe(201);
    const v = created.body.version as number;
    expect((await api(`${base}/${v}/submit`, { method: 'POST', token: bob })).status).toBe(200);
    // refused: the four-eyes rule (alice wrote it) and a missing role
    expect((await api(`${base}/${v}/approve`, { method: 'POST', token: alice })).status).toBe(403);
    expect((await api(`${base}/${v}/approve`, { method: 'POST', token: bob })).status).toBe(403);
    const approved = await api(`${base}/${v}/approve`, { method: 'POST', token: carol, body: { notes: 'ok' } });
    expect(approved.status).toBe(200);
    // refused: not submitted any more (409), no such version (404)
    expect((await api(`${base}/${v}/approve`, { method: 'POST', token: carol })).status).toBe(409);
    expect((await api(`${base}/${v + 1}/submit`, { method: 'POST', token: bob })).status).toBe(404);

    const subject = `decisions/${ws}/${key}/versions/${v}`;
    const events = await eventsOf(subject, 3);
    await settle();
    const after = await eventsOf(subject, 3);
    expect(after).toEqual(events);
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.decision.version.created', 1, 'alice'],
      ['dpm.decision.version.submitted', 2, 'bob'],
      ['dpm.decision.version.approved', 3, 'carol'],
    ]);
    const read = await api(`${base}/${v}`, { token: alice });
    expect(events[2]!.data).toEqual(read.body);
    expect(events[0]!.data).toMatchObject({ status: 'draft', content: { limit: 1 }, created_by: 'alice' });
    for (const e of events) {
      expect(e).toMatchObject({
        specversion: '1.0',
        source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
        subject,
        datacontenttype: 'application/json',
      });
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(e.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(JSON.stringify(e.data)).not.toMatch(/principal|ev_|content_json|"pk"/);
    }
    expect(events[2]!.time).toBe(read.body.approved_at);
  });

  it('keeps one gap-free sequence per subject under concurrent changes of different versions', async () => {
    const ws = slug('ws');
    const key = slug('key');
    const base = `/api/decisions/${ws}/${key}/versions`;
    const versions = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const res = await api(base, { method: 'POST', token: alice, body: { content: { n: 1 } } });
        expect(res.status).toBe(201);
        return res.body.version as number;
      }),
    );
    // the same version submitted by two callers at once: one wins, one event
    await Promise.all(versions.map((v) => api(`${base}/${v}/submit`, { method: 'POST', token: bob })));
    const racing = await Promise.all(
      versions.map((v) => api(`${base}/${v}/submit`, { method: 'POST', token: bob }).then((r) => r.status)),
    );
    expect(racing.every((s) => s === 409)).toBe(true);
    for (const v of versions) {
      const events = await eventsOf(`decisions/${ws}/${key}/versions/${v}`, 2);
      expect(events.map((e) => e.sequence)).toEqual([1, 2]);
    }
  });
});

describe('GET /api/domain-events', () => {
  let subject: string;
  let events: Envelope[];

  beforeAll(async () => {
    const ws = slug('ws');
    const key = slug('key');
    const res = await api(`/api/decisions/${ws}/${key}/versions`, {
      method: 'POST',
      token: alice,
      body: { content: 1 },
    });
    const v = res.body.version as number;
    await api(`/api/decisions/${ws}/${key}/versions/${v}/submit`, { method: 'POST', token: bob });
    await api(`/api/decisions/${ws}/${key}/versions/${v}/reject`, { method: 'POST', token: carol });
    subject = `decisions/${ws}/${key}/versions/${v}`;
    events = await eventsOf(subject, 3);
    expect(events).toHaveLength(3);
  });

  it('is for admins: 401 without credentials, 403 for other callers', async () => {
    expect((await api('/api/domain-events')).status).toBe(401);
    const res = await api('/api/domain-events', { token: alice });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.any(String), code: 403 });
    expect((await api(`/api/domain-events/${events[0]!.id}`, { token: carol })).status).toBe(403);
  });

  it('pages a subject’s events in sequence order through X-Next-Cursor', async () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    do {
      const q = `subject=${encodeURIComponent(subject)}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await api<Envelope[]>(`/api/domain-events?${q}`, { token: admin });
      expect(res.status).toBe(200);
      seen.push(...res.body.map((e) => e.sequence));
      cursor = res.headers.get('x-next-cursor') ?? undefined;
    } while (cursor);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('filters by exact type and by prefix, with or without `dpm.`', async () => {
    const q = (type: string) =>
      api<Envelope[]>(`/api/domain-events?subject=${encodeURIComponent(subject)}&type=${encodeURIComponent(type)}`, {
        token: admin,
      });
    expect((await q('decision.version.rejected')).body.map((e) => e.sequence)).toEqual([3]);
    expect((await q('dpm.decision.version.rejected')).body.map((e) => e.sequence)).toEqual([3]);
    expect((await q('decision.*')).body.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect((await q('psk.*')).body).toEqual([]);
  });

  it('lists the whole feed oldest first and from `since` on', async () => {
    const since = events[1]!.time;
    const all: Envelope[] = [];
    let cursor: string | undefined;
    do {
      const res = await api<Envelope[]>(
        `/api/domain-events?type=decision.*&since=${encodeURIComponent(since)}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: admin },
      );
      expect(res.status).toBe(200);
      all.push(...res.body);
      cursor = res.headers.get('x-next-cursor') ?? undefined;
    } while (cursor);
    const mine = all.filter((e) => e.subject === subject).map((e) => e.sequence);
    expect(mine).toEqual([2, 3]);
    const future = await api<Envelope[]>(`/api/domain-events?since=2999-01-01T00:00:00Z`, { token: admin });
    expect(future.body).toEqual([]);
  });

  it('answers one event by id, and 404 for an unknown id', async () => {
    const one = await api(`/api/domain-events/${events[1]!.id}`, { token: admin });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(events[1]);
    const missing = await api(`/api/domain-events/${randomUUID()}`, { token: admin });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: expect.any(String), code: 404 });
  });

  it('refuses bad filters with 422 and their loc and type', async () => {
    const cases: [string, (string | number)[], string][] = [
      ['type=Decision!', ['query', 'type'], 'string_pattern_mismatch'],
      ['since=yesterday', ['query', 'since'], 'datetime_from_date_parsing'],
      ['limit=0', ['query', 'limit'], 'greater_than_equal'],
      ['subject=', ['query', 'subject'], 'string_too_short'],
      ['cursor=nope', ['query', 'cursor'], 'value_error'],
    ];
    for (const [q, loc, type] of cases) {
      const res = await api(`/api/domain-events?${q}`, { token: admin });
      expect(res.status, q).toBe(422);
      expect(res.body.detail[0], q).toMatchObject({ loc, type });
    }
  });
});
