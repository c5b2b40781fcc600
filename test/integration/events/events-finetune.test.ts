import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, principalOf, slug, token } from '../helpers.js';
import { type Envelope, eventsOf as feedEvents, expectNothingMore, storedItems } from '../event-feed.js';

// docs/events-and-webhooks.md for fine-tuning datasets: finetune.dataset.created / .deleted about
// `finetune/datasets/{id}`, data as GET answers (for the deletion: as it answered before);
// none for a refused change.

const BASE = '/api/finetune/datasets';

let feedReader: string;
let admin: string;
let owner: string;
let other: string;

beforeAll(async () => {
  feedReader = await adminToken('ft-events-reader');
  admin = await adminToken('ft-events-admin');
  owner = await token('ft-events-owner');
  other = await token('ft-events-other');
});

const eventsOf = (subject: string, count: number) => feedEvents(subject, count, feedReader);

/** The feed's events of `type` recorded from `since` on. */
async function feedSince(type: string, since: string): Promise<Envelope[]> {
  const res = await api<Envelope[]>(
    `/api/domain-events?type=${encodeURIComponent(type)}&since=${encodeURIComponent(since)}&limit=1000`,
    { token: feedReader },
  );
  expect(res.status).toBe(200);
  return res.body;
}

async function documentOf(t: string): Promise<string> {
  const res = await api<{ id: string }>('/api/documents', {
    method: 'POST',
    token: t,
    body: { filename: 'source.txt', mime_type: 'text/plain', size_bytes: 1 },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

describe('fine-tuning dataset events', () => {
  it('created then deleted: the GET answer as data, the caller as actor; none when refused', async () => {
    const source = await documentOf(owner);
    const created = await api(BASE, {
      method: 'POST',
      token: owner,
      body: { name: slug('dataset'), source_documents: [source], format: 'csv' },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const subject = `finetune/datasets/${id}`;
    const read = await api(`${BASE}/${id}`, { token: owner });
    expect(read.status).toBe(200);
    expect(read.text).not.toMatch(/"ev_(id|type|at|actor|about|seq)":/);
    const list = await api(`${BASE}?limit=1000`, { token: owner });
    expect(list.text).not.toMatch(/"ev_(id|type|at|actor|about|seq)":/);
    const adminList = await api(`${BASE}?limit=1000`, { token: admin });
    expect(adminList.text).not.toMatch(/"ev_(id|type|at|actor|about|seq)":/);

    // refused: someone else's job (403)
    expect((await api(`${BASE}/${id}`, { method: 'DELETE', token: other })).status).toBe(403);

    const deleted = await api(`${BASE}/${id}`, { method: 'DELETE', token: admin });
    expect(deleted.status).toBe(200);
    // refused: already gone (404)
    expect((await api(`${BASE}/${id}`, { method: 'DELETE', token: owner })).status).toBe(404);

    const events = await eventsOf(subject, 2);
    // A deleted dataset's id never comes back: no later change can mark the end. The store's
    // own record says that the refused deletion after it made no event.
    await expectNothingMore(subject, events, { table: 'finetuneJobs', key: { id }, is: 'gone' });
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.finetune.dataset.created', 1, 'ft-events-owner'],
      ['dpm.finetune.dataset.deleted', 2, 'ft-events-admin'],
    ]);
    expect(events[0]!.data).toEqual(read.body);
    expect(events[0]!.data).toEqual(created.body);
    // the deletion's data is what GET answered before
    expect(events[1]!.data).toEqual(read.body);
    expect(events[0]!.time).toBe(created.body.created_at);
    for (const e of events) {
      expect(e).toMatchObject({
        specversion: '1.0',
        source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
        subject,
        datacontenttype: 'application/json',
      });
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.stringify(e.data)).not.toMatch(/ev_|owner_principal|list_pk|created_key/);
    }
  });

  it('records nothing for a refused creation or a job that never was', async () => {
    const since = new Date().toISOString();
    const foreign = await documentOf(other);
    // refused: a document that does not exist (422), someone else's document (403)
    const missing = await api(BASE, {
      method: 'POST',
      token: owner,
      body: { name: 'x', source_documents: [randomUUID()] },
    });
    expect(missing.status).toBe(422);
    const notMine = await api(BASE, { method: 'POST', token: owner, body: { name: 'x', source_documents: [foreign] } });
    expect(notMine.status).toBe(403);
    expect((await api(BASE, { method: 'POST', token: owner, body: { name: '' } })).status).toBe(422);
    const ghost = randomUUID();
    expect((await api(`${BASE}/${ghost}`, { method: 'DELETE', token: admin })).status).toBe(404);
    // No later change can mark these ends (no dataset takes a given id; a refused creation has
    // no subject): the store's own record, read at once, says that nothing was recorded.
    await expectNothingMore(`finetune/datasets/${ghost}`, [], {
      table: 'finetuneJobs',
      key: { id: ghost },
      is: 'gone',
    });
    expect(await eventsOf(`finetune/datasets/${ghost}`, 0)).toEqual([]);
    const mine = new Set(['ft-events-owner', 'ft-events-admin', 'ft-events-other']);
    const principals = new Set([...mine].map((name) => principalOf(name)));
    // no dataset stored for them (a creation is stamped on its item, which the publisher makes
    // the event of), and no event of theirs in the feed (one written with a change is there
    // once the change answered)
    expect(
      await storedItems('finetuneJobs', (j) => principals.has(j.owner_principal) && j.created_at >= since),
    ).toEqual([]);
    expect((await feedSince('finetune.*', since)).filter((e) => mine.has(e.actor ?? ''))).toEqual([]);
  });
});
