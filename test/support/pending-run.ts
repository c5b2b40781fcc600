import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Step } from '../../functions/crews/templates/template-schemas.js';
import { DynamoRunStore } from '../../functions/crews/runs/run-store.js';
import type { EventsTable } from '../../shared/events/events-table.js';

/** The stage's domain events table beside its crew-runs table (`dpm-<stage>-crew-runs`): where runs' events go. */
function eventsTableBeside(crewRuns: string): EventsTable {
  const stage = crewRuns.replace(/^dpm-/, '').replace(/-crew-runs$/, '');
  return { tableName: `dpm-${stage}-domain-events`, ttlDays: 30, source: `dpm/${stage}` };
}

/** The run store of the tables a test names. */
const runStoreOf = (db: DynamoDBDocumentClient, tables: { crewRuns: string; runLog: string }) =>
  new DynamoRunStore(db, tables.crewRuns, tables.runLog, eventsTableBeside(tables.crewRuns));

/**
 * A crew run stored as E2 leaves it (its `run.queued` event written) but never queued: no
 * worker takes it, so it stays `pending` for as long as a test needs (cancelling it is the
 * only change, unless a test queues it). Answers its correlation id.
 */
export async function storeUnqueuedRun(
  db: DynamoDBDocumentClient,
  tables: { crewRuns: string; runLog: string },
  owner: { name: string; principal: string },
  steps: Step[] = [],
): Promise<string> {
  const id = randomUUID();
  const now = new Date().toISOString();
  await runStoreOf(db, tables).create(
    {
      correlation_id: id,
      template_id: randomUUID(),
      status: 'pending',
      values: {},
      created_by: owner.name,
      created_by_principal: owner.principal,
      created_at: now,
      started_at: null,
      finished_at: null,
      event_count: 1,
      error: null,
      steps,
      expires_at: Math.floor(Date.now() / 1000) + 3600,
    },
    { index: 0, correlation_id: id, type: 'run.queued', timestamp: now, message: 'queued' },
    { type: 'crew.run.queued', actor: owner.name, at: now },
  );
  return id;
}

/**
 * A run of `owner`'s parked at its `approval` step `stepId` as the worker leaves it
 * (`step.waiting` written, status `waiting`, the step expiring in an hour), written
 * directly: a decision on it needs no worker. Answers its correlation id.
 */
export async function storeWaitingRun(
  db: DynamoDBDocumentClient,
  tables: { crewRuns: string; runLog: string },
  owner: { name: string; principal: string },
  stepId = 'gate',
  role = 'approver',
): Promise<string> {
  const id = await storeUnqueuedRun(db, tables, owner, [
    { id: stepId, kind: 'approval', prompt: 'go?', role, timeout_seconds: 3600 },
  ]);
  const store = runStoreOf(db, tables);
  const now = new Date().toISOString();
  const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
  const appended = await store.append(
    (await store.get(id))!,
    [
      { index: 1, correlation_id: id, type: 'run.started', timestamp: now, message: 'started' },
      { index: 2, correlation_id: id, type: 'step.started', step_id: stepId, timestamp: now, message: 'started' },
      {
        index: 3,
        correlation_id: id,
        type: 'step.waiting',
        step_id: stepId,
        timestamp: now,
        message: 'waiting',
        data: { prompt: 'go?', role, expires_at: expiresAt },
      },
    ],
    {
      status: 'waiting',
      started_at: now,
      current_step: stepId,
      completed_steps: 0,
      // as the runner writes it: the approvers' inbox lists it, the role's holders may read it
      waiting: { step_id: stepId, role, prompt: 'go?', since: now, expires_at: expiresAt },
      approval_roles: [role],
    },
    { type: 'crew.run.waiting', actor: null, at: now },
  );
  if (!appended) throw new Error(`crew run ${id}: could not park it at its approval step`);
  return id;
}
