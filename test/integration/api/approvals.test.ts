import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { ApprovalService } from '../../../functions/approvals/service.js';
import { DynamoRunStore } from '../../../functions/crews/runs/run-store.js';
import { MAX_CONTENT_BYTES } from '../../../functions/decisions/service.js';
import { DynamoDecisionStore } from '../../../functions/decisions/store.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { AMPLIFYING, amplifyingContent } from '../../support/amplifying-content.js';
import { eventually } from '../../support/eventually.js';
import { crewTemplate, runEvents, startRun } from '../crew-support.js';
import { adminToken, api, approverToken, insertKey, principalOf, slug, table, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * People in the loop (docs/reviewing.md): `GET /api/me`, the inbox `GET /api/approvals` (what the
 * caller may decide now, oldest first, decision versions and crew steps), read rights of
 * eligible approvers, and `GET .../versions/{v}/diff` (bounded: 1,000 changes, 1 MiB).
 *
 * The suite's platform is shared: every approver's inbox also holds other tests' submitted
 * versions, so decision items are compared within this file's workspace; crew steps wait
 * on a role of this file's own, so `kind=crew_step` lists are exact.
 */

type Item = Record<string, any> & { kind: 'decision_version' | 'crew_step' };

const WS = slug('inbox');
const GATE = slug('gate'); // the crew approval role of this file
const names = { alice: slug('alice'), bob: slug('bob'), carol: slug('carol'), dana: slug('dana'), eve: slug('eve') };
let alice: string;
/** Alice with the gate role only: other tests' steps waiting for `approver` stay out of her crew_step lists. */
let aliceGate: string;
let bob: string;
let carol: string;
let dana: string;
let eve: string; // approver, but not of GATE
let admin: string;
let alicePsk: string;

const ours = (item: Item) => (item.kind === 'decision_version' ? item.workspace === WS : item.role === GATE);
const idOf = (item: Item) =>
  item.kind === 'decision_version' ? `${item.key}/${item.version}` : `run:${item.correlation_id}`;

/** Every page of the caller's inbox (following X-Next-Cursor), answered as one list. */
async function inbox(auth: { token?: string; psk?: string }, query = '', limit = 1000): Promise<Item[]> {
  const all: Item[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const q = new URLSearchParams(query);
    q.set('limit', String(limit));
    if (cursor) q.set('cursor', cursor);
    const res = await api<Item[]>(`/api/approvals?${q}`, auth);
    expect(res.status, res.text).toBe(200);
    all.push(...res.body);
    cursor = res.headers.get('x-next-cursor');
    if (!cursor) return all;
  }
  throw new Error('the inbox did not end within 100 pages');
}
const ourInbox = async (auth: { token?: string; psk?: string }, query = '') =>
  (await inbox(auth, query)).filter(ours).map(idOf);

async function version(key: string, author: string, content: unknown = { key }): Promise<number> {
  const res = await api(`/api/decisions/${WS}/${key}/versions`, { method: 'POST', token: author, body: { content } });
  expect(res.status, res.text).toBe(201);
  return res.body.version as number;
}
async function act(action: string, key: string, v: number, as: string, status = 200) {
  const res = await api(`/api/decisions/${WS}/${key}/versions/${v}/${action}`, { method: 'POST', token: as });
  expect(res.status, res.text).toBe(status);
  return res.body;
}

async function waitingRun(templateId: string, starter: string): Promise<string> {
  const id = await startRun(templateId, starter);
  await eventually(
    async () => ((await runEvents(id, admin)).some((e) => e.type === 'step.waiting') ? true : undefined),
    20_000,
    `run ${id} waiting`,
  );
  return id;
}

let gateTemplate: string;
let run1: string; // started by carol: alice and bob may decide
let run2: string; // started by bob: alice may decide, bob may not

beforeAll(async () => {
  alice = await token(names.alice, { roles: ['approver', GATE] });
  aliceGate = await token(names.alice, { roles: [GATE] });
  bob = await token(names.bob, { roles: ['approver', GATE] });
  carol = await token(names.carol);
  dana = await adminToken(names.dana);
  eve = await approverToken(names.eve);
  admin = await adminToken(slug('inbox-admin'));
  alicePsk = (await insertKey({ createdBy: names.alice, roles: ['approver', GATE] })).secret;
  gateTemplate = await crewTemplate(
    admin,
    [
      { id: 'draft', kind: 'render', template: 'release notes' },
      { id: 'sign_off', kind: 'approval', prompt: 'Publish {{steps.draft.output}}?', role: GATE },
    ],
    'inbox',
  );

  // In this order (the inbox is oldest first): k1, run1, k3, run2, k2.
  const k1 = await version('k1', carol);
  await act('submit', 'k1', k1, carol);
  run1 = await waitingRun(gateTemplate, carol);
  const k3 = await version('k3', carol);
  await act('submit', 'k3', k3, bob); // bob submitted it: alice may decide, bob may not
  run2 = await waitingRun(gateTemplate, bob);
  const k2 = await version('k2', alice);
  await act('submit', 'k2', k2, alice); // alice's own: bob may decide
  // Never listed: a draft, an approved and a rejected version.
  await version('k4', carol);
  const k5 = await version('k5', carol);
  await act('submit', 'k5', k5, carol);
  await act('approve', 'k5', k5, bob);
  const k6 = await version('k6', carol);
  await act('submit', 'k6', k6, carol);
  await act('reject', 'k6', k6, alice);
}, 60_000);

describe('GET /api/me', () => {
  it('answers a Bearer caller: name, principal (issuer + subject), sorted roles, a session', async () => {
    const res = await api('/api/me', { token: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      name: names.alice,
      principal: principalOf(names.alice),
      roles: ['approver', GATE].sort(),
      credential: 'bearer',
      session: true,
    });
  });

  it("answers a key as its creator, with the key's roles and no session", async () => {
    const res = await api('/api/me', { psk: alicePsk });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      name: names.alice,
      principal: principalOf(names.alice),
      roles: ['approver', GATE].sort(),
      credential: 'psk',
      session: false,
    });
  });

  it('answers 401 without credentials, with a bad token and with a bad key', async () => {
    for (const auth of [{}, { token: 'not-a-jwt' }, { psk: 'no-such-key' }]) {
      const res = await api('/api/me', auth);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 401 });
    }
  });
});

describe('GET /api/approvals', () => {
  it("lists, oldest first, exactly what each caller may decide: never what they authored, submitted or started, nor another role's, nor what is decided", async () => {
    expect(await ourInbox({ token: alice })).toEqual(['k1/1', `run:${run1}`, 'k3/1', `run:${run2}`]);
    expect(await ourInbox({ token: bob })).toEqual(['k1/1', `run:${run1}`, 'k2/1']);
    // a key sees its creator's list (deciding still needs a Bearer session)
    expect(await ourInbox({ psk: alicePsk })).toEqual(await ourInbox({ token: alice }));
    // no role, or admin only: nothing at all
    expect(await inbox({ token: carol })).toEqual([]);
    expect(await inbox({ token: dana })).toEqual([]);
    // approver without the gate role: the versions, not the steps
    expect(await ourInbox({ token: eve })).toEqual(['k1/1', 'k3/1', 'k2/1']);
  });

  it('answers each item with the fields of the contract', async () => {
    const items = (await inbox({ token: alice })).filter(ours);
    const k1 = items.find((i) => i.kind === 'decision_version' && i.key === 'k1')!;
    expect(k1).toEqual({
      kind: 'decision_version',
      workspace: WS,
      key: 'k1',
      version: 1,
      created_by: names.carol,
      submitted_by: names.carol,
      submitted_at: expect.any(String),
      content_sha: expect.stringMatching(/^[0-9a-f]{64}$/),
      notes: null,
    });
    const step = items.find((i) => i.kind === 'crew_step' && i.correlation_id === run1)!;
    expect(step).toEqual({
      kind: 'crew_step',
      correlation_id: run1,
      step_id: 'sign_off',
      template_id: gateTemplate,
      template_name: expect.stringMatching(/^inbox-/),
      prompt: 'Publish release notes?',
      role: GATE,
      started_by: names.carol,
      waiting_since: expect.any(String),
      expires_at: expect.any(String),
    });
    expect(Date.parse(step.expires_at) - Date.parse(step.waiting_since)).toBe(86_400_000);
  });

  it('filters by kind', async () => {
    const steps = await inbox({ token: alice }, 'kind=crew_step');
    expect(steps.every((i) => i.kind === 'crew_step')).toBe(true);
    expect(steps.filter(ours).map(idOf)).toEqual([`run:${run1}`, `run:${run2}`]);
    expect((await inbox({ token: aliceGate }, 'kind=crew_step')).map(idOf)).toEqual([`run:${run1}`, `run:${run2}`]);
    const versions = await inbox({ token: alice }, 'kind=decision_version');
    expect(versions.every((i) => i.kind === 'decision_version')).toBe(true);
    expect(versions.filter(ours).map(idOf)).toEqual(['k1/1', 'k3/1']);
  });

  it('pages with limit and X-Next-Cursor, without repeating or skipping, and sends no cursor after the last page', async () => {
    // with the gate role alone, the crew_step list is exactly this file's two waiting runs
    const first = await api<Item[]>('/api/approvals?kind=crew_step&limit=1', { token: aliceGate });
    expect(first.status).toBe(200);
    expect(first.body.map(idOf)).toEqual([`run:${run1}`]);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toBeTruthy();
    const second = await api<Item[]>(`/api/approvals?kind=crew_step&limit=1&cursor=${cursor}`, { token: aliceGate });
    expect(second.body.map(idOf)).toEqual([`run:${run2}`]);
    expect(second.headers.get('x-next-cursor')).toBeNull();
    // page by page (2 at a time) across both kinds: the same order as one page
    expect((await inbox({ token: alice }, '', 2)).filter(ours).map(idOf)).toEqual(
      (await inbox({ token: alice })).filter(ours).map(idOf),
    );
  });

  it('leaves out a step once decided or cancelled, and a version once approved', async () => {
    const id = await waitingRun(gateTemplate, carol);
    expect((await inbox({ token: bob }, 'kind=crew_step')).map(idOf)).toContain(`run:${id}`);
    const decided = await api(`/api/crew-runs/${id}/steps/sign_off/decision`, {
      method: 'POST',
      token: bob,
      body: { approve: true },
    });
    expect(decided.status, decided.text).toBe(200);
    expect((await inbox({ token: bob }, 'kind=crew_step')).map(idOf)).not.toContain(`run:${id}`);

    const other = await waitingRun(gateTemplate, carol);
    expect((await api(`/api/crew-runs/${other}/cancel`, { method: 'POST', token: carol, body: {} })).status).toBe(200);
    expect((await inbox({ token: bob }, 'kind=crew_step')).map(idOf)).not.toContain(`run:${other}`);

    const v = await version('k7', carol);
    await act('submit', 'k7', v, carol);
    expect(await ourInbox({ token: eve })).toContain('k7/1');
    await act('approve', 'k7', v, eve);
    expect(await ourInbox({ token: eve })).not.toContain('k7/1');
    expect(await ourInbox({ token: alice })).not.toContain('k7/1');
  });

  it("reads, per role, only that role's waiting steps: decided and cancelled ones have left the index", async () => {
    // A service of the test's own on the suite's DynamoDB, counting what each Query reads.
    const counted = DynamoDBDocumentClient.from(
      new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') })),
    );
    const queries: { index?: string; role?: unknown; scanned: number }[] = [];
    counted.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'QueryCommand') {
          const input = args.input as { IndexName?: string; ExpressionAttributeValues?: Record<string, unknown> };
          queries.push({
            index: input.IndexName,
            role: input.ExpressionAttributeValues?.[':role'],
            scanned: (out.output as { ScannedCount?: number }).ScannedCount ?? 0,
          });
        }
        return out;
      },
      { step: 'initialize', name: 'scannedCounter' },
    );
    const service = new ApprovalService({
      decisions: new DynamoDecisionStore(counted, table('decisions')),
      runs: new DynamoRunStore(counted, table('crewRuns'), table('runLog')),
    });
    const page = await service.list(
      { principal: principalOf(names.alice), name: names.alice, roles: new Set([GATE]), via: 'bearer' },
      { limit: 100, kind: 'crew_step' },
    );
    expect(page.items.map((i) => (i as { correlation_id: string }).correlation_id)).toEqual([run1, run2]);
    // one Query of the gate's partition of the sparse index, which holds exactly the two
    // runs still waiting (the test before decided one and cancelled another)
    expect(queries).toEqual([{ index: 'waiting_steps', role: GATE, scanned: 2 }]);
  });

  it("lists what waits after one author's large submitted versions: a Query stopped at 1 MB is not the end of the index", async () => {
    // Six versions of ~190 KiB (the contract allows 200 KiB): more than one Query of the
    // submitted-versions index can read (DynamoDB stops at 1 MB, however many were asked for).
    const ws = slug('inbox-big');
    const mallory = await token(slug('mallory'));
    /** Submitted here, and taken out of the shared index again at the end (the other files' inboxes read it too). */
    const submitted: { key: string; version: number }[] = [];
    const submit = async (key: string, as: string, content: unknown) => {
      const created = await api(`/api/decisions/${ws}/${key}/versions`, {
        method: 'POST',
        token: as,
        body: { content },
      });
      expect(created.status, created.text).toBe(201);
      const res = await api(`/api/decisions/${ws}/${key}/versions/${created.body.version}/submit`, {
        method: 'POST',
        token: as,
      });
      expect(res.status, res.text).toBe(200);
      submitted.push({ key, version: created.body.version as number });
    };
    try {
      for (let i = 0; i < 6; i++) await submit(`big-${i}`, mallory, { blob: String(i).repeat(190 * 1024) });
      await submit('after-big', carol, { small: true });
      for (const limit of [1000, 50]) {
        const listed = (await inbox({ token: eve }, '', limit)).filter((i) => i.workspace === ws).map((i) => i.key);
        expect(listed, `limit ${limit}`).toEqual([...Array.from({ length: 6 }, (_, i) => `big-${i}`), 'after-big']);
      }
    } finally {
      for (const { key, version: v } of submitted) {
        const res = await api(`/api/decisions/${ws}/${key}/versions/${v}/reject`, { method: 'POST', token: eve });
        expect(res.status, res.text).toBe(200);
      }
    }
  }, 60_000);

  it('answers 422 for a bad kind, limit or cursor, and 401 without credentials', async () => {
    const kind = await api('/api/approvals?kind=runs', { token: alice });
    expect(kind.status).toBe(422);
    expect(kind.body.detail[0]).toMatchObject({ loc: ['query', 'kind'], type: 'enum' });
    const limit = await api('/api/approvals?limit=0', { token: alice });
    expect(limit.status).toBe(422);
    expect(limit.body.detail[0]).toMatchObject({ loc: ['query', 'limit'], type: 'greater_than_equal' });
    for (const cursor of ['garbage', Buffer.from('{"pk":"x"}').toString('base64url')]) {
      const res = await api(`/api/approvals?cursor=${cursor}`, { token: alice });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['query', 'cursor'], type: 'value_error' });
    }
    expect((await api('/api/approvals')).status).toBe(401);
  });
});

describe('read rights of eligible approvers', () => {
  it("lets a holder of the waiting step's role read the run and its events, from the moment it waits and after deciding; nobody else", async () => {
    const paced = await crewTemplate(
      admin,
      [
        { id: 'pause', kind: 'wait', seconds: 3 },
        { id: 'sign_off', kind: 'approval', prompt: 'go?', role: GATE },
      ],
      'inbox-paced',
    );
    const id = await startRun(paced, carol);
    // not yet waiting: the approvers may not read it
    expect((await api(`/api/crew-runs/${id}`, { token: alice })).status).toBe(403);
    expect((await api(`/api/events/${id}?start=0`, { token: alice })).status).toBe(403);
    await eventually(
      async () => ((await runEvents(id, carol)).some((e) => e.type === 'step.waiting') ? true : undefined),
      20_000,
      'waiting',
    );
    for (const auth of [{ token: alice }, { token: bob }, { psk: alicePsk }]) {
      const run = await api(`/api/crew-runs/${id}`, auth);
      expect(run.status, run.text).toBe(200);
      expect(run.body.status).toBe('waiting');
      const events = await api<{ type: string }[]>(`/api/events/${id}?start=0`, auth);
      expect(events.status).toBe(200);
      expect(events.body.at(-1)!.type).toBe('step.waiting');
    }
    // an approver of another role, and a plain user: still refused
    for (const other of [eve, await token(slug('plain'))]) {
      expect((await api(`/api/crew-runs/${id}`, { token: other })).status).toBe(403);
      expect((await api(`/api/events/${id}?start=0`, { token: other })).status).toBe(403);
    }
    // reading is all: cancel and retry stay the starter's or an admin's
    expect((await api(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: alice, body: {} })).status).toBe(403);

    const decided = await api(`/api/crew-runs/${id}/steps/sign_off/decision`, {
      method: 'POST',
      token: alice,
      body: { approve: false, notes: 'not now' },
    });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body.status).toBe('failed');
    // the right is kept after the decision
    expect((await api(`/api/crew-runs/${id}`, { token: alice })).status).toBe(200);
    expect((await api(`/api/crew-runs/${id}`, { token: bob })).status).toBe(200);
    expect((await api(`/api/crew-runs/${id}`, { token: eve })).status).toBe(403);
  });
});

describe('GET .../versions/{version}/diff', () => {
  const DIFF_WS = slug('diff');
  const base = (key: string, v: number | string) => `/api/decisions/${DIFF_WS}/${key}/versions/${v}`;
  async function create(key: string, content: unknown): Promise<{ version: number; content_sha: string }> {
    const res = await api(`/api/decisions/${DIFF_WS}/${key}/versions`, {
      method: 'POST',
      token: carol,
      body: { content },
    });
    expect(res.status, res.text).toBe(201);
    return { version: res.body.version, content_sha: res.body.content_sha };
  }
  async function publish(key: string, v: number) {
    for (const [action, as] of [
      ['submit', carol],
      ['approve', alice],
    ] as const) {
      const res = await api(`${base(key, v)}/${action}`, { method: 'POST', token: as });
      expect(res.status, res.text).toBe(200);
    }
  }

  it('without a published version: from is null and the whole content is one add at ""', async () => {
    const v1 = await create('fresh', { a: 1 });
    const res = await api(`${base('fresh', 1)}/diff`, { token: bob });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      from: null,
      to: v1,
      changes: [{ op: 'add', path: '', new: { a: 1 } }],
      truncated: false,
    });
  });

  it('against the published version: nested changes, arrays, added and removed keys, with old and new values', async () => {
    const v1 = await create('limits', { limits: { daily: 100, tiers: [1, 2] }, region: 'eu', owner: 'risk' });
    await publish('limits', 1);
    const v2 = await create('limits', {
      limits: { daily: 150, tiers: [1, 3, 4] },
      owner: 'risk',
      approved_regions: ['eu', 'us'],
    });
    const expected = {
      from: v1,
      to: v2,
      changes: [
        { op: 'remove', path: '/region', old: 'eu' },
        { op: 'replace', path: '/limits/tiers/1', old: 2, new: 3 },
        { op: 'add', path: '/limits/tiers/2', new: 4 },
        { op: 'replace', path: '/limits/daily', old: 100, new: 150 },
        { op: 'add', path: '/approved_regions', new: ['eu', 'us'] },
      ],
      truncated: false,
    };
    const byDefault = await api(`${base('limits', 2)}/diff`, { token: carol });
    expect(byDefault.status).toBe(200);
    expect(byDefault.body).toEqual(expected);
    expect((await api(`${base('limits', 2)}/diff?against=published`, { token: carol })).body).toEqual(expected);
    expect((await api(`${base('limits', 2)}/diff?against=1`, { token: carol })).body).toEqual(expected);
    // against itself: nothing changed
    expect((await api(`${base('limits', 2)}/diff?against=2`, { token: carol })).body).toEqual({
      from: v2,
      to: v2,
      changes: [],
      truncated: false,
    });
    // the other way round
    const back = await api(`${base('limits', 1)}/diff?against=2`, { token: carol });
    expect(back.body.changes).toContainEqual({ op: 'replace', path: '/limits/daily', old: 150, new: 100 });
    expect(back.body.changes).toContainEqual({ op: 'add', path: '/region', new: 'eu' });
  });

  it('escapes "/" and "~" in keys as JSON Pointer does, and replaces a content of another type as a whole', async () => {
    await create('escapes', { 'a/b': { '~x': 1 } });
    await create('escapes', { 'a/b': { '~x': 2 } });
    expect((await api(`${base('escapes', 2)}/diff?against=1`, { token: carol })).body.changes).toEqual([
      { op: 'replace', path: '/a~1b/~0x', old: 1, new: 2 },
    ]);
    await create('escapes', [1, 2]);
    expect((await api(`${base('escapes', 3)}/diff?against=2`, { token: carol })).body.changes).toEqual([
      { op: 'replace', path: '', old: { 'a/b': { '~x': 2 } }, new: [1, 2] },
    ]);
  });

  it("is bounded (fair use): the finding's 30 levels of 120-character keys over 12,000 leaves answer at most 1 MiB, truncated", async () => {
    // 12,000 changes whose paths repeat 3.6 KB of keys: 44 MB as a whole diff
    const before = amplifyingContent((i) => i % 100);
    const after = amplifyingContent((i) => (i + 1) % 100);
    expect(Buffer.byteLength(JSON.stringify({ content: after }))).toBeLessThan(MAX_CONTENT_BYTES);
    const v1 = await create('amplified', before);
    const v2 = await create('amplified', after);
    await publish('amplified', 1);
    for (const query of ['', '?against=published', '?against=1']) {
      const res = await api(`${base('amplified', 2)}/diff${query}`, { token: bob });
      expect(res.status, query).toBe(200);
      expect(Buffer.byteLength(res.text, 'utf8'), query).toBeLessThanOrEqual(1024 * 1024);
      const { changes, ...rest } = res.body;
      expect(rest, query).toEqual({ from: v1, to: v2, truncated: true, change_count: changes.length + 1 });
      expect(changes.length, query).toBeLessThanOrEqual(1_000);
      // as many as fit in 1 MiB (about 280 of 3.7 KB), the leaves from the last, as a JSON Patch orders them
      expect(changes.length, query).toBeGreaterThan(250);
      const prefix = (changes[0].path as string).slice(0, -'/l11999'.length);
      expect(prefix.split('/')).toHaveLength(AMPLIFYING.levels + 1);
      changes.forEach((change: unknown, n: number) => {
        const leaf = AMPLIFYING.leaves - 1 - n;
        expect(change).toEqual({ op: 'replace', path: `${prefix}/l${leaf}`, old: leaf % 100, new: (leaf + 1) % 100 });
      });
    }
    // the whole content as one add at "" (nothing published under this key) fits: not truncated
    const fresh = await create('amplified-fresh', after);
    const whole = await api(`${base('amplified-fresh', 1)}/diff`, { token: bob });
    expect(whole.status).toBe(200);
    expect(whole.body).toEqual({
      from: null,
      to: fresh,
      changes: [{ op: 'add', path: '', new: after }],
      truncated: false,
    });
  });

  it('is bounded at 1,000 changes: the first 1,000, truncated, change_count a lower bound of the total', async () => {
    const filled = (length: number, value: number) => Array.from({ length }, () => value);
    await create('many', filled(1_500, 0));
    await create('many', filled(1_500, 1));
    const res = await api(`${base('many', 2)}/diff?against=1`, { token: carol });
    expect(res.status).toBe(200);
    expect(res.body.truncated).toBe(true);
    expect(res.body.change_count).toBe(1_001);
    expect(res.body.changes).toHaveLength(1_000);
    expect(res.body.changes[0]).toEqual({ op: 'replace', path: '/1499', old: 0, new: 1 });
    expect(res.body.changes[999]).toEqual({ op: 'replace', path: '/500', old: 0, new: 1 });
    // exactly 1,000 changes are all there
    await create('many', filled(1_000, 1));
    await create('many', filled(1_000, 2));
    const all = await api(`${base('many', 4)}/diff?against=3`, { token: carol });
    expect(all.status).toBe(200);
    expect(all.body.changes).toHaveLength(1_000);
    expect(all.body.truncated).toBe(false);
    expect(all.body).not.toHaveProperty('change_count');
  });

  it('answers 404 for an unknown version or an unknown version to compare with, 422 for a bad against, 401 without credentials', async () => {
    await create('known', { a: 1 });
    const unknown = await api(`${base('known', 9)}/diff`, { token: carol });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: expect.any(String), code: 404 });
    expect((await api(`${base('known', 1)}/diff?against=9`, { token: carol })).status).toBe(404);
    for (const against of ['0', 'latest', '-1', '1.5']) {
      const res = await api(`${base('known', 1)}/diff?against=${against}`, { token: carol });
      expect(res.status, against).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['query', 'against'], type: 'value_error' });
    }
    const badVersion = await api(`${base('known', 'x')}/diff`, { token: carol });
    expect(badVersion.status).toBe(422);
    expect(badVersion.body.detail[0]).toMatchObject({ loc: ['path', 'version'], type: 'int_parsing' });
    expect((await api(`${base('known', 1)}/diff`)).status).toBe(401);
  });
});
