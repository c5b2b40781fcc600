import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FullBatchFailureError } from '@aws-lambda-powertools/batch';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoSlotStore } from '../../../functions/crews/runs/slot-store.js';
import { CrewRunner, RUN_LEASE_MS, type RunTimer, type StepRunner } from '../../../functions/crews/worker/runner.js';
import type { RunLogEntry } from '../../../functions/crews/runs/run-schemas.js';
import type { Step } from '../../../functions/crews/templates/template-schemas.js';
import { runChange } from '../../../functions/crews/events.js';
import { MAX_EVENT_DATA_BYTES } from '../../../functions/crews/limits.js';
import { jsonBytes } from '../../../shared/json.js';
import { storedEvent } from '../../../shared/events/events-table.js';
import type { DomainEvent } from '../../../shared/events/types.js';
import { StepExecutor } from '../../../functions/crews/worker/steps.js';
import {
  DynamoRunStore,
  type RunItem,
  type RunStore,
  type RunUpdate,
} from '../../../functions/crews/runs/run-store.js';
import { createWorkerHandler } from '../../../functions/crews/worker/worker.js';
import type { SqsHandler } from '../../../shared/aws/lambda.js';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { OutboundHttp } from '../../../shared/adapters/outbound-http.js';
import { eventually, notYet } from '../../support/eventually.js';
import { adminPsk, api, db, slug, table, token } from '../helpers.js';
import { countingClient } from '../crew-support.js';
import { provided } from '../provided.js';

// ---------------------------------------------------------------------------------------
// The suite's DynamoDB Local, and runs inserted directly (no SQS message), so that only
// the handlers these tests build ever execute them.
// ---------------------------------------------------------------------------------------

const runsTable = () => physicalTableName(provided('stage'), TABLES.crewRuns);
const eventsTable = () => physicalTableName(provided('stage'), TABLES.runLog);
/** Where the runs' domain events go (the outbox of their writes). */
const domainEvents = () => ({ tableName: table('domainEvents'), ttlDays: 30, source: `dpm/${provided('stage')}` });

let store: RunStore;

/** A store that dies once, around the first event `crashAt` picks. */
class CrashingStore extends DynamoRunStore {
  crashed = false;
  /** What each write held (the event types, in order), crashed ones included. */
  readonly writes: string[][] = [];
  /** Crashes at the `write`-th append (0-based), before or after it is written. */
  constructor(
    private readonly write: number,
    private readonly when: 'after-write' | 'before-write',
  ) {
    super(db(), runsTable(), eventsTable(), domainEvents());
  }

  override async append(
    run: RunItem,
    written: RunLogEntry | readonly RunLogEntry[],
    ...rest: Parameters<DynamoRunStore['append']> extends [unknown, unknown, ...infer R] ? R : never
  ): Promise<boolean> {
    const events = Array.isArray(written) ? written : [written as RunLogEntry];
    const crash = !this.crashed && this.writes.length === this.write;
    this.writes.push(events.map((e) => (e.step_id ? `${e.type}:${e.step_id}` : e.type)));
    if (crash && this.when === 'before-write') {
      this.crashed = true;
      throw new Error(`injected crash before write ${this.write}`);
    }
    const ok = await super.append(run, events, ...rest);
    if (ok && crash) {
      this.crashed = true;
      throw new Error(`injected crash after write ${this.write}`);
    }
    return ok;
  }
}

/** Counts how often each step is executed, across every delivery that shares it. */
function counting(inner: StepRunner) {
  const counts: Record<string, number> = {};
  const runner: StepRunner = {
    execute: (step, ctx) => {
      counts[step.id] = (counts[step.id] ?? 0) + 1;
      return inner.execute(step, ctx);
    },
  };
  return { runner, counts };
}

const executor = (allowedHosts: string[] = ['127.0.0.1']) =>
  new StepExecutor(new OutboundHttp(allowedHosts), undefined);

async function insertRun(steps: unknown, values: Record<string, unknown> = {}): Promise<string> {
  const id = randomUUID();
  const at = new Date().toISOString();
  const run = {
    correlation_id: id,
    template_id: randomUUID(),
    status: 'pending',
    values,
    created_by: 'worker-test',
    created_at: at,
    started_at: null,
    finished_at: null,
    event_count: 1,
    error: null,
    steps,
    expires_at: Math.floor(Date.now() / 1000) + 86_400,
  } as RunItem;
  await store.create(
    run,
    {
      index: 0,
      correlation_id: id,
      type: 'run.queued',
      timestamp: at,
      message: 'queued by the worker test',
      data: { template_id: run.template_id, values },
    },
    { type: 'crew.run.queued', actor: 'worker-test', at },
  );
  return id;
}

let messageNo = 0;
function sqsRecord(body: string, receiveCount = 1): SQSRecord {
  const now = String(Date.now());
  return {
    messageId: `msg-${++messageNo}-${randomUUID()}`,
    receiptHandle: `rh-${randomUUID()}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: now,
      SenderId: 'worker-test',
      ApproximateFirstReceiveTimestamp: now,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:worker-test',
    awsRegion: 'us-east-1',
  };
}
const runMessage = (id: string) => sqsRecord(JSON.stringify({ correlation_id: id }));

/**
 * One Lambda invocation with these records; answers the message ids to be delivered
 * again (a batch where every record failed makes Powertools throw: all of them).
 */
async function deliver(handler: SqsHandler, records: SQSRecord[]): Promise<string[]> {
  try {
    const res = await handler({ Records: records });
    return res.batchItemFailures.map((f) => f.itemIdentifier);
  } catch (err) {
    if (err instanceof FullBatchFailureError) return records.map((r) => r.messageId);
    throw err;
  }
}

/** Messages the runners sent back to the queue (a run held by another delivery), newest last. */
const cameBack: { id: string; delaySeconds: number }[] = [];
const timers: RunTimer = { after: async (id, delaySeconds) => void cameBack.push({ id, delaySeconds }) };

const workerFor = (runs: RunStore, steps: StepRunner) =>
  createWorkerHandler(new CrewRunner(runs, new DynamoSlotStore(db(), runsTable()), steps, undefined, timers));

/**
 * The event-log invariants of docs/crews.md for a finished run: indices 0..n-1 without gap or
 * duplicate, one run.queued then one run.started, per executed step one step.started
 * followed by one step.completed / step.failed, one terminal event and it is last, and
 * the run's event_count equal to the number of events.
 */
/** The domain events recorded for run `id`, by sequence (read consistently from the events table). */
async function domainEventsOf(id: string): Promise<DomainEvent[]> {
  const out = await db().send(
    new QueryCommand({
      TableName: domainEvents().tableName,
      KeyConditionExpression: 'subject = :s',
      ExpressionAttributeValues: { ':s': `crew-runs/${id}` },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map(storedEvent);
}

async function finishedLog(id: string, stepIds: string[], outcome: 'succeeded' | 'failed') {
  const events = await store.allLogEntries(id);
  const run = await store.get(id);
  expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
  expect(events.every((e) => e.correlation_id === id)).toBe(true);
  expect(events[0]!.type).toBe('run.queued');
  expect(events[1]!.type).toBe('run.started');
  expect(events.filter((e) => e.type === 'run.started')).toHaveLength(1);
  const terminal = events.filter((e) => e.type === 'run.completed' || e.type === 'run.failed');
  expect(terminal).toHaveLength(1);
  expect(events.at(-1)).toEqual(terminal[0]);
  expect(terminal[0]!.type).toBe(outcome === 'succeeded' ? 'run.completed' : 'run.failed');
  for (const stepId of stepIds) {
    const mine = events.filter((e) => e.step_id === stepId);
    expect(
      mine.filter((e) => e.type === 'step.started'),
      `step.started of ${stepId}`,
    ).toHaveLength(1);
    expect(
      mine.filter((e) => e.type === 'step.completed' || e.type === 'step.failed'),
      `end of ${stepId}`,
    ).toHaveLength(1);
    expect(mine[0]!.type).toBe('step.started');
  }
  // Steps run in their declared order.
  const started = events.filter((e) => e.type === 'step.started').map((e) => e.step_id);
  expect(started).toEqual(stepIds.slice(0, started.length));
  expect(run!.status).toBe(outcome);
  expect(run!.event_count).toBe(events.length);
  expect(run!.started_at).toEqual(expect.any(String));
  expect(run!.finished_at).toEqual(expect.any(String));
  return { events, run: run!, terminal: terminal[0]! };
}

/** Three render steps, each using the one before. */
const chain: Step[] = [
  { id: 'a', kind: 'render', template: 'A={{x}}' },
  { id: 'b', kind: 'render', template: 'B={{steps.a.output}}' },
  { id: 'c', kind: 'render', template: 'C={{steps.b.output}}' },
];
const chainOutputs = { a: 'A=X', b: 'B=A=X', c: 'C=B=A=X' };

// ---------------------------------------------------------------------------------------
// A local HTTP server for http steps (127.0.0.1 is an allowed host).
// ---------------------------------------------------------------------------------------

interface Hit {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
let server: Server;
let port: number;
const hits: Hit[] = [];
const hitsFor = (part: string) => hits.filter((h) => h.url.includes(part));

beforeAll(async () => {
  store = new DynamoRunStore(db(), runsTable(), eventsTable(), domainEvents());
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const url = req.url ?? '';
      hits.push({ method: req.method ?? '', url, headers: req.headers, body });
      if (url.startsWith('/echo/')) {
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.end(JSON.stringify({ received: { method: req.method, url, body } }));
      } else if (url.startsWith('/text/')) {
        res.setHeader('content-type', 'text/plain');
        res.end('plain text');
      } else if (url.startsWith('/fail/')) {
        res.statusCode = 500;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: 'boom' }));
      } else if (url.startsWith('/redirect/')) {
        res.statusCode = 302;
        res.setHeader('location', url.replace('/redirect/', '/target/'));
        res.end();
      } else {
        res.end('target');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

// ---------------------------------------------------------------------------------------

describe('crew worker: duplicate deliveries', () => {
  it('a message delivered twice in a row runs the crew once and the second delivery writes nothing', async () => {
    const id = await insertRun(chain, { x: 'X' });
    const { runner, counts } = counting(executor());
    const handler = workerFor(store, runner);
    const message = runMessage(id);

    expect(await deliver(handler, [message])).toEqual([]);
    const first = await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
    expect(first.events.map((e) => [e.type, e.step_id])).toEqual([
      ['run.queued', undefined],
      ['run.started', undefined],
      ['step.started', 'a'],
      ['step.completed', 'a'],
      ['step.started', 'b'],
      ['step.completed', 'b'],
      ['step.started', 'c'],
      ['step.completed', 'c'],
      ['run.completed', undefined],
    ]);
    expect(first.events.filter((e) => e.type === 'step.completed').map((e) => e.data)).toEqual([
      { output: 'A=X' },
      { output: 'B=A=X' },
      { output: 'C=B=A=X' },
    ]);
    expect(first.terminal.data).toEqual({ outputs: chainOutputs });

    expect(await deliver(handler, [message])).toEqual([]);
    const second = await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
    expect(second.events).toEqual(first.events);
    expect(second.run).toEqual(first.run);
    expect(counts).toEqual({ a: 1, b: 1, c: 1 });
  });

  it('concurrent deliveries of the same message (separate workers) leave one valid event log', async () => {
    const steps: Step[] = [
      { id: 'a', kind: 'render', template: 'A={{x}}' },
      { id: 'pause', kind: 'wait', seconds: 0.05 },
      { id: 'b', kind: 'render', template: 'B={{steps.a.output}}' },
      { id: 'c', kind: 'render', template: 'C={{steps.b.output}}' },
    ];
    const id = await insertRun(steps, { x: 'X' });
    const message = runMessage(id);
    const { runner, counts } = counting(executor());
    // Each handler is its own Lambda instance (a BatchProcessor is not shared).
    const handlers = Array.from({ length: 4 }, () => workerFor(store, runner));
    const failures = await Promise.all(handlers.map((h) => deliver(h, [message])));
    expect(failures).toEqual([[], [], [], []]);

    const { terminal } = await finishedLog(id, ['a', 'pause', 'b', 'c'], 'succeeded');
    expect(terminal.data).toEqual({ outputs: { a: 'A=X', pause: null, b: 'B=A=X', c: 'C=B=A=X' } });
    // One executor: the wait (I/O) ran once; a delivery that found the run held sent its message back.
    expect(counts.pause).toBe(1);
    for (const back of cameBack.filter((c) => c.id === id)) {
      expect(back.delaySeconds).toBeGreaterThanOrEqual(1);
      expect(back.delaySeconds).toBeLessThanOrEqual(RUN_LEASE_MS / 1000 + 1);
    }
  });

  it('two concurrent deliveries, repeated on several runs, never duplicate or skip an index', async () => {
    const ids = await Promise.all(Array.from({ length: 5 }, () => insertRun(chain, { x: 'X' })));
    await Promise.all(
      ids.map(async (id) => {
        const message = runMessage(id);
        const results = await Promise.all([
          deliver(workerFor(store, executor()), [message]),
          deliver(workerFor(store, executor()), [message]),
        ]);
        expect(results).toEqual([[], []]);
      }),
    );
    for (const id of ids) {
      const { terminal, events } = await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
      expect(events).toHaveLength(9);
      expect(terminal.data).toEqual({ outputs: chainOutputs });
    }
  });
});

/**
 * A render, a `wait` (I/O: its `step.started` is written before it runs) and a render
 * using the first: the worker writes it in two transactions, W0 = run.started and the
 * first step, with the wait's opening event; W1 = the wait's closing event, the last step
 * and run.completed.
 */
const mixed: Step[] = [
  { id: 'a', kind: 'render', template: 'A={{x}}' },
  { id: 'w', kind: 'wait', seconds: 0 },
  { id: 'b', kind: 'render', template: 'B={{steps.a.output}}' },
];
const mixedOutputs = { a: 'A=X', w: null, b: 'B=A=X' };

describe('crew worker: a delivery that dies half way', () => {
  it("writes a step's closing event with the next one's opening event, and before a step with I/O", async () => {
    const id = await insertRun(mixed, { x: 'X' });
    const recording = new CrashingStore(-1, 'after-write');
    expect(await deliver(workerFor(recording, executor()), [runMessage(id)])).toEqual([]);
    expect(recording.writes).toEqual([
      ['run.started', 'step.started:a', 'step.completed:a', 'step.started:w'],
      ['step.completed:w', 'step.started:b', 'step.completed:b', 'run.completed'],
    ]);
    const { terminal } = await finishedLog(id, ['a', 'w', 'b'], 'succeeded');
    expect(terminal.data).toEqual({ outputs: mixedOutputs });
  });

  it.each([
    // nothing of the first delivery was written: all again (the render is pure)
    [0, 'before-write', 1, { a: 2, w: 1, b: 1 }],
    // the wait was started, not run: it runs once, in the redelivery, not started again
    [0, 'after-write', 5, { a: 1, w: 1, b: 1 }],
    // the wait ran but its closing write was lost: it runs again, not started again
    [1, 'before-write', 5, { a: 1, w: 2, b: 2 }],
    // everything was written: the redelivery writes and runs nothing
    [1, 'after-write', 9, { a: 1, w: 1, b: 1 }],
  ] as const)(
    'crash at write %i (%s): the redelivery resumes from the log, no event twice',
    async (write, when, halfLength, expected) => {
      const id = await insertRun(mixed, { x: 'X' });
      const { runner, counts } = counting(executor());
      const crashing = new CrashingStore(write, when);
      const message = runMessage(id);
      const bystander = runMessage(randomUUID()); // an unknown run: acknowledged
      expect(await deliver(workerFor(crashing, runner), [message, bystander])).toEqual([message.messageId]);
      expect(crashing.crashed).toBe(true);

      const half = await store.allLogEntries(id);
      expect(half).toHaveLength(halfLength);
      expect((await store.get(id))!.event_count).toBe(half.length);

      expect(
        await deliver(workerFor(store, runner), [
          { ...message, attributes: { ...message.attributes, ApproximateReceiveCount: '2' } },
        ]),
      ).toEqual([]);
      const { events, terminal } = await finishedLog(id, ['a', 'w', 'b'], 'succeeded');
      expect(events).toHaveLength(9);
      expect(events.slice(0, half.length)).toEqual(half);
      expect(counts).toEqual(expected);
      // The outputs of steps finished before the crash come from the log.
      expect(terminal.data).toEqual({ outputs: mixedOutputs });
    },
  );

  it('three render steps are one write from run.started to run.completed, with both status changes as domain events in it', async () => {
    const id = await insertRun(chain, { x: 'X' });
    const recording = new CrashingStore(-1, 'after-write');
    expect(await deliver(workerFor(recording, executor()), [runMessage(id)])).toEqual([]);
    expect(recording.writes.map((w) => w.length)).toEqual([8]);
    const { terminal, run } = await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
    expect(terminal.data).toEqual({ outputs: chainOutputs });
    // Written by the same transaction (the outbox), each at the run's next sequence, its data
    // the run as that change left it: started with no step done yet, succeeded with all three.
    const recorded = await domainEventsOf(id);
    expect(recorded.map((e) => [e.sequence, e.type])).toEqual([
      [1, 'dpm.crew.run.queued'],
      [2, 'dpm.crew.run.started'],
      [3, 'dpm.crew.run.succeeded'],
    ]);
    expect(recorded[1]!.data).toMatchObject({
      status: 'running',
      started_at: run.started_at,
      finished_at: null,
      event_count: 2,
      progress: { completed_steps: 0, total_steps: 3 },
    });
    expect(recorded[2]!.data).toMatchObject({
      status: 'succeeded',
      finished_at: run.finished_at,
      event_count: 9,
      progress: { completed_steps: 3, total_steps: 3, current_step: null },
    });
    expect(recorded[2]!.time).toBe(run.finished_at);
    expect(run.event_sequence).toBe(3);
  });
});

describe('crew worker: one executor at a time (a lease on the run)', () => {
  it('a run held by a worker that died comes back when the lease would lapse, and is then taken over', async () => {
    const id = await insertRun(mixed, { x: 'X' });
    const { runner, counts } = counting(executor());
    // A delivery took the run and died before its first event; its lease runs 1.5 s more.
    const now = Date.now();
    expect(await store.takeLease(id, { owner: 'a-dead-worker', now, until: now + 1_500 }, 1)).toBe(true);

    expect(await deliver(workerFor(store, runner), [runMessage(id)])).toEqual([]);
    expect(counts).toEqual({});
    expect(await store.allLogEntries(id)).toHaveLength(1);
    expect(cameBack.filter((c) => c.id === id).map((c) => c.delaySeconds)).toEqual([expect.any(Number)]);
    expect(cameBack.find((c) => c.id === id)!.delaySeconds).toBeLessThanOrEqual(3);

    await new Promise((r) => setTimeout(r, 1_600));
    expect(await deliver(workerFor(store, runner), [runMessage(id)])).toEqual([]);
    const { terminal, run } = await finishedLog(id, ['a', 'w', 'b'], 'succeeded');
    expect(terminal.data).toEqual({ outputs: mixedOutputs });
    expect(counts).toEqual({ a: 1, w: 1, b: 1 });
    expect(run.lease).toBeUndefined();
  });

  it("the store's lease: taken when free or lapsed, renewed and let go only by its holder, and another's event write refused while it runs", async () => {
    const id = await insertRun(chain, { x: 'X' });
    const run = (await store.get(id))!;
    const now = Date.now();
    const until = now + RUN_LEASE_MS;
    const started: RunLogEntry = {
      index: 1,
      correlation_id: id,
      type: 'run.started',
      timestamp: new Date(now).toISOString(),
      message: 'Run started',
    };
    const startedUpdate = { status: 'running' as const, started_at: started.timestamp };
    const change = runChange('running', started.timestamp);

    expect(await store.takeLease(id, { owner: 'one', now, until }, 1)).toBe(true);
    expect((await store.get(id))!.lease).toEqual({ owner: 'one', until });
    // Another delivery while it runs: no take, renewal, release or event write of its own.
    expect(await store.takeLease(id, { owner: 'two', now, until }, 1)).toBe(false);
    expect(await store.renewLease(id, 'two', until + 1)).toBeUndefined();
    await store.releaseLease(id, 'two');
    expect(await store.append(run, started, startedUpdate, change, { owner: 'two', now, until })).toBe(false);
    expect(await store.allLogEntries(id)).toHaveLength(1);
    // Its holder renews it and reads the run in the same call; a take at a count that moved is refused.
    expect(await store.renewLease(id, 'one', until + 5_000)).toMatchObject({
      correlation_id: id,
      status: 'pending',
      lease: { owner: 'one', until: until + 5_000 },
    });
    expect(await store.takeLease(id, { owner: 'one', now, until }, 2)).toBe(false);

    // Lapsed by the writer's clock: another delivery's event write takes it over; its holder lost it.
    const later = until + 5_001;
    expect(
      await store.append(run, started, startedUpdate, change, {
        owner: 'two',
        now: later,
        until: later + RUN_LEASE_MS,
      }),
    ).toBe(true);
    expect((await store.get(id))!.lease).toEqual({ owner: 'two', until: later + RUN_LEASE_MS });
    expect(await store.renewLease(id, 'one', later + RUN_LEASE_MS)).toBeUndefined();
    // Its holder lets it go: a run without a lease, which a delivery then finishes.
    await store.releaseLease(id, 'two');
    expect((await store.get(id))!.lease).toBeUndefined();
    expect(await deliver(workerFor(store, executor()), [runMessage(id)])).toEqual([]);
    const { terminal } = await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
    expect(terminal.data).toEqual({ outputs: chainOutputs });
  });

  /** The DynamoDB calls of one delivery of `message` (through a client of its own), in order. */
  async function callsOfDelivery(message: SQSRecord): Promise<string[]> {
    const counting = countingClient();
    const counted = new DynamoRunStore(counting.db, runsTable(), eventsTable(), domainEvents());
    expect(await deliver(workerFor(counted, executor()), [message])).toEqual([]);
    counting.destroy();
    return counting.calls;
  }

  it('one delivery of three render steps costs two DynamoDB calls: the run read, and one write that needs no lease', async () => {
    const id = await insertRun(chain, { x: 'X' });
    expect(await callsOfDelivery(runMessage(id))).toEqual(['GetItemCommand', 'TransactWriteItemsCommand']);
    const { run } = await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
    expect(run.lease).toBeUndefined();
  });

  it('a message carrying the new run (as E2 sends it) costs one call: the write', async () => {
    const id = await insertRun(chain, { x: 'X' });
    const carried = (await store.get(id))!;
    const message = sqsRecord(JSON.stringify({ correlation_id: id, run: carried }));
    expect(await callsOfDelivery(message)).toEqual(['TransactWriteItemsCommand']);
    const { terminal } = await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
    expect(terminal.data).toEqual({ outputs: chainOutputs });

    // Handed again once the run went on: the carried run is stale, its write is refused (the
    // renders computed again are pure), the run is read and found finished; nothing is written twice.
    const before = await store.allLogEntries(id);
    expect(await callsOfDelivery({ ...message, messageId: `again-${randomUUID()}` })).toEqual([
      'TransactWriteItemsCommand',
      'GetItemCommand',
    ]);
    expect(await store.allLogEntries(id)).toEqual(before);
    expect((await domainEventsOf(id)).map((e) => e.sequence)).toEqual([1, 2, 3]);
  });

  it('a stale carried run never runs a step with I/O again: the write before it is refused first', async () => {
    const tag = slug('carried');
    const steps: Step[] = [{ id: 'call', kind: 'http', method: 'GET', url: `http://127.0.0.1:${port}/echo/${tag}` }];
    const id = await insertRun(steps);
    const message = sqsRecord(JSON.stringify({ correlation_id: id, run: (await store.get(id))! }));
    expect(await deliver(workerFor(store, executor()), [message])).toEqual([]);
    await finishedLog(id, ['call'], 'succeeded');
    expect(hitsFor(tag)).toHaveLength(1);
    const before = await store.allLogEntries(id);
    expect(await deliver(workerFor(store, executor()), [{ ...message, messageId: `again-${randomUUID()}` }])).toEqual(
      [],
    );
    expect(hitsFor(tag)).toHaveLength(1);
    expect(await store.allLogEntries(id)).toEqual(before);
  });

  it('a carried run of another id, or not pending, is not used: the worker reads the run', async () => {
    const id = await insertRun(chain, { x: 'X' });
    const carried = (await store.get(id))!;
    // a message whose run says it is another (a malformed message): read, not trusted
    const other = sqsRecord(JSON.stringify({ correlation_id: id, run: { ...carried, correlation_id: randomUUID() } }));
    expect(await callsOfDelivery(other)).toEqual(['GetItemCommand', 'TransactWriteItemsCommand']);
    await finishedLog(id, ['a', 'b', 'c'], 'succeeded');
  });
});

describe('crew worker: a failing step', () => {
  it('a host outside the allow-list fails the step and the run; the message is acknowledged', async () => {
    const steps: Step[] = [
      { id: 'a', kind: 'render', template: 'ok' },
      { id: 'call', kind: 'http', method: 'GET', url: 'http://not-allowed.example/{{x}}' },
      { id: 'never', kind: 'render', template: 'unreachable' },
    ];
    const id = await insertRun(steps, { x: 'y' });
    const { runner, counts } = counting(executor(['127.0.0.1']));
    const handler = workerFor(store, runner);
    const message = runMessage(id);

    expect(await deliver(handler, [message])).toEqual([]);
    const { events, run, terminal } = await finishedLog(id, ['a', 'call'], 'failed');
    expect(events.map((e) => [e.type, e.step_id])).toEqual([
      ['run.queued', undefined],
      ['run.started', undefined],
      ['step.started', 'a'],
      ['step.completed', 'a'],
      ['step.started', 'call'],
      ['step.failed', 'call'],
      ['run.failed', undefined],
    ]);
    const failed = events[5]!;
    expect(failed.data).toEqual({
      error: expect.stringMatching(/not-allowed\.example.*not in CREW_HTTP_ALLOWED_HOSTS/),
    });
    expect(terminal.data).toEqual({ error: failed.data!.error });
    expect(run.error).toBe(failed.data!.error);
    expect(counts).toEqual({ a: 1, call: 1 });

    // Delivered again: nothing more is written and nothing re-executed.
    expect(await deliver(handler, [message])).toEqual([]);
    expect(await store.allLogEntries(id)).toEqual(events);
    expect(counts).toEqual({ a: 1, call: 1 });
  });

  it('a 500 from the called server fails the step with the status', async () => {
    const tag = slug('fail');
    const steps: Step[] = [
      { id: 'call', kind: 'http', method: 'POST', url: `http://127.0.0.1:${port}/fail/{{tag}}`, body: 'x' },
    ];
    const id = await insertRun(steps, { tag });
    expect(await deliver(workerFor(store, executor()), [runMessage(id)])).toEqual([]);

    const { events, run } = await finishedLog(id, ['call'], 'failed');
    const failed = events.find((e) => e.type === 'step.failed')!;
    expect(failed).toMatchObject({
      step_id: 'call',
      data: { error: `HTTP 500 from http://127.0.0.1:${port}/fail/${tag}` },
    });
    expect(run.error).toBe(`HTTP 500 from http://127.0.0.1:${port}/fail/${tag}`);
    expect(hitsFor(tag)).toHaveLength(1);
  });

  it('a run whose step.failed was written but not its run.failed is finished on redelivery without re-executing', async () => {
    // as a worker of an earlier version, which wrote one event at a time, could leave it
    const steps: Step[] = [{ id: 'call', kind: 'http', method: 'GET', url: 'http://nowhere.example/' }];
    const id = await insertRun(steps);
    const run = (await store.get(id))!;
    const at = new Date().toISOString();
    const error = 'host nowhere.example is not in CREW_HTTP_ALLOWED_HOSTS';
    expect(
      await store.append(
        run,
        [
          { index: 1, correlation_id: id, type: 'run.started', timestamp: at, message: 'started' },
          { index: 2, correlation_id: id, type: 'step.started', step_id: 'call', timestamp: at, message: 'started' },
          {
            index: 3,
            correlation_id: id,
            type: 'step.failed',
            step_id: 'call',
            timestamp: at,
            message: 'failed',
            data: { error },
          },
        ],
        { status: 'running', started_at: at },
      ),
    ).toBe(true);
    const { runner, counts } = counting(executor());
    expect(await deliver(workerFor(store, runner), [runMessage(id)])).toEqual([]);
    const { run: finished, terminal } = await finishedLog(id, ['call'], 'failed');
    expect(finished.error).toBe(error);
    expect(terminal).toMatchObject({ index: 4, data: { error } });
    expect(counts).toEqual({});
  });
});

describe('crew worker: messages it cannot use', () => {
  it('acknowledges a message for an unknown run without writing anything', async () => {
    const id = randomUUID();
    expect(await deliver(workerFor(store, executor()), [runMessage(id)])).toEqual([]);
    expect(await store.get(id)).toBeUndefined();
    expect(await store.allLogEntries(id)).toEqual([]);
  });

  it('reports malformed bodies as batch item failures, and only them', async () => {
    const malformed = [
      sqsRecord('not json'),
      sqsRecord('{}'),
      sqsRecord(JSON.stringify({ correlation_id: 42 })),
      sqsRecord(JSON.stringify({ correlation_id: 'too-short' })),
      sqsRecord(''),
      sqsRecord(JSON.stringify({ correlation_id: randomUUID(), timer: { step_id: 7 } })),
    ];
    const id = await insertRun([{ id: 'a', kind: 'render', template: 'fine' }]);
    const good = runMessage(id);
    const failures = await deliver(workerFor(store, executor()), [malformed[0]!, good, ...malformed.slice(1)]);
    expect(failures.sort()).toEqual(malformed.map((m) => m.messageId).sort());
    await finishedLog(id, ['a'], 'succeeded');
  });

  it('a malformed body alone fails the whole invocation', async () => {
    const bad = sqsRecord('{"correlation_id":');
    expect(await deliver(workerFor(store, executor()), [bad])).toEqual([bad.messageId]);
  });
});

describe('crew worker: http steps', () => {
  it('calls the rendered url with rendered headers and body; outputs {status, body} with JSON parsed', async () => {
    const user = slug('ada');
    const steps: Step[] = [
      { id: 'tok', kind: 'render', template: 'secret-{{user}}' },
      {
        id: 'call',
        kind: 'http',
        method: 'POST',
        url: `http://127.0.0.1:${port}/echo/{{user}}?n={{n}}`,
        headers: { 'X-Token': '{{steps.tok.output}}', 'Content-Type': 'application/json' },
        body: '{"user":"{{user}}","n":{{n}},"opts":{{opts}}}',
      },
      { id: 'plain', kind: 'http', method: 'GET', url: `http://127.0.0.1:${port}/text/{{user}}` },
      { id: 'use', kind: 'render', template: 'got {{steps.call.output}}' },
    ];
    const id = await insertRun(steps, { user, n: 5, opts: { deep: [true] } });
    expect(await deliver(workerFor(store, executor()), [runMessage(id)])).toEqual([]);
    const { terminal } = await finishedLog(id, ['tok', 'call', 'plain', 'use'], 'succeeded');

    const seen = hitsFor(user);
    expect(seen).toHaveLength(2);
    const post = seen.find((h) => h.method === 'POST')!;
    expect(post.url).toBe(`/echo/${user}?n=5`);
    expect(post.headers['x-token']).toBe(`secret-${user}`);
    expect(post.headers['content-type']).toBe('application/json');
    expect(post.body).toBe(`{"user":"${user}","n":5,"opts":{"deep":[true]}}`);
    const get = seen.find((h) => h.method === 'GET')!;
    expect(get.url).toBe(`/text/${user}`);
    expect(get.body).toBe('');

    const callOutput = {
      status: 200,
      body: { received: { method: 'POST', url: `/echo/${user}?n=5`, body: post.body } },
    };
    const outputs = (terminal.data as { outputs: Record<string, unknown> }).outputs;
    expect(outputs.call).toEqual(callOutput);
    expect(outputs.plain).toEqual({ status: 200, body: 'plain text' });
    expect(outputs.use).toBe(`got ${JSON.stringify(callOutput)}`);
  });

  it('does not follow a redirect: a 302 fails the step and the target is never called', async () => {
    const tag = slug('redir');
    const steps: Step[] = [
      { id: 'call', kind: 'http', method: 'GET', url: `http://127.0.0.1:${port}/redirect/${tag}` },
    ];
    const id = await insertRun(steps);
    expect(await deliver(workerFor(store, executor()), [runMessage(id)])).toEqual([]);
    const { events } = await finishedLog(id, ['call'], 'failed');
    expect(events.find((e) => e.type === 'step.failed')!.data).toEqual({
      error: `HTTP 302 from http://127.0.0.1:${port}/redirect/${tag}`,
    });
    expect(hitsFor(tag).map((h) => h.url)).toEqual([`/redirect/${tag}`]);
  });

  it('refuses the metadata address 169.254.169.254 even when it is on the allow-list', async () => {
    const steps: Step[] = [
      { id: 'meta', kind: 'http', method: 'GET', url: 'http://169.254.169.254/latest/meta-data/' },
    ];
    const id = await insertRun(steps);
    expect(await deliver(workerFor(store, executor(['169.254.169.254', '127.0.0.1'])), [runMessage(id)])).toEqual([]);
    const { events, run } = await finishedLog(id, ['meta'], 'failed');
    expect(events.find((e) => e.type === 'step.failed')!.data).toEqual({
      error: expect.stringMatching(/169\.254\.169\.254.*link-local or metadata/),
    });
    expect(run.error).toMatch(/link-local or metadata/);
  });
});

describe('crew worker: large event logs', () => {
  it('resumes from an event log larger than one Query answer (1 MB) and bounds run.completed', async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `big-${i}`);
    const id = await insertRun(ids.map((stepId) => ({ id: stepId, kind: 'render', template: 'not run again' })));
    const run = (await store.get(id))!;
    // Earlier deliveries completed every step with a large output (as stored before outputs
    // were bounded as JSON): 1.8 MB of events, and the delivery died before run.completed.
    const at = new Date().toISOString();
    const base = { correlation_id: id, timestamp: at };
    let index = 1;
    const append = async (event: Omit<RunLogEntry, 'index' | 'correlation_id' | 'timestamp'>, update?: RunUpdate) =>
      expect(await store.append(run, { ...base, index: index++, ...event }, update)).toBe(true);
    await append({ type: 'run.started', message: 'Run started' }, { status: 'running', started_at: at });
    for (const [i, stepId] of ids.entries()) {
      await append({ type: 'step.started', step_id: stepId, message: `Step ${stepId} started` });
      await append({
        type: 'step.completed',
        step_id: stepId,
        message: `Step ${stepId} completed`,
        data: { output: String(i).repeat(300_000) },
      });
    }

    const { runner, counts } = counting(executor());
    expect(await deliver(workerFor(store, runner), [runMessage(id)])).toEqual([]);
    const { events, terminal } = await finishedLog(id, ids, 'succeeded');
    expect(events).toHaveLength(2 + 2 * ids.length + 1);
    expect(counts).toEqual({});
    // The largest outputs give way to a note (they are in their step.completed events).
    const data = terminal.data as { outputs: Record<string, unknown> };
    expect(jsonBytes(data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    expect(data.outputs).toEqual({
      ...Object.fromEntries(
        ids
          .slice(0, 5)
          .map((stepId) => [stepId, `[omitted: 300002 bytes as JSON; see the step.completed event of step ${stepId}]`]),
      ),
      'big-5': '5'.repeat(300_000),
    });
  });
});

describe('crew runs through the platform', () => {
  it('a poison message is retried, dead-lettered, and its run ends with run.failed (abandoned)', async () => {
    const id = await insertRun(42);
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: provided('sqsEndpoint'),
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: provided('crewRunQueueUrl'),
        MessageBody: JSON.stringify({ correlation_id: id }),
      }),
    );
    sqs.destroy();

    const admin = { psk: adminPsk() };
    const run = await eventually(
      async () => {
        const res = await api<{ status: string; error: string | null; event_count: number }>(
          `/api/crew-runs/${id}`,
          admin,
        );
        expect(res.status).toBe(200);
        return res.body.status === 'failed' ? res.body : notYet(res.body);
      },
      50_000,
      `run ${id} failed`,
      500,
    );
    expect(run?.status).toBe('failed');
    expect(run!.error).toMatch(/abandoned/i);

    const events = await api<RunLogEntry[]>(`/api/events/${id}?start=0`, admin);
    expect(events.status).toBe(200);
    expect(events.body.map((e) => e.index)).toEqual(events.body.map((_, i) => i));
    // its first write never happened (the steps are unreadable): it never started
    expect(events.body.map((e) => e.type)).toEqual(['run.queued', 'run.failed']);
    expect(events.body.at(-1)!.data).toEqual({ error: run!.error });
    expect(run!.event_count).toBe(events.body.length);
  }, 60_000);

  async function runOverHttp(prompt: string, system?: string) {
    const admin = { psk: adminPsk() };
    const created = await api('/api/crew-templates', {
      method: 'POST',
      ...admin,
      body: {
        name: slug('llm-crew'),
        variables: [
          { name: 'topic', required: true },
          { name: 'tone', default: 'formal' },
        ],
        steps: [
          { id: 'intro', kind: 'render', template: 'about {{topic}}' },
          { id: 'ask', kind: 'llm', prompt, ...(system !== undefined ? { system } : {}) },
        ],
      },
    });
    expect(created.status).toBe(201);
    const user = await token(slug('crew-user'));
    const started = await api(`/api/crew-templates/${created.body.id}/run`, {
      method: 'POST',
      token: user,
      body: { values: { topic: 'owls' } },
    });
    expect(started.status).toBe(202);
    const id = started.body.correlation_id as string;
    const events = await eventually(
      async () => {
        const res = await api<RunLogEntry[]>(`/api/events/${id}?start=0`, { token: user });
        expect(res.status).toBe(200);
        const ended = res.body.some((e) => e.type === 'run.completed' || e.type === 'run.failed');
        return ended ? res.body : notYet(res.body.map((e) => e.type));
      },
      20_000,
      `run ${id} ended`,
      200,
    );
    expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
    const run = await api(`/api/crew-runs/${id}`, { token: user });
    expect(run.status).toBe(200);
    return { events, run: run.body };
  }

  it('an llm step sends the rendered prompt and system to the configured model and outputs its reply', async () => {
    const { events, run } = await runOverHttp('Write {{steps.intro.output}}', 'Be {{tone}}');
    expect(events.map((e) => [e.type, e.step_id])).toEqual([
      ['run.queued', undefined],
      ['run.started', undefined],
      ['step.started', 'intro'],
      ['step.completed', 'intro'],
      ['step.started', 'ask'],
      ['step.completed', 'ask'],
      ['run.completed', undefined],
    ]);
    // The fake model answers "[<model>](<system>) <last user message>".
    const reply = '[test-model](Be formal) Write about owls';
    expect(provided('llmModel')).toBe('test-model');
    // What the step sent, rendered, and which provider and model answered with what usage.
    expect(events[4]!.data).toEqual({ input: { text: 'Write about owls', system: 'Be formal' } });
    expect(events[5]!.data).toEqual({
      output: reply,
      provider: 'openai',
      model: 'test-model',
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    expect(events[6]!.data).toEqual({ outputs: { intro: 'about owls', ask: reply } });
    expect(run).toMatchObject({
      status: 'succeeded',
      event_count: 7,
      error: null,
      values: { topic: 'owls', tone: 'formal' },
    });
  });

  it('an llm step whose model call fails ends in step.failed with the model error, then run.failed', async () => {
    const { events, run } = await runOverHttp('Please FAIL on {{topic}}');
    expect(events.map((e) => [e.type, e.step_id])).toEqual([
      ['run.queued', undefined],
      ['run.started', undefined],
      ['step.started', 'intro'],
      ['step.completed', 'intro'],
      ['step.started', 'ask'],
      ['step.failed', 'ask'],
      ['run.failed', undefined],
    ]);
    expect(events[5]!.data).toEqual({ error: expect.stringMatching(/500.*model overloaded/) });
    expect(events[6]!.data).toEqual({ error: events[5]!.data!.error });
    expect(run).toMatchObject({ status: 'failed', error: events[5]!.data!.error, event_count: 7 });
  });
});
