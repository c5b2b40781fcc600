import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ListTablesCommand,
} from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DynamoEventStore } from '../../../functions/domain-events/store.js';
import { type RunningEmulator, startDynamoDb } from '../../../infra/local/emulators.js';
import { ensureTables } from '../../../infra/local/provision.js';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { documentClient } from '../../../shared/aws/clients.js';
import { eventItem } from '../../../shared/events/events-table.js';
import type { DomainEvent } from '../../../shared/events/types.js';

/** What a start may not change about a table: its keys, indexes, creation time, TTL. */
async function tableState(client: DynamoDBClient, name: string) {
  const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table!;
  const ttl = (await client.send(new DescribeTimeToLiveCommand({ TableName: name }))).TimeToLiveDescription;
  return {
    status: table.TableStatus,
    created: table.CreationDateTime?.getTime(),
    keys: table.KeySchema,
    attributes: [...(table.AttributeDefinitions ?? [])].sort((a, b) => (a.AttributeName! < b.AttributeName! ? -1 : 1)),
    indexes: (table.GlobalSecondaryIndexes ?? [])
      .map((ix) => ({ name: ix.IndexName, keys: ix.KeySchema, projection: ix.Projection, status: ix.IndexStatus }))
      .sort((a, b) => (a.name! < b.name! ? -1 : 1)),
    ttl: { status: ttl?.TimeToLiveStatus, attribute: ttl?.AttributeName ?? null },
  };
}

/** The commands a start sends, by name, while `run` runs (the client's own send, observed). */
async function commandsSentDuring(client: DynamoDBClient, run: () => Promise<void>): Promise<string[]> {
  const sent: string[] = [];
  const send = client.send.bind(client);
  const spy = vi.spyOn(client, 'send').mockImplementation(((command: { constructor: { name: string } }) => {
    sent.push(command.constructor.name);
    return send(command as never);
  }) as never);
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return sent;
}

// Its own DynamoDB Local, as a start has: the suite's shared one, busy with every other
// file's tables and their streams, took over a minute to build an index under full load.
let dynamodb: RunningEmulator;
beforeAll(async () => {
  dynamodb = await startDynamoDb({});
}, 60_000);
afterAll(async () => {
  await dynamodb?.stop();
});

/** A stage of its own (`prefix` and a number) on the DynamoDB Local above, with a client and a document client of it. */
function freshStage(prefix: string) {
  const endpoint = dynamodb.endpoint;
  return {
    stage: `${prefix}${Date.now() % 100000}`,
    client: new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint })),
    db: documentClient({ region: 'us-east-1', endpoints: { dynamodb: endpoint, sqs: undefined, s3: undefined } }),
  };
}

describe('local provisioning', () => {
  it('adds the indexes a kept table lacks (data of an earlier version), keeping its items', async () => {
    const { stage, client, db } = freshStage('upgrade');
    const name = physicalTableName(stage, TABLES.catalog);
    try {
      // The catalog table as an earlier version created it: no by_domain index.
      await client.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            { AttributeName: 'sk', AttributeType: 'S' },
          ],
        }),
      );
      await db.send(
        new PutCommand({ TableName: name, Item: { pk: 'ENTITY#urn:x', sk: 'META', urn: 'urn:x', domain: 'Sales' } }),
      );

      await ensureTables(client, stage, { catalog: TABLES.catalog });
      const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table!;
      expect(table.GlobalSecondaryIndexes?.map((ix) => [ix.IndexName, ix.IndexStatus])).toEqual([
        ['by_domain', 'ACTIVE'],
      ]);
      const found = await db.send(
        new QueryCommand({
          TableName: name,
          IndexName: 'by_domain',
          KeyConditionExpression: '#d = :d',
          ExpressionAttributeNames: { '#d': 'domain' },
          ExpressionAttributeValues: { ':d': 'Sales' },
        }),
      );
      expect(found.Items?.map((i) => i.urn)).toEqual(['urn:x']);

      // A second start: no error, no table or index created, changed or dropped, the item kept.
      const before = await tableState(client, name);
      const sent = await commandsSentDuring(client, () => ensureTables(client, stage, { catalog: TABLES.catalog }));
      expect(sent).toContain('CreateTableCommand');
      expect(sent.filter((c) => /^(Update|Delete)/.test(c))).toEqual([]);
      expect(await tableState(client, name)).toEqual(before);
      expect(
        (await db.send(new GetCommand({ TableName: name, Key: { pk: 'ENTITY#urn:x', sk: 'META' } }))).Item,
      ).toEqual({ pk: 'ENTITY#urn:x', sk: 'META', urn: 'urn:x', domain: 'Sales' });
    } finally {
      client.destroy();
    }
  }, 120_000);

  it('gives a kept domain events table its type index: events recorded before it are found by type', async () => {
    const { stage, client, db } = freshStage('feedidx');
    const table = { tableName: physicalTableName(stage, TABLES.domainEvents), ttlDays: 30, source: 'dpm/test' };
    try {
      // The table as the release before created it: no by_type.
      const earlier = {
        ...TABLES.domainEvents,
        indexes: TABLES.domainEvents.indexes.filter((ix) => ix.name !== 'by_type'),
      };
      await ensureTables(client, stage, { domainEvents: earlier });
      const event = (type: string): DomainEvent => ({
        specversion: '1.0',
        id: randomUUID(),
        source: table.source,
        type,
        subject: `psks/${randomUUID()}`,
        time: new Date().toISOString(),
        datacontenttype: 'application/json',
        actor: 'alice',
        sequence: 1,
        data: {},
      });
      const kept = [event('dpm.psk.created'), event('dpm.psk.deleted'), event('dpm.mcp.server.created')];
      for (const e of kept) await db.send(new PutCommand({ TableName: table.tableName, Item: eventItem(table, e) }));

      await ensureTables(client, stage, { domainEvents: TABLES.domainEvents });
      const indexes = (await client.send(new DescribeTableCommand({ TableName: table.tableName }))).Table!
        .GlobalSecondaryIndexes;
      expect(indexes?.find((ix) => ix.IndexName === 'by_type')?.IndexStatus).toBe('ACTIVE');
      const feed = new DynamoEventStore(db, table);
      const psks = await feed.list({ types: ['dpm.psk.created', 'dpm.psk.deleted'] }, 10, undefined);
      expect(psks.items.map((e) => e.id)).toEqual([kept[0]!.id, kept[1]!.id]);
    } finally {
      await client.send(new DeleteTableCommand({ TableName: table.tableName })).catch(() => undefined);
      client.destroy();
    }
  }, 120_000);

  it("adds the crew runs' owner index to a kept table: runs stored before it are in their starters' lists", async () => {
    const { stage, client, db } = freshStage('runs');
    const name = physicalTableName(stage, TABLES.crewRuns);
    try {
      // The crew-runs table as the previous version created it: no by_creator_principal.
      const attribute = (AttributeName: string) => ({ AttributeName, AttributeType: 'S' as const });
      const keys = (hash: string, range: string) => [
        { AttributeName: hash, KeyType: 'HASH' as const },
        { AttributeName: range, KeyType: 'RANGE' as const },
      ];
      await client.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: [{ AttributeName: 'correlation_id', KeyType: 'HASH' }],
          AttributeDefinitions: ['correlation_id', 'open', 'created_at', 'list_pk', 'created_key'].map(attribute),
          GlobalSecondaryIndexes: [
            { IndexName: 'open_runs', KeySchema: keys('open', 'created_at'), Projection: { ProjectionType: 'ALL' } },
            {
              IndexName: 'by_created',
              KeySchema: keys('list_pk', 'created_key'),
              Projection: { ProjectionType: 'ALL' },
            },
          ],
        }),
      );
      // A run as that version stored it: the starter's principal was there already.
      const run = {
        correlation_id: '11111111-1111-4111-8111-111111111111',
        status: 'succeeded',
        created_by: 'ada',
        created_by_principal: '["https://issuer.test","sub-ada"]',
        created_at: '2026-11-01T00:00:00.000Z',
        list_pk: 'run',
        created_key: '2026-11-01T00:00:00.000Z#11111111-1111-4111-8111-111111111111',
      };
      await db.send(new PutCommand({ TableName: name, Item: run }));

      await ensureTables(client, stage, { crewRuns: TABLES.crewRuns });
      const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table!;
      expect(table.GlobalSecondaryIndexes?.map((ix) => [ix.IndexName, ix.IndexStatus]).sort()).toEqual([
        ['by_created', 'ACTIVE'],
        ['by_creator_principal', 'ACTIVE'],
        ['open_runs', 'ACTIVE'],
        ['slot_queue', 'ACTIVE'],
        ['waiting_steps', 'ACTIVE'],
      ]);
      const own = await db.send(
        new QueryCommand({
          TableName: name,
          IndexName: 'by_creator_principal',
          KeyConditionExpression: '#p = :p',
          ExpressionAttributeNames: { '#p': 'created_by_principal' },
          ExpressionAttributeValues: { ':p': run.created_by_principal },
        }),
      );
      expect(own.Items).toEqual([run]);
    } finally {
      await client.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined);
      client.destroy();
    }
  }, 120_000);

  it('a second start of a fresh stage keeps every table, index, TTL and item as the first made them', async () => {
    const { stage, client, db } = freshStage('again');
    const names = Object.values(TABLES).map((def) => physicalTableName(stage, def));
    const ours = async () =>
      ((await client.send(new ListTablesCommand({}))).TableNames ?? []).filter((n) => names.includes(n)).sort();
    try {
      await ensureTables(client, stage);
      expect(await ours()).toEqual([...names].sort());
      const before = await Promise.all(names.map((n) => tableState(client, n)));
      // Every table with an index or a TTL is one the check below covers.
      expect(before.some((t) => t.indexes.length > 0)).toBe(true);
      expect(before.some((t) => t.ttl.status === 'ENABLED')).toBe(true);
      const catalog = physicalTableName(stage, TABLES.catalog);
      const item = { pk: 'ENTITY#urn:kept', sk: 'META', urn: 'urn:kept', domain: 'Kept' };
      await db.send(new PutCommand({ TableName: catalog, Item: item }));

      const sent = await commandsSentDuring(client, () => ensureTables(client, stage));
      // Each CreateTable was refused (the table exists); nothing was updated or dropped.
      expect(sent).toContain('CreateTableCommand');
      expect(sent.filter((c) => /^(Update|Delete)/.test(c))).toEqual([]);
      expect(await ours()).toEqual([...names].sort());
      expect(await Promise.all(names.map((n) => tableState(client, n)))).toEqual(before);
      expect((await db.send(new GetCommand({ TableName: catalog, Key: { pk: item.pk, sk: item.sk } }))).Item).toEqual(
        item,
      );
    } finally {
      await Promise.all(names.map((n) => client.send(new DeleteTableCommand({ TableName: n })).catch(() => undefined)));
      client.destroy();
    }
  }, 120_000);
});
