import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DecisionService } from '../../../functions/decisions/service.js';
import { DynamoDecisionStore } from '../../../functions/decisions/store.js';
import type { Caller } from '../../../shared/auth/caller.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { eventsOf } from '../event-feed.js';
import { adminToken, api, approverToken, db, insertKey, slug, table, token, type ApiResponse } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * `GET /api/decisions?workspace=&limit=&cursor=`: one entry per workspace and key, by
 * workspace then key, with its latest version and status and its published version, kept
 * by the writes of the versions themselves (functions/decisions/store.ts, index `keys`).
 *
 * The suite's platform is shared: the unfiltered list holds other files' decisions too, so
 * exact lists are read with a workspace of this file's own.
 */

interface Entry {
  workspace: string;
  key: string;
  latest_version: number;
  latest_status: string;
  published_version: number | null;
  updated_at: string;
}

let author: string;
let submitter: string;
let approver: string;
let approver2: string;
let plainUser: string;

beforeAll(async () => {
  [author, submitter, approver, approver2, plainUser] = await Promise.all([
    token('dl-alice'),
    token('dl-bob'),
    approverToken('dl-carol'),
    approverToken('dl-dave'),
    token('dl-erin'),
  ]);
});

const base = (ws: string, key: string) => `/api/decisions/${ws}/${key}/versions`;

async function create(ws: string, key: string, as = author): Promise<{ version: number; created_at: string }> {
  const res = await api(base(ws, key), { method: 'POST', token: as, body: { content: { ws, key } } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function act(
  action: 'submit' | 'approve' | 'reject' | 'retire',
  ws: string,
  key: string,
  version: number,
  as?: string,
): Promise<ApiResponse> {
  const who = as ?? (action === 'submit' ? submitter : approver);
  const res = await api(`${base(ws, key)}/${version}/${action}`, { method: 'POST', token: who });
  expect(res.status, `${action} ${ws}/${key}/${version}: ${res.text}`).toBe(200);
  return res;
}

/** When the version's last transition happened (its history's last entry). */
async function lastChange(ws: string, key: string, version: number): Promise<string> {
  const res = await api(`${base(ws, key)}/${version}/history`, { token: plainUser });
  expect(res.status).toBe(200);
  return res.body.at(-1).at;
}

/** One page of the list. */
async function page(query: string, auth: { token?: string; psk?: string } = { token: plainUser }) {
  const res = await api<Entry[]>(`/api/decisions${query ? `?${query}` : ''}`, auth);
  expect(res.status, res.text).toBe(200);
  return { items: res.body, next: res.headers.get('x-next-cursor') };
}

/** Every entry of the list with `query`, following X-Next-Cursor page by page. */
async function whole(query: string, limit = 1000): Promise<{ items: Entry[]; pages: number }> {
  const items: Entry[] = [];
  let cursor: string | null = null;
  for (let pages = 1; ; pages++) {
    const p = await page(
      [query, `limit=${limit}`, cursor ? `cursor=${encodeURIComponent(cursor)}` : ''].filter(Boolean).join('&'),
    );
    items.push(...p.items);
    if (!p.next) return { items, pages };
    cursor = p.next;
    if (pages > 1000) throw new Error('more than 1000 pages');
  }
}

/** The entry of one key (through the workspace filter). */
async function entryOf(ws: string, key: string): Promise<Entry | undefined> {
  return (await whole(`workspace=${ws}`)).items.find((e) => e.key === key);
}

/** DynamoDB's order of strings: their UTF-8 bytes. */
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const inListOrder = (a: Entry, b: Entry) => byBytes(a.workspace, b.workspace) || byBytes(a.key, b.key);

describe('GET /api/decisions', () => {
  it('lists each key once, by workspace then key, with its latest and published version', async () => {
    const ws = slug('dl');
    // Created out of order: the list orders them.
    const drafted = await create(ws, 'k-h');
    const submitted = await create(ws, 'k-b');
    const submit = await act('submit', ws, 'k-b', submitted.version);
    await create(ws, 'k-c');
    await act('submit', ws, 'k-c', 1);
    const approve = await act('approve', ws, 'k-c', 1);
    // approved, then a newer draft: the published version is the older one
    await create(ws, 'k-d');
    await act('submit', ws, 'k-d', 1);
    await act('approve', ws, 'k-d', 1);
    const newer = await create(ws, 'k-d');
    // approved, then retired: nothing published
    await create(ws, 'k-e');
    await act('submit', ws, 'k-e', 1);
    await act('approve', ws, 'k-e', 1);
    await act('retire', ws, 'k-e', 1);
    // submitted, then rejected: a draft again
    await create(ws, 'k-f');
    await act('submit', ws, 'k-f', 1);
    await act('reject', ws, 'k-f', 1);
    // an older version approved after a newer one was created
    await create(ws, 'k-a');
    await act('submit', ws, 'k-a', 1);
    await create(ws, 'k-a');
    const older = await act('approve', ws, 'k-a', 1);
    // "k-0" and "k-00" sort before "k-a"; "k0" after every "k-…" ('-' < '0')
    for (const key of ['k0', 'k-00', 'k-0']) await create(ws, key);

    const { items } = await whole(`workspace=${ws}`);
    expect(items).toEqual([
      {
        workspace: ws,
        key: 'k-0',
        latest_version: 1,
        latest_status: 'draft',
        published_version: null,
        updated_at: expect.any(String),
      },
      {
        workspace: ws,
        key: 'k-00',
        latest_version: 1,
        latest_status: 'draft',
        published_version: null,
        updated_at: expect.any(String),
      },
      {
        workspace: ws,
        key: 'k-a',
        latest_version: 2,
        latest_status: 'draft',
        published_version: 1,
        updated_at: older.body.approved_at,
      },
      {
        workspace: ws,
        key: 'k-b',
        latest_version: 1,
        latest_status: 'submitted',
        published_version: null,
        updated_at: submit.body.submitted_at,
      },
      {
        workspace: ws,
        key: 'k-c',
        latest_version: 1,
        latest_status: 'approved',
        published_version: 1,
        updated_at: approve.body.approved_at,
      },
      {
        workspace: ws,
        key: 'k-d',
        latest_version: 2,
        latest_status: 'draft',
        published_version: 1,
        updated_at: newer.created_at,
      },
      {
        workspace: ws,
        key: 'k-e',
        latest_version: 1,
        latest_status: 'retired',
        published_version: null,
        updated_at: await lastChange(ws, 'k-e', 1),
      },
      {
        workspace: ws,
        key: 'k-f',
        latest_version: 1,
        latest_status: 'draft',
        published_version: null,
        updated_at: await lastChange(ws, 'k-f', 1),
      },
      {
        workspace: ws,
        key: 'k-h',
        latest_version: 1,
        latest_status: 'draft',
        published_version: null,
        updated_at: drafted.created_at,
      },
      {
        workspace: ws,
        key: 'k0',
        latest_version: 1,
        latest_status: 'draft',
        published_version: null,
        updated_at: expect.any(String),
      },
    ]);
    for (const e of items) expect(e.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // Exactly those fields, in an entry as answered.
    expect(Object.keys(items[0]!).sort()).toEqual(
      ['key', 'latest_status', 'latest_version', 'published_version', 'updated_at', 'workspace'].sort(),
    );
  });

  it('follows the published version through approvals and retirements of the latest and older versions', async () => {
    const ws = slug('dl-pub');
    const key = 'rules';
    const entry = () => entryOf(ws, key);
    await create(ws, key);
    expect(await entry()).toMatchObject({ latest_version: 1, latest_status: 'draft', published_version: null });
    await act('submit', ws, key, 1);
    expect(await entry()).toMatchObject({ latest_version: 1, latest_status: 'submitted', published_version: null });
    await act('approve', ws, key, 1);
    expect(await entry()).toMatchObject({ latest_version: 1, latest_status: 'approved', published_version: 1 });
    await create(ws, key);
    await act('submit', ws, key, 2);
    expect(await entry()).toMatchObject({ latest_version: 2, latest_status: 'submitted', published_version: 1 });
    await act('approve', ws, key, 2, approver2);
    expect(await entry()).toMatchObject({ latest_version: 2, latest_status: 'approved', published_version: 2 });
    // the latest retired: the older approved one is published again
    await act('retire', ws, key, 2);
    expect(await entry()).toMatchObject({ latest_version: 2, latest_status: 'retired', published_version: 1 });
    // a new draft, then the older one retired: nothing published
    await create(ws, key);
    expect(await entry()).toMatchObject({ latest_version: 3, latest_status: 'draft', published_version: 1 });
    await act('retire', ws, key, 1);
    expect(await entry()).toMatchObject({ latest_version: 3, latest_status: 'draft', published_version: null });
    // two older versions approved out of order, then the newer of them retired
    await create(ws, key);
    await create(ws, key);
    for (const v of [3, 4]) await act('submit', ws, key, v);
    await act('approve', ws, key, 4);
    expect(await entry()).toMatchObject({ latest_version: 5, latest_status: 'draft', published_version: 4 });
    await act('approve', ws, key, 3);
    expect(await entry()).toMatchObject({ latest_version: 5, latest_status: 'draft', published_version: 4 });
    await act('retire', ws, key, 4);
    expect(await entry()).toMatchObject({ latest_version: 5, latest_status: 'draft', published_version: 3 });
    // what `published` answers, always
    const published = await api(`/api/decisions/${ws}/${key}/published`, { token: plainUser });
    expect(published.body.version).toBe(3);
  });

  it("filters by workspace: a workspace that is a prefix of another's lists only its own", async () => {
    const ws = slug('dl-ws');
    const longer = `${ws}-x`;
    const digit = `${ws}0`;
    for (const w of [digit, longer, ws]) for (const key of ['b', 'a']) await create(w, key);
    const own = await whole(`workspace=${ws}`);
    expect(own.items.map((e) => [e.workspace, e.key])).toEqual([
      [ws, 'a'],
      [ws, 'b'],
    ]);
    expect((await whole(`workspace=${longer}`)).items.map((e) => [e.workspace, e.key])).toEqual([
      [longer, 'a'],
      [longer, 'b'],
    ]);
    expect((await whole(`workspace=${slug('dl-none')}`)).items).toEqual([]);
    // Unfiltered: everyone's decisions, in order, these among them (ws, then ws-x, then ws0).
    const all = (await whole('', 1000)).items;
    expect([...all].sort(inListOrder)).toEqual(all);
    const ours = all.filter((e) => [ws, longer, digit].includes(e.workspace)).map((e) => `${e.workspace}/${e.key}`);
    expect(ours).toEqual([`${ws}/a`, `${ws}/b`, `${longer}/a`, `${longer}/b`, `${digit}/a`, `${digit}/b`]);
  });

  it('pages with limit and cursor: no entry twice, none left out, a cursor only when more remain', async () => {
    const ws = slug('dl-page');
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5'];
    await Promise.all(keys.map((k) => create(ws, k)));
    const seen: string[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const p = await page(`workspace=${ws}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      sizes.push(p.items.length);
      seen.push(...p.items.map((e) => e.key));
      cursor = p.next;
    } while (cursor);
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(keys);
    // an exactly full last page sends no cursor
    expect((await page(`workspace=${ws}&limit=5`)).next).toBeNull();
    // the default limit (100) holds them all
    expect((await page(`workspace=${ws}`)).items.map((e) => e.key)).toEqual(keys);
    // a key created after a cursor was handed out is on the page it leads to
    const first = await page(`workspace=${ws}&limit=2`);
    await create(ws, 'k3a');
    const next = await page(`workspace=${ws}&limit=2&cursor=${encodeURIComponent(first.next!)}`);
    expect(next.items.map((e) => e.key)).toEqual(['k3', 'k3a']);
    // Unfiltered, page by page, the same as in one page.
    const small = await whole('', 7);
    const big = await whole('', 1000);
    expect(small.items.filter((e) => e.workspace === ws)).toEqual(big.items.filter((e) => e.workspace === ws));
    expect(new Set(small.items.map((e) => `${e.workspace}/${e.key}`)).size).toBe(small.items.length);
    expect(small.pages).toBeGreaterThan(1);
  });

  it('answers 422 for a bad limit, cursor or workspace, with the loc and type of each', async () => {
    const problems = async (query: string) => {
      const res = await api(`/api/decisions?${query}`, { token: plainUser });
      expect(res.status, query).toBe(422);
      return res.body.detail;
    };
    expect(await problems('limit=0')).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['query', 'limit'],
        msg: 'Input should be greater than or equal to 1',
        input: '0',
        ctx: { ge: 1 },
      },
    ]);
    expect(await problems('limit=1001')).toEqual([
      {
        type: 'less_than_equal',
        loc: ['query', 'limit'],
        msg: 'Input should be less than or equal to 1000',
        input: '1001',
        ctx: { le: 1000 },
      },
    ]);
    expect(await problems('limit=ten')).toEqual([
      {
        type: 'int_parsing',
        loc: ['query', 'limit'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'ten',
      },
    ]);
    expect(await problems('cursor=%25%25notacursor')).toEqual([
      expect.objectContaining({ type: 'value_error', loc: ['query', 'cursor'], input: '%%notacursor' }),
    ]);
    // a key of another list (the versions list's), and one of another workspace's page
    const foreign = Buffer.from(JSON.stringify({ pk: 'D#other#key', sk: 'V#0000000001' })).toString('base64url');
    expect(await problems(`cursor=${foreign}`)).toEqual([
      expect.objectContaining({ type: 'value_error', loc: ['query', 'cursor'] }),
    ]);
    const ws = slug('dl-cur');
    await create(ws, 'a');
    await create(ws, 'b');
    const { next } = await page(`workspace=${ws}&limit=1`);
    expect(next).toBeTruthy();
    expect(await problems(`workspace=${slug('dl-other')}&cursor=${encodeURIComponent(next!)}`)).toEqual([
      expect.objectContaining({ type: 'value_error', loc: ['query', 'cursor'] }),
    ]);
    // Workspaces are slugs, as in the decisions' paths: '#' and upper case are refused.
    const pattern = '^[a-z0-9][a-z0-9-]{0,63}$';
    for (const [query, input] of [
      ['workspace=a%23b', 'a#b'],
      ['workspace=Finance', 'Finance'],
      ['workspace=', ''],
    ]) {
      expect(await problems(query!)).toEqual([
        {
          type: 'string_pattern_mismatch',
          loc: ['query', 'workspace'],
          msg: `String should match pattern '${pattern}'`,
          input,
          ctx: { pattern },
        },
      ]);
    }
    expect(await problems(`workspace=${'w'.repeat(65)}`)).toEqual([
      expect.objectContaining({ type: 'string_too_long', loc: ['query', 'workspace'], ctx: { max_length: 64 } }),
    ]);
    // every problem at once
    const all = await problems('limit=0&workspace=Bad');
    expect(all.map((d: { loc: string[] }) => d.loc)).toEqual([
      ['query', 'limit'],
      ['query', 'workspace'],
    ]);
  });

  it('answers 401 without credentials or with a bad key, and lists for any user: Bearer or pre-shared key', async () => {
    const none = await api('/api/decisions');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: expect.any(String), code: 401 });
    expect((await api('/api/decisions', { psk: 'not-a-key' })).status).toBe(401);
    const ws = slug('dl-who');
    await create(ws, 'k');
    const { secret } = await insertKey({ createdBy: 'dl-frank' });
    const byBearer = await page(`workspace=${ws}`, { token: plainUser });
    const byKey = await page(`workspace=${ws}`, { psk: secret });
    const byApprover = await page(`workspace=${ws}`, { token: approver });
    expect(byBearer.items).toHaveLength(1);
    expect(byKey.items).toEqual(byBearer.items);
    expect(byApprover.items).toEqual(byBearer.items);
  });

  it('leaves the entry as it was when a write is refused (four-eyes, wrong state, missing version)', async () => {
    const ws = slug('dl-refused');
    // The approver authored and submitted version 1: approving it is refused (403).
    await create(ws, 'k', approver);
    await act('submit', ws, 'k', 1, approver);
    const before = await entryOf(ws, 'k');
    expect(before).toMatchObject({ latest_version: 1, latest_status: 'submitted', published_version: null });
    const refuse = async (path: string, as: string, status: number) => {
      const res = await api(`${base(ws, 'k')}/${path}`, { method: 'POST', token: as });
      expect(res.status, `${path}: ${res.text}`).toBe(status);
    };
    await refuse('1/approve', approver, 403);
    await refuse('1/submit', submitter, 409);
    await refuse('1/retire', approver, 409);
    await refuse('9/approve', approver2, 404);
    expect(await entryOf(ws, 'k')).toEqual(before);
    // The same for an older version (its approval would change the published version).
    await create(ws, 'k');
    const withNewer = await entryOf(ws, 'k');
    expect(withNewer).toMatchObject({ latest_version: 2, latest_status: 'draft', published_version: null });
    await refuse('1/approve', approver, 403);
    await refuse('2/approve', approver2, 409);
    await refuse('1/retire', approver2, 409);
    expect(await entryOf(ws, 'k')).toEqual(withNewer);
    // and then allowed: the entry changes
    await act('approve', ws, 'k', 1, approver2);
    expect(await entryOf(ws, 'k')).toMatchObject({ latest_version: 2, latest_status: 'draft', published_version: 1 });
    await refuse('1/approve', approver2, 409);
    expect((await entryOf(ws, 'k'))?.published_version).toBe(1);
  });

  it('ends concurrent creations of one key with the newest as the latest version', async () => {
    const ws = slug('dl-race');
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api(base(ws, 'k'), { method: 'POST', token: author, body: { content: { i } } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(201));
    expect(await entryOf(ws, 'k')).toMatchObject({
      latest_version: 12,
      latest_status: 'draft',
      published_version: null,
    });
    expect((await whole(`workspace=${ws}`)).items).toHaveLength(1);
  });

  it('keeps the entry right when versions are created while the latest is approved and retired', async () => {
    const ws = slug('dl-mixed');
    await create(ws, 'k');
    await act('submit', ws, 'k', 1);
    // the approval of version 1 races five creations (each takes the entry from the latest)
    const [approval, ...created] = await Promise.all([
      api(`${base(ws, 'k')}/1/approve`, { method: 'POST', token: approver }),
      ...Array.from({ length: 5 }, () => api(base(ws, 'k'), { method: 'POST', token: author, body: { content: 1 } })),
    ]);
    expect(approval!.status, approval!.text).toBe(200);
    expect(created.map((r) => r.status)).toEqual(Array(5).fill(201));
    expect(await entryOf(ws, 'k')).toMatchObject({ latest_version: 6, latest_status: 'draft', published_version: 1 });
    // and its retirement races another creation
    await act('submit', ws, 'k', 6);
    await act('approve', ws, 'k', 6);
    const [retired, seventh] = await Promise.all([
      api(`${base(ws, 'k')}/6/retire`, { method: 'POST', token: approver }),
      api(base(ws, 'k'), { method: 'POST', token: author, body: { content: 7 } }),
    ]);
    expect([retired.status, seventh.status]).toEqual([200, 201]);
    expect(await entryOf(ws, 'k')).toMatchObject({ latest_version: 7, latest_status: 'draft', published_version: 1 });
  });

  it('reads the same for a page whatever the number of versions behind its keys', async () => {
    // A service of the test's own on the suite's DynamoDB, counting its calls and what each Query reads.
    const counted = DynamoDBDocumentClient.from(
      new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') })),
    );
    const calls: { command: string; index?: string; scanned: number }[] = [];
    counted.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        calls.push({
          command: context.commandName ?? '?',
          index: (args.input as { IndexName?: string }).IndexName,
          scanned: (out.output as { ScannedCount?: number }).ScannedCount ?? 0,
        });
        return out;
      },
      { step: 'initialize', name: 'listCounter' },
    );
    const service = new DecisionService(new DynamoDecisionStore(counted, table('decisions')));
    const ws = slug('dl-cost');
    const keys = ['a', 'b', 'c'];
    const measure = async () => {
      calls.length = 0;
      const listed = await service.listDecisions(ws, 2, undefined);
      const rest = await service.listDecisions(ws, 2, listed.nextCursor);
      return { entries: [...listed.items, ...rest.items], calls: [...calls] };
    };
    for (const key of keys) await create(ws, key);
    const one = await measure();
    expect(one.entries.map((e) => [e.key, e.latest_version])).toEqual(keys.map((k) => [k, 1]));
    // 29 more versions behind each key
    for (let i = 0; i < 29; i++) await Promise.all(keys.map((key) => create(ws, key)));
    const thirty = await measure();
    expect(thirty.entries.map((e) => [e.key, e.latest_version])).toEqual(keys.map((k) => [k, 30]));
    // one Query of the `keys` index a page, reading the page and one more: the same either way
    expect(one.calls).toEqual([
      { command: 'QueryCommand', index: 'keys', scanned: 3 },
      { command: 'QueryCommand', index: 'keys', scanned: 1 },
    ]);
    expect(thirty.calls).toEqual(one.calls);
    counted.destroy();
  });

  it("keeps every write's domain event as it was, the writes that move the entry included", async () => {
    const ws = slug('dl-events');
    await create(ws, 'k');
    await act('submit', ws, 'k', 1);
    // version 2 takes the entry from version 1 (an unstamped write of version 1)
    await create(ws, 'k');
    // approving and retiring version 1 change the entry on version 2 in the same transaction
    const refused = await api(`${base(ws, 'k')}/1/approve`, { method: 'POST', token: submitter });
    expect(refused.status).toBe(403);
    await act('approve', ws, 'k', 1);
    await act('retire', ws, 'k', 1);
    const admin = await adminToken('dl-admin');
    const events = await eventsOf(`decisions/${ws}/k/versions/1`, 4, admin);
    expect(events.map((e) => [e.sequence, e.type, e.data.status])).toEqual([
      [1, 'dpm.decision.version.created', 'draft'],
      [2, 'dpm.decision.version.submitted', 'submitted'],
      [3, 'dpm.decision.version.approved', 'approved'],
      [4, 'dpm.decision.version.retired', 'retired'],
    ]);
    const second = await eventsOf(`decisions/${ws}/k/versions/2`, 1, admin);
    expect(second.map((e) => [e.sequence, e.type])).toEqual([[1, 'dpm.decision.version.created']]);
    // the events' data are the versions as the API answers them, nothing of the entry in them
    for (const e of [...events, ...second]) {
      expect(Object.keys(e.data).filter((k) => /keys_|published_below|updated_at/.test(k))).toEqual([]);
    }
  });

  it('orders and filters names the store is given as data, whatever characters they hold', async () => {
    // The HTTP API takes slugs only (the 422s above); the store keeps any name apart all the
    // same: '#' (its separator), '%' (its escape) and characters that sort before them.
    const service = new DecisionService(new DynamoDecisionStore(db(), table('decisions')));
    const ws = slug('dl-chars');
    const who: Caller = { principal: 'dl-store', name: 'dl-store', roles: new Set(), via: 'bearer' };
    const workspaces = [`${ws}#x`, `${ws}%`, ws, `${ws}!`, `${ws} `];
    for (const w of workspaces) {
      for (const key of ['b', 'a#', 'a']) await service.createVersion(w, key, { content: 1 }, who);
    }
    const listed = async (w: string | undefined) => {
      const entries = [];
      let cursor: string | undefined;
      do {
        const p = await service.listDecisions(w, 2, cursor);
        entries.push(...p.items);
        cursor = p.nextCursor;
      } while (cursor);
      return entries.map((e) => `${e.workspace}|${e.key}`);
    };
    for (const w of workspaces) expect(await listed(w)).toEqual([`${w}|a`, `${w}|a#`, `${w}|b`]);
    const all = (await listed(undefined)).filter((e) => e.startsWith(ws));
    // by workspace, then key, in DynamoDB's order of strings
    const expected = [...workspaces].sort(byBytes).flatMap((w) => ['a', 'a#', 'b'].map((k) => `${w}|${k}`));
    expect(all).toEqual(expected);
  });

  it('lists a key whose versions predate the list from the next write of one of them on', async () => {
    const client = db();
    /** Makes a key look as the service before the list left it: no entry, no counter state. */
    const asBefore = async (ws: string, key: string, versions: number) => {
      const pk = `D#${ws}#${key}`;
      for (let v = 1; v <= versions; v++) {
        await client.send(
          new UpdateCommand({
            TableName: table('decisions'),
            Key: { pk, sk: `V#${String(v).padStart(10, '0')}` },
            UpdateExpression: 'REMOVE keys_pk, keys_sk, published_below, updated_at',
          }),
        );
      }
      await client.send(
        new UpdateCommand({
          TableName: table('decisions'),
          Key: { pk, sk: '#COUNTER' },
          UpdateExpression: 'REMOVE latest_version, approved_below, rev, previous_approved',
        }),
      );
      const left = await client.send(
        new QueryCommand({
          TableName: table('decisions'),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ConsistentRead: true,
        }),
      );
      expect(
        left.Items!.map((i) => Object.keys(i).filter((a) => /keys_|published_below|latest_version|updated_at/.test(a))),
      ).toEqual(left.Items!.map(() => []));
    };
    const ws = slug('dl-before');
    // "created": v1 approved, v2 approved, v3 submitted; then a new version
    for (const key of ['created', 'approved', 'submitted']) {
      for (let v = 1; v <= 3; v++) await create(ws, key);
      for (const v of [1, 2, 3]) await act('submit', ws, key, v);
      await act('approve', ws, key, 1);
      await act('approve', ws, key, 2, approver2);
      await asBefore(ws, key, 3);
    }
    expect((await whole(`workspace=${ws}`)).items).toEqual([]);
    // a creation makes the entry
    await create(ws, 'created');
    // the latest version approved: its write makes the entry
    await act('approve', ws, 'approved', 3);
    // an older version rejected
    await act('retire', ws, 'submitted', 2);
    await act('reject', ws, 'submitted', 3);
    const listed = (await whole(`workspace=${ws}`)).items;
    expect(listed.map(({ updated_at: _, ...e }) => e)).toEqual([
      { workspace: ws, key: 'approved', latest_version: 3, latest_status: 'approved', published_version: 3 },
      { workspace: ws, key: 'created', latest_version: 4, latest_status: 'draft', published_version: 2 },
      { workspace: ws, key: 'submitted', latest_version: 3, latest_status: 'draft', published_version: 1 },
    ]);
    // and from then on, kept as any other
    await act('retire', ws, 'approved', 3);
    await act('retire', ws, 'created', 2);
    await create(ws, 'submitted');
    expect((await whole(`workspace=${ws}`)).items.map(({ updated_at: _, ...e }) => e)).toEqual([
      { workspace: ws, key: 'approved', latest_version: 3, latest_status: 'retired', published_version: 2 },
      { workspace: ws, key: 'created', latest_version: 4, latest_status: 'draft', published_version: 1 },
      { workspace: ws, key: 'submitted', latest_version: 4, latest_status: 'draft', published_version: 1 },
    ]);
  });
});
