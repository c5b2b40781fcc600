import { beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../shared/crypto.js';
import { adminToken, api, insertKey, slug, token } from '../helpers.js';
import { type Envelope, eventsOf as feedEvents, expectNothingMore, storedItems } from '../event-feed.js';

// docs/events-and-webhooks.md for pre-shared keys (docs/identity-and-keys.md): `psk.created` / `.extended` / `.deleted` about
// `psks/{psk}`, with the key as its list answers it (never its secret nor the secret's
// hash), the caller's name as actor, a gap-free sequence; no event for a refused change.

let admin: string;

beforeAll(async () => {
  admin = await adminToken('psk-events-admin');
});

interface KeyInfo {
  psk: string;
  dataproduct_id: string | null;
  description: string;
  valid_until: string;
  created_by: string;
  created_at: string;
  deleted_at: string | null;
}

const eventsOf = (subject: string, count: number) => feedEvents(subject, count, admin);

/** The caller's own keys, deleted ones too, as the list answers them (no ev_* attribute ever). */
async function listed(t: string): Promise<KeyInfo[]> {
  const all: KeyInfo[] = [];
  let cursor: string | undefined;
  do {
    const q = `include_deleted=true&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await api<KeyInfo[]>(`/api/dataproduct/psk?${q}`, { token: t });
    expect(res.status).toBe(200);
    expect(res.text).not.toMatch(/ev_|key_hash|lineage|principal/);
    all.push(...res.body);
    cursor = res.headers.get('x-next-cursor') ?? undefined;
  } while (cursor);
  return all;
}

const entryOf = async (t: string, psk: string) => {
  const entry = (await listed(t)).find((k) => k.psk === psk);
  expect(entry).toBeDefined();
  return entry!;
};

/** Events of `type` recorded from `since` on (the whole feed, every page). */
async function feed(type: string, since: string): Promise<Envelope[]> {
  const all: Envelope[] = [];
  let cursor: string | undefined;
  do {
    const q = `type=${type}&since=${encodeURIComponent(since)}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await api<Envelope[]>(`/api/domain-events?${q}`, { token: admin });
    expect(res.status).toBe(200);
    all.push(...res.body);
    cursor = res.headers.get('x-next-cursor') ?? undefined;
  } while (cursor);
  return all;
}

/** Neither the secret nor its SHA-256 hash (the table's key) is anywhere in the events. */
function expectNoSecret(events: Envelope[], secret: string) {
  const text = JSON.stringify(events);
  expect(text).not.toContain(secret);
  expect(text).not.toContain(sha256Hex(secret));
  for (const e of events) {
    expect(Object.keys(e.data).sort()).toEqual(
      ['created_at', 'created_by', 'dataproduct_id', 'deleted_at', 'description', 'psk', 'valid_until'].sort(),
    );
  }
}

describe('pre-shared key events', () => {
  it('created, extended and deleted, in order, with the listed key as data and the caller as actor', async () => {
    const ownerName = slug('psk-ev-owner');
    const owner = await token(ownerName);
    const other = await token(slug('psk-ev-other'));
    const created = await api('/api/dataproduct/default/psk', {
      method: 'POST',
      token: owner,
      body: { description: 'events', validity_days: 10 },
    });
    expect(created.status).toBe(201);
    const { key: secret, ...createdInfo } = created.body as KeyInfo & { key: string };
    const psk = createdInfo.psk;
    const base = `/api/dataproduct/psk/${psk}`;
    const afterCreate = await entryOf(owner, psk);
    expect(afterCreate).toEqual({ ...createdInfo, deleted_at: null });

    const extended = await api(`${base}/extend`, { method: 'POST', token: owner, body: { validity_days: 5 } });
    expect(extended.status).toBe(200);
    const afterExtend = await entryOf(owner, psk);
    expect(afterExtend.valid_until).toBe(extended.body.valid_until);

    // refused: someone else's key (403), bad days (422), the key extending itself (403), bad id (422)
    expect((await api(`${base}/extend`, { method: 'POST', token: other, body: { validity_days: 1 } })).status).toBe(
      403,
    );
    expect((await api(`${base}/extend`, { method: 'POST', token: owner, body: { validity_days: 0 } })).status).toBe(
      422,
    );
    expect((await api(`${base}/extend`, { method: 'POST', psk: secret, body: { validity_days: 1 } })).status).toBe(403);
    expect((await api(`${base}/extend`, { method: 'POST', token: owner, body: {} })).status).toBe(422);
    expect((await api(base, { method: 'DELETE', token: other })).status).toBe(403);

    const byAdmin = await api(`${base}/extend`, { method: 'POST', token: admin, body: { validity_days: 2 } });
    expect(byAdmin.status).toBe(200);
    const afterAdmin = await entryOf(owner, psk);

    expect((await api(base, { method: 'DELETE', token: owner })).status).toBe(204);
    const afterDelete = await entryOf(owner, psk);
    expect(afterDelete.deleted_at).not.toBeNull();
    // refused: deleted already (404), extending a deleted key (404)
    expect((await api(base, { method: 'DELETE', token: owner })).status).toBe(404);
    expect((await api(`${base}/extend`, { method: 'POST', token: admin, body: { validity_days: 1 } })).status).toBe(
      404,
    );

    const subject = `psks/${psk}`;
    const events = await eventsOf(subject, 4);
    // A deleted key changes no more, so no later change can mark the end: the store's own
    // record says that the refused changes after the deletion made no event.
    await expectNothingMore(subject, events, { table: 'keys', key: { key_hash: sha256Hex(secret) }, is: 'kept' });
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.psk.created', 1, ownerName],
      ['dpm.psk.extended', 2, ownerName],
      ['dpm.psk.extended', 3, 'psk-events-admin'],
      ['dpm.psk.deleted', 4, ownerName],
    ]);
    expect(events.map((e) => e.data)).toEqual([afterCreate, afterExtend, afterAdmin, afterDelete]);
    expect(events[0]!.time).toBe(createdInfo.created_at);
    expect(events[3]!.time).toBe(afterDelete.deleted_at);
    for (const e of events) {
      expect(e).toMatchObject({
        specversion: '1.0',
        source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
        subject,
        datacontenttype: 'application/json',
      });
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
    }
    expectNoSecret(events, secret);
  });

  it('a key made with a key: its creator is the actor, and neither secret nor lineage is in the data', async () => {
    const ownerName = slug('psk-ev-parent');
    const owner = await token(ownerName);
    const parent = await api('/api/dataproduct/default/psk', {
      method: 'POST',
      token: owner,
      body: { description: 'parent' },
    });
    expect(parent.status).toBe(201);
    const child = await api('/api/dataproduct/default/psk', {
      method: 'POST',
      psk: parent.body.key,
      body: { description: 'child', validity_days: 3 },
    });
    expect(child.status).toBe(201);
    // the parent extends its child (allowed: not itself)
    const extended = await api(`/api/dataproduct/psk/${child.body.psk}/extend`, {
      method: 'POST',
      psk: parent.body.key,
      body: { validity_days: 1 },
    });
    expect(extended.status).toBe(200);
    const events = await eventsOf(`psks/${child.body.psk}`, 2);
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.psk.created', 1, ownerName],
      ['dpm.psk.extended', 2, ownerName],
    ]);
    expect(events[1]!.data).toEqual(await entryOf(owner, child.body.psk));
    expectNoSecret(events, parent.body.key);
    expectNoSecret(events, child.body.key);
  });

  it('an expired key extended from now (compare-and-set) is an event too, counted from 1 for a key stored before events', async () => {
    const ownerName = slug('psk-ev-expired');
    const owner = await token(ownerName);
    const { secret } = await insertKey({
      createdBy: ownerName,
      validUntil: new Date(Date.now() - 60_000).toISOString(),
    });
    const [stored] = await listed(owner);
    const extended = await api(`/api/dataproduct/psk/${stored!.psk}/extend`, {
      method: 'POST',
      token: owner,
      body: { validity_days: 3 },
    });
    expect(extended.status).toBe(200);
    const events = await eventsOf(`psks/${stored!.psk}`, 1);
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([['dpm.psk.extended', 1, ownerName]]);
    expect(events[0]!.data).toEqual({ ...stored, valid_until: extended.body.valid_until });
    expectNoSecret(events, secret);
  });

  it('keeps one gap-free sequence under concurrent extensions', async () => {
    const owner = await token(slug('psk-ev-race'));
    const created = await api('/api/dataproduct/default/psk', {
      method: 'POST',
      token: owner,
      body: { description: 'race' },
    });
    expect(created.status).toBe(201);
    const psk = created.body.psk as string;
    const statuses = await Promise.all(
      Array.from({ length: 8 }, () =>
        api(`/api/dataproduct/psk/${psk}/extend`, { method: 'POST', token: owner, body: { validity_days: 1 } }).then(
          (r) => r.status,
        ),
      ),
    );
    expect(statuses).toEqual(Array(8).fill(200));
    const events = await eventsOf(`psks/${psk}`, 9);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(events.slice(1).every((e) => e.type === 'dpm.psk.extended')).toBe(true);
    expect(events[8]!.data).toEqual(await entryOf(owner, psk));
  });

  it('no event for a refused creation', async () => {
    const since = new Date().toISOString();
    const owner = await token(slug('psk-ev-refused'));
    const description = slug('refused-key');
    for (const body of [
      { description, validity_days: 0 },
      { description, validity_days: 3651 },
      { description, extra: 1 },
    ]) {
      expect((await api('/api/dataproduct/default/psk', { method: 'POST', token: owner, body })).status).toBe(422);
    }
    expect((await api('/api/dataproduct/default/psk', { method: 'POST', body: { description } })).status).toBe(401);
    // The store's own record, read at once: no key was stored (a key's creation is stamped on
    // its item, which the publisher makes the event of), and the feed has no event of one (an
    // event written with a change is in the events table once the change answered).
    expect(await storedItems('keys', (k) => k.description === description)).toEqual([]);
    expect((await feed('psk.created', since)).filter((e) => e.data.description === description)).toEqual([]);
    expect(await listed(owner)).toEqual([]);
  });
});
