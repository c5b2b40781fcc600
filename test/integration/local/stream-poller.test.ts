import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningEmulator, startDynamoDb } from '../../../infra/local/emulators.js';
import { ensureTables, latestStreamArns } from '../../../infra/local/provision.js';
import { startStreamPoller, type StreamPollerOptions } from '../../../infra/local/stream-poller.js';
import { physicalTableName, type TableDefinition } from '../../../infra/tables.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { eventually } from '../../support/eventually.js';

const REGION = 'us-east-1';
let dynamodb: RunningEmulator;
let client: DynamoDBClient;
let workDir: string;

// Its own DynamoDB Local, in memory: the tests write tables' streams from their oldest record.
beforeAll(async () => {
  dynamodb = await startDynamoDb({});
  client = new DynamoDBClient(emulatorOptions({ region: REGION, endpoint: dynamodb.endpoint }));
  workDir = mkdtempSync(join(tmpdir(), 'dpm-stream-poller-'));
});

afterAll(async () => {
  client?.destroy();
  await dynamodb?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

let tableCount = 0;

/** A new table of its own stage, made by ensureTables with a stream. */
async function streamTable(): Promise<string> {
  const def: TableDefinition = {
    id: `stream-test-${++tableCount}`,
    partitionKey: { name: 'pk', type: 'S' },
    indexes: [],
    stream: true,
  };
  const stage = `sp${Date.now() % 100000}`;
  await ensureTables(client, stage, { t: def });
  return physicalTableName(stage, def);
}

const put = (
  table: string,
  pk: string,
  extra: Record<string, { S: string } | { N: string } | { B: Uint8Array }> = {},
) => client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, ...extra } }));

/** The handler's calls, each as the list of the pk values it was handed. */
function recorder(
  answer: (event: DynamoDBStreamEvent, call: number) => DynamoDBBatchResponse | Promise<DynamoDBBatchResponse>,
) {
  const calls: DynamoDBRecord[][] = [];
  const handler = async (event: DynamoDBStreamEvent) => {
    calls.push(event.Records);
    return answer(event, calls.length);
  };
  const keys = () => calls.map((records) => records.map(pkOf));
  const handed = () => calls.flat().map(pkOf);
  return { calls, handler, keys, handed };
}

const pkOf = (r: DynamoDBRecord) => r.dynamodb?.Keys?.pk?.S;
const ok: DynamoDBBatchResponse = { batchItemFailures: [] };

function poller(options: Omit<StreamPollerOptions, 'endpoint' | 'region'>) {
  return startStreamPoller({ endpoint: dynamodb.endpoint, region: REGION, retryDelayMs: 50, ...options });
}

describe('local stream poller (DynamoDB Local)', () => {
  it('hands every change in order, shaped as Lambda hands DynamoDB stream records', async () => {
    const table = await streamTable();
    const streamArn = (await latestStreamArns(client, [table])).get(table);
    expect(streamArn).toMatch(/^arn:aws:dynamodb:.+\/stream\//);
    const seen = recorder(() => ok);
    const p = poller({ tables: [table], handler: seen.handler });
    try {
      await put(table, 'a', { n: { N: '1' }, blob: { B: new Uint8Array([1, 2, 3]) } });
      await client.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: { S: 'a' } },
          UpdateExpression: 'SET n = :n',
          ExpressionAttributeValues: { ':n': { N: '2' } },
        }),
      );
      await client.send(new DeleteItemCommand({ TableName: table, Key: { pk: { S: 'a' } } }));
      await put(table, 'b');
      await eventually(() => seen.handed().length >= 4, 10_000, 'four records', 5);

      const records = seen.calls.flat();
      expect(records.map((r) => [r.eventName, pkOf(r)])).toEqual([
        ['INSERT', 'a'],
        ['MODIFY', 'a'],
        ['REMOVE', 'a'],
        ['INSERT', 'b'],
      ]);
      const [insert, modify, remove] = records;
      expect(insert).toMatchObject({
        eventSource: 'aws:dynamodb',
        eventVersion: '1.1',
        awsRegion: REGION,
        eventSourceARN: streamArn,
        dynamodb: {
          Keys: { pk: { S: 'a' } },
          NewImage: { pk: { S: 'a' }, n: { N: '1' }, blob: { B: Buffer.from([1, 2, 3]).toString('base64') } },
          StreamViewType: 'NEW_AND_OLD_IMAGES',
        },
      });
      expect(insert!.dynamodb!.OldImage).toBeUndefined();
      expect(modify!.dynamodb).toMatchObject({ OldImage: { n: { N: '1' } }, NewImage: { n: { N: '2' } } });
      expect(remove!.dynamodb!.NewImage).toBeUndefined();
      expect(remove!.dynamodb!.OldImage).toMatchObject({ pk: { S: 'a' }, n: { N: '2' } });
      for (const r of records) {
        expect(r.eventID).toEqual(expect.any(String));
        expect(r.dynamodb!.SizeBytes).toBeGreaterThan(0);
        // Epoch seconds, as Lambda gives them (the SDK would have made a Date of it).
        expect(Math.abs(r.dynamodb!.ApproximateCreationDateTime! - Date.now() / 1000)).toBeLessThan(600);
      }
      const sequence = records.map((r) => BigInt(r.dynamodb!.SequenceNumber!));
      expect([...sequence].sort((x, y) => (x < y ? -1 : 1))).toEqual(sequence);
      // Nothing was handed twice.
      expect(seen.handed()).toHaveLength(4);
    } finally {
      await p.stop();
    }
  });

  it('hands a reported failure and what follows again, in order, and not what succeeded before it', async () => {
    const table = await streamTable();
    for (const pk of ['r1', 'r2', 'r3', 'r4', 'r5']) await put(table, pk);
    const seen = recorder((event, call) =>
      call === 1 ? { batchItemFailures: [{ itemIdentifier: event.Records[2]!.dynamodb!.SequenceNumber! }] } : ok,
    );
    const p = poller({ tables: [table], handler: seen.handler });
    try {
      await eventually(() => seen.calls.length >= 2, 10_000, 'the batch handed again', 5);
      // One write more: it must come after the retried ones, never before or twice.
      await put(table, 'r6');
      await eventually(() => seen.handed().includes('r6'), 10_000, 'the record written later', 5);
      expect(seen.keys()).toEqual([['r1', 'r2', 'r3', 'r4', 'r5'], ['r3', 'r4', 'r5'], ['r6']]);
    } finally {
      await p.stop();
    }
  });

  it('hands the whole batch again when the handler throws, and an unknown identifier fails it all', async () => {
    const table = await streamTable();
    for (const pk of ['t1', 't2', 't3']) await put(table, pk);
    const seen = recorder((_event, call) => {
      if (call === 1) throw new Error('handler down');
      if (call === 2) return { batchItemFailures: [{ itemIdentifier: 'no-such-sequence-number' }] };
      return ok;
    });
    const p = poller({ tables: [table], handler: seen.handler });
    try {
      await eventually(() => seen.calls.length >= 3, 10_000, 'three handler calls', 5);
      await put(table, 't4');
      await eventually(() => seen.handed().includes('t4'), 10_000, 'the record written later', 5);
      expect(seen.keys()).toEqual([['t1', 't2', 't3'], ['t1', 't2', 't3'], ['t1', 't2', 't3'], ['t4']]);
    } finally {
      await p.stop();
    }
  });

  it('resumes from its checkpoint file after a stop, neither repeating nor losing records', async () => {
    const table = await streamTable();
    const checkpointFile = join(workDir, 'resume', 'checkpoints.json');
    for (const pk of ['c1', 'c2', 'c3', 'c4', 'c5']) await put(table, pk);
    const first = recorder(() => ok);
    let p = poller({ tables: [table], handler: first.handler, checkpointFile, batchSize: 2 });
    try {
      await eventually(() => first.handed().length >= 5, 10_000, 'the first five records', 5);
      expect(first.keys()).toEqual([['c1', 'c2'], ['c3', 'c4'], ['c5']]);
    } finally {
      await p.stop();
    }
    // One stream, one shard, checkpointed at the last record handled.
    const saved = JSON.parse(readFileSync(checkpointFile, 'utf8')).streams;
    const streamArn = (await latestStreamArns(client, [table])).get(table)!;
    expect(Object.keys(saved)).toEqual([streamArn]);
    expect(Object.values(saved[streamArn])).toEqual([{ sequenceNumber: first.calls[2]![0]!.dynamodb!.SequenceNumber }]);

    // Written while nothing reads the stream; the next start holds a batch in its handler when stopped.
    for (const pk of ['c6', 'c7', 'c8']) await put(table, pk);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const second = recorder(async (_event, call) => {
      if (call === 1) await gate;
      return ok;
    });
    p = poller({ tables: [table], handler: second.handler, checkpointFile, batchSize: 2 });
    let stopped = false;
    try {
      await eventually(() => second.calls.length >= 1, 10_000, 'the second start to hand a batch', 5);
      const stopping = p.stop().then(() => (stopped = true));
      await new Promise((r) => setTimeout(r, 50));
      // stop() waits for the handler call under way ...
      expect(stopped).toBe(false);
      release();
      await stopping;
    } finally {
      release();
      await p.stop();
    }
    expect(second.keys()).toEqual([['c6', 'c7']]);

    // ... and saved its checkpoint: the third start hands only what the second did not.
    const third = recorder(() => ok);
    p = poller({ tables: [table], handler: third.handler, checkpointFile, batchSize: 2 });
    try {
      await put(table, 'c9');
      await eventually(() => third.handed().includes('c9'), 10_000, 'the record written after the restart', 5);
      expect(third.handed()).toEqual(['c8', 'c9']);
    } finally {
      await p.stop();
    }
    expect(readdirSync(join(workDir, 'resume'))).toEqual(['checkpoints.json']);
  });

  it('enables the stream of a table kept from a version without streams, and reads it', async () => {
    const stage = `old${Date.now() % 100000}`;
    const def: TableDefinition = { id: 'stream-upgrade', partitionKey: { name: 'pk', type: 'S' }, indexes: [] };
    const table = physicalTableName(stage, def);
    // The table as an earlier version created it: no stream.
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      }),
    );
    await put(table, 'before');
    expect((await latestStreamArns(client, [table])).get(table)).toBeUndefined();
    const seen = recorder(() => ok);
    // Started first: it finds the stream once there is one.
    const p = poller({ tables: [table], handler: seen.handler });
    try {
      await ensureTables(client, stage, { t: { ...def, stream: true } });
      const described = (await client.send(new DescribeTableCommand({ TableName: table }))).Table!;
      expect(described.TableStatus).toBe('ACTIVE');
      expect(described.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
      expect((await latestStreamArns(client, [table])).get(table)).toBe(described.LatestStreamArn);

      // A second start changes nothing.
      const send = vi.spyOn(client, 'send');
      await ensureTables(client, stage, { t: { ...def, stream: true } });
      const sent = send.mock.calls.map(([command]) => command.constructor.name);
      send.mockRestore();
      expect(sent.filter((name) => /^(Update|Delete)/.test(name))).toEqual([]);
      expect((await client.send(new DescribeTableCommand({ TableName: table }))).Table!.LatestStreamArn).toBe(
        described.LatestStreamArn,
      );

      await put(table, 'after');
      await eventually(() => seen.handed().includes('after'), 10_000, 'the record written after the upgrade', 5);
      // The stream holds what changed since it was enabled, not the items already there.
      expect(seen.calls.flat().map((r) => [r.eventName, pkOf(r)])).toEqual([['INSERT', 'after']]);
    } finally {
      await p.stop();
    }
  });
});

describe('local stream poller (shard lineage and expired iterators, against a scripted stream)', () => {
  it('reads a child shard only after its parent is finished, and resumes an expired iterator at its checkpoint', async () => {
    const streamArn = 'arn:aws:dynamodb:ddblocal:000000000000:table/scripted/stream/2026-01-01T00:00:00.000';
    const record = (seq: number, pk: string): _Record => ({
      eventID: `e${seq}`,
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'ddblocal',
      dynamodb: {
        Keys: { pk: { S: pk } },
        NewImage: { pk: { S: pk } },
        SequenceNumber: String(seq).padStart(21, '0'),
        SizeBytes: 10,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    });
    // The parent is closed; the child (listed on DescribeStream's second page) goes on.
    const shards: Record<string, { records: _Record[]; closed: boolean }> = {
      'shardId-parent-000000000000000000': {
        records: [record(1, 'p1'), record(2, 'p2'), record(3, 'p3')],
        closed: true,
      },
      'shardId-child-0000000000000000000': { records: [record(4, 'c1'), record(5, 'c2')], closed: false },
    };
    const [parent, child] = Object.keys(shards) as [string, string];
    const calls: string[] = [];
    let expireOnce = true;

    const dynamo = mockClient(DynamoDBClient);
    const streams = mockClient(DynamoDBStreamsClient);
    try {
      dynamo.on(DescribeTableCommand).resolves({
        Table: { TableName: 'scripted', LatestStreamArn: streamArn, StreamSpecification: { StreamEnabled: true } },
      });
      streams.on(DescribeStreamCommand).callsFake((input: { ExclusiveStartShardId?: string }) => ({
        StreamDescription: input.ExclusiveStartShardId
          ? {
              Shards: [{ ShardId: child, ParentShardId: parent, SequenceNumberRange: { StartingSequenceNumber: '4' } }],
            }
          : {
              Shards: [
                { ShardId: parent, SequenceNumberRange: { StartingSequenceNumber: '1', EndingSequenceNumber: '3' } },
              ],
              LastEvaluatedShardId: parent,
            },
      }));
      streams.on(GetShardIteratorCommand).callsFake((input) => {
        const { records } = shards[input.ShardId]!;
        const at =
          input.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER'
            ? records.findIndex((r) => r.dynamodb!.SequenceNumber === input.SequenceNumber) + 1
            : 0;
        calls.push(`iterator ${input.ShardId === parent ? 'parent' : 'child'} ${input.ShardIteratorType}`);
        return { ShardIterator: `${input.ShardId}|${at}` };
      });
      streams.on(GetRecordsCommand).callsFake((input) => {
        const [shardId, at] = input.ShardIterator.split('|') as [string, string];
        const { records, closed } = shards[shardId]!;
        if (shardId === child && Number(at) === 1 && expireOnce) {
          expireOnce = false;
          throw new ExpiredIteratorException({ message: 'Iterator expired', $metadata: {} });
        }
        const batch = records.slice(Number(at), Number(at) + (input.Limit ?? 100));
        const end = Number(at) + batch.length;
        return {
          Records: batch,
          NextShardIterator: closed && end === records.length ? undefined : `${shardId}|${end}`,
        };
      });

      const seen = recorder(() => ok);
      const p = startStreamPoller({
        endpoint: 'http://127.0.0.1:1',
        region: REGION,
        tables: ['scripted'],
        handler: async (event) => {
          calls.push(`handled ${event.Records.map(pkOf).join(',')}`);
          return seen.handler(event);
        },
        batchSize: 1,
      });
      try {
        await eventually(() => seen.handed().length >= 5, 10_000, 'every record of both shards', 5);
      } finally {
        await p.stop();
      }
      expect(seen.keys()).toEqual([['p1'], ['p2'], ['p3'], ['c1'], ['c2']]);
      // The child's first iterator came after the parent's last record was handled; its
      // expired iterator was replaced from the checkpoint (after c1), so c1 came once.
      expect(calls).toEqual([
        'iterator parent TRIM_HORIZON',
        'handled p1',
        'handled p2',
        'handled p3',
        'iterator child TRIM_HORIZON',
        'handled c1',
        'iterator child AFTER_SEQUENCE_NUMBER',
        'handled c2',
      ]);
    } finally {
      dynamo.restore();
      streams.restore();
    }
  });
});
