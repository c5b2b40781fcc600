import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { eventsOf } from '../event-feed.js';
import {
  crewTemplate,
  kindsOf as typesOf,
  runEvents,
  seedApprovalExpiry,
  startRun,
  toCrewWorker,
} from '../crew-support.js';
import { adminPsk, adminToken, api, approverToken, slug, token } from '../helpers.js';

/**
 * The `approval` step (docs/crews.md): the run waits (`waiting`, `step.waiting`) holding no
 * worker; a person with the step's role and a Bearer session, never the run's starter
 * (compared by principal), approves or rejects; no decision by `expires_at` fails it.
 *
 * The contract's shortest expiry is a minute: no test waits one out. The expiry is moved
 * instead (seeded in the run log and the run), to a few seconds ahead for the one case that
 * lets the platform's own timer fail the step on time, and to the past for the others.
 */

let admin: string;
let starterName: string;
let starter: string;
let approverName: string;
let approver: string;
let secondApprover: string;
let plainUser: string;
let adminOnly: string;

type Event = { index: number; type: string; step_id?: string; timestamp: string; data?: Record<string, any> };
type Run = { status: string; error: string | null; event_count: number; progress: Record<string, unknown> };

const template = (steps: unknown[]) => crewTemplate(admin, steps, 'approval');

const start = (templateId: string, as = starter) => startRun(templateId, as);

const events = (id: string): Promise<Event[]> => runEvents(id, admin);
const runOf = async (id: string) => (await api<Run>(`/api/crew-runs/${id}`, { token: admin })).body;

/** Long-polls until the run's last event is of `type`; answers every event. */
const until = (id: string, type: string, ms = 20_000) =>
  eventually(
    async () => {
      const all = await events(id);
      if (all.at(-1)?.type === type) return all;
      await api(`/api/events/${id}?start=${all.length}&wait=2`, { token: admin });
      return undefined;
    },
    ms,
    `${type} in run ${id}`,
  );

const decide = (id: string, stepId: string, body: unknown, auth: { token?: string; psk?: string }) =>
  api<Run>(`/api/crew-runs/${id}/steps/${stepId}/decision`, { method: 'POST', ...auth, body });

const SIGN_OFF = [
  { id: 'draft', kind: 'render', template: 'release 42' },
  { id: 'sign_off', kind: 'approval', prompt: 'Ship {{steps.draft.output}}?' },
  { id: 'notice', kind: 'render', template: 'shipped after {{steps.sign_off.output}}' },
];

beforeAll(async () => {
  admin = await adminToken('approval-admin');
  starterName = slug('starter');
  // the starter has the role too: the four-eyes rule still refuses them
  starter = await approverToken(starterName);
  approverName = slug('approver');
  approver = await approverToken(approverName);
  secondApprover = await approverToken(slug('approver2'));
  plainUser = await token(slug('plain'));
  adminOnly = await adminToken(slug('admin-only'));
});

/** The shortest expiry the contract allows: a minute (the tests move it, seedApprovalExpiry). */
const MINUTE_GATE = [{ id: 'gate', kind: 'approval', prompt: 'nobody answers', timeout_seconds: 60 }];

describe('approval steps', () => {
  it('waits for a second person: the starter, a PSK, a caller without the role are refused; an approver continues the run', async () => {
    const id = await start(await template(SIGN_OFF));
    const waiting = await until(id, 'step.waiting');
    expect(typesOf(waiting)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'draft'],
      ['step.completed', 'draft'],
      ['step.started', 'sign_off'],
      ['step.waiting', 'sign_off'],
    ]);
    const data = waiting.at(-1)!.data!;
    // Beside the prompt, what the next step will send once approved (its own output not known yet).
    expect(data).toEqual({
      prompt: 'Ship release 42?',
      role: 'approver',
      expires_at: expect.any(String),
      next: { step_id: 'notice', kind: 'render', input: { text: 'shipped after {{steps.sign_off.output}}' } },
    });
    const expiresIn = Date.parse(data.expires_at) - Date.parse(waiting.at(-1)!.timestamp);
    expect(Math.abs(expiresIn - 86_400_000)).toBeLessThan(1_000);
    expect(await runOf(id)).toMatchObject({
      status: 'waiting',
      progress: { completed_steps: 1, total_steps: 3, current_step: 'sign_off' },
    });

    const refused: [string, { token?: string; psk?: string }][] = [
      ['the starter', { token: starter }],
      ['a PSK (admin)', { psk: adminPsk() }],
      ['a user without the role', { token: plainUser }],
      ['an admin without the role', { token: adminOnly }],
    ];
    for (const [who, auth] of refused) {
      const res = await decide(id, 'sign_off', { approve: true }, auth);
      expect(res.status, who).toBe(403);
      expect(res.body as unknown).toEqual({ error: expect.any(String), code: 403 });
    }
    expect((await decide(id, 'sign_off', { approve: true }, {})).status).toBe(401);
    expect((await runOf(id)).status).toBe('waiting');
    expect((await events(id)).length).toBe(waiting.length);

    const res = await decide(id, 'sign_off', { approve: true, notes: 'checked the changelog' }, { token: approver });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'running', progress: { completed_steps: 2, current_step: null } });
    const all = await until(id, 'run.completed');
    expect(typesOf(all.slice(waiting.length))).toEqual([
      ['step.completed', 'sign_off'],
      ['step.started', 'notice'],
      ['step.completed', 'notice'],
      ['run.completed', null],
    ]);
    const output = { approved: true, by: expect.stringContaining(approverName), notes: 'checked the changelog' };
    expect(all[waiting.length]!.data).toEqual({ output });
    expect(all.at(-1)!.data!.outputs).toEqual({
      draft: 'release 42',
      sign_off: output,
      notice: expect.stringMatching(
        /^shipped after \{"approved":true,"by":".*approver.*","notes":"checked the changelog"\}$/,
      ),
    });
    expect(all.map((e) => e.index)).toEqual(all.map((_, i) => i));
    // decided once: a second decision is 409
    expect((await decide(id, 'sign_off', { approve: false }, { token: secondApprover })).status).toBe(409);
  });

  it('a rejection fails the step and the run at once', async () => {
    const id = await start(await template(SIGN_OFF));
    const waiting = await until(id, 'step.waiting');
    const res = await decide(id, 'sign_off', { approve: false, notes: 'not this week' }, { token: approver });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^rejected by .*: not this week$/),
    });
    const all = await events(id);
    expect(typesOf(all.slice(waiting.length))).toEqual([
      ['step.failed', 'sign_off'],
      ['run.failed', null],
    ]);
    expect(all.at(-2)!.data).toEqual({ error: res.body.error });
    expect(all.at(-2)!.data!.error).toContain(approverName);
    expect((await decide(id, 'sign_off', { approve: true }, { token: approver })).status).toBe(409);
  });

  it('holds no worker while waiting: other runs go on', async () => {
    const gate = await template([{ id: 'gate', kind: 'approval', prompt: 'later' }]);
    const waiting = await Promise.all(Array.from({ length: 6 }, () => start(gate)));
    await Promise.all(waiting.map((id) => until(id, 'step.waiting')));
    const quick = await start(await template([{ id: 'a', kind: 'render', template: 'x' }]));
    await until(quick, 'run.completed', 10_000);
    for (const id of waiting)
      expect((await api(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: starter, body: {} })).status).toBe(200);
  });

  it('of two deciders exactly one wins', async () => {
    const id = await start(await template(SIGN_OFF));
    await until(id, 'step.waiting');
    const answers = await Promise.all([
      decide(id, 'sign_off', { approve: true }, { token: approver }),
      decide(id, 'sign_off', { approve: false }, { token: secondApprover }),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const all = await eventually(
      async () => {
        const got = await events(id);
        return ['run.completed', 'run.failed'].includes(got.at(-1)!.type) ? got : undefined;
      },
      20_000,
      'the run finished',
    );
    expect(all.filter((e) => e.step_id === 'sign_off' && /step\.(completed|failed)/.test(e.type))).toHaveLength(1);
  });

  it('a cancel ends a waiting run; a decision after it is 409', async () => {
    const id = await start(await template(SIGN_OFF));
    const waiting = await until(id, 'step.waiting');
    const res = await api<Run>(`/api/crew-runs/${id}/cancel`, { method: 'POST', token: starter, body: {} });
    expect(res.status).toBe(200);
    expect((await decide(id, 'sign_off', { approve: true }, { token: approver })).status).toBe(409);
    expect(typesOf((await events(id)).slice(waiting.length))).toEqual([['run.cancelled', null]]);
  });

  it('checks the role the step names', async () => {
    const id = await start(
      await template([{ id: 'pay', kind: 'approval', prompt: 'Pay?', role: 'finance', timeout_seconds: 3600 }]),
    );
    const waiting = await until(id, 'step.waiting');
    expect(waiting.at(-1)!.data).toMatchObject({ role: 'finance' });
    expect((await decide(id, 'pay', { approve: true }, { token: approver })).status).toBe(403);
    const finance = await token(slug('finance'), { roles: ['finance'] });
    expect((await decide(id, 'pay', { approve: true }, { token: finance })).status).toBe(200);
    await until(id, 'run.completed');
  });

  it('answers 404 for an unknown run or step, 409 for a step that is not waiting, 422 for a bad request', async () => {
    const id = await start(await template(SIGN_OFF));
    await until(id, 'step.waiting');
    expect(
      (await decide('00000000-0000-4000-8000-000000000000', 'sign_off', { approve: true }, { token: approver })).status,
    ).toBe(404);
    expect((await decide(id, 'nope', { approve: true }, { token: approver })).status).toBe(404);
    expect((await decide(id, 'draft', { approve: true }, { token: approver })).status).toBe(409);
    const cases: [string, unknown, (string | number)[], string][] = [
      ['sign_off', {}, ['body', 'approve'], 'missing'],
      ['sign_off', { approve: 'perhaps' }, ['body', 'approve'], 'bool_parsing'],
      ['sign_off', { approve: true, notes: 'x'.repeat(2001) }, ['body', 'notes'], 'string_too_long'],
      ['sign_off', { approve: true, by: 'me' }, ['body', 'by'], 'extra_forbidden'],
      ['Not-A-Step!', { approve: true }, ['path', 'step_id'], 'string_pattern_mismatch'],
    ];
    for (const [stepId, body, loc, type] of cases) {
      const res = await decide(id, stepId, body, { token: approver });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body as unknown as { detail: unknown[] }, res.text).toMatchObject({ detail: [{ type, loc }] });
    }
    expect((await runOf(id)).status).toBe('waiting');
    expect((await decide(id, 'sign_off', { approve: true }, { token: approver })).status).toBe(200);
  });

  it('checks 401 → 403 → 422 → 404 → 409: who could decide nothing of a run learns nothing of it', async () => {
    const id = await start(await template(SIGN_OFF));
    await until(id, 'step.waiting');
    const unknownRun = '00000000-0000-4000-8000-000000000000';
    const finance = await token(slug('finance-only'), { roles: ['finance'] });
    const badBody = { approve: 'perhaps' };
    // [who, run, step, body, status]
    const table: [string, string, string, unknown, number][] = [
      // 401: no credentials, whatever else is wrong
      ['nobody', unknownRun, 'sign_off', badBody, 401],
      // 403 before anything is read: a key is never a session, and a caller without any role decides nothing
      ['a PSK (admin)', id, 'sign_off', badBody, 403],
      ['a PSK (admin)', unknownRun, 'nope', { approve: true }, 403],
      ['a user without a role', id, 'sign_off', badBody, 403],
      ['a user without a role', unknownRun, 'sign_off', { approve: true }, 403],
      ['a user without a role', id, 'nope', { approve: true }, 403],
      ['a user without a role', id, 'draft', { approve: true }, 403],
      // 422 for a caller with a role, before the run is read
      ['an approver', unknownRun, 'sign_off', badBody, 422],
      ['an admin without the role', unknownRun, 'sign_off', badBody, 422],
      // 404: no such run
      ['an approver', unknownRun, 'sign_off', { approve: true }, 404],
      // 403 for every step id of a run none of whose approval steps the caller may decide
      ['a finance approver', id, 'sign_off', { approve: true }, 403],
      ['a finance approver', id, 'nope', { approve: true }, 403],
      ['a finance approver', id, 'draft', { approve: true }, 403],
      ['an admin without the role', id, 'draft', { approve: true }, 403],
      // with the role of one of its approval steps: 404 no such step, 409 not an approval / not waiting
      ['an approver', id, 'nope', { approve: true }, 404],
      ['an approver', id, 'draft', { approve: true }, 409],
      ['an approver', id, 'notice', { approve: true }, 409],
      // the starter has the role: the step's state first, then the four-eyes rule
      ['the starter', id, 'draft', { approve: true }, 409],
      ['the starter', id, 'sign_off', { approve: true }, 403],
    ];
    const auths: Record<string, { token?: string; psk?: string }> = {
      nobody: {},
      'a PSK (admin)': { psk: adminPsk() },
      'a user without a role': { token: plainUser },
      'an admin without the role': { token: adminOnly },
      'a finance approver': { token: finance },
      'an approver': { token: approver },
      'the starter': { token: starter },
    };
    const refusals = new Map<string, Set<string>>();
    for (const [who, run, step, body, status] of table) {
      const res = await decide(run, step, body, auths[who]!);
      expect(res.status, `${who} on ${run === id ? 'the run' : 'an unknown run'}, step ${step}: ${res.text}`).toBe(
        status,
      );
      if (status === 403) {
        expect(res.body as unknown).toEqual({ error: expect.any(String), code: 403 });
        if (who !== 'the starter') refusals.set(who, (refusals.get(who) ?? new Set()).add(res.text));
      }
    }
    // One answer for a refused caller, whatever run or step it names: nothing to tell them apart.
    for (const [who, answers] of refusals) expect([...answers], who).toHaveLength(1);
    expect((await runOf(id)).status).toBe('waiting');
    expect((await decide(id, 'sign_off', { approve: true }, { token: approver })).status).toBe(200);
  });

  it('declares approval steps with defaults, and refuses a bad timeout or role', async () => {
    const id = await template([{ id: 'ok', kind: 'approval', prompt: 'fine?' }]);
    const got = await api(`/api/crew-templates/${id}`, { token: admin });
    expect(got.body.steps).toEqual([
      { id: 'ok', kind: 'approval', prompt: 'fine?', role: 'approver', timeout_seconds: 86_400 },
    ]);
    const cases: [Record<string, unknown>, string, string][] = [
      [{ timeout_seconds: 59 }, 'timeout_seconds', 'greater_than_equal'],
      [{ timeout_seconds: 604_801 }, 'timeout_seconds', 'less_than_equal'],
      [{ timeout_seconds: 90.5 }, 'timeout_seconds', 'int_from_float'],
      [{ role: 'has space' }, 'role', 'string_pattern_mismatch'],
      [{ prompt: 'who is {{nobody}}?' }, 'prompt', 'value_error'],
    ];
    for (const [fields, field, type] of cases) {
      const res = await api('/api/crew-templates', {
        method: 'POST',
        token: admin,
        body: { name: slug('bad'), steps: [{ id: 'x', kind: 'approval', prompt: 'p', ...fields }] },
      });
      expect(res.status, JSON.stringify(fields)).toBe(422);
      expect(res.body).toMatchObject({ detail: [{ type, loc: ['body', 'steps', 0, field] }] });
    }
  });

  it('is the domain events crew.run.waiting, then crew.run.started by the approver', async () => {
    const id = await start(await template(SIGN_OFF));
    await until(id, 'step.waiting');
    expect((await decide(id, 'sign_off', { approve: true }, { token: approver })).status).toBe(200);
    await until(id, 'run.completed');
    const feed = await eventsOf(`crew-runs/${id}`, 5, admin);
    expect(feed.map((e) => e.type)).toEqual([
      'dpm.crew.run.queued',
      'dpm.crew.run.started',
      'dpm.crew.run.waiting',
      'dpm.crew.run.started',
      'dpm.crew.run.succeeded',
    ]);
    expect(feed[2]!.data).toMatchObject({ status: 'waiting', progress: { current_step: 'sign_off' } });
    expect(feed[3]!.actor).toContain(approverName);
  });

  it('fails the step when nobody decides by expires_at (on time)', async () => {
    const id = await start(await template(MINUTE_GATE));
    const waiting = await until(id, 'step.waiting');
    // Expiring in 3 s instead of a minute; the run handed to the worker again (a second
    // delivery, as any), which arms the expiry timer for it: the platform's own timer fails it.
    const seeded = new Date(Date.now() + 3_000).toISOString();
    await seedApprovalExpiry(id, waiting.at(-1)!, seeded);
    await toCrewWorker({ correlation_id: id });
    const expiresAt = Date.parse(seeded);
    const all = await until(id, 'run.failed', 30_000);
    expect(typesOf(all.slice(waiting.length))).toEqual([
      ['step.failed', 'gate'],
      ['run.failed', null],
    ]);
    expect(all.at(-2)!.data!.error).toMatch(/expired/);
    const failedAt = Date.parse(all.at(-2)!.timestamp);
    expect(failedAt).toBeGreaterThanOrEqual(expiresAt);
    expect(failedAt - expiresAt).toBeLessThan(5_000);
    expect((await decide(id, 'gate', { approve: true }, { token: approver })).status).toBe(409);
  }, 40_000);

  it('refuses a decision once expires_at has passed and leaves the inbox; the expiry timer then fails the step', async () => {
    const id = await start(await template(MINUTE_GATE));
    const waiting = await until(id, 'step.waiting');
    const inbox = async () =>
      (
        await api<{ correlation_id?: string }[]>('/api/approvals?kind=crew_step&limit=1000', { token: approver })
      ).body.map((item) => item.correlation_id);
    expect(await inbox()).toContain(id);
    // Its minute is over (seeded), before the timer the worker armed for it came.
    const expiresAt = new Date(Date.now() - 1_000).toISOString();
    await seedApprovalExpiry(id, waiting.at(-1)!, expiresAt);
    const late = await decide(id, 'gate', { approve: true }, { token: approver });
    expect(late.status, late.text).toBe(409);
    expect(late.body).toEqual({ error: `The approval of step gate expired at ${expiresAt}`, code: 409 });
    expect(await inbox()).not.toContain(id);
    expect(await runOf(id)).toMatchObject({ status: 'waiting' });
    // The timer arrives (sent now, as SQS hands it over at expires_at): the step fails.
    await toCrewWorker({ correlation_id: id, timer: { step_id: 'gate', expires_at: expiresAt } });
    const all = await until(id, 'run.failed');
    expect(typesOf(all.slice(waiting.length))).toEqual([
      ['step.failed', 'gate'],
      ['run.failed', null],
    ]);
    expect(all.at(-2)!.data).toEqual({ error: `no decision by ${expiresAt}: the approval expired` });
    expect(Date.parse(all.at(-2)!.timestamp)).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect(await runOf(id)).toMatchObject({
      status: 'failed',
      error: `no decision by ${expiresAt}: the approval expired`,
    });
  });
});
