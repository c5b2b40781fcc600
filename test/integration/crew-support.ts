import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { emulatorOptions } from '../../shared/aws/client-options.js';
import { eventually } from '../support/eventually.js';
import { api, db, slug, table } from './helpers.js';
import { provided } from './provided.js';

/**
 * A document client of its own on the suite's DynamoDB Local that records the name of each
 * command it sends (a store built on it: what one delivery costs, in order); `destroy` when done.
 */
export function countingClient(): { db: DynamoDBDocumentClient; calls: string[]; destroy: () => void } {
  const base = new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') }));
  const calls: string[] = [];
  base.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'countCalls' },
  );
  return { db: DynamoDBDocumentClient.from(base), calls, destroy: () => base.destroy() };
}

/** An E13 event as the crew tests read it. */
export type CrewEventSeen = {
  index: number;
  type: string;
  step_id?: string;
  timestamp: string;
  data?: Record<string, any>;
};

/** Declares a crew template of `steps` as `admin` (a Bearer token); answers its id. */
export async function crewTemplate(admin: string, steps: unknown[], prefix = 'crew'): Promise<string> {
  const res = await api('/api/crew-templates', { method: 'POST', token: admin, body: { name: slug(prefix), steps } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

/** Runs a template (E2, no values) as `starter`; answers the correlation id. */
export async function startRun(templateId: string, starter: string): Promise<string> {
  const res = await api(`/api/crew-templates/${templateId}/run`, {
    method: 'POST',
    token: starter,
    body: { values: {} },
  });
  expect(res.status, res.text).toBe(202);
  return res.body.correlation_id as string;
}

/** The run once it succeeded or failed, read as `reader` (a hang guard of 20 s). */
export const finishedRun = <T extends { status: string } = any>(id: string, reader: string): Promise<T> =>
  eventually(
    async () => {
      const res = await api<T>(`/api/crew-runs/${id}`, { token: reader });
      expect(res.status).toBe(200);
      return ['succeeded', 'failed'].includes(res.body.status) ? res.body : undefined;
    },
    20_000,
    `run ${id} finished`,
  );

/** Every run of `GET /api/crew-runs?<query>` as `reader`, following X-Next-Cursor (at most 100 pages). */
export async function listedRuns<T = any>(query: string, reader: string): Promise<T[]> {
  const runs: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: Awaited<ReturnType<typeof api<T[]>>> = await api<T[]>(
      `/api/crew-runs?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token: reader },
    );
    expect(res.status, res.text).toBe(200);
    runs.push(...res.body);
    cursor = res.headers.get('x-next-cursor');
    pages++;
  } while (cursor && pages < 100);
  return runs;
}

/** Every event of a run so far, read as `reader`. */
export const runEvents = async (id: string, reader: string): Promise<CrewEventSeen[]> =>
  (await api<CrewEventSeen[]>(`/api/events/${id}?start=0`, { token: reader })).body;

/** `[type, step_id]` of each event (null without a step). */
export const kindsOf = (events: readonly { type: string; step_id?: string }[]) =>
  events.map((e) => [e.type, e.step_id ?? null]);

/*
 * Seeding: what a test that would otherwise wait for time to pass (an approval's expiry, a
 * run's deadline) writes instead, straight into the platform's tables, before it hands the
 * run to the worker as the timer the worker armed would (`toCrewWorker`). The writes carry
 * no new stamp, so they are no domain event; the runs have no webhook of their own.
 */

/** Puts a message on this platform's crew-run queue, as the service (or a timer it armed) would. */
export async function toCrewWorker(body: {
  correlation_id: string;
  timer?: { step_id: string; expires_at: string };
}): Promise<void> {
  const client = new SQSClient({
    region: 'us-east-1',
    endpoint: provided('sqsEndpoint'),
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    await client.send(
      new SendMessageCommand({ QueueUrl: provided('crewRunQueueUrl'), MessageBody: JSON.stringify(body) }),
    );
  } finally {
    client.destroy();
  }
}

/** Rewrites the `timestamp` of run log entry `index` of run `id` (when it happened, as the runner reads it). */
export async function seedEntryTime(id: string, index: number, timestamp: string): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: table('runLog'),
      Key: { correlation_id: id, index },
      UpdateExpression: 'SET #t = :t',
      ConditionExpression: 'attribute_exists(correlation_id)',
      ExpressionAttributeNames: { '#t': 'timestamp' },
      ExpressionAttributeValues: { ':t': timestamp },
    }),
  );
}

/**
 * Moves the expiry of the approval step a run waits at (its `step.waiting`, entry `index`)
 * to `expiresAt`: in the entry, which the worker and the decision endpoint read, and in the
 * run's `waiting`, which the approvers' inbox reads.
 */
export async function seedApprovalExpiry(
  id: string,
  waiting: Pick<CrewEventSeen, 'index' | 'data'>,
  expiresAt: string,
): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: table('runLog'),
      Key: { correlation_id: id, index: waiting.index },
      UpdateExpression: 'SET data_json = :d',
      ConditionExpression: 'attribute_exists(correlation_id)',
      ExpressionAttributeValues: { ':d': JSON.stringify({ ...waiting.data, expires_at: expiresAt }) },
    }),
  );
  await db().send(
    new UpdateCommand({
      TableName: table('crewRuns'),
      Key: { correlation_id: id },
      UpdateExpression: 'SET #w.#e = :e',
      ConditionExpression: '#s = :waiting',
      ExpressionAttributeNames: { '#w': 'waiting', '#e': 'expires_at', '#s': 'status' },
      ExpressionAttributeValues: { ':e': expiresAt, ':waiting': 'waiting' },
    }),
  );
}
