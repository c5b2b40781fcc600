import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { eventsOf } from '../event-feed.js';
import { type CrewEventSeen, kindsOf, runEvents } from '../crew-support.js';
import { storeUnqueuedRun } from '../../support/pending-run.js';
import { adminToken, api, approverToken, db, principalOf, slug, table, token } from '../helpers.js';

/**
 * Rerunning a crew run from a step (docs/crews.md, limits and deadlines): a new run
 * (`rerun_of`) with the old run's steps, the old values with the given ones over them, and
 * the outputs of the steps before `from_step` carried over (`step.completed` with
 * `data.reused`); the old run stays exactly as it was.
 */

let admin: string;
let userName: string;
let user: string;
let stranger: string;
let approver: string;

type Run = {
  correlation_id: string;
  template_id: string;
  status: string;
  values: Record<string, unknown>;
  created_by: string;
  event_count: number;
  progress: { completed_steps: number; total_steps: number; current_step: string | null };
  step_ids: string[];
  rerun_of: string | null;
  schedule_id: string | null;
};

/** Answers 500 for order 13 and 200 with the order otherwise: what it was asked, in order. */
const shop: { server?: Server; asked: string[] } = { asked: [] };
const shopUrl = () => `http://127.0.0.1:${(shop.server!.address() as AddressInfo).port}`;

const ORDER_STEPS = () => [
  { id: 'brief', kind: 'render', template: 'order {{order}} for {{customer}}' },
  { id: 'call', kind: 'http', method: 'GET', url: `${shopUrl()}/orders/{{order}}` },
  { id: 'reply', kind: 'render', template: '{{steps.brief.output}} / {{steps.call.output}}' },
];
const ORDER_VARIABLES = [
  { name: 'order', type: 'integer', required: true },
  { name: 'customer', type: 'string', default: 'ada' },
  { name: 'note', type: 'string' },
];

const template = async (body: { variables?: unknown[]; steps: unknown[] }) => {
  const res = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: { name: slug('rerun'), ...body },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
};
const start = async (templateId: string, values: Record<string, unknown> = {}, as = user) => {
  const res = await api(`/api/crew-templates/${templateId}/run`, { method: 'POST', token: as, body: { values } });
  expect(res.status, res.text).toBe(202);
  return res.body.correlation_id as string;
};
const rerun = (id: string, body: unknown, as = user) =>
  api(`/api/crew-runs/${id}/rerun`, { method: 'POST', token: as, body });
const events = (id: string): Promise<CrewEventSeen[]> => runEvents(id, admin);
const runOf = async (id: string) => (await api<Run>(`/api/crew-runs/${id}`, { token: admin })).body;

const TERMINAL = ['run.completed', 'run.failed', 'run.cancelled'];
const finished = (id: string) =>
  eventually(
    async () => {
      const all = await events(id);
      return all.some((e) => TERMINAL.includes(e.type)) ? all : undefined;
    },
    30_000,
    `run ${id} finished`,
  );
const statusOf = (id: string, status: string) =>
  eventually(async () => ((await runOf(id)).status === status ? true : undefined), 30_000, `run ${id} ${status}`);

/** A failed run of the order template (order 13: the shop answers 500 at step `call`). */
const failedOrderRun = async () => {
  const id = await start(await template({ variables: ORDER_VARIABLES, steps: ORDER_STEPS() }), { order: 13 });
  const all = await finished(id);
  expect(all.at(-1)!.type).toBe('run.failed');
  return id;
};

beforeAll(async () => {
  admin = await adminToken('rerun-admin');
  userName = slug('rerun-user');
  user = await token(userName);
  stranger = await token(slug('rerun-stranger'));
  approver = await approverToken(slug('rerun-approver'));
  shop.server = createServer((req, res) => {
    shop.asked.push(req.url!);
    const unlucky = req.url!.endsWith('/13');
    res.writeHead(unlucky ? 500 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(unlucky ? { error: 'unlucky' } : { shipped: true, path: req.url }));
  });
  await new Promise<void>((resolve) => shop.server!.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  shop.server?.closeAllConnections();
  await new Promise((resolve) => shop.server?.close(resolve));
});

describe('POST /api/crew-runs/{id}/rerun', () => {
  it('reruns a failed run from its failed step with a corrected value: earlier outputs reused, the old run untouched', async () => {
    const old = await failedOrderRun();
    const oldEvents = await events(old);
    const oldRun = await runOf(old);
    expect(kindsOf(oldEvents)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'brief'],
      ['step.completed', 'brief'],
      ['step.started', 'call'],
      ['step.failed', 'call'],
      ['run.failed', null],
    ]);

    const res = await rerun(old, { from_step: 'call', values: { order: '14' } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ correlation_id: expect.any(String), status: 'pending', message: expect.any(String) });
    const id = res.body.correlation_id as string;
    expect(id).toHaveLength(36);
    expect(id).not.toBe(old);

    const all = await finished(id);
    expect(kindsOf(all)).toEqual([
      ['run.queued', null],
      ['step.completed', 'brief'],
      ['run.started', null],
      ['step.started', 'call'],
      ['step.completed', 'call'],
      ['step.started', 'reply'],
      ['step.completed', 'reply'],
      ['run.completed', null],
    ]);
    expect(all.map((e) => e.index)).toEqual(all.map((_, i) => i));
    expect(all[0]!.data).toEqual({
      template_id: oldRun.template_id,
      // lax as E2: "14" is 14; the rest are the old run's values
      values: { order: 14, customer: 'ada', note: null },
      rerun_of: old,
      from_step: 'call',
    });
    // carried over, not executed: the old run's output (order 13), marked reused
    expect(all[1]!.data).toEqual({ output: 'order 13 for ada', reused: true });
    const call = { status: 200, body: { shipped: true, path: '/orders/14' } };
    expect(all.at(-1)!.data!.outputs).toEqual({
      brief: 'order 13 for ada',
      call,
      reply: `order 13 for ada / ${JSON.stringify(call)}`,
    });
    expect(shop.asked.filter((p) => p === '/orders/14')).toHaveLength(1);

    const run = await runOf(id);
    expect(run).toMatchObject({
      status: 'succeeded',
      values: { order: 14, customer: 'ada', note: null },
      created_by: userName,
      event_count: all.length,
      progress: { completed_steps: 3, total_steps: 3, current_step: null },
      step_ids: ['brief', 'call', 'reply'],
      rerun_of: old,
      schedule_id: null,
    });
    // the old run: the same events and the same answer as before
    expect(await events(old)).toEqual(oldEvents);
    expect(await runOf(old)).toEqual(oldRun);
    expect(oldRun).toMatchObject({ rerun_of: null, schedule_id: null, step_ids: ['brief', 'call', 'reply'] });
  });

  it('without values takes the old ones; from the first step nothing is carried; a rerun can be rerun', async () => {
    const templateId = await template({
      variables: [{ name: 'who', type: 'string', default: 'world' }],
      steps: [
        { id: 'a', kind: 'render', template: 'A {{who}}' },
        { id: 'b', kind: 'render', template: '{{steps.a.output}} B' },
      ],
    });
    const old = await start(templateId, { who: 'ada' });
    await finished(old);

    const again = await rerun(old, { from_step: 'a' });
    expect(again.status, again.text).toBe(202);
    const whole = await finished(again.body.correlation_id);
    expect(kindsOf(whole)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'a'],
      ['step.completed', 'a'],
      ['step.started', 'b'],
      ['step.completed', 'b'],
      ['run.completed', null],
    ]);
    expect(whole.at(-1)!.data!.outputs).toEqual({ a: 'A ada', b: 'A ada B' });
    expect(whole.some((e) => e.data?.reused)).toBe(false);

    // a rerun of the rerun, from b with another value: a's output is the first run's, carried twice
    const second = await rerun(again.body.correlation_id, { from_step: 'b', values: { who: 'bob' } });
    expect(second.status, second.text).toBe(202);
    const last = await finished(second.body.correlation_id);
    expect(last[1]).toMatchObject({ type: 'step.completed', step_id: 'a', data: { output: 'A ada', reused: true } });
    expect(last.at(-1)!.data!.outputs).toEqual({ a: 'A ada', b: 'A ada B' });
    expect(await runOf(second.body.correlation_id)).toMatchObject({
      values: { who: 'bob' },
      rerun_of: again.body.correlation_id,
    });
  });

  it('reruns a cancelled run from the step it was cancelled in, and any finished status may be rerun', async () => {
    const templateId = await template({
      steps: [
        { id: 'a', kind: 'render', template: 'A' },
        { id: 'pause', kind: 'wait', seconds: 30 },
        { id: 'b', kind: 'render', template: '{{steps.a.output}}B' },
      ],
    });
    const old = await start(templateId);
    await eventually(
      async () => ((await events(old)).some((e) => e.step_id === 'pause') ? true : undefined),
      20_000,
      'the wait under way',
    );
    expect((await api(`/api/crew-runs/${old}/cancel`, { method: 'POST', token: user, body: {} })).status).toBe(200);
    await statusOf(old, 'cancelled');
    // `b` never started: rerunning from it would need the wait's output
    const late = await rerun(old, { from_step: 'b' });
    expect(late.status, late.text).toBe(409);
    expect(late.body.error).toMatch(/pause never completed/);

    const res = await rerun(old, { from_step: 'pause' });
    expect(res.status, res.text).toBe(202);
    const id = res.body.correlation_id as string;
    await eventually(
      async () =>
        (await events(id)).some((e) => e.type === 'step.started' && e.step_id === 'pause') ? true : undefined,
      20_000,
      'the rerun in its wait',
    );
    expect((await events(id))[1]).toMatchObject({ type: 'step.completed', step_id: 'a', data: { reused: true } });
    // unfinished: 409, and nothing is made
    const busy = await rerun(id, { from_step: 'a' });
    expect(busy.status, busy.text).toBe(409);
    expect(busy.body).toEqual({ error: expect.stringMatching(/is running: only a finished run/), code: 409 });
    expect((await api(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: user, body: {} })).status).toBe(200);
  });

  it('answers 409 for an unfinished run and for a step after the failed one, 404 for an unknown run', async () => {
    const pending = await start(await template({ steps: [{ id: 'long', kind: 'wait', seconds: 60 }] }));
    const res = await rerun(pending, { from_step: 'long' });
    expect(res.status, res.text).toBe(409);
    expect((await api(`/api/crew-runs/${pending}/cancel`, { method: 'POST', token: user, body: {} })).status).toBe(200);

    const failed = await failedOrderRun();
    const after = await rerun(failed, { from_step: 'reply' });
    expect(after.status, after.text).toBe(409);
    expect(after.body.error).toMatch(/Step call never completed/);
    const unknown = await rerun('00000000-0000-4000-8000-000000000000', { from_step: 'a' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: expect.any(String), code: 404 });
  });

  it('is the starter’s or an admin’s: the new run is the caller’s', async () => {
    const old = await failedOrderRun();
    expect((await api(`/api/crew-runs/${old}/rerun`, { method: 'POST', body: { from_step: 'call' } })).status).toBe(
      401,
    );
    const refused = await rerun(old, { from_step: 'call' }, stranger);
    expect(refused.status, refused.text).toBe(403);
    // an approver may read no run that never waited for them, nor rerun it
    expect((await rerun(old, { from_step: 'call' }, approver)).status).toBe(403);

    const byAdmin = await rerun(old, { from_step: 'call', values: { order: 15 } }, admin);
    expect(byAdmin.status, byAdmin.text).toBe(202);
    const id = byAdmin.body.correlation_id as string;
    await finished(id);
    expect(await runOf(id)).toMatchObject({ created_by: 'rerun-admin', rerun_of: old, status: 'succeeded' });
    // the admin's run: not in the starter's own list, and not the starter's to read
    expect((await api(`/api/crew-runs/${id}`, { token: user })).status).toBe(403);
  });

  it('validates the request and the values as E2 does, every problem in one answer', async () => {
    const old = await failedOrderRun();
    const cases: [unknown, { type: string; loc: (string | number)[] }[]][] = [
      [{}, [{ type: 'missing', loc: ['body', 'from_step'] }]],
      [{ from_step: 'Not A Step!' }, [{ type: 'string_pattern_mismatch', loc: ['body', 'from_step'] }]],
      [{ from_step: 'call', extra: 1 }, [{ type: 'extra_forbidden', loc: ['body', 'extra'] }]],
      [{ from_step: 'call', values: [] }, [{ type: 'dict_type', loc: ['body', 'values'] }]],
      [{ from_step: 'nope' }, [{ type: 'value_error', loc: ['body', 'from_step'] }]],
      [
        { from_step: 'call', values: { stranger: 1 } },
        [{ type: 'extra_forbidden', loc: ['body', 'values', 'stranger'] }],
      ],
      [{ from_step: 'call', values: { order: 'ten' } }, [{ type: 'int_parsing', loc: ['body', 'values', 'order'] }]],
      [
        { from_step: 'nope', values: { order: 1.5, customer: 7 } },
        [
          { type: 'value_error', loc: ['body', 'from_step'] },
          { type: 'int_from_float', loc: ['body', 'values', 'order'] },
          { type: 'string_type', loc: ['body', 'values', 'customer'] },
        ],
      ],
    ];
    for (const [body, detail] of cases) {
      const res = await rerun(old, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail, JSON.stringify(body)).toEqual(detail.map((d) => expect.objectContaining(d)));
    }
    const unknownStep = await rerun(old, { from_step: 'nope' });
    expect(unknownStep.body.detail[0]).toEqual({
      type: 'value_error',
      loc: ['body', 'from_step'],
      msg: `Value error, crew run ${old} has no step 'nope' (its steps: brief, call, reply)`,
      input: 'nope',
      ctx: { error: `crew run ${old} has no step 'nope' (its steps: brief, call, reply)` },
    });
    const bad = await rerun('short', { from_step: 'call' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_short', loc: ['path', 'correlation_id'] }),
    ]);
    // nothing was made: the user's runs are the two of failedOrderRun (this test's and none other)
    expect((await runOf(old)).status).toBe('failed');
  });

  it('uses the old run’s steps and variables even after its template changed and was deleted', async () => {
    const templateId = await template({ variables: ORDER_VARIABLES, steps: ORDER_STEPS() });
    const old = await start(templateId, { order: 13 });
    await finished(old);
    const replaced = await api(`/api/crew-templates/${templateId}`, {
      method: 'PUT',
      token: admin,
      body: {
        name: 'replaced',
        variables: [{ name: 'other', type: 'boolean', required: true }],
        steps: [{ id: 'other', kind: 'render', template: '{{other}}' }],
      },
    });
    expect(replaced.status, replaced.text).toBe(200);
    // the values are checked against the variables the run had (not the template's `other`)
    const wrong = await rerun(old, { from_step: 'call', values: { other: true } });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail).toEqual([
      expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'values', 'other'] }),
    ]);
    expect((await api(`/api/crew-templates/${templateId}`, { method: 'DELETE', token: admin })).status).toBe(204);

    const res = await rerun(old, { from_step: 'call', values: { order: 16 } });
    expect(res.status, res.text).toBe(202);
    const all = await finished(res.body.correlation_id);
    expect(all.at(-1)!.type).toBe('run.completed');
    expect(Object.keys(all.at(-1)!.data!.outputs)).toEqual(['brief', 'call', 'reply']);
    expect(await runOf(res.body.correlation_id)).toMatchObject({ template_id: templateId, rerun_of: old });
  });

  it('reruns a run stored before runs kept their variables, whose template is gone, only with its own values', async () => {
    const old = await storeUnqueuedRun(
      db(),
      { crewRuns: table('crewRuns'), runLog: table('runLog') },
      { name: userName, principal: principalOf(userName) },
      [{ id: 'only', kind: 'render', template: 'done' }],
    );
    expect((await api(`/api/crew-runs/${old}/cancel`, { method: 'POST', token: user, body: {} })).status).toBe(200);
    const withValues = await rerun(old, { from_step: 'only', values: { who: 'x' } });
    expect(withValues.status, withValues.text).toBe(409);
    expect(withValues.body.error).toMatch(/its values cannot be checked/);
    const res = await rerun(old, { from_step: 'only' });
    expect(res.status, res.text).toBe(202);
    expect((await finished(res.body.correlation_id)).at(-1)!.data!.outputs).toEqual({ only: 'done' });
  });

  it('carries an approval over only to its starter with the same values; others must ask again', async () => {
    const templateId = await template({
      variables: [{ name: 'target', type: 'string', default: 'staging' }],
      steps: [
        { id: 'gate', kind: 'approval', prompt: 'Deploy to {{target}}?' },
        { id: 'deploy', kind: 'render', template: 'deployed to {{target}}' },
      ],
    });
    const old = await start(templateId);
    await statusOf(old, 'waiting');
    const decided = await api(`/api/crew-runs/${old}/steps/gate/decision`, {
      method: 'POST',
      token: approver,
      body: { approve: true, notes: 'ok for staging' },
    });
    expect(decided.status, decided.text).toBe(200);
    await statusOf(old, 'succeeded');

    // other values, or another caller: the decision does not carry over
    const other = await rerun(old, { from_step: 'deploy', values: { target: 'production' } });
    expect(other.status, other.text).toBe(409);
    expect(other.body.error).toMatch(/Step gate is an approval decided in crew run/);
    expect((await rerun(old, { from_step: 'deploy' }, admin)).status).toBe(409);

    // the starter, the same values: what was approved runs again
    const same = await rerun(old, { from_step: 'deploy', values: { target: 'staging' } });
    expect(same.status, same.text).toBe(202);
    const all = await finished(same.body.correlation_id);
    expect(all[1]).toMatchObject({
      type: 'step.completed',
      step_id: 'gate',
      data: { output: { approved: true, notes: 'ok for staging' }, reused: true },
    });
    expect(all.at(-1)!.data!.outputs.deploy).toBe('deployed to staging');

    // from the approval itself, with other values: a person is asked again
    const asked = await rerun(old, { from_step: 'gate', values: { target: 'production' } });
    expect(asked.status, asked.text).toBe(202);
    await statusOf(asked.body.correlation_id, 'waiting');
    const waiting = (await events(asked.body.correlation_id)).at(-1)!;
    expect(waiting).toMatchObject({ type: 'step.waiting', data: { prompt: 'Deploy to production?' } });
    expect(
      (await api(`/api/crew-runs/${asked.body.correlation_id}/cancel`, { method: 'POST', token: user, body: {} }))
        .status,
    ).toBe(200);
  });

  it('takes an Idempotency-Key: a repeated rerun answers the same and makes no second run', async () => {
    const old = await failedOrderRun();
    const headers = { 'idempotency-key': slug('rerun-key') };
    const send = () =>
      api(`/api/crew-runs/${old}/rerun`, {
        method: 'POST',
        token: user,
        body: { from_step: 'call', values: { order: 18 } },
        headers,
      });
    const first = await send();
    expect(first.status, first.text).toBe(202);
    const again = await send();
    expect(again.status, again.text).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const list = await api<Run[]>('/api/crew-runs?limit=1000', { token: user });
    expect(list.body.filter((r) => r.rerun_of === old).map((r) => r.correlation_id)).toEqual([
      first.body.correlation_id,
    ]);
  });

  it('shows rerun_of in the run list, and the new run’s queued domain event carries it', async () => {
    const old = await failedOrderRun();
    const res = await rerun(old, { from_step: 'brief', values: { order: 17 } });
    expect(res.status, res.text).toBe(202);
    const id = res.body.correlation_id as string;
    await finished(id);
    const list = await api<Run[]>('/api/crew-runs?limit=1000', { token: user });
    expect(list.status).toBe(200);
    expect(list.body.find((r) => r.correlation_id === id)).toMatchObject({ rerun_of: old, schedule_id: null });
    expect(list.body.find((r) => r.correlation_id === old)).toMatchObject({ rerun_of: null });
    const [queued] = await eventsOf(`crew-runs/${id}`, 1, admin);
    expect(queued).toMatchObject({ type: 'dpm.crew.run.queued', data: { rerun_of: old, status: 'pending' } });
    expect(queued!.actor).toBe(userName);
  });
});
