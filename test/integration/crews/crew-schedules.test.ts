import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEDULE_ITEM } from '../../../functions/crews/schedules/schedule-store.js';
import { physicalQueueName, QUEUES } from '../../../infra/tables.js';
import { eventually, notYet } from '../../support/eventually.js';
import { type Envelope, eventsBefore, eventsOf } from '../event-feed.js';
import { adminToken, api, db, serviceLog, slug, table, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * Crew schedules (docs/crews.md, schedules): declared by an admin, validated as
 * EventBridge Scheduler and E2 would, fired by the local platform's timers through the
 * crew-run queue (as Scheduler's target on AWS): one run per fire, `schedule_id` and the
 * creator on the run, overlap `skip`, disabled schedules and deleted templates fire nothing.
 * Fires are sent to the queue directly where a test needs a given time (the message
 * Scheduler sends), and one real `rate(1 minute)` fire runs end to end: its anchor moved
 * back in the table (seeded), so that the platform's timer fires it within seconds, not a
 * minute. That a fire started nothing is read from the worker's log line saying it ignored
 * the fire, not waited for.
 */

let admin: string;
let adminName: string;
let user: string;
let templateId: string;
let waitTemplateId: string;
let sqs: SQSClient;
let queueUrl: string;

type Schedule = Record<string, any>;

const create = (body: Record<string, unknown>, as = admin) =>
  api<Schedule>('/api/crew-schedules', { method: 'POST', token: as, body });

const schedule = async (body: Record<string, unknown>): Promise<Schedule> => {
  const res = await create({
    name: slug('nightly'),
    template_id: templateId,
    expression: 'cron(0 2 * * ? *)',
    ...body,
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
};

/** What EventBridge Scheduler sends for a fire (its target input), at `time`. */
const fire = (id: string, time: string) =>
  sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: JSON.stringify({ schedule_id: id, scheduled_time: time }),
    }),
  );

const runsOf = async (id: string) => {
  const res = await api<Record<string, any>[]>(`/api/crew-schedules/${id}/runs`, { token: admin });
  expect(res.status, res.text).toBe(200);
  return res.body;
};

/**
 * Waits until the worker has ignored `count` fires of schedule `id` due at `time` (a repeated
 * fire, or one of a disabled schedule): the service log says so, once per fire it handled.
 */
const ignoredFires = (id: string, time: string, count = 1) =>
  eventually(
    async () => {
      const lines = (await serviceLog())
        .split('\n')
        .filter(
          (line) =>
            line.includes('crew schedule fire ignored') &&
            line.includes(`"schedule_id":"${id}"`) &&
            line.includes(`"scheduled_time":"${time}"`),
        );
      return lines.length >= count ? lines : notYet(lines.length);
    },
    20_000,
    `${count} fire(s) of schedule ${id} at ${time} ignored`,
    250,
  );

/**
 * The schedule's events before a marker: an admin of the test's own disables it (a change of
 * the same subject, whose event must follow the last one with no gap), so whatever the fires
 * before it recorded is there, and nothing else.
 */
async function eventsBeforeMarker(id: string): Promise<Envelope[]> {
  const markerName = slug('sched-marker');
  const marker = await adminToken(markerName);
  const disabled = await api(`/api/crew-schedules/${id}`, { method: 'PATCH', token: marker, body: { enabled: false } });
  expect(disabled.status, disabled.text).toBe(200);
  const { before } = await eventsBefore(`crew-schedules/${id}`, (e) => e.actor === markerName, admin);
  return before;
}

const finished = (correlationId: string) =>
  eventually(
    async () => {
      const run = (await api(`/api/crew-runs/${correlationId}`, { token: admin })).body;
      return ['succeeded', 'failed', 'cancelled'].includes(run.status) ? run : undefined;
    },
    30_000,
    `run ${correlationId} finished`,
  );

beforeAll(async () => {
  adminName = slug('sched-admin');
  admin = await adminToken(adminName);
  user = await token(slug('sched-user'));
  const made = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: {
      name: slug('sched'),
      variables: [{ name: 'customer', required: true }],
      steps: [{ id: 'hello', kind: 'render', template: 'hello {{customer}}' }],
    },
  });
  expect(made.status, made.text).toBe(201);
  templateId = made.body.id;
  const waits = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: { name: slug('sched-wait'), steps: [{ id: 'pause', kind: 'wait', seconds: 4 }] },
  });
  waitTemplateId = waits.body.id;
  sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: provided('sqsEndpoint'),
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  queueUrl = (
    await sqs.send(new GetQueueUrlCommand({ QueueName: physicalQueueName(provided('stage'), QUEUES.crewRuns) }))
  ).QueueUrl!;
});

afterAll(() => sqs?.destroy());

describe('declaring schedules', () => {
  it('creates one with its defaults and next fire, readable by any user', async () => {
    const res = await create({
      name: 'nightly acme',
      template_id: templateId,
      expression: 'cron(30 2 * * ? *)',
      timezone: 'Europe/Berlin',
      values: { customer: 'acme' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      template_id: templateId,
      name: 'nightly acme',
      expression: 'cron(30 2 * * ? *)',
      timezone: 'Europe/Berlin',
      values: { customer: 'acme' },
      overlap: 'skip',
      enabled: true,
      last_run_at: null,
      last_correlation_id: null,
      last_skipped_at: null,
      created_by: adminName,
    });
    // 02:30 in Berlin is 00:30 or 01:30 UTC, within the next 24 hours.
    const next = Date.parse(res.body.next_run_at);
    expect(next - Date.now()).toBeGreaterThan(0);
    expect(next - Date.now()).toBeLessThanOrEqual(86_400_000);
    expect(new Date(next).getUTCMinutes()).toBe(30);
    const read = await api(`/api/crew-schedules/${res.body.id}`, { token: user });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
    const listed = await api<Schedule[]>('/api/crew-schedules?limit=1000', { token: user });
    expect(listed.body.map((s) => s.id)).toContain(res.body.id);
    const events = await eventsOf(`crew-schedules/${res.body.id}`, 1, admin);
    expect(events[0]).toMatchObject({ type: 'dpm.crew.schedule.created', data: res.body });
  });

  it('refuses a bad expression, time zone and values together (422, as E2 would)', async () => {
    const res = await create({
      name: 'bad',
      template_id: templateId,
      expression: 'cron(0 2 * * * *)',
      timezone: 'Mars/Olympus',
      values: { colour: 'red' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.type, d.loc])).toEqual([
      ['value_error', ['body', 'expression']],
      ['value_error', ['body', 'timezone']],
      ['missing', ['body', 'values', 'customer']],
      ['extra_forbidden', ['body', 'values', 'colour']],
    ]);
    expect(res.body.detail[0].msg).toMatch(/\?/);
    const rate = await create({
      name: 'r',
      template_id: templateId,
      expression: 'rate(0 minutes)',
      values: { customer: 'a' },
    });
    expect(rate.status).toBe(422);
    expect(rate.body.detail[0].loc).toEqual(['body', 'expression']);
    const shape = await create({ name: 'r', template_id: templateId, expression: 'every day', overlap: 'never' });
    expect(shape.status).toBe(422);
    expect(shape.body.detail.map((d: any) => [d.type, d.loc])).toEqual([['enum', ['body', 'overlap']]]);
  });

  it('answers 404 for an unknown template or schedule, 403 to a non-admin writer, 401 without credentials', async () => {
    const unknown = await create({
      name: 'x',
      template_id: '00000000-0000-4000-8000-000000000000',
      expression: 'rate(1 hour)',
    });
    expect(unknown.status).toBe(404);
    expect((await create({ name: 'x', template_id: templateId, expression: 'rate(1 hour)' }, user)).status).toBe(403);
    expect((await api('/api/crew-schedules', { method: 'POST', body: {} })).status).toBe(401);
    const missing = '00000000-0000-4000-8000-000000000000';
    expect((await api(`/api/crew-schedules/${missing}`, { token: user })).status).toBe(404);
    expect((await api(`/api/crew-schedules/${missing}/runs`, { token: admin })).status).toBe(404);
    expect(
      (await api(`/api/crew-schedules/${missing}`, { method: 'PATCH', token: admin, body: { enabled: false } })).status,
    ).toBe(404);
    expect((await api(`/api/crew-schedules/${missing}`, { method: 'DELETE', token: admin })).status).toBe(404);
    const made = await schedule({ values: { customer: 'a' } });
    expect(
      (await api(`/api/crew-schedules/${made.id}`, { method: 'PATCH', token: user, body: { enabled: false } })).status,
    ).toBe(403);
    expect((await api(`/api/crew-schedules/${made.id}`, { method: 'DELETE', token: user })).status).toBe(403);
  });

  it('changes a schedule (PATCH): next fire follows, a bad change is 422 and changes nothing', async () => {
    const made = await schedule({ values: { customer: 'a' } });
    const patched = await api(`/api/crew-schedules/${made.id}`, {
      method: 'PATCH',
      token: admin,
      body: { expression: 'cron(15 * * * ? *)', overlap: 'allow' },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ expression: 'cron(15 * * * ? *)', overlap: 'allow', enabled: true });
    expect(new Date(patched.body.next_run_at).getUTCMinutes()).toBe(15);
    expect(patched.body.updated_at >= made.updated_at).toBe(true);
    const bad = await api(`/api/crew-schedules/${made.id}`, {
      method: 'PATCH',
      token: admin,
      body: { timezone: 'Nowhere/Land', values: {} },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => [d.type, d.loc])).toEqual([
      ['value_error', ['body', 'timezone']],
      ['missing', ['body', 'values', 'customer']],
    ]);
    const disabled = await api(`/api/crew-schedules/${made.id}`, {
      method: 'PATCH',
      token: admin,
      body: { enabled: false },
    });
    expect(disabled.body).toMatchObject({ enabled: false, next_run_at: null, expression: 'cron(15 * * * ? *)' });
    const extra = await api(`/api/crew-schedules/${made.id}`, { method: 'PATCH', token: admin, body: { name: 'x' } });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ type: 'extra_forbidden', loc: ['body', 'name'] });
    const events = await eventsOf(`crew-schedules/${made.id}`, 3, admin);
    expect(events.map((e) => e.type)).toEqual([
      'dpm.crew.schedule.created',
      'dpm.crew.schedule.updated',
      'dpm.crew.schedule.updated',
    ]);
  });

  it('deletes a schedule (204, event with the schedule as it was); it is gone', async () => {
    const made = await schedule({ values: { customer: 'a' } });
    expect((await api(`/api/crew-schedules/${made.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    expect((await api(`/api/crew-schedules/${made.id}`, { token: admin })).status).toBe(404);
    const events = await eventsOf(`crew-schedules/${made.id}`, 2, admin);
    expect(events.at(-1)).toMatchObject({ type: 'dpm.crew.schedule.deleted', data: { id: made.id } });
  });
});

describe('fires', () => {
  it('a fire starts the run as the schedule’s creator, with schedule_id; a repeated fire starts nothing', async () => {
    const made = await schedule({ values: { customer: 'globex' }, overlap: 'allow' });
    const at = '2026-11-26T02:00:00.000Z';
    await fire(made.id, at);
    await fire(made.id, '2026-11-26T02:00:00Z');
    const [run] = await eventually(async () => {
      const runs = await runsOf(made.id);
      return runs.length > 0 ? runs : undefined;
    }, 20_000);
    expect(run).toMatchObject({ schedule_id: made.id, created_by: adminName, values: { customer: 'globex' } });
    await finished(run!.correlation_id);
    const after = (await api(`/api/crew-schedules/${made.id}`, { token: admin })).body;
    expect(after).toMatchObject({ last_run_at: at, last_correlation_id: run!.correlation_id });
    // Sent again: it and the copy sent with the first are both handled, and ignored.
    await fire(made.id, at);
    await ignoredFires(made.id, at, 2);
    expect(await runsOf(made.id)).toHaveLength(1);
    const events = await eventsBeforeMarker(made.id);
    expect(events.map((e) => e.type)).toEqual(['dpm.crew.schedule.created', 'dpm.crew.schedule.fired']);
    expect(events[1]!.data).toMatchObject({ correlation_id: run!.correlation_id, last_run_at: at });
    // The creator's own run: listed among theirs.
    const own = await api(`/api/crew-runs/${run!.correlation_id}`, { token: admin });
    expect(own.body.schedule_id).toBe(made.id);
  });

  it('every run a fire started has its crew.schedule.fired event and last_run_at, while the schedule changes', async () => {
    // A change landing between a fire's run and its record used to leave the run without its
    // event and last_run_at: the fire's effects are now one write, and a fire that meets a
    // change reads the schedule again. Fires in order, each with changes made around it.
    const made = await schedule({ values: { customer: 'c0' }, overlap: 'allow' });
    const times = ['2026-11-27T01:00:00.000Z', '2026-11-27T02:00:00.000Z', '2026-11-27T03:00:00.000Z'];
    let changes = 0;
    for (const [i, time] of times.entries()) {
      const patch = (n: number) =>
        api(`/api/crew-schedules/${made.id}`, {
          method: 'PATCH',
          token: admin,
          body: { values: { customer: `c${n}` } },
        });
      await fire(made.id, time);
      // Changes while the worker takes the fire up, until its run is listed.
      await eventually(
        async () => {
          const res = await patch(++changes);
          expect(res.status, res.text).toBe(200);
          const runs = await runsOf(made.id);
          return runs.length === i + 1 ? runs : notYet(runs.length);
        },
        30_000,
        `the run of the fire at ${time}`,
        5,
      );
    }
    const runs = await runsOf(made.id);
    expect(runs.map((r) => r.schedule_id)).toEqual(times.map(() => made.id));
    const after = (await api(`/api/crew-schedules/${made.id}`, { token: admin })).body;
    expect(after).toMatchObject({ last_run_at: times.at(-1), last_correlation_id: runs[0]!.correlation_id });
    const events = await eventsOf(`crew-schedules/${made.id}`, 1 + changes + times.length, admin);
    const fired = events.filter((e) => e.type === 'dpm.crew.schedule.fired');
    // One fired event per run, naming it, with the last_run_at of its own fire.
    expect(fired.map((e) => e.data.correlation_id).sort()).toEqual(runs.map((r) => r.correlation_id).sort());
    expect(fired.map((e) => e.data.last_run_at)).toEqual(times);
  }, 120_000);

  it('the runs a schedule started are an admin’s to list: another user gets 403, as for each run', async () => {
    const made = await schedule({ values: { customer: 'secret-customer' }, overlap: 'allow' });
    await fire(made.id, '2026-11-26T05:00:00.000Z');
    const [run] = await eventually(async () => {
      const runs = await runsOf(made.id);
      return runs.length > 0 ? runs : undefined;
    }, 20_000);
    expect(run).toMatchObject({ schedule_id: made.id, values: { customer: 'secret-customer' } });
    // The run itself is its starter's (the schedule's creator) and admins': not this user's.
    expect((await api(`/api/crew-runs/${run!.correlation_id}`, { token: user })).status).toBe(403);
    const refused = await api(`/api/crew-schedules/${made.id}/runs`, { token: user });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: expect.any(String), code: 403 });
    expect(refused.text).not.toContain('secret-customer');
    // In the order of every admin route: 401, then 403, then 422, then 404.
    expect((await api(`/api/crew-schedules/${made.id}/runs`)).status).toBe(401);
    const tooLong = `/api/crew-schedules/${'x'.repeat(65)}/runs?limit=0`;
    expect((await api(tooLong, { token: user })).status).toBe(403);
    const invalid = await api(tooLong, { token: admin });
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail.map((d: any) => d.loc)).toEqual([
      ['path', 'schedule_id'],
      ['query', 'limit'],
    ]);
    const missing = '00000000-0000-4000-8000-000000000000';
    expect((await api(`/api/crew-schedules/${missing}/runs`, { token: user })).status).toBe(403);
    expect((await api(`/api/crew-schedules/${missing}/runs`, { token: admin })).status).toBe(404);
  });

  it('overlap skip: a fire while the previous run is unfinished starts nothing and records last_skipped_at', async () => {
    const res = await create({ name: slug('skip'), template_id: waitTemplateId, expression: 'rate(1 day)' });
    const made = res.body;
    await fire(made.id, '2026-11-26T03:00:00.000Z');
    const [first] = await eventually(async () => {
      const runs = await runsOf(made.id);
      return runs.length > 0 ? runs : undefined;
    }, 20_000);
    await fire(made.id, '2026-11-26T03:01:00.000Z');
    const skipped = await eventually(async () => {
      const s = (await api(`/api/crew-schedules/${made.id}`, { token: admin })).body;
      return s.last_skipped_at ? s : undefined;
    }, 20_000);
    expect(skipped.last_skipped_at).toBe('2026-11-26T03:01:00.000Z');
    expect(skipped.last_correlation_id).toBe(first!.correlation_id);
    expect(await runsOf(made.id)).toHaveLength(1);
    const events = await eventsOf(`crew-schedules/${made.id}`, 3, admin);
    expect(events[2]).toMatchObject({ type: 'dpm.crew.schedule.fired', data: { skipped: true } });
    // Once it finished (cancelled here, rather than its wait waited out), the next fire runs
    // again; a copy of the skipped fire (a send retried) starts nothing, though the previous
    // run has finished by now: that fire ended as its skip.
    const cancelled = await api(`/api/crew-runs/${first!.correlation_id}/cancel`, {
      method: 'POST',
      token: admin,
      body: {},
    });
    expect(cancelled.status, cancelled.text).toBe(200);
    await finished(first!.correlation_id);
    await fire(made.id, '2026-11-26T03:01:00.000Z');
    await fire(made.id, '2026-11-26T03:02:00.000Z');
    await eventually(async () => ((await runsOf(made.id)).length === 2 ? true : undefined), 20_000);
    // The copy of the skipped fire has been handled (and ignored) before the marker.
    await ignoredFires(made.id, '2026-11-26T03:01:00.000Z');
    const all = await eventsBeforeMarker(made.id);
    expect(all.map((e) => [e.type, e.data.skipped ?? false])).toEqual([
      ['dpm.crew.schedule.created', false],
      ['dpm.crew.schedule.fired', false],
      ['dpm.crew.schedule.fired', true],
      ['dpm.crew.schedule.fired', false],
    ]);
    expect(await runsOf(made.id)).toHaveLength(2);
  });

  it('a fire that comes after a later one started its run is skipped, saying so; each fire ends once', async () => {
    const made = await schedule({ values: { customer: 'late' }, overlap: 'allow' });
    const earlier = '2026-11-28T01:00:00.000Z';
    const later = '2026-11-28T02:00:00.000Z';
    await fire(made.id, later);
    const [run] = await eventually(async () => {
      const runs = await runsOf(made.id);
      return runs.length > 0 ? runs : undefined;
    }, 20_000);
    // The earlier fire arrives now (its send retried): no run behind a later one, and
    // `last_run_at` stays; the fire is recorded as skipped, with the reason.
    await fire(made.id, earlier);
    const skipped = await eventually(async () => {
      const s = (await api(`/api/crew-schedules/${made.id}`, { token: admin })).body;
      return s.last_skipped_at ? s : undefined;
    }, 20_000);
    expect(skipped).toMatchObject({
      last_run_at: later,
      last_correlation_id: run!.correlation_id,
      last_skipped_at: earlier,
    });
    // Copies of either fire end as nothing more.
    await fire(made.id, earlier);
    await fire(made.id, later);
    await ignoredFires(made.id, earlier);
    await ignoredFires(made.id, later);
    const events = await eventsBeforeMarker(made.id);
    expect(events.map((e) => e.type)).toEqual([
      'dpm.crew.schedule.created',
      'dpm.crew.schedule.fired',
      'dpm.crew.schedule.fired',
    ]);
    expect(events[1]!.data).toMatchObject({ correlation_id: run!.correlation_id, last_run_at: later });
    expect(events[2]!.data).toMatchObject({
      skipped: true,
      reason: `a later fire, due ${later}, has started its run`,
      last_run_at: later,
      last_skipped_at: earlier,
    });
    expect(await runsOf(made.id)).toHaveLength(1);
  });

  it('a disabled schedule fires nothing; a deleted template disables its schedules', async () => {
    const made = await schedule({ values: { customer: 'a' }, enabled: false });
    expect(made.next_run_at).toBeNull();
    await fire(made.id, '2026-11-26T04:00:00.000Z');
    const other = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: { name: slug('doomed'), steps: [{ id: 'x', kind: 'render', template: 'x' }] },
    });
    const doomed = await create({ name: slug('doomed'), template_id: other.body.id, expression: 'rate(5 minutes)' });
    expect(doomed.body.enabled).toBe(true);
    expect((await api(`/api/crew-templates/${other.body.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    const after = (await api(`/api/crew-schedules/${doomed.body.id}`, { token: admin })).body;
    expect(after).toMatchObject({ enabled: false, next_run_at: null });
    await fire(doomed.body.id, '2026-11-26T04:00:00.000Z');
    await ignoredFires(made.id, '2026-11-26T04:00:00.000Z');
    await ignoredFires(doomed.body.id, '2026-11-26T04:00:00.000Z');
    expect(await runsOf(made.id)).toEqual([]);
    expect(await runsOf(doomed.body.id)).toEqual([]);
  });

  it('a rate(1 minute) schedule fires by itself (the local platform’s timers)', async () => {
    const made = await schedule({ expression: 'rate(1 minute)', values: { customer: 'initech' } });
    // One minute after its creation (to the second), not at the next whole minute (docs/crews.md).
    const created = Math.floor(Date.parse(made.created_at) / 1000) * 1000;
    expect(made.next_run_at).toBe(new Date(created + 60_000).toISOString());
    // Not a minute waited: the rate's anchor (when its expression was set) is moved 55 s back
    // (seeded), and a change that keeps the expression sets the platform's timer again from
    // it, as a rate counts from its expression's last change: its next fire is 5 s away.
    const anchor = new Date(Date.now() - 55_000).toISOString();
    await db().send(
      new UpdateCommand({
        TableName: table('crewSchedules'),
        Key: { schedule_id: made.id, item: SCHEDULE_ITEM },
        UpdateExpression: 'SET expression_set_at = :a',
        ConditionExpression: 'attribute_exists(schedule_id)',
        ExpressionAttributeValues: { ':a': anchor },
      }),
    );
    const patched = await api<Schedule>(`/api/crew-schedules/${made.id}`, {
      method: 'PATCH',
      token: admin,
      body: { values: { customer: 'initech' } },
    });
    expect(patched.status, patched.text).toBe(200);
    const due = new Date(Math.floor(Date.parse(anchor) / 1000) * 1000 + 60_000).toISOString();
    expect(patched.body.next_run_at).toBe(due);
    const [run] = await eventually(
      async () => {
        const runs = await runsOf(made.id);
        return runs.length > 0 ? runs : undefined;
      },
      30_000,
      'the first fire of a rate(1 minute) schedule',
    );
    expect(run).toMatchObject({ schedule_id: made.id, values: { customer: 'initech' } });
    const events = await eventsOf(`crew-schedules/${made.id}`, 3, admin);
    expect(events.map((e) => e.type)).toEqual([
      'dpm.crew.schedule.created',
      'dpm.crew.schedule.updated',
      'dpm.crew.schedule.fired',
    ]);
    expect(events[2]).toMatchObject({
      data: { correlation_id: run!.correlation_id, last_run_at: due },
    });
    await api(`/api/crew-schedules/${made.id}`, { method: 'DELETE', token: admin });
  }, 60_000);
});
