import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoRunStore } from '../../../functions/crews/runs/run-store.js';
import { eventually } from '../../support/eventually.js';
import { storeWaitingRun } from '../../support/pending-run.js';
import { eventsOf } from '../event-feed.js';
import { crewTemplate, runEvents, startRun } from '../crew-support.js';
import { adminToken, api, db, eventsTable, principalOf, slug, table, token } from '../helpers.js';

/**
 * Bulk cancel (docs/crews.md, limits and deadlines): `POST /api/crew-runs/cancel` cancels
 * every unfinished run matching its filters, as the single cancel would: the caller's own,
 * an admin's everyone's (or with `created_by: "me"` their own).
 */

let admin: string;
let adminName: string;
let aliceName: string;
let alice: string;
let bobName: string;
let bob: string;

type Run = { correlation_id: string; status: string; event_count: number };
type Answer = { matched: number; cancelled: number; more: boolean };

const tables = () => ({ crewRuns: table('crewRuns'), runLog: table('runLog') });
const store = () => new DynamoRunStore(db(), table('crewRuns'), table('runLog'), eventsTable());

/**
 * A run of `owner`'s as E2 leaves it but never queued (no worker takes it): `pending`, or
 * moved on to `running` by its `run.started`. Of template `templateId`, queued at `createdAt`.
 */
async function storedRun(
  owner: string,
  templateId: string,
  options: { createdAt?: string; status?: 'pending' | 'running' } = {},
): Promise<string> {
  const id = randomUUID();
  const at = options.createdAt ?? new Date().toISOString();
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  await store().create(
    {
      correlation_id: id,
      template_id: templateId,
      status: 'pending',
      values: {},
      created_by: owner,
      created_by_principal: principalOf(owner),
      created_at: at,
      started_at: null,
      finished_at: null,
      event_count: 1,
      error: null,
      steps: [{ id: 'long', kind: 'wait', seconds: 60 }],
      expires_at: expiresAt,
    },
    { index: 0, correlation_id: id, type: 'run.queued', timestamp: at, message: 'queued' },
    { type: 'crew.run.queued', actor: owner, at },
  );
  if (options.status === 'running') {
    const now = new Date().toISOString();
    const started = await store().append(
      (await store().get(id))!,
      { index: 1, correlation_id: id, type: 'run.started', timestamp: now, message: 'started' },
      { status: 'running', started_at: now },
      { type: 'crew.run.started', actor: null, at: now },
    );
    expect(started).toBe(true);
  }
  return id;
}

const bulkCancel = (body: unknown, as: string) =>
  api<Answer>('/api/crew-runs/cancel', { method: 'POST', token: as, body });
const statusOf = async (id: string) => (await api<Run>(`/api/crew-runs/${id}`, { token: admin })).body.status;
const statuses = (ids: string[]) => Promise.all(ids.map(statusOf));
const events = (id: string) => runEvents(id, admin);

beforeAll(async () => {
  adminName = slug('bulk-admin');
  admin = await adminToken(adminName);
  aliceName = slug('bulk-alice');
  alice = await token(aliceName);
  bobName = slug('bulk-bob');
  bob = await token(bobName);
});

describe('POST /api/crew-runs/cancel', () => {
  it("cancels the caller's matching runs only: another user's stay as they are", async () => {
    const templateId = randomUUID();
    const mine = [
      await storedRun(aliceName, templateId),
      await storedRun(aliceName, templateId, { status: 'running' }),
      await storeWaitingRun(db(), tables(), { name: aliceName, principal: principalOf(aliceName) }),
    ];
    const theirs = [await storedRun(bobName, templateId), await storedRun(bobName, templateId, { status: 'running' })];
    // alice's waiting run is of another template: only with created_by
    const res = await bulkCancel({ template_id: templateId }, alice);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ matched: 2, cancelled: 2, more: false });
    expect(await statuses(mine)).toEqual(['cancelled', 'cancelled', 'waiting']);
    expect(await statuses(theirs)).toEqual(['pending', 'running']);
    // as by the single cancel: run.cancelled last, by the caller, without a reason
    for (const id of mine.slice(0, 2)) {
      const last = (await events(id)).at(-1)!;
      expect(last).toMatchObject({ type: 'run.cancelled', data: { by: aliceName, reason: null } });
    }
    const again = await bulkCancel({ created_by: 'me' }, alice);
    expect(again.body).toEqual({ matched: 1, cancelled: 1, more: false });
    expect(await statuses(mine)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    // nothing of alice's is left to cancel; bob's runs are still his
    expect((await bulkCancel({ created_by: 'me' }, alice)).body).toEqual({ matched: 0, cancelled: 0, more: false });
    expect((await bulkCancel({ template_id: templateId }, bob)).body).toEqual({
      matched: 2,
      cancelled: 2,
      more: false,
    });
  });

  it("cancels everyone's matching runs for an admin, or with created_by me the admin's own", async () => {
    const templateId = randomUUID();
    const users = [await storedRun(aliceName, templateId), await storedRun(bobName, templateId, { status: 'running' })];
    const own = await storedRun(adminName, templateId);
    const other = await storedRun(aliceName, randomUUID());

    const mineOnly = await bulkCancel({ template_id: templateId, created_by: 'me' }, admin);
    expect(mineOnly.body).toEqual({ matched: 1, cancelled: 1, more: false });
    expect(await statuses([...users, own])).toEqual(['pending', 'running', 'cancelled']);

    const all = await bulkCancel({ template_id: templateId }, admin);
    expect(all.status, all.text).toBe(200);
    expect(all.body).toEqual({ matched: 2, cancelled: 2, more: false });
    expect(await statuses([...users, other])).toEqual(['cancelled', 'cancelled', 'pending']);
    expect((await events(users[0]!)).at(-1)).toMatchObject({ type: 'run.cancelled', data: { by: adminName } });
    expect((await bulkCancel({ created_by: 'me' }, alice)).body.cancelled).toBe(1);
  });

  it('filters by status, by template and by creation time, all filters together', async () => {
    const [t1, t2] = [randomUUID(), randomUUID()];
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const pending = await storedRun(aliceName, t1);
    const running = await storedRun(aliceName, t1, { status: 'running' });
    const old = await storedRun(aliceName, t2, { createdAt: hourAgo });
    const oldRunning = await storedRun(aliceName, t2, { createdAt: hourAgo, status: 'running' });
    const waiting = await storeWaitingRun(db(), tables(), { name: aliceName, principal: principalOf(aliceName) });
    const recent = await storedRun(aliceName, t2);

    const halfHourAgo = new Date(Date.now() - 1_800_000).toISOString();
    // every filter: t2, pending, before half an hour ago (with an offset: the same instant)
    const offset = halfHourAgo.replace('Z', '+00:00');
    const narrow = await bulkCancel(
      { template_id: t2, status: ['pending'], created_before: offset, created_by: 'me' },
      alice,
    );
    expect(narrow.body).toEqual({ matched: 1, cancelled: 1, more: false });
    expect(await statuses([old, oldRunning, recent])).toEqual(['cancelled', 'running', 'pending']);

    const byTime = await bulkCancel({ created_before: halfHourAgo }, alice);
    expect(byTime.body).toEqual({ matched: 1, cancelled: 1, more: false });
    expect(await statusOf(oldRunning)).toBe('cancelled');

    const byStatus = await bulkCancel({ status: ['waiting', 'running'] }, alice);
    expect(byStatus.body).toEqual({ matched: 2, cancelled: 2, more: false });
    expect(await statuses([pending, running, waiting, recent])).toEqual([
      'pending',
      'cancelled',
      'cancelled',
      'pending',
    ]);

    const byTemplate = await bulkCancel({ template_id: t1 }, alice);
    expect(byTemplate.body).toEqual({ matched: 1, cancelled: 1, more: false });
    expect(await statuses([pending, recent])).toEqual(['cancelled', 'pending']);
    expect((await bulkCancel({ template_id: t2 }, alice)).body).toEqual({ matched: 1, cancelled: 1, more: false });
  });

  it('abandons a running step within a second, as the single cancel does', async () => {
    const templateId = await crewTemplate(admin, [{ id: 'long', kind: 'wait', seconds: 60 }], 'bulk');
    const id = await startRun(templateId, bob);
    await eventually(
      async () => ((await events(id)).some((e) => e.type === 'step.started') ? true : undefined),
      20_000,
      'the wait under way',
    );
    const res = await bulkCancel({ template_id: templateId, status: ['running'] }, bob);
    expect(res.body).toEqual({ matched: 1, cancelled: 1, more: false });
    expect((await events(id)).map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
      'run.cancelled',
    ]);
    // the worker gave the wait up: a run started now completes at once (see crew-cancel.test.ts)
    const quick = await startRun(await crewTemplate(admin, [{ id: 'a', kind: 'render', template: 'x' }], 'bulk'), bob);
    const begun = Date.now();
    await eventually(
      async () => ((await events(quick)).some((e) => e.type === 'run.completed') ? true : undefined),
      20_000,
      'the next run completed',
    );
    expect(Date.now() - begun).toBeLessThan(10_000);
    const feed = await eventsOf(`crew-runs/${id}`, 3, admin);
    expect(feed.map((e) => e.type)).toEqual(['dpm.crew.run.queued', 'dpm.crew.run.started', 'dpm.crew.run.cancelled']);
    expect(feed[2]!.actor).toBe(bobName);
  });

  it('counts a run cancelled concurrently as matched, never as cancelled twice', async () => {
    const templateId = randomUUID();
    const ids = await Promise.all(Array.from({ length: 12 }, () => storedRun(aliceName, templateId)));
    const [bulk, ...singles] = await Promise.all([
      bulkCancel({ template_id: templateId }, alice),
      ...ids.map((id) => api(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: alice, body: {} })),
    ]);
    expect(bulk!.status, bulk!.text).toBe(200);
    const single = singles.filter((r) => r.status === 200).length;
    expect(singles.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    // each run ends cancelled exactly once, by one of them
    expect(bulk!.body.cancelled + single).toBe(ids.length);
    expect(bulk!.body.cancelled).toBeLessThanOrEqual(bulk!.body.matched);
    for (const id of ids) expect((await events(id)).filter((e) => e.type === 'run.cancelled')).toHaveLength(1);
    expect(await statuses(ids)).toEqual(ids.map(() => 'cancelled'));
  });

  it('needs at least one filter, and validates each (pydantic-shaped 422s)', async () => {
    const templateId = randomUUID();
    const id = await storedRun(aliceName, templateId);
    const cases: [unknown, { type: string; loc: (string | number)[] }[]][] = [
      [{}, [{ type: 'value_error', loc: ['body'] }]],
      [{ status: [] }, [{ type: 'too_short', loc: ['body', 'status'] }]],
      [{ status: ['succeeded'] }, [{ type: 'enum', loc: ['body', 'status', 0] }]],
      [{ status: 'pending' }, [{ type: 'list_type', loc: ['body', 'status'] }]],
      [{ created_before: 'yesterday' }, [{ type: 'datetime_from_date_parsing', loc: ['body', 'created_before'] }]],
      [{ created_by: 'you' }, [{ type: 'literal_error', loc: ['body', 'created_by'] }]],
      [{ template_id: '' }, [{ type: 'string_too_short', loc: ['body', 'template_id'] }]],
      [{ template_id: templateId, reason: 'x' }, [{ type: 'extra_forbidden', loc: ['body', 'reason'] }]],
    ];
    for (const [body, detail] of cases) {
      const res = await bulkCancel(body, alice);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect((res.body as any).detail, JSON.stringify(body)).toEqual(detail.map((d) => expect.objectContaining(d)));
    }
    const none = await bulkCancel({}, alice);
    expect((none.body as any).detail).toEqual([
      {
        type: 'value_error',
        loc: ['body'],
        msg: 'Value error, at least one filter is needed (template_id, status, created_before, created_by)',
        input: {},
        ctx: { error: 'at least one filter is needed (template_id, status, created_before, created_by)' },
      },
    ]);
    const missing = await api('/api/crew-runs/cancel', { method: 'POST', token: alice });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toEqual([expect.objectContaining({ type: 'missing', loc: ['body'] })]);
    expect((await api('/api/crew-runs/cancel', { method: 'POST', body: { template_id: templateId } })).status).toBe(
      401,
    );
    expect(await statusOf(id)).toBe('pending');
    expect((await bulkCancel({ template_id: templateId }, alice)).body.cancelled).toBe(1);
  });

  it('routes /api/crew-runs/cancel apart from a run: GET reads a run id, other methods are 405', async () => {
    const get = await api('/api/crew-runs/cancel', { token: alice });
    expect(get.status).toBe(422);
    expect(get.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_short', loc: ['path', 'correlation_id'] }),
    ]);
    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      const res = await api('/api/crew-runs/cancel', { method, token: alice, body: {} });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, POST');
    }
    const single = await api(`/api/crew-runs/${randomUUID()}/cancel`, { method: 'POST', token: alice, body: {} });
    expect(single.status).toBe(404);
  });
});
