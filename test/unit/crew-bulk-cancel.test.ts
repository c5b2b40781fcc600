import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_BULK_CANCEL } from '../../functions/crews/limits.js';
import type { RunLogEntry } from '../../functions/crews/runs/run-schemas.js';
import { RunService } from '../../functions/crews/runs/run-service.js';
import type { TemplateService } from '../../functions/crews/templates/template-service.js';
import {
  DynamoRunStore,
  type OpenRunFilter,
  type RunItem,
  type RunStore,
} from '../../functions/crews/runs/run-store.js';
import type { Caller } from '../../shared/auth/caller.js';

/**
 * Bulk cancel (docs/crews.md) over a fake run store: whose runs it reads, and how a run that
 * moves on between the read and its cancel is counted. The store's Queries over mocked
 * DynamoDB: which index each caller's read uses.
 */

const caller = (name: string, roles: string[] = []): Caller => ({
  principal: `["https://issuer.test","sub-${name}"]`,
  name,
  roles: new Set(roles),
  via: 'bearer',
});
const ADA = caller('ada');
const ROOT = caller('root', ['admin']);

const runItem = (id: string, status: RunItem['status'], eventCount = 1): RunItem => ({
  correlation_id: id.padEnd(36, '0'),
  template_id: 't',
  status,
  values: {},
  created_by: 'ada',
  created_by_principal: ADA.principal,
  created_at: '2026-11-24T00:00:00.000Z',
  started_at: null,
  finished_at: null,
  event_count: eventCount,
  error: null,
  steps: [],
  expires_at: 0,
});

/**
 * A store whose index read answers `found`; `current` is each run as it is now (what a
 * consistent read answers), and an append succeeds only at a run's current event count.
 */
function world(found: RunItem[], current: Map<string, RunItem>, more = false) {
  const asked: { filter: OpenRunFilter; limit: number }[] = [];
  const appended: RunLogEntry[] = [];
  const runs = {
    openRunsMatching: async (filter: OpenRunFilter, limit: number) => {
      asked.push({ filter, limit });
      return { runs: found, more };
    },
    get: async (id: string) => current.get(id),
    append: async (run: RunItem, event: RunLogEntry) => {
      const now = current.get(run.correlation_id);
      if (!now || now.event_count !== event.index) return false;
      appended.push(event);
      current.set(run.correlation_id, { ...now, status: 'cancelled', event_count: now.event_count + 1 });
      return true;
    },
  } as unknown as RunStore;
  const service = new RunService({} as TemplateService, runs, { send: async () => undefined }, { eventsTtlDays: 1 });
  return { service, asked, appended };
}

describe('RunService.cancelRuns', () => {
  it("reads a user's own runs, an admin's everyone's, and an admin's own with created_by me", async () => {
    const { service, asked } = world([], new Map());
    await service.cancelRuns({ template_id: 't', status: ['pending', 'running'] }, ADA);
    await service.cancelRuns({ created_by: 'me' }, ADA);
    await service.cancelRuns({ created_before: '2026-11-24T02:00:00+02:00' }, ROOT);
    await service.cancelRuns({ created_by: 'me' }, ROOT);
    expect(asked).toEqual([
      { filter: { owner: ADA.principal, templateId: 't', statuses: ['pending', 'running'] }, limit: MAX_BULK_CANCEL },
      { filter: { owner: ADA.principal }, limit: MAX_BULK_CANCEL },
      // as `created_at` is written (UTC, milliseconds): the index compares it as text
      { filter: { createdBefore: '2026-11-24T00:00:00.000Z' }, limit: MAX_BULK_CANCEL },
      { filter: { owner: ROOT.principal }, limit: MAX_BULK_CANCEL },
    ]);
  });

  it('counts a run that finished between the read and its cancel as matched, not cancelled', async () => {
    const read = [runItem('a', 'pending'), runItem('b', 'running', 2), runItem('c', 'pending')];
    const now = new Map([
      [read[0]!.correlation_id, read[0]!],
      // b succeeded meanwhile; c moved on to running and is still unfinished
      [read[1]!.correlation_id, { ...read[1]!, status: 'succeeded' as const, event_count: 5 }],
      [read[2]!.correlation_id, { ...read[2]!, status: 'running' as const, event_count: 2 }],
    ]);
    const { service, appended } = world(read, now, true);
    expect(await service.cancelRuns({ template_id: 't' }, ADA)).toEqual({ matched: 3, cancelled: 2, more: true });
    // c was read again and cancelled at its new index; b got nothing
    expect(appended.map((e) => [e.correlation_id.slice(0, 1), e.index, e.type])).toEqual([
      ['a', 1, 'run.cancelled'],
      ['c', 2, 'run.cancelled'],
    ]);
    expect(appended[0]!.data).toEqual({ by: 'ada', reason: null });
  });

  it('leaves a run that moved out of the wanted statuses', async () => {
    const read = [runItem('a', 'pending')];
    const now = new Map([[read[0]!.correlation_id, { ...read[0]!, status: 'waiting' as const, event_count: 4 }]]);
    const { service, appended } = world(read, now);
    expect(await service.cancelRuns({ status: ['pending'] }, ADA)).toEqual({ matched: 1, cancelled: 0, more: false });
    expect(appended).toEqual([]);
  });
});

describe('DynamoRunStore.openRunsMatching', () => {
  const ddb = mockClient(DynamoDBDocumentClient);
  const store = new DynamoRunStore(
    DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' })),
    'runs',
    'log',
  );
  afterEach(() => ddb.reset());

  it("reads an owner's runs from their own index, keeping only unfinished ones", async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    await store.openRunsMatching(
      {
        owner: ADA.principal,
        templateId: 't',
        statuses: ['pending', 'waiting'],
        createdBefore: '2026-11-24T00:00:00.000Z',
      },
      10,
    );
    const query = ddb.commandCalls(QueryCommand)[0]!.args[0].input;
    expect(query).toMatchObject({
      TableName: 'runs',
      IndexName: 'by_creator_principal',
      KeyConditionExpression: '#p = :p AND #s < :before',
      FilterExpression: 'attribute_exists(#open) AND #template = :template AND #status IN (:status0, :status1)',
      ExpressionAttributeNames: { '#p': 'created_by_principal', '#s': 'created_key', '#open': 'open' },
      ExpressionAttributeValues: {
        ':p': ADA.principal,
        ':before': '2026-11-24T00:00:00.000Z',
        ':template': 't',
        ':status0': 'pending',
        ':status1': 'waiting',
      },
    });
  });

  it("reads anyone's from the sparse open_runs only, at most the limit, and says whether more match", async () => {
    const item = (n: number) => ({ ...runItem(String(n), 'pending'), open: 'open', values_json: '{}' });
    ddb.on(QueryCommand).resolves({ Items: [item(1), item(2), item(3)], LastEvaluatedKey: { correlation_id: 'x' } });
    const page = await store.openRunsMatching({}, 2);
    expect(page.runs.map((r) => r.correlation_id[0])).toEqual(['1', '2']);
    expect(page.more).toBe(true);
    const query = ddb.commandCalls(QueryCommand)[0]!.args[0].input;
    expect(query).toMatchObject({ IndexName: 'open_runs', KeyConditionExpression: '#p = :p' });
    expect(query.ExpressionAttributeValues).toEqual({ ':p': 'open' });
    expect(query.FilterExpression).toBeUndefined();

    ddb.reset();
    ddb.on(QueryCommand).resolves({ Items: [item(1)] });
    expect((await store.openRunsMatching({}, 2)).more).toBe(false);
  });
});
