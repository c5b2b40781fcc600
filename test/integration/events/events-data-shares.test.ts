import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, slug, token } from '../helpers.js';
import { type Envelope, eventsBefore, storedItems } from '../event-feed.js';

// docs/events-and-webhooks.md for data shares: data_share.created / .secret_rotated / .deleted about
// `data-shares/{name}`, data as GET answers but never the secret (`secret` null, as in
// lists); a name used again after its deletion goes on with the subject's sequence.

let feedReader: string;
let admin: string;
let owner: string;
let other: string;
/** Makes the change that marks the end of what a test checks (event-feed.ts eventsBefore). */
let marker: string;
const MARKER = 'share-events-marker';
const byMarker = (e: Envelope) => e.actor === MARKER;

beforeAll(async () => {
  marker = await token(MARKER);
  feedReader = await adminToken('share-events-reader');
  admin = await adminToken('share-events-admin');
  owner = await token('share-events-owner');
  other = await token('share-events-other');
});

interface Share {
  id: string;
  client_id: string;
  name: string;
  enabled: boolean;
  service_accounts_enabled: boolean;
  secret: string | null;
  owner: string;
  description: string | null;
  tables: string[];
  created_at: string;
}

const create = (body: unknown, t = owner) => api<Share>('/api/data_shares', { method: 'POST', token: t, body });
const read = (name: string, t = owner) => api<Share>(`/api/data_shares/${name}`, { token: t });
const rotate = (name: string, t = owner) =>
  api<Share>(`/api/data_shares/${name}/rotate-secret`, { method: 'POST', token: t });
const remove = (name: string, t = owner) => api(`/api/data_shares/${name}`, { method: 'DELETE', token: t });

/** What the event carries for a share: its GET answer without the secret. */
const withoutSecret = (share: Share) => ({ ...share, secret: null });

describe('data share events', () => {
  it('created, secret_rotated, deleted, created again: one sequence, GET answers as data, never a secret', async () => {
    const name = slug('evshare');
    const subject = `data-shares/${name}`;
    const created = await create({ name, description: 'events', tables: ['sales.orders'] });
    expect(created.status).toBe(201);
    const afterCreate = await read(name);
    expect(afterCreate.body.secret).toBe(created.body.secret);
    const secrets = [created.body.secret!];

    // refused: someone else's share (403), a taken name (409), an unknown share (404)
    expect((await rotate(name, other)).status).toBe(403);
    expect((await remove(name, other)).status).toBe(403);
    expect((await create({ name }, other)).status).toBe(409);
    expect((await rotate(slug('none'))).status).toBe(404);

    const rotated = await rotate(name);
    expect(rotated.status).toBe(200);
    secrets.push(rotated.body.secret!);
    const beforeDelete = await read(name);
    expect(beforeDelete.body.secret).toBe(rotated.body.secret);
    // GET and list answers carry no change stamp
    expect(beforeDelete.text).not.toMatch(/"ev_(id|type|at|actor|about|seq)":/);
    expect((await api('/api/data_shares?limit=1000', { token: owner })).text).not.toMatch(
      /"ev_(id|type|at|actor|about|seq)":/,
    );
    expect((await api('/api/data_shares?limit=1000', { token: admin })).text).not.toMatch(
      /"ev_(id|type|at|actor|about|seq)":/,
    );

    expect((await remove(name, admin)).status).toBe(204);
    // refused: already gone (404)
    expect((await remove(name)).status).toBe(404);
    expect((await rotate(name)).status).toBe(404);

    // the name used again, by someone else: the subject's sequence goes on
    const again = await create({ name }, other);
    expect(again.status).toBe(201);
    secrets.push(again.body.secret!);
    const againRead = await read(name, other);
    expect((await remove(name, other)).status).toBe(204);

    // The marker: the name used once more; the refused changes' events would come before its creation's.
    expect((await create({ name }, marker)).status).toBe(201);
    const { before: events, marker: marked } = await eventsBefore(subject, byMarker, feedReader);
    expect(marked.type).toBe('dpm.data_share.created');
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.data_share.created', 1, 'share-events-owner'],
      ['dpm.data_share.secret_rotated', 2, 'share-events-owner'],
      ['dpm.data_share.deleted', 3, 'share-events-admin'],
      ['dpm.data_share.created', 4, 'share-events-other'],
      ['dpm.data_share.deleted', 5, 'share-events-other'],
    ]);
    expect(events[0]!.data).toEqual(withoutSecret(afterCreate.body));
    expect(events[1]!.data).toEqual(withoutSecret(rotated.body));
    expect(events[1]!.data).toEqual(withoutSecret(beforeDelete.body));
    expect(events[2]!.data).toEqual(withoutSecret(beforeDelete.body));
    expect(events[3]!.data).toEqual(withoutSecret(againRead.body));
    expect(events[3]!.data).toMatchObject({ owner: 'share-events-other', name, client_id: name });
    expect(events[4]!.data).toEqual(withoutSecret(againRead.body));
    expect(events[0]!.time).toBe(created.body.created_at);
    expect(events[3]!.time).toBe(again.body.created_at);
    for (const e of events) {
      expect(e).toMatchObject({
        specversion: '1.0',
        source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
        subject,
        datacontenttype: 'application/json',
      });
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(e.data.secret).toBeNull();
      const text = JSON.stringify(e);
      expect(text).not.toMatch(/ev_|owner_principal|reservation|list_pk|created_key/);
      for (const secret of secrets) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(Buffer.from(secret).toString('base64'));
      }
    }
    // nor in the feed's own answers
    const feed = await api(`/api/domain-events?subject=${encodeURIComponent(subject)}`, { token: feedReader });
    for (const secret of secrets) expect(feed.text).not.toContain(secret);
  });

  it('records nothing for a refused creation, rotation or deletion', async () => {
    const name = slug('evrefused');
    const subject = `data-shares/${name}`;
    const since = new Date().toISOString();
    expect((await create({ name: 'Not A Slug!' })).status).toBe(422);
    expect((await rotate(name)).status).toBe(404);
    expect((await remove(name, admin)).status).toBe(404);
    // The marker: the share made, its subject's first event unless a refused change made one.
    expect((await create({ name }, marker)).status).toBe(201);
    const { before, marker: marked } = await eventsBefore(subject, byMarker, feedReader);
    expect(before).toEqual([]);
    expect(marked.type).toBe('dpm.data_share.created');
    const mine = new Set(['share-events-owner', 'share-events-admin', 'share-events-other']);
    // A refused creation has no subject to mark: the store's own record, read at once, says
    // that no share was stored for these callers (a creation writes its item, stamped), and
    // the feed has no event of theirs (one written with a change is there once it answered).
    expect(await storedItems('dataShares', (s) => mine.has(s.owner) && s.created_at >= since)).toEqual([]);
    const feed = await api<Envelope[]>(
      `/api/domain-events?type=data_share.*&since=${encodeURIComponent(since)}&limit=1000`,
      { token: feedReader },
    );
    expect(feed.status).toBe(200);
    expect(feed.body.filter((e) => mine.has(e.actor ?? ''))).toEqual([]);
  });

  it('keeps the sequence gap-free when rotations and a deletion race', async () => {
    const name = slug('evrace');
    expect((await create({ name })).status).toBe(201);
    const results = await Promise.all([
      ...Array.from({ length: 4 }, () => rotate(name).then((r) => r.status)),
      remove(name).then((r) => r.status),
    ]);
    expect(results.at(-1)).toBe(204);
    const rotations = results.slice(0, -1);
    expect(rotations.every((s) => [200, 404, 409].includes(s))).toBe(true);
    const total = 1 + rotations.filter((s) => s === 200).length + 1;
    // The marker: the name used again, after every change of the race answered.
    expect((await create({ name }, marker)).status).toBe(201);
    const { before: events, marker: marked } = await eventsBefore(`data-shares/${name}`, byMarker, feedReader);
    expect(marked.type).toBe('dpm.data_share.created');
    expect(events).toHaveLength(total);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(events[0]!.type).toBe('dpm.data_share.created');
    expect(events.at(-1)!.type).toBe('dpm.data_share.deleted');
  });
});
