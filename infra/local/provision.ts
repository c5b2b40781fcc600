import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { BucketAlreadyOwnedByYou, CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  BUCKETS,
  type BucketKey,
  deadLetterQueueName,
  physicalQueueName,
  physicalTableName,
  QUEUES,
  TABLES,
  type QueueKey,
  type TableDefinition,
} from '../tables.js';

/** What a table with `stream: true` streams: the local stream poller hands it on as Lambda would. */
const STREAM = { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } as const;

/**
 * Creates every table of infra/tables.ts (or of `tables`) that is missing; an existing one
 * keeps its items and gets the indexes and the stream it lacks.
 */
export async function ensureTables(
  client: DynamoDBClient,
  stage: string,
  tables: Readonly<Record<string, TableDefinition>> = TABLES,
): Promise<void> {
  for (const def of Object.values(tables)) {
    const name = physicalTableName(stage, def);
    const attributes = new Map<string, 'S' | 'N'>();
    const keySchema = (pk: { name: string; type: 'S' | 'N' }, sk?: { name: string; type: 'S' | 'N' }) => {
      attributes.set(pk.name, pk.type);
      if (sk) attributes.set(sk.name, sk.type);
      return [
        { AttributeName: pk.name, KeyType: 'HASH' as const },
        ...(sk ? [{ AttributeName: sk.name, KeyType: 'RANGE' as const }] : []),
      ];
    };
    const tableKeys = keySchema(def.partitionKey, def.sortKey);
    const indexes = def.indexes.map((ix) => ({
      IndexName: ix.name,
      KeySchema: keySchema(ix.partitionKey, ix.sortKey),
      Projection: { ProjectionType: 'ALL' as const },
    }));
    try {
      await client.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: tableKeys,
          AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
            AttributeName,
            AttributeType,
          })),
          ...(indexes.length ? { GlobalSecondaryIndexes: indexes } : {}),
          ...(def.stream ? { StreamSpecification: STREAM } : {}),
        }),
      );
      await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: name });
    } catch (err) {
      if (!(err instanceof ResourceInUseException)) throw err;
      await addMissingIndexes(client, name, indexes, attributes);
      if (def.stream) await enableStream(client, name);
    }
    if (def.ttlAttribute) {
      const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
      if (ttl.TimeToLiveDescription?.TimeToLiveStatus !== 'ENABLED') {
        await client.send(
          new UpdateTimeToLiveCommand({
            TableName: name,
            TimeToLiveSpecification: { AttributeName: def.ttlAttribute, Enabled: true },
          }),
        );
      }
    }
  }
}

/**
 * A table kept from an earlier version of the service (the local data directory) gets the
 * indexes added since: one UpdateTable per index, each waited for until ACTIVE (DynamoDB
 * backfills it from the items already there). Nothing is dropped.
 */
async function addMissingIndexes(
  client: DynamoDBClient,
  name: string,
  indexes: { IndexName: string; KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[] }[],
  attributes: Map<string, 'S' | 'N'>,
): Promise<void> {
  const existing = new Set(
    ((await client.send(new DescribeTableCommand({ TableName: name }))).Table?.GlobalSecondaryIndexes ?? []).map(
      (ix) => ix.IndexName,
    ),
  );
  for (const index of indexes) {
    if (existing.has(index.IndexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: name,
        AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
          AttributeName,
          AttributeType,
        })),
        GlobalSecondaryIndexUpdates: [
          { Create: { IndexName: index.IndexName, KeySchema: index.KeySchema, Projection: { ProjectionType: 'ALL' } } },
        ],
      }),
    );
    for (let waited = 0; ; waited += 200) {
      const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
      const status = table?.GlobalSecondaryIndexes?.find((ix) => ix.IndexName === index.IndexName)?.IndexStatus;
      if (status === 'ACTIVE') break;
      if (waited > 60_000) throw new Error(`index ${index.IndexName} of table ${name} did not become active`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/**
 * A table kept from a version without streams gets its stream (it records the changes from
 * now on). One of another view type is replaced: a stream's view type cannot be changed.
 * A stream on a table whose definition has none is left alone, as nothing is dropped.
 */
async function enableStream(client: DynamoDBClient, name: string): Promise<void> {
  const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
  const current = table?.StreamSpecification;
  if (current?.StreamEnabled && current.StreamViewType === STREAM.StreamViewType) return;
  // An index just added may still be building: a table takes one update at a time.
  if (table?.TableStatus !== 'ACTIVE') await waitUntilActive(client, name);
  if (current?.StreamEnabled) {
    await client.send(new UpdateTableCommand({ TableName: name, StreamSpecification: { StreamEnabled: false } }));
    await waitUntilActive(client, name);
  }
  await client.send(new UpdateTableCommand({ TableName: name, StreamSpecification: STREAM }));
  await waitUntilActive(client, name);
}

async function waitUntilActive(client: DynamoDBClient, name: string): Promise<void> {
  for (let waited = 0; ; waited += 200) {
    const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
    if (table?.TableStatus === 'ACTIVE') return;
    if (waited > 60_000) throw new Error(`table ${name} did not become active`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * The ARN of each table's enabled stream, by physical table name; undefined for a table
 * that does not exist or has no enabled stream (yet).
 */
export async function latestStreamArns(
  client: DynamoDBClient,
  tableNames: readonly string[],
): Promise<Map<string, string | undefined>> {
  const arns = new Map<string, string | undefined>();
  for (const name of tableNames) {
    try {
      const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
      arns.set(name, table?.StreamSpecification?.StreamEnabled ? table.LatestStreamArn : undefined);
    } catch (err) {
      if (!(err instanceof ResourceNotFoundException)) throw err;
      arns.set(name, undefined);
    }
  }
  return arns;
}

export interface QueueUrls {
  readonly url: string;
  readonly deadLetterUrl: string;
}

/** Creates every queue (and its dead-letter queue) of infra/tables.ts; returns their URLs. */
export async function ensureQueues(client: SQSClient, stage: string): Promise<Record<QueueKey, QueueUrls>> {
  const urls = {} as Record<QueueKey, QueueUrls>;
  for (const [key, def] of Object.entries(QUEUES) as [QueueKey, (typeof QUEUES)[QueueKey]][]) {
    const dlq = await client.send(
      new CreateQueueCommand({
        QueueName: deadLetterQueueName(stage, def),
        Attributes: { MessageRetentionPeriod: String(def.deadLetterRetentionDays * 86_400) },
      }),
    );
    const dlqArn = (
      await client.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes?.QueueArn;
    const queue = await client.send(
      new CreateQueueCommand({
        QueueName: physicalQueueName(stage, def),
        Attributes: {
          VisibilityTimeout: String(def.visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: def.maxReceiveCount }),
        },
      }),
    );
    urls[key] = { url: queue.QueueUrl!, deadLetterUrl: dlq.QueueUrl! };
  }
  return urls;
}

export const localBucketName = (stage: string, key: BucketKey) => `dpm-${stage}-${BUCKETS[key].id}`;

/** Creates every bucket of infra/tables.ts that is missing; returns their names. */
export async function ensureBuckets(client: S3Client, stage: string): Promise<Record<BucketKey, string>> {
  const names = {} as Record<BucketKey, string>;
  for (const key of Object.keys(BUCKETS) as BucketKey[]) {
    const name = localBucketName(stage, key);
    try {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    } catch (err) {
      if (!(err instanceof BucketAlreadyOwnedByYou) && (err as { name?: string }).name !== 'BucketAlreadyExists')
        throw err;
    }
    names[key] = name;
  }
  return names;
}
