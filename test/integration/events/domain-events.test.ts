import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventFeedService } from '../../../functions/domain-events/service.js';
import { DynamoEventStore } from '../../../functions/domain-events/store.js';
import { ensureTables } from '../../../infra/local/provision.js';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { eventItem } from '../../../shared/events/events-table.js';
import { DOMAIN_EVENT_TYPES, type DomainEvent } from '../../../shared/events/types.js';
import { adminToken, api, approverToken, slug, token } from '../helpers.js';
import { type Envelope, eventsBefore, eventsOf as feedEvents } from '../event-feed.js';
import { provided } from '../provided.js';

// docs/events-and-webhooks.md: every committed change is a domain event (CloudEvents 1.0), with a gap-free
// per-subject sequence; none for a refused change. The feed is admin-only.

let admin: string;
let alice: string;
let bob: string;
let carol: string;

beforeAll(async () => {
  admin = await adminToken('events-admin');
  alice = await token('alice');
  bob = await token('bob');
  carol = await approverToken('carol');
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
    const read = await api(`${base}/${v}`, { token: alice });
    // The marker: one more change of the version, by a caller of its own. Every event of a
    // change committed before it (a refused one's too) comes before its event.
    const retired = await api(`${base}/${v}/retire`, { method: 'POST', token: await approverToken('events-marker') });
    expect(retired.status, retired.text).toBe(200);
    const { before: events, marker } = await eventsBefore(subject, (e) => e.actor === 'events-marker', admin);
    expect(marker.type).toBe('dpm.decision.version.retired');
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.decision.version.created', 1, 'alice'],
      ['dpm.decision.version.submitted', 2, 'bob'],
      ['dpm.decision.version.approved', 3, 'carol'],
    ]);
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

  it('pages a type and a prefix with a small limit: each matching event once, in recording order', async () => {
    // other files record decision events meanwhile: the walk is bounded, and checked on this subject
    const walk = async (type: string) => {
      const seen: Envelope[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 1_000; pages++) {
        const res = await api<Envelope[]>(
          `/api/domain-events?type=${encodeURIComponent(type)}&since=${encodeURIComponent(events[0]!.time)}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          { token: admin },
        );
        expect(res.status, res.text).toBe(200);
        expect(res.body.length).toBeLessThanOrEqual(2);
        seen.push(...res.body);
        cursor = res.headers.get('x-next-cursor') ?? undefined;
        if (!cursor) return seen;
      }
      throw new Error(`more than 1,000 pages of ${type}`);
    };
    const prefixed = await walk('decision.*');
    expect(new Set(prefixed.map((e) => e.id)).size).toBe(prefixed.length);
    expect(prefixed.every((e) => e.type.startsWith('dpm.decision.'))).toBe(true);
    expect(prefixed.filter((e) => e.subject === subject).map((e) => e.id)).toEqual(events.map((e) => e.id));
    const exact = await walk('decision.version.rejected');
    expect(new Set(exact.map((e) => e.id)).size).toBe(exact.length);
    expect(exact.every((e) => e.type === 'dpm.decision.version.rejected')).toBe(true);
    expect(exact.filter((e) => e.subject === subject).map((e) => e.id)).toEqual([events[2]!.id]);
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

  it('refuses a type or prefix that names no catalogued type: 422 enum listing the known ones', async () => {
    // pydantic's list of choices: 'a', 'b' or 'c'.
    const names = DOMAIN_EVENT_TYPES.map((t) => `'${t}'`);
    const expected = `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
    expect(expected).toContain("'decision.version.approved'");
    expect(expected).toContain("'webhook.endpoint.disabled'");
    for (const type of ['bogus', 'dpm.bogus', 'bogus.*', 'decision.version', 'decision.versions.*', 'dpm.psk.made']) {
      const res = await api(`/api/domain-events?type=${encodeURIComponent(type)}`, { token: admin });
      expect(res.status, type).toBe(422);
      expect(res.body, type).toEqual({
        detail: [
          { type: 'enum', loc: ['query', 'type'], msg: `Input should be ${expected}`, input: type, ctx: { expected } },
        ],
      });
    }
    // Every catalogued type, and a prefix of some, is a filter (possibly of no events yet).
    for (const type of ['webhook.endpoint.disabled', 'dpm.crew.schedule.fired', 'crew.*', 'dpm.*', 'data_share.*']) {
      const res = await api(`/api/domain-events?type=${encodeURIComponent(type)}&limit=1`, { token: admin });
      expect(res.status, `${type}: ${res.text}`).toBe(200);
    }
    // Checked after who asks: a user is refused first, whatever the filter.
    expect((await api('/api/domain-events?type=bogus', { token: await token(slug('feed-user')) })).status).toBe(403);
  });
});

describe('a type filter reads the events it answers, not those it passes over', () => {
  // A table of its own, the domain events table without its stream (the seeded events reach
  // no dispatcher and no webhook), holding thousands of events of other types around a few
  // rare ones, as the store writes them; the feed service over it counts its reads.
  const stage = `feed${randomUUID().slice(0, 8)}`;
  const client = new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') }));
  const reads = { queries: 0, items: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (context.commandName === 'QueryCommand') {
        reads.queries += 1;
        reads.items += (out.output as { ScannedCount?: number }).ScannedCount ?? 0;
      }
      return out;
    },
    { step: 'initialize', name: 'countReads' },
  );
  const db = DynamoDBDocumentClient.from(client);
  const { stream: _stream, ...definition } = TABLES.domainEvents;
  const table = { tableName: physicalTableName(stage, definition), ttlDays: 30, source: 'dpm/feed-test' };
  const service = new EventFeedService(new DynamoEventStore(db, table));

  const OTHERS = ['dpm.crew.run.started', 'dpm.crew.run.succeeded', 'dpm.psk.created', 'dpm.document.created'];
  const RARE = new Map([
    [10, 'dpm.decision.version.created'],
    [100, 'dpm.decision.version.approved'],
    [1_500, 'dpm.decision.version.approved'],
    [2_000, 'dpm.decision.version.created'],
    [2_600, 'dpm.decision.version.rejected'],
    [2_990, 'dpm.decision.version.approved'],
  ]);
  const TOTAL = 3_006;
  // recorded over the last seconds: their expiry is far off (DynamoDB Local deletes expired items)
  const start = Date.now() - 60_000;
  /** Every seeded event, in the order it was recorded (one millisecond apart). */
  const seeded: DomainEvent[] = [];

  beforeAll(async () => {
    await ensureTables(client, stage, { domainEvents: definition });
    const items: Record<string, unknown>[] = [];
    for (let i = 0; i < TOTAL; i++) {
      const at = new Date(start + i);
      const event: DomainEvent = {
        specversion: '1.0',
        id: randomUUID(),
        source: table.source,
        type: RARE.get(i) ?? OTHERS[i % OTHERS.length]!,
        subject: `feed-test/${i}`,
        time: at.toISOString(),
        datacontenttype: 'application/json',
        actor: null,
        sequence: 1,
        data: { i },
      };
      seeded.push(event);
      items.push(eventItem(table, event, at));
    }
    const batches = Array.from({ length: Math.ceil(items.length / 25) }, (_, b) => items.slice(b * 25, b * 25 + 25));
    for (let b = 0; b < batches.length; b += 8) {
      await Promise.all(
        batches.slice(b, b + 8).map(async (batch) => {
          let pending: Record<string, unknown>[] = batch.map((Item) => ({ PutRequest: { Item } }));
          while (pending.length) {
            const out = await db.send(new BatchWriteCommand({ RequestItems: { [table.tableName]: pending as never } }));
            pending = (out.UnprocessedItems?.[table.tableName] as Record<string, unknown>[] | undefined) ?? [];
          }
        }),
      );
    }
  }, 120_000);

  afterAll(async () => {
    await client.send(new DeleteTableCommand({ TableName: table.tableName })).catch(() => undefined);
    client.destroy();
  });

  /** Every page of the filter, with what each page read. */
  async function walk(query: { type: string; since?: string }, limit: number) {
    const pages: { ids: string[]; queries: number; items: number }[] = [];
    let cursor: string | undefined;
    do {
      reads.queries = 0;
      reads.items = 0;
      const page = await service.list({ ...query, limit, ...(cursor ? { cursor } : {}) });
      pages.push({ ids: page.items.map((e) => e.id), queries: reads.queries, items: reads.items });
      cursor = page.nextCursor;
    } while (cursor && pages.length < 1_000);
    return pages;
  }

  const expected = (match: (type: string) => boolean, from = 0) =>
    seeded.filter((e, i) => i >= from && match(e.type)).map((e) => e.id);

  it('limit=1 of a rare type reads a page and one ahead: one Query per page, not one per two events', async () => {
    const pages = await walk({ type: 'decision.version.approved' }, 1);
    expect(pages.flatMap((p) => p.ids)).toEqual(expected((t) => t === 'dpm.decision.version.approved'));
    expect(pages).toHaveLength(3);
    for (const page of pages) {
      expect(page.queries).toBe(1);
      expect(page.items).toBeLessThanOrEqual(2);
    }
  });

  it('a prefix reads each of its types a share of the page at a time: bounded by the page, not the feed', async () => {
    // decision.* is five types of the catalog, three of them here
    for (const limit of [1, 2, 4]) {
      const pages = await walk({ type: 'decision.*' }, limit);
      expect(
        pages.flatMap((p) => p.ids),
        `limit ${limit}`,
      ).toEqual(expected((t) => t.startsWith('dpm.decision.')));
      for (const page of pages) {
        expect(page.queries, `limit ${limit}`).toBeLessThanOrEqual(2 * 5);
        expect(page.items, `limit ${limit}`).toBeLessThanOrEqual(2 * (limit + 1) + 2 * 5);
      }
    }
  });

  it('pages common types and prefixes, and from `since` on, with no event missed or repeated', async () => {
    const cases: [{ type: string; since?: string }, number, string[]][] = [
      [{ type: 'crew.run.started' }, 97, expected((t) => t === 'dpm.crew.run.started')],
      [{ type: 'crew.run.*' }, 250, expected((t) => t.startsWith('dpm.crew.run.'))],
      [{ type: 'dpm.psk.created' }, 1_000, expected((t) => t === 'dpm.psk.created')],
      [{ type: 'decision.*', since: seeded[1_000]!.time }, 1, expected((t) => t.startsWith('dpm.decision.'), 1_000)],
      [{ type: 'crew.run.*', since: seeded[2_999]!.time }, 2, expected((t) => t.startsWith('dpm.crew.run.'), 2_999)],
      [{ type: 'mcp.*' }, 5, []],
    ];
    for (const [query, limit, ids] of cases) {
      const pages = await walk(query, limit);
      const label = `${JSON.stringify(query)} limit ${limit}`;
      expect(
        pages.flatMap((p) => p.ids),
        label,
      ).toEqual(ids);
      expect(
        pages.slice(0, -1).every((p) => p.ids.length === limit),
        label,
      ).toBe(true);
      for (const page of pages) expect(page.items, label).toBeLessThanOrEqual(2 * (limit + 1) + 2 * 7);
    }
  });
});
