import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoRunStore } from '../../functions/crews/store.js';

/**
 * A crew run stored as E2 leaves it (its `run.queued` event written) but never queued: no
 * worker takes it, so it stays `pending` for as long as a test needs (cancelling it is the
 * only change). Answers its correlation id.
 */
export async function storeUnqueuedRun(
  db: DynamoDBDocumentClient,
  tables: { crewRuns: string; events: string },
  owner: { name: string; principal: string },
): Promise<string> {
  const id = randomUUID();
  const now = new Date().toISOString();
  await new DynamoRunStore(db, tables.crewRuns, tables.events).create(
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
      steps: [],
      expires_at: Math.floor(Date.now() / 1000) + 3600,
    },
    { index: 0, correlation_id: id, type: 'run.queued', timestamp: now, message: 'queued' },
    { type: 'crew.run.queued', actor: owner.name, at: now },
  );
  return id;
}
