import { randomUUID } from 'node:crypto';
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { DynamoSlotStore } from '../../../functions/crews/runs/slot-store.js';
import { CrewRunner } from '../../../functions/crews/worker/runner.js';
import { StepExecutor } from '../../../functions/crews/worker/steps.js';
import { DynamoRunStore, type RunItem } from '../../../functions/crews/runs/run-store.js';
import { createWorkerHandler } from '../../../functions/crews/worker/worker.js';
import { OutboundHttp } from '../../../shared/adapters/outbound-http.js';
import { storeUnqueuedRun } from '../../support/pending-run.js';
import { db, table } from '../helpers.js';
import { provided } from '../provided.js';

const slots = () => new DynamoSlotStore(db(), table('crewRuns'));

const store = () =>
  new DynamoRunStore(db(), table('crewRuns'), table('runLog'), {
    tableName: table('domainEvents'),
    ttlDays: 30,
    source: `dpm/${provided('stage')}`,
  });

/** A never-queued run of `steps` (the test delivers it to the handler itself). */
const insertRun = (steps: RunItem['steps']): Promise<string> =>
  storeUnqueuedRun(
    db(),
    { crewRuns: table('crewRuns'), runLog: table('runLog') },
    { name: 'deadline', principal: 'dpm:test-deadline' },
    steps,
  );

const event = (id: string): SQSEvent => ({
  Records: [
    {
      messageId: randomUUID(),
      receiptHandle: 'r',
      body: JSON.stringify({ correlation_id: id }),
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '0',
        SenderId: 'x',
        ApproximateFirstReceiveTimestamp: '0',
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:0:q',
      awsRegion: 'us-east-1',
    },
  ],
});

const lambdaContext = (remainingMs: () => number) => ({ getRemainingTimeInMillis: remainingMs }) as unknown as Context;

describe('a run longer than one Lambda invocation', () => {
  it('stops before a step that might not finish in time, is queued again, and resumes there', async () => {
    const id = await insertRun([
      { id: 'first', kind: 'render', template: 'one' },
      { id: 'slow', kind: 'wait', seconds: 30 },
      { id: 'last', kind: 'render', template: 'three' },
    ]);
    const requeued: string[] = [];
    const runner = new CrewRunner(store(), slots(), new StepExecutor(new OutboundHttp([]), undefined));
    const handler = createWorkerHandler(runner, { send: async (cid) => void requeued.push(cid) });

    // 20 s left: enough for the render step, not for the 30 s wait (+ margin)
    const result = await handler(
      event(id),
      lambdaContext(() => 20_000),
    );
    expect(result.batchItemFailures).toEqual([]);
    expect(requeued).toEqual([id]);
    const midway = await store().allLogEntries(id);
    expect(midway.map((e) => [e.type, e.step_id ?? null])).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'first'],
      ['step.completed', 'first'],
    ]);
    expect((await store().get(id))?.status).toBe('running');

    // the next delivery has time (a 30 s wait is too slow for a test: give it a fast twin)
    const fast = new CrewRunner(store(), slots(), {
      execute: async (step) => ({ ok: true, output: step.kind === 'wait' ? null : 'x' }),
    });
    const again = createWorkerHandler(fast, { send: async (cid) => void requeued.push(cid) });
    expect(
      (
        await again(
          event(id),
          lambdaContext(() => 120_000),
        )
      ).batchItemFailures,
    ).toEqual([]);
    const events = await store().allLogEntries(id);
    expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'step.started').map((e) => e.step_id)).toEqual(['first', 'slow', 'last']);
    expect(events.at(-1)?.type).toBe('run.completed');
    expect(requeued).toEqual([id]);
  });

  it('without a deadline (the local platform) runs to the end in one delivery', async () => {
    const id = await insertRun([
      { id: 'a', kind: 'render', template: 'x' },
      { id: 'b', kind: 'wait', seconds: 0 },
    ]);
    const runner = new CrewRunner(store(), slots(), new StepExecutor(new OutboundHttp([]), undefined));
    expect(await runner.process(id)).toBe('done');
    expect((await store().get(id))?.status).toBe('succeeded');
  });
});
