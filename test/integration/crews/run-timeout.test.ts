import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, notYet } from '../../support/eventually.js';
import { type CrewEventSeen, kindsOf, runEvents, seedEntryTime, toCrewWorker } from '../crew-support.js';
import { adminToken, api, approverToken, slug, token } from '../helpers.js';

/**
 * Run deadlines (docs/crews.md, limits and deadlines): a run of a template with
 * `run_timeout_seconds` still unfinished that long after `run.started` (time `waiting` for
 * an approval included) ends `failed` with `run.timed_out` then `run.failed` (`timed out
 * after N s`); a running step is abandoned within a second. A retried run's deadline counts
 * from its new start.
 *
 * A running step is abandoned at a deadline met in real time (seconds); a run that waits for
 * a person has its start moved back instead (seeded in the run log, which the deadline is
 * counted from), and the timer the worker armed for its deadline handed over at once.
 */

let admin: string;
let user: string;
let approver: string;

type Run = { status: string; error: string | null; progress: { current_step: string | null } };

const events = (id: string): Promise<CrewEventSeen[]> => runEvents(id, admin);
const runOf = async (id: string) => (await api<Run>(`/api/crew-runs/${id}`, { token: admin })).body;

async function timedTemplate(steps: unknown[], runTimeoutSeconds: number): Promise<string> {
  const res = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: { name: slug('timeout'), steps, run_timeout_seconds: runTimeoutSeconds },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

async function start(templateId: string): Promise<string> {
  const res = await api(`/api/crew-templates/${templateId}/run`, { method: 'POST', token: user, body: { values: {} } });
  expect(res.status, res.text).toBe(202);
  return res.body.correlation_id as string;
}

/** Waits until the run's last event is of `type`; answers every event. */
const until = (id: string, type: string, ms = 30_000) =>
  eventually(
    async () => {
      const all = await events(id);
      return all.at(-1)?.type === type ? all : notYet(kindsOf(all));
    },
    ms,
    `${type} last in run ${id}`,
    100,
  );

const at = (e: CrewEventSeen | undefined) => Date.parse(e!.timestamp);

beforeAll(async () => {
  admin = await adminToken('timeout-admin');
  user = await token(slug('timeout-user'));
  approver = await approverToken(slug('timeout-approver'));
});

describe('run_timeout_seconds', () => {
  it('a run in a 30 s wait with a 2 s deadline: run.timed_out then run.failed, the step abandoned, not waited out', async () => {
    const id = await start(
      await timedTemplate(
        [
          { id: 'long', kind: 'wait', seconds: 30 },
          { id: 'after', kind: 'render', template: 'never' },
        ],
        2,
      ),
    );
    const log = await until(id, 'run.failed');
    expect(kindsOf(log)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'long'],
      ['run.timed_out', null],
      ['run.failed', null],
    ]);
    const started = log.find((e) => e.type === 'run.started');
    const timedOut = log.find((e) => e.type === 'run.timed_out');
    expect(timedOut!.data).toEqual({ timeout_seconds: 2 });
    expect(log.at(-1)!.data).toEqual({ error: 'timed out after 2 s' });
    // Not before the deadline; and the wait was given up, not waited out (a guard, not a timing).
    expect(at(timedOut) - at(started)).toBeGreaterThanOrEqual(2_000);
    expect(at(timedOut) - at(started)).toBeLessThan(10_000);
    expect(await runOf(id)).toMatchObject({
      status: 'failed',
      error: 'timed out after 2 s',
      progress: { current_step: 'long' },
    });
  }, 40_000);

  it('a run waiting for an approval times out at its deadline: it leaves the approvers, and a decision after it is 409', async () => {
    const id = await start(
      await timedTemplate(
        [
          { id: 'gate', kind: 'approval', prompt: 'nobody answers in time', timeout_seconds: 3600 },
          { id: 'after', kind: 'render', template: 'never' },
        ],
        600,
      ),
    );
    const waiting = await until(id, 'step.waiting');
    expect((await runOf(id)).status).toBe('waiting');
    // Its ten minutes are up (its start moved back, seeded): the timer the worker armed for
    // the deadline arrives (sent now, as SQS hands it over then).
    const started = waiting.find((e) => e.type === 'run.started')!;
    await seedEntryTime(id, started.index, new Date(Date.now() - 601_000).toISOString());
    const gate = waiting.at(-1)!;
    await toCrewWorker({ correlation_id: id, timer: { step_id: 'gate', expires_at: gate.data!.expires_at } });
    const log = await until(id, 'run.failed', 20_000);
    expect(kindsOf(log.slice(waiting.length))).toEqual([
      ['run.timed_out', null],
      ['run.failed', null],
    ]);
    expect(log.at(-2)!.data).toEqual({ timeout_seconds: 600 });
    expect(at(log.at(-2)) - at(log.find((e) => e.type === 'run.started'))).toBeGreaterThanOrEqual(600_000);
    expect(await runOf(id)).toMatchObject({ status: 'failed', error: 'timed out after 600 s' });
    const inbox = await api<{ correlation_id?: string }[]>('/api/approvals?kind=crew_step&limit=1000', {
      token: approver,
    });
    expect(inbox.status, inbox.text).toBe(200);
    expect(inbox.body.map((s) => s.correlation_id)).not.toContain(id);
    const late = await api(`/api/crew-runs/${id}/steps/gate/decision`, {
      method: 'POST',
      token: approver,
      body: { approve: true },
    });
    expect(late.status, late.text).toBe(409);
  }, 40_000);

  it('a retried run gets a fresh deadline, counted from its new start', async () => {
    const id = await start(await timedTemplate([{ id: 'w', kind: 'wait', seconds: 10 }], 2));
    await until(id, 'run.failed');
    const retried = await api(`/api/crew-runs/${id}/retry`, { method: 'POST', token: user });
    expect(retried.status, retried.text).toBe(202);
    const log = await eventually(
      async () => {
        const all = await events(id);
        return all.filter((e) => e.type === 'run.timed_out').length === 2 && all.at(-1)?.type === 'run.failed'
          ? all
          : notYet(kindsOf(all));
      },
      30_000,
      'the retried run timed out',
    );
    const again = log.slice(log.findIndex((e) => e.type === 'run.retried'));
    expect(kindsOf(again)).toEqual([
      ['run.retried', null],
      ['step.started', 'w'],
      ['run.timed_out', null],
      ['run.failed', null],
    ]);
    expect(at(again[2]) - at(again[1])).toBeGreaterThanOrEqual(2_000);
  }, 60_000);

  it('a run that ends within its deadline is not touched', async () => {
    const id = await start(await timedTemplate([{ id: 'w', kind: 'wait', seconds: 1 }], 30));
    const log = await until(id, 'run.completed');
    expect(log.some((e) => e.type === 'run.timed_out')).toBe(false);
    expect((await runOf(id)).status).toBe('succeeded');
  }, 30_000);
});
