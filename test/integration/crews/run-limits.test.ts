import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { runChange } from '../../../functions/crews/events.js';
import { limitKeyOf } from '../../../functions/crews/runs/run-limits.js';
import { DynamoSlotStore } from '../../../functions/crews/runs/slot-store.js';
import { CrewRunner, type RunTimer, type StepRunner } from '../../../functions/crews/worker/runner.js';
import type { Step } from '../../../functions/crews/templates/template-schemas.js';
import { DynamoRunStore, type RunItem } from '../../../functions/crews/runs/run-store.js';
import { createWorkerHandler } from '../../../functions/crews/worker/worker.js';
import { eventually, notYet } from '../../support/eventually.js';
import { type CrewEventSeen, kindsOf, runEvents } from '../crew-support.js';
import { adminToken, api, approverToken, db, eventsTable, slug, table, token } from '../helpers.js';
import { countingClient } from '../crew-support.js';

/**
 * Concurrency limits of crew templates (docs/crews.md, limits and deadlines):
 * `max_concurrent_runs` runs at once, per rendered `concurrency_key` when it has one; a run
 * over the limit stays `pending` with `run.throttled` {position} once, and starts when a
 * slot frees, oldest first. Slots are leases: one whose worker died is free again once its
 * lease lapses. A run waiting for an approval holds no slot.
 */

let admin: string;
let user: string;
let approver: string;

type Run = { status: string; error: string | null; progress: { current_step: string | null } };

const reader = () => admin;
const events = (id: string): Promise<CrewEventSeen[]> => runEvents(id, reader());
const runOf = async (id: string) => (await api<Run>(`/api/crew-runs/${id}`, { token: reader() })).body;

/** Declares a template with `fields` (limits, variables) besides its steps; answers its id. */
async function limitedTemplate(steps: unknown[], fields: Record<string, unknown>): Promise<string> {
  const res = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: { name: slug('limits'), steps, ...fields },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

async function start(templateId: string, values: Record<string, unknown> = {}): Promise<string> {
  const res = await api(`/api/crew-templates/${templateId}/run`, { method: 'POST', token: user, body: { values } });
  expect(res.status, res.text).toBe(202);
  return res.body.correlation_id as string;
}

/** Waits until the run has an event of `type`; answers every event. */
const until = (id: string, type: string, ms = 30_000) =>
  eventually(
    async () => {
      const all = await events(id);
      return all.some((e) => e.type === type) ? all : notYet(kindsOf(all));
    },
    ms,
    `${type} in run ${id}`,
    100,
  );

const at = (all: CrewEventSeen[], type: string) => Date.parse(all.find((e) => e.type === type)!.timestamp);

/**
 * Reads the runs' statuses (one consistent read each) every 100 ms until all have finished:
 * the most that were `running` at one reading.
 */
async function mostRunningAtOnce(ids: string[], ms = 60_000): Promise<number> {
  let most = 0;
  await eventually(
    async () => {
      const statuses = await Promise.all(ids.map(async (id) => (await runOf(id)).status));
      most = Math.max(most, statuses.filter((s) => s === 'running').length);
      return statuses.every((s) => ['succeeded', 'failed', 'cancelled'].includes(s)) || notYet(statuses);
    },
    ms,
    'the runs to finish',
    100,
  );
  return most;
}

beforeAll(async () => {
  admin = await adminToken('limits-admin');
  user = await token(slug('limits-user'));
  approver = await approverToken(slug('limits-approver'));
});

describe('max_concurrent_runs', () => {
  it('three runs of a template of one slot: never two running, run.throttled once each with its position, started oldest first', async () => {
    const templateId = await limitedTemplate([{ id: 'w', kind: 'wait', seconds: 2 }], { max_concurrent_runs: 1 });
    const first = await start(templateId);
    await until(first, 'run.started');
    const second = await start(templateId);
    await until(second, 'run.throttled');
    const third = await start(templateId);
    await until(third, 'run.throttled');
    expect((await runOf(second)).status).toBe('pending');
    expect((await runOf(third)).status).toBe('pending');

    expect(await mostRunningAtOnce([first, second, third])).toBe(1);
    const logs = await Promise.all([first, second, third].map(events));
    for (const id of [first, second, third]) expect((await runOf(id)).status).toBe('succeeded');
    expect(kindsOf(logs[0]!)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'w'],
      ['step.completed', 'w'],
      ['run.completed', null],
    ]);
    for (const log of logs.slice(1))
      expect(kindsOf(log)).toEqual([['run.queued', null], ['run.throttled', null], ...kindsOf(logs[0]!).slice(1)]);
    expect(logs[1]!.find((e) => e.type === 'run.throttled')!.data).toEqual({ position: 1 });
    expect(logs[2]!.find((e) => e.type === 'run.throttled')!.data).toEqual({ position: 2 });
    // Oldest first, each after the one before it ended.
    expect(at(logs[1]!, 'run.started')).toBeGreaterThanOrEqual(at(logs[0]!, 'run.completed'));
    expect(at(logs[2]!, 'run.started')).toBeGreaterThanOrEqual(at(logs[1]!, 'run.completed'));
    // The run ending sends the next its message at once; its own comes back only after a
    // holder's lease (30 s) would lapse. A guard, not a timing: well within that.
    expect(at(logs[1]!, 'run.started') - at(logs[0]!, 'run.completed')).toBeLessThan(10_000);
    expect(at(logs[2]!, 'run.started') - at(logs[1]!, 'run.completed')).toBeLessThan(10_000);
  }, 90_000);

  it('with a concurrency_key, runs of different keys run at once and runs of one key wait', async () => {
    const templateId = await limitedTemplate([{ id: 'w', kind: 'wait', seconds: 3 }], {
      variables: [{ name: 'customer', required: true }],
      max_concurrent_runs: 1,
      concurrency_key: 'migration of {{customer}}',
    });
    const acme = await start(templateId, { customer: 'acme' });
    await until(acme, 'run.started');
    const globex = await start(templateId, { customer: 'globex' });
    const acmeAgain = await start(templateId, { customer: 'acme' });
    await until(globex, 'run.started');
    const waited = await until(acmeAgain, 'run.throttled');
    expect(waited.at(-1)!.data).toEqual({ position: 1 });

    const [a, g, again] = await Promise.all([acme, globex, acmeAgain].map((id) => until(id, 'run.completed')));
    // acme and globex overlapped; the second acme started after the first ended
    expect(at(g!, 'run.started')).toBeLessThan(at(a!, 'run.completed'));
    expect(g!.some((e) => e.type === 'run.throttled')).toBe(false);
    expect(at(again!, 'run.started')).toBeGreaterThanOrEqual(at(a!, 'run.completed'));
  }, 60_000);

  it("a slot whose holder's worker died is free again once its lease lapses", async () => {
    const templateId = await limitedTemplate([{ id: 'a', kind: 'render', template: 'done' }], {
      max_concurrent_runs: 1,
    });
    // A run whose worker was killed holds the one slot: its lease ends in 3 s and is never renewed.
    const dead = randomUUID();
    const lapsesAt = Date.now() + 3_000;
    const slotsItem = { correlation_id: `slots#${limitKeyOf(templateId, null)}` };
    await db().send(
      new PutCommand({
        TableName: table('crewRuns'),
        Item: {
          ...slotsItem,
          holders: { [dead]: lapsesAt },
          version: 1,
          expires_at: Math.floor(lapsesAt / 1000) + 3600,
        },
      }),
    );
    const id = await start(templateId);
    const throttled = await until(id, 'run.throttled');
    expect(throttled.at(-1)!.data).toEqual({ position: 1 });
    const log = await until(id, 'run.completed', 40_000);
    expect(at(log, 'run.started')).toBeGreaterThanOrEqual(lapsesAt);
    // The lapsed holder was dropped when the run took the slot; the run lets its own go once
    // run.completed is written (just after it: read until then).
    const holders = await eventually(
      async () => {
        const item = await db().send(
          new GetCommand({ TableName: table('crewRuns'), Key: slotsItem, ConsistentRead: true }),
        );
        const held = (item.Item?.holders ?? {}) as Record<string, number>;
        return Object.keys(held).length === 0 ? held : notYet(held);
      },
      10_000,
      'the slot item without holders',
    );
    expect(holders).toEqual({});
  }, 60_000);

  it('a waiting run can be cancelled: it leaves the line, and the slot goes to the next', async () => {
    const templateId = await limitedTemplate([{ id: 'w', kind: 'wait', seconds: 2 }], { max_concurrent_runs: 1 });
    const first = await start(templateId);
    await until(first, 'run.started');
    const second = await start(templateId);
    await until(second, 'run.throttled');
    const third = await start(templateId);
    await until(third, 'run.throttled');

    const cancelled = await api<Run>(`/api/crew-runs/${second}/cancel`, { method: 'POST', token: user, body: {} });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    const line = await db().send(
      new QueryCommand({
        TableName: table('crewRuns'),
        IndexName: 'slot_queue',
        KeyConditionExpression: 'slot_queue = :key',
        ExpressionAttributeValues: { ':key': limitKeyOf(templateId, null) },
      }),
    );
    expect(line.Items?.map((i) => i.correlation_id)).toEqual([third]);

    const log = await until(third, 'run.completed');
    expect(at(log, 'run.started')).toBeGreaterThanOrEqual(at(await events(first), 'run.completed'));
    expect(kindsOf(await events(second))).toEqual([
      ['run.queued', null],
      ['run.throttled', null],
      ['run.cancelled', null],
    ]);
  }, 60_000);

  it('a run waiting for an approval holds no slot; approved while the slot is taken, it waits again (pending, run.throttled) and then goes on', async () => {
    const templateId = await limitedTemplate(
      [
        { id: 'gate', kind: 'approval', prompt: 'go?' },
        { id: 'w', kind: 'wait', seconds: 3 },
      ],
      { max_concurrent_runs: 1 },
    );
    const gated = await start(templateId);
    await until(gated, 'step.waiting');
    // It waits for a person: another run of the template takes the slot meanwhile.
    const other = await start(templateId);
    await until(other, 'step.waiting');
    const decide = (id: string) =>
      api<Run>(`/api/crew-runs/${id}/steps/gate/decision`, {
        method: 'POST',
        token: approver,
        body: { approve: true },
      });
    expect((await decide(other)).status).toBe(200);
    await until(other, 'step.started');
    await eventually(
      async () => (await events(other)).some((e) => e.type === 'step.started' && e.step_id === 'w'),
      20_000,
      'the other run in its wait',
    );
    expect((await decide(gated)).status).toBe(200);
    const waited = await until(gated, 'run.throttled');
    expect(waited.at(-1)!.data).toEqual({ position: 1 });
    expect((await runOf(gated)).status).toBe('pending');

    const [log, otherLog] = await Promise.all([until(gated, 'run.completed'), until(other, 'run.completed')]);
    expect(kindsOf(log)).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'gate'],
      ['step.waiting', 'gate'],
      ['step.completed', 'gate'],
      ['run.throttled', null],
      ['step.started', 'w'],
      ['step.completed', 'w'],
      ['run.completed', null],
    ]);
    expect(at(log.slice(6), 'step.started')).toBeGreaterThanOrEqual(at(otherLog, 'run.completed'));
  }, 90_000);
});

describe('template fields', () => {
  const post = (fields: Record<string, unknown>) =>
    api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: { name: slug('limits'), steps: [{ id: 'a', kind: 'render', template: 'x' }], ...fields },
    });
  const detail = (res: { body: { detail: { loc: unknown[]; type: string; ctx?: unknown }[] } }) =>
    res.body.detail.map((d) => [d.loc, d.type, d.ctx ?? null]);

  it('are answered as given, replaced by a PUT and gone when a PUT leaves them out; null is none', async () => {
    const fields = { max_concurrent_runs: 3, concurrency_key: '{{customer}}', run_timeout_seconds: 600 };
    const created = await post({ ...fields, variables: [{ name: 'customer' }] });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject(fields);
    const id = created.body.id as string;
    expect((await api(`/api/crew-templates/${id}`, { token: user })).body).toEqual(created.body);

    const body = { name: 'plain', steps: [{ id: 'a', kind: 'render', template: 'x' }], max_concurrent_runs: null };
    const replaced = await api(`/api/crew-templates/${id}`, { method: 'PUT', token: admin, body });
    expect(replaced.status, replaced.text).toBe(200);
    for (const field of Object.keys(fields)) expect(replaced.body).not.toHaveProperty(field);
    const read = (await api(`/api/crew-templates/${id}`, { token: user })).body;
    expect(read).toEqual(replaced.body);
    const again = await api(`/api/crew-templates/${id}`, {
      method: 'PUT',
      token: admin,
      body: { ...body, run_timeout_seconds: 5 },
    });
    expect(again.body).toMatchObject({ run_timeout_seconds: 5 });
    expect(again.body).not.toHaveProperty('max_concurrent_runs');
  });

  it('422 with the bounds and types pydantic answers', async () => {
    expect(detail(await post({ max_concurrent_runs: 0, run_timeout_seconds: 604_801 }))).toEqual([
      [['body', 'max_concurrent_runs'], 'greater_than_equal', { ge: 1 }],
      [['body', 'run_timeout_seconds'], 'less_than_equal', { le: 604_800 }],
    ]);
    expect(detail(await post({ max_concurrent_runs: 1001, run_timeout_seconds: 0 }))).toEqual([
      [['body', 'max_concurrent_runs'], 'less_than_equal', { le: 1000 }],
      [['body', 'run_timeout_seconds'], 'greater_than_equal', { ge: 1 }],
    ]);
    expect(detail(await post({ max_concurrent_runs: 'two', run_timeout_seconds: 1.5, concurrency_key: '' }))).toEqual([
      [['body', 'max_concurrent_runs'], 'int_parsing', null],
      [['body', 'concurrency_key'], 'string_too_short', { min_length: 1 }],
      [['body', 'run_timeout_seconds'], 'int_from_float', null],
    ]);
    expect(detail(await post({ max_concurrent_runs: [1], concurrency_key: 7 }))).toEqual([
      [['body', 'max_concurrent_runs'], 'int_type', null],
      [['body', 'concurrency_key'], 'string_type', null],
    ]);
    // lax conversions as pydantic's: "2" is 2
    expect((await post({ max_concurrent_runs: '2' })).body).toMatchObject({ max_concurrent_runs: 2 });
  });

  it('422 value_error for a concurrency_key without max_concurrent_runs, or naming an unknown variable or a step', async () => {
    const alone = await post({ concurrency_key: 'all' });
    expect(detail(alone)).toEqual([[['body', 'concurrency_key'], 'value_error', expect.anything()]]);
    expect(alone.body.detail[0].msg).toMatch(/needs max_concurrent_runs/);
    const refs = await post({
      max_concurrent_runs: 1,
      variables: [{ name: 'customer' }],
      concurrency_key: '{{customer}} {{nobody}} {{steps.a.output}} {{ 1 }}',
    });
    expect(detail(refs).map(([loc, type]) => [loc, type])).toEqual([
      [['body', 'concurrency_key'], 'value_error'],
      [['body', 'concurrency_key'], 'value_error'],
      [['body', 'concurrency_key'], 'value_error'],
    ]);
    expect(refs.body.detail.map((d: { msg: string }) => d.msg)).toEqual([
      expect.stringMatching(/unknown variable 'nobody'/),
      expect.stringMatching(/step 'a'/),
      expect.stringMatching(/unknown placeholder/),
    ]);
  });
});

describe('what limits cost (DynamoDB calls of one delivery)', () => {
  const chain: Step[] = [
    { id: 'a', kind: 'render', template: 'A' },
    { id: 'b', kind: 'render', template: 'B={{steps.a.output}}' },
  ];
  const timers: RunTimer = { after: async () => undefined };
  const steps: StepRunner = { execute: async (step) => ({ ok: true, output: step.id }) };

  /** A run inserted directly (no message: only this test's worker executes it). */
  async function insertRun(fields: Partial<RunItem>): Promise<string> {
    const id = randomUUID();
    const createdAt = new Date().toISOString();
    const run = {
      correlation_id: id,
      template_id: randomUUID(),
      status: 'pending',
      values: {},
      created_by: 'limits-test',
      created_at: createdAt,
      started_at: null,
      finished_at: null,
      event_count: 1,
      error: null,
      steps: chain,
      expires_at: Math.floor(Date.now() / 1000) + 3600,
      ...fields,
    } as RunItem;
    const queued = {
      index: 0,
      correlation_id: id,
      type: 'run.queued' as const,
      timestamp: createdAt,
      message: 'queued',
    };
    await new DynamoRunStore(db(), table('crewRuns'), table('runLog'), eventsTable()).create(
      run,
      queued,
      runChange('pending', createdAt),
    );
    return id;
  }

  /** The DynamoDB calls of one delivery of run `id`, in order. */
  async function callsOf(id: string): Promise<string[]> {
    const counting = countingClient();
    const store = new DynamoRunStore(counting.db, table('crewRuns'), table('runLog'), eventsTable());
    const handler = createWorkerHandler(
      new CrewRunner(store, new DynamoSlotStore(counting.db, table('crewRuns')), steps, undefined, timers),
    );
    const now = String(Date.now());
    const record: SQSRecord = {
      messageId: randomUUID(),
      receiptHandle: randomUUID(),
      body: JSON.stringify({ correlation_id: id }),
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: now,
        SenderId: 'limits-test',
        ApproximateFirstReceiveTimestamp: now,
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:limits-test',
      awsRegion: 'us-east-1',
    };
    expect((await handler({ Records: [record] })).batchItemFailures).toEqual([]);
    counting.destroy();
    expect((await runOf(id)).status).toBe('succeeded');
    return counting.calls;
  }

  it('a run with a deadline and no limit makes the calls of any run: the read and one write', async () => {
    expect(await callsOf(await insertRun({ run_timeout_seconds: 60 }))).toEqual([
      'GetItemCommand',
      'TransactWriteItemsCommand',
    ]);
  });

  it('a run with a limit adds the line read, the take and the release (and the line again to wake the next)', async () => {
    const limit = { key: limitKeyOf(randomUUID(), null), max: 2 };
    // The first run of a key makes its slots' item (the conditional update finds none: a put).
    expect(await callsOf(await insertRun({ limit }))).toEqual([
      'GetItemCommand',
      'QueryCommand',
      'UpdateItemCommand',
      'PutItemCommand',
      'TransactWriteItemsCommand',
      'UpdateItemCommand',
      'QueryCommand',
    ]);
    expect(await callsOf(await insertRun({ limit }))).toEqual([
      'GetItemCommand',
      'QueryCommand',
      'UpdateItemCommand',
      'TransactWriteItemsCommand',
      'UpdateItemCommand',
      'QueryCommand',
    ]);
  });
});
