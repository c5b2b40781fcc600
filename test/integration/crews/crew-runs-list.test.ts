import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../../functions/crews/runs/run-service.js';
import type { TemplateService } from '../../../functions/crews/templates/template-service.js';
import { DynamoRunStore } from '../../../functions/crews/runs/run-store.js';
import type { Caller } from '../../../shared/auth/caller.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { finishedRun, listedRuns, startRun } from '../crew-support.js';
import { storeWaitingRun } from '../../support/pending-run.js';
import { adminToken, api, db, principalOf, slug, table, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * Crew run listing and progress (docs/crews.md): `GET /api/crew-runs` answers the caller's own
 * runs (an admin's: every run), newest first, filtered by status and template, paged by
 * cursor; every run answer carries `progress`.
 */

let admin: string;
let alice: string;
let aliceName: string;
let bob: string;
let threeSteps: string;
let other: string;
let failing: string;

type Run = {
  correlation_id: string;
  template_id: string;
  status: string;
  created_at: string;
  progress: { completed_steps: number; total_steps: number; current_step: string | null };
};

async function template(name: string, steps: unknown[]): Promise<string> {
  const res = await api('/api/crew-templates', { method: 'POST', token: admin, body: { name, steps } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

let aliceRuns: string[];
let bobRun: string;
let otherRun: string;

beforeAll(async () => {
  admin = await adminToken('runs-list-admin');
  aliceName = slug('runs-alice');
  alice = await token(aliceName);
  bob = await token(slug('runs-bob'));
  threeSteps = await template('runs-list-three', [
    { id: 'a', kind: 'render', template: 'one' },
    { id: 'b', kind: 'render', template: 'two' },
    { id: 'c', kind: 'render', template: 'three' },
  ]);
  other = await template('runs-list-other', [{ id: 'only', kind: 'render', template: 'x' }]);
  failing = await template('runs-list-failing', [
    { id: 'first', kind: 'render', template: 'fine' },
    { id: 'broken', kind: 'http', method: 'GET', url: 'http://not-allowed.invalid/x' },
    { id: 'never', kind: 'render', template: 'unreached' },
  ]);
  aliceRuns = [];
  for (let i = 0; i < 3; i++) aliceRuns.push(await startRun(threeSteps, alice));
  otherRun = await startRun(other, alice);
  bobRun = await startRun(threeSteps, bob);
  for (const id of [...aliceRuns, otherRun]) await finishedRun<Run>(id, alice);
  await finishedRun<Run>(bobRun, bob);
});

describe('GET /api/crew-runs', () => {
  it("answers a user's own runs only, newest first", async () => {
    const runs = await listedRuns<Run>('limit=1000', alice);
    expect(runs.map((r) => r.correlation_id)).toEqual([otherRun, ...[...aliceRuns].reverse()]);
    const times = runs.map((r) => r.created_at);
    expect(times).toEqual([...times].sort().reverse());
    expect(runs.some((r) => r.correlation_id === bobRun)).toBe(false);
    expect((await listedRuns<Run>('limit=1000', bob)).map((r) => r.correlation_id)).toEqual([bobRun]);
  });

  it('answers an admin every run, each as GET answers it', async () => {
    const runs = await listedRuns<Run>('limit=1000', admin);
    const ids = runs.map((r) => r.correlation_id);
    for (const id of [...aliceRuns, otherRun, bobRun]) expect(ids).toContain(id);
    const one = await api(`/api/crew-runs/${bobRun}`, { token: admin });
    expect(runs.find((r) => r.correlation_id === bobRun)).toEqual(one.body);
  });

  it('filters by template and by status', async () => {
    expect((await listedRuns<Run>(`template_id=${threeSteps}`, alice)).map((r) => r.correlation_id)).toEqual(
      [...aliceRuns].reverse(),
    );
    expect(
      (await listedRuns<Run>(`template_id=${other}&status=succeeded`, alice)).map((r) => r.correlation_id),
    ).toEqual([otherRun]);
    expect(await listedRuns<Run>(`template_id=${other}&status=failed`, alice)).toEqual([]);
    const pending = await listedRuns<Run>('status=pending', admin);
    for (const r of pending) expect(r.status).toBe('pending');
  });

  it('pages by X-Next-Cursor without gaps or repeats, also when a filter leaves most runs out', async () => {
    const whole = (await listedRuns<Run>('limit=1000', alice)).map((r) => r.correlation_id);
    const paged: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Awaited<ReturnType<typeof api<Run[]>>> = await api<Run[]>(
        `/api/crew-runs?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: alice },
      );
      expect(res.status).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(1);
      paged.push(...res.body.map((r) => r.correlation_id));
      cursor = res.headers.get('x-next-cursor');
      pages++;
    } while (cursor && pages < 20);
    expect(paged).toEqual(whole);
    // one run of hers among many of every user: still a full page, and no cursor after it
    const only = await api<Run[]>(`/api/crew-runs?limit=1&template_id=${other}`, { token: alice });
    expect(only.body.map((r) => r.correlation_id)).toEqual([otherRun]);
    expect(only.headers.get('x-next-cursor')).toBeNull();
  });

  it('refuses bad filters and cursors with the field at fault', async () => {
    const cases: [string, (string | number)[], string][] = [
      ['status=paused', ['query', 'status'], 'enum'],
      ['limit=0', ['query', 'limit'], 'greater_than_equal'],
      ['limit=1001', ['query', 'limit'], 'less_than_equal'],
      [`template_id=${'x'.repeat(65)}`, ['query', 'template_id'], 'string_too_long'],
      ['template_id=', ['query', 'template_id'], 'string_too_short'],
      ['cursor=nope', ['query', 'cursor'], 'value_error'],
    ];
    for (const [query, loc, type] of cases) {
      const res = await api(`/api/crew-runs?${query}`, { token: alice });
      expect(res.status, query).toBe(422);
      expect(res.body.detail[0], query).toMatchObject({ loc, type });
    }
  });

  it('needs credentials', async () => {
    expect((await api('/api/crew-runs')).status).toBe(401);
  });
});

describe('progress', () => {
  it('counts the completed steps; none is current once the run succeeded', async () => {
    const run = await api<Run>(`/api/crew-runs/${aliceRuns[0]}`, { token: alice });
    expect(run.body.progress).toEqual({ completed_steps: 3, total_steps: 3, current_step: null });
  });

  it('says at which step a failed run stopped', async () => {
    const id = await startRun(failing, alice);
    const run = await finishedRun<Run>(id, alice);
    expect(run.status).toBe('failed');
    expect(run.progress).toEqual({ completed_steps: 1, total_steps: 3, current_step: 'broken' });
  });

  it('is there from the start, before the worker takes the run', async () => {
    const res = await api(`/api/crew-templates/${threeSteps}/run`, {
      method: 'POST',
      token: bob,
      body: { values: {} },
    });
    const run = await api<Run>(`/api/crew-runs/${res.body.correlation_id}`, { token: bob });
    expect(run.body.progress.total_steps).toBe(3);
    expect(run.body.progress.completed_steps).toBeLessThanOrEqual(3);
    await finishedRun<Run>(res.body.correlation_id, bob);
  });
});

/**
 * What a list costs (issue 25, finding 3): the items DynamoDB reads for it (ScannedCount),
 * counted on a store of the test's own, built as the crews composition builds it, against
 * the suite's DynamoDB; the answers themselves come over HTTP.
 */
describe('the items a list reads', () => {
  const OTHERS = 1000;
  const seeded: string[] = [];
  /** Every Query the counted store sent: its index and how many items DynamoDB read for it. */
  let queries: { index: string | undefined; scanned: number }[] = [];
  let service: RunService;

  const caller = (name: string, roles: string[] = []): Caller => ({
    principal: principalOf(name),
    name,
    roles: new Set(roles),
    via: 'bearer',
  });
  const scanned = () => queries.reduce((sum, q) => sum + q.scanned, 0);

  beforeAll(async () => {
    const counted = DynamoDBDocumentClient.from(
      new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') })),
    );
    counted.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'QueryCommand') {
          const input = args.input as { IndexName?: string };
          const output = out.output as { ScannedCount?: number };
          queries.push({ index: input.IndexName, scanned: output.ScannedCount ?? 0 });
        }
        return out;
      },
      { step: 'initialize', name: 'scannedCounter' },
    );
    service = new RunService(
      {} as TemplateService,
      new DynamoRunStore(counted, table('crewRuns'), table('runLog')),
      { send: async () => undefined },
      { eventsTtlDays: 1 },
    );
    // 1,000 finished runs of 100 other users, newer than alice's, stored as the store stores
    // them (without the change stamp: they make no domain events).
    const now = Date.now();
    const items = Array.from({ length: OTHERS }, (_, i) => {
      const id = randomUUID();
      const at = new Date(now + i).toISOString();
      seeded.push(id);
      return {
        correlation_id: id,
        template_id: threeSteps,
        status: 'succeeded',
        values_json: '{}',
        created_by: `runs-other-${i % 100}`,
        created_by_principal: principalOf(`runs-other-${i % 100}`),
        created_at: at,
        started_at: at,
        finished_at: at,
        event_count: 3,
        error: null,
        steps: [],
        completed_steps: 0,
        current_step: null,
        expires_at: Math.floor(now / 1000) + 3600,
        list_pk: 'run',
        created_key: `${at}#${id}`,
      };
    });
    for (let i = 0; i < items.length; i += 25) {
      await db().send(
        new BatchWriteCommand({
          RequestItems: { [table('crewRuns')]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
        }),
      );
    }
  }, 60_000);

  afterAll(async () => {
    for (let i = 0; i < seeded.length; i += 25) {
      await db().send(
        new BatchWriteCommand({
          RequestItems: {
            [table('crewRuns')]: seeded
              .slice(i, i + 25)
              .map((id) => ({ DeleteRequest: { Key: { correlation_id: id } } })),
          },
        }),
      );
    }
  }, 60_000);

  it("reads a user's own runs only, however many runs others have", async () => {
    const own = await listedRuns<Run>('limit=1000', alice);
    expect(own.length).toBeGreaterThanOrEqual(4);
    queries = [];
    const page = await service.listRuns({}, 1000, undefined, caller(aliceName));
    expect(page.items.map((r) => r.correlation_id)).toEqual(own.map((r) => r.correlation_id));
    // her runs, and at most one more to know whether a page follows
    expect(scanned()).toBeLessThanOrEqual(own.length + 1);

    // a short page reads one run ahead, not the others' runs between hers
    queries = [];
    const first = await service.listRuns({}, 2, undefined, caller(aliceName));
    expect(first.items).toHaveLength(2);
    expect(scanned()).toBeLessThanOrEqual(3);

    // a template filter within her runs
    queries = [];
    const ofTemplate = await service.listRuns({ templateId: threeSteps }, 1000, undefined, caller(aliceName));
    expect(ofTemplate.items.map((r) => r.correlation_id)).toEqual([...aliceRuns].reverse());
    expect(scanned()).toBeLessThanOrEqual(own.length + 1);
  });

  it("reads only unfinished runs for an admin's list of an unfinished status", async () => {
    const waitingName = slug('runs-waiting');
    const waiting = await storeWaitingRun(
      db(),
      { crewRuns: table('crewRuns'), runLog: table('runLog') },
      { name: waitingName, principal: principalOf(waitingName) },
    );
    const listed = await listedRuns<Run>('status=waiting&limit=1000', admin);
    expect(listed.map((r) => r.correlation_id)).toContain(waiting);
    for (const r of listed) expect(r.status).toBe('waiting');

    queries = [];
    const page = await service.listRuns({ status: 'waiting' }, 1000, undefined, caller('runs-admin', ['admin']));
    expect(page.items.map((r) => r.correlation_id)).toContain(waiting);
    // Only the sparse index of unfinished runs: none of the 1,000 finished runs is read.
    expect(queries.map((q) => q.index)).toEqual(queries.map(() => 'open_runs'));
    expect(scanned()).toBeLessThan(OTHERS);
    await api(`/api/crew-runs/${waiting}/cancel`, { method: 'POST', token: admin, body: {} });
  });

  it("lists a user's own runs over HTTP with the others' runs there", async () => {
    const own = (await listedRuns<Run>('limit=1000', alice)).map((r) => r.correlation_id);
    expect(own).toEqual(expect.arrayContaining([...aliceRuns, otherRun]));
    const others = new Set(seeded);
    expect(own.filter((id) => others.has(id))).toEqual([]);
    const admins = await listedRuns<Run>(`template_id=${threeSteps}&status=succeeded&limit=1000`, admin);
    expect(admins.map((r) => r.correlation_id)).toEqual(expect.arrayContaining([...aliceRuns, seeded[0]]));
  });
});
