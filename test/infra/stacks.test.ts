import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_WAIT_SECONDS } from '../../functions/crews/runs/run-schemas.js';
import {
  ACCESS_LOG_RETENTION_DAYS,
  DEAD_LETTER_HANDLER_RECEIVES,
  NONCURRENT_VERSION_DAYS,
} from '../../infra/aws/stateful-stack.js';
import {
  EXPENSIVE_ROUTES,
  groupForPath,
  RESERVED_FUNCTIONS,
  WORKERS,
  type GroupDefinition,
} from '../../infra/groups.js';
import {
  BUCKETS,
  QUEUES,
  TABLES,
  deadLetterQueueName,
  parkedQueueName,
  physicalQueueName,
  physicalTableName,
  type BucketKey,
  type QueueDefinition,
  type QueueKey,
  type TableDefinition,
  type TableKey,
} from '../../infra/tables.js';
import { KEY_ACTIONS } from '../../infra/aws/grants.js';
import { stageNamed } from '../../infra/aws/stages.js';
import {
  actions,
  allows,
  functionDefs,
  functionIn,
  groups,
  mappingsIn,
  resources,
  resourcesOf,
  single,
  stageFor,
  statementsIn,
  streamConsumers,
  withStubHandlers,
  workers,
  type Resource,
  type Statement,
} from './support.js';

const { synthesize, synthesizeOnce } = withStubHandlers();
const tableEntries = Object.entries(TABLES) as [TableKey, TableDefinition][];
const bucketKeys = Object.keys(BUCKETS) as BucketKey[];
/** The variable naming each bucket, as shared/config.ts reads it. */
const BUCKET_VARIABLE: Record<BucketKey, string> = { artifacts: 'ARTIFACTS_BUCKET' };
const queueDefs: readonly QueueDefinition[] = Object.values(QUEUES);

const DYNAMODB_READ_ACTIONS = new Set([
  'dynamodb:BatchGetItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DescribeTable',
  'dynamodb:GetItem',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:Query',
  'dynamodb:Scan',
]);

/**
 * Stream consumers hold the one action granted on every resource besides telemetry:
 * dynamodb:ListStreams, which their event sources need (CDK grants it so; it lists stream
 * ARNs and reads no data).
 */
const isStreamConsumer = (fn: string): boolean => streamConsumers.some((c) => c.name === fn);

describe.each(['dev', 'prod'] as const)('stage %s', (name) => {
  const stage = stageFor(name);
  let stateful: Template;
  let stateless: Template;
  // Synthesizing both stacks takes a few seconds, more on a busy machine.
  beforeAll(() => {
    ({ stateful, stateless } = synthesizeOnce(name));
  }, 60_000);

  const tableNamed = (def: TableDefinition): [string, Resource] =>
    single(
      resources(stateful, 'AWS::DynamoDB::Table').filter(
        ([, r]) => r.Properties.TableName === physicalTableName(name, def),
      ),
      `table ${def.id}`,
    );

  const keyLogicalId = () => single(resources(stateful, 'AWS::KMS::Key'), 'KMS key')[0];

  /** The stateful stack's queue of that name: [logical id, resource]. */
  const queueNamed = (queueName: string): [string, Resource] =>
    single(
      resources(stateful, 'AWS::SQS::Queue').filter(([, q]) => q.Properties.QueueName === queueName),
      `queue ${queueName}`,
    );

  /** [queue, dead-letter queue] logical ids in the stateful stack. */
  const queueIds = (def: QueueDefinition): [string, string] => {
    const queues = resources(stateful, 'AWS::SQS::Queue');
    const id = (queueName: string) =>
      single(
        queues.filter(([, q]) => q.Properties.QueueName === queueName),
        queueName,
      )[0];
    return [id(physicalQueueName(name, def)), id(deadLetterQueueName(name, def))];
  };

  /** What the stateless stack holds for a stateful resource's attribute: a strong cross-stack import. */
  const imported = (logicalId: string, attribute: 'Arn' | 'Ref') => ({
    'Fn::ImportValue': expect.stringMatching(
      new RegExp(
        `^Dpm-${name}-Stateful:ExportsOutput${attribute === 'Arn' ? `FnGetAtt${logicalId}Arn` : `Ref${logicalId}`}`,
      ),
    ),
  });

  /** The function of a group or worker, by its physical name. */
  const functionOf = (fn: string): [string, Resource] => functionIn(stateless, name, fn);

  /** The statements of every policy attached to the function's role. */
  const statementsOf = (fn: string): Statement[] => statementsIn(stateless, name, fn);

  /** The bucket of a BUCKETS entry: CDK names it, so it is found by its construct id. */
  const bucketOf = (key: BucketKey): [string, Resource] =>
    single(
      resources(stateful, 'AWS::S3::Bucket').filter(([id]) => id.startsWith(`${key}Bucket`)),
      `bucket ${key}`,
    );

  /** Whether a policy resource is the bucket's ARN, or the ARN of its objects (`<arn>/*`), imported. */
  const isBucketArn = (key: BucketKey) => (r: unknown) =>
    typeof (r as any)?.['Fn::ImportValue'] === 'string' &&
    new RegExp(`^Dpm-${name}-Stateful:ExportsOutputFnGetAtt${bucketOf(key)[0]}Arn`).test((r as any)['Fn::ImportValue']);
  /** Objects of the bucket under `pattern` (`*`: all), or under any pattern when none is given. */
  const isObjectsArn = (key: BucketKey, pattern?: string) => (r: unknown) => {
    const parts = (r as any)?.['Fn::Join']?.[1];
    return (
      Array.isArray(parts) &&
      parts.length === 2 &&
      isBucketArn(key)(parts[0]) &&
      (pattern === undefined ? /^\/.*\*$/.test(parts[1]) : parts[1] === `/${pattern}`)
    );
  };
  const isKeyArn = (r: unknown) =>
    typeof (r as any)?.['Fn::ImportValue'] === 'string' &&
    new RegExp(`^Dpm-${name}-Stateful:ExportsOutputFnGetAtt${keyLogicalId()}Arn`).test((r as any)['Fn::ImportValue']);

  /** The KMS actions a function's policies allow on the stage key. */
  const kmsActionsOnKey = (fn: string): string[] =>
    [
      ...new Set(
        statementsOf(fn)
          .filter((s) => resourcesOf(s).some(isKeyArn))
          .flatMap(actions)
          .filter((a) => a.startsWith('kms:')),
      ),
    ].sort();

  /** Statements whose resources reference a stateful resource (a cross-stack import names its logical id). */
  const statementsOnId = (fn: string, logicalId: string) =>
    statementsOf(fn).filter((s) => JSON.stringify(s.Resource).includes(`${logicalId}Arn`));

  const statementsOn = (fn: string, def: TableDefinition) => statementsOnId(fn, tableNamed(def)[0]);

  /** The function's event source mappings. */
  const mappingsOf = (fn: string): Resource[] => mappingsIn(stateless, name, fn);

  describe('stateful stack', () => {
    it('has exactly one table per definition', () => {
      expect(resources(stateful, 'AWS::DynamoDB::Table')).toHaveLength(tableEntries.length);
    });

    it.each(tableEntries)('table %s has the defined keys, indexes and TTL', (_, def) => {
      const [, table] = tableNamed(def);
      const p = table.Properties;
      const keySchema = (pk: { name: string }, sk?: { name: string }) => [
        { AttributeName: pk.name, KeyType: 'HASH' },
        ...(sk ? [{ AttributeName: sk.name, KeyType: 'RANGE' }] : []),
      ];
      expect(p.KeySchema).toEqual(keySchema(def.partitionKey, def.sortKey));

      const keyAttributes = [def.partitionKey, def.sortKey, ...def.indexes.flatMap((i) => [i.partitionKey, i.sortKey])]
        .filter((a) => a !== undefined)
        // one definition per attribute, however many indexes use it
        .filter((a, i, all) => all.findIndex((b) => b?.name === a.name) === i)
        .map((a) => ({ AttributeName: a.name, AttributeType: a.type }));
      const byName = (a: { AttributeName: string }, b: { AttributeName: string }) =>
        a.AttributeName.localeCompare(b.AttributeName);
      expect([...p.AttributeDefinitions].sort(byName)).toEqual(keyAttributes.sort(byName));

      expect(p.GlobalSecondaryIndexes ?? []).toEqual(
        def.indexes.map((i) => ({
          IndexName: i.name,
          KeySchema: keySchema(i.partitionKey, i.sortKey),
          Projection: { ProjectionType: 'ALL' },
        })),
      );
      expect(p.TimeToLiveSpecification).toEqual(
        def.ttlAttribute ? { AttributeName: def.ttlAttribute, Enabled: true } : undefined,
      );
      expect(p.BillingMode).toBe('PAY_PER_REQUEST');
      expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: stage.pointInTimeRecovery });
      expect(p.SSESpecification).toEqual({
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: { 'Fn::GetAtt': [keyLogicalId(), 'Arn'] },
      });
    });

    it('keys the decisions table by pk/sk with the sparse published, submitted and keys indexes', () => {
      const p = tableNamed(TABLES.decisions)[1].Properties;
      expect(p.TableName).toBe(`dpm-${name}-decisions`);
      expect(p.KeySchema).toEqual([
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ]);
      expect(p.GlobalSecondaryIndexes).toEqual([
        {
          IndexName: 'published',
          KeySchema: [
            { AttributeName: 'pub_pk', KeyType: 'HASH' },
            { AttributeName: 'pub_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
        {
          // docs/reviewing.md: the approvers' inbox reads submitted versions alone, oldest first
          IndexName: 'submitted',
          KeySchema: [
            { AttributeName: 'sub_pk', KeyType: 'HASH' },
            { AttributeName: 'sub_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
        {
          // GET /api/decisions: each key's latest version alone, by workspace then key
          IndexName: 'keys',
          KeySchema: [
            { AttributeName: 'keys_pk', KeyType: 'HASH' },
            { AttributeName: 'keys_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ]);
      expect(p.AttributeDefinitions).toEqual(
        expect.arrayContaining([
          { AttributeName: 'keys_pk', AttributeType: 'S' },
          { AttributeName: 'keys_sk', AttributeType: 'S' },
        ]),
      );
      expect(tableNamed(TABLES.runLog)[1].Properties.TimeToLiveSpecification).toEqual({
        AttributeName: 'expires_at',
        Enabled: true,
      });
    });

    it(`${name === 'dev' ? 'disables' : 'enables'} point-in-time recovery and ${name === 'dev' ? 'deletes' : 'retains'} tables`, () => {
      for (const [, table] of resources(stateful, 'AWS::DynamoDB::Table')) {
        expect(table.Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled).toBe(name !== 'dev');
        expect(table.DeletionPolicy).toBe(name === 'dev' ? 'Delete' : 'Retain');
      }
    });

    it('has the new tables with their keys and indexes, and lists keys by creation', () => {
      const indexNames = (def: TableDefinition) =>
        (tableNamed(def)[1].Properties.GlobalSecondaryIndexes ?? []).map((i: { IndexName: string }) => i.IndexName);
      expect(tableNamed(TABLES.keys)[1].Properties.TableName).toBe(`dpm-${name}-keys`);
      expect(indexNames(TABLES.keys)).toEqual(['by_psk', 'by_creator_principal', 'by_creator', 'by_created']);
      // Owner lists are keyed by principal (docs/identity-and-keys.md, principals), never by a name.
      const ownerIndex = (def: TableDefinition, index: string) =>
        tableNamed(def)[1].Properties.GlobalSecondaryIndexes.find((i: { IndexName: string }) => i.IndexName === index);
      expect(ownerIndex(TABLES.keys, 'by_creator_principal').KeySchema[0]).toEqual({
        AttributeName: 'created_by_principal',
        KeyType: 'HASH',
      });
      for (const def of [TABLES.dataShares, TABLES.finetuneJobs, TABLES.documents]) {
        expect(ownerIndex(def, 'by_owner_principal').KeySchema[0], def.id).toEqual({
          AttributeName: 'owner_principal',
          KeyType: 'HASH',
        });
      }
      // docs/sdk.md: a data share by its identity-provider id is one Query, never a scan.
      expect(ownerIndex(TABLES.dataShares, 'by_idp_id').KeySchema).toEqual([
        { AttributeName: 'idp_id', KeyType: 'HASH' },
      ]);
      const expected: [TableDefinition, string, string[]][] = [
        [TABLES.dataShares, 'name', ['by_owner_principal', 'by_owner', 'by_created', 'by_idp_id']],
        [TABLES.idpClients, 'client_id', []],
        [TABLES.mcpServers, 'id', ['by_created']],
        [TABLES.finetuneJobs, 'id', ['by_owner_principal', 'by_owner', 'by_created']],
      ];
      for (const [def, partitionKey, indexes] of expected) {
        const p = tableNamed(def)[1].Properties;
        expect(p.TableName).toBe(`dpm-${name}-${def.id}`);
        expect(p.KeySchema).toEqual([{ AttributeName: partitionKey, KeyType: 'HASH' }]);
        expect(indexNames(def), def.id).toEqual(indexes);
      }
      // Crew runs: a caller's own runs from their own index, newest first by created_key;
      // an admin's unfinished statuses from the sparse open_runs (docs/crews.md, GET /api/crew-runs).
      const runs = tableNamed(TABLES.crewRuns)[1].Properties;
      expect(indexNames(TABLES.crewRuns)).toEqual([
        'open_runs',
        'by_created',
        'by_creator_principal',
        'waiting_steps',
        'slot_queue',
      ]);
      // docs/crews.md: the line of runs waiting for a slot of a concurrency limit, oldest first
      expect(ownerIndex(TABLES.crewRuns, 'slot_queue')).toEqual({
        IndexName: 'slot_queue',
        KeySchema: [
          { AttributeName: 'slot_queue', KeyType: 'HASH' },
          { AttributeName: 'created_key', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      });
      // docs/reviewing.md: the approvers' inbox reads each role's waiting approval steps alone, oldest first
      expect(ownerIndex(TABLES.crewRuns, 'waiting_steps')).toEqual({
        IndexName: 'waiting_steps',
        KeySchema: [
          { AttributeName: 'waiting_role', KeyType: 'HASH' },
          { AttributeName: 'waiting_key', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      });
      expect(ownerIndex(TABLES.crewRuns, 'by_creator_principal')).toEqual({
        IndexName: 'by_creator_principal',
        KeySchema: [
          { AttributeName: 'created_by_principal', KeyType: 'HASH' },
          { AttributeName: 'created_key', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      });
      expect(ownerIndex(TABLES.crewRuns, 'open_runs').KeySchema).toEqual([
        { AttributeName: 'open', KeyType: 'HASH' },
        { AttributeName: 'created_at', KeyType: 'RANGE' },
      ]);
      expect(runs.AttributeDefinitions).toContainEqual({ AttributeName: 'created_by_principal', AttributeType: 'S' });
      const byCreated = tableNamed(TABLES.mcpServers)[1].Properties.GlobalSecondaryIndexes[0];
      expect(byCreated.KeySchema).toEqual([
        { AttributeName: 'list_pk', KeyType: 'HASH' },
        { AttributeName: 'created_key', KeyType: 'RANGE' },
      ]);
    });

    it('has the webhook tables: endpoints listed by creation and streamed, deliveries with their listing, status and open indexes', () => {
      const endpoints = tableNamed(TABLES.webhooks)[1].Properties;
      expect(endpoints.TableName).toBe(`dpm-${name}-webhooks`);
      expect(endpoints.KeySchema).toEqual([{ AttributeName: 'id', KeyType: 'HASH' }]);
      expect(endpoints.GlobalSecondaryIndexes.map((i: { IndexName: string }) => i.IndexName)).toEqual(['by_created']);
      expect(endpoints.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
      const deliveries = tableNamed(TABLES.webhookDeliveries)[1].Properties;
      expect(deliveries.TableName).toBe(`dpm-${name}-webhook-deliveries`);
      expect(deliveries.KeySchema).toEqual([
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ]);
      expect(deliveries.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at', Enabled: true });
      expect(deliveries.StreamSpecification).toBeUndefined();
      const keysOf = Object.fromEntries(
        deliveries.GlobalSecondaryIndexes.map((i: { IndexName: string; KeySchema: unknown }) => [
          i.IndexName,
          i.KeySchema,
        ]),
      );
      expect(keysOf).toEqual({
        by_endpoint: [
          { AttributeName: 'endpoint_id', KeyType: 'HASH' },
          { AttributeName: 'created_key', KeyType: 'RANGE' },
        ],
        by_endpoint_status: [
          { AttributeName: 'endpoint_status', KeyType: 'HASH' },
          { AttributeName: 'created_key', KeyType: 'RANGE' },
        ],
        open_deliveries: [
          { AttributeName: 'open', KeyType: 'HASH' },
          { AttributeName: 'created_key', KeyType: 'RANGE' },
        ],
      });
    });

    it('protects the data of kept stages: tables cannot be deleted, queues stay with a deleted stack', () => {
      const kept = name !== 'dev';
      for (const [, table] of resources(stateful, 'AWS::DynamoDB::Table'))
        expect(table.Properties.DeletionProtectionEnabled ?? false, table.Properties.TableName).toBe(kept);
      const queues = resources(stateful, 'AWS::SQS::Queue');
      expect(queues.length).toBeGreaterThan(0);
      for (const [, queue] of queues)
        expect(queue.DeletionPolicy, queue.Properties.QueueName).toBe(kept ? 'Retain' : 'Delete');
    });

    it('has exactly one bucket per definition and one for their access logs, named by CDK', () => {
      expect(bucketKeys).toEqual(['artifacts']);
      expect(resources(stateful, 'AWS::S3::Bucket')).toHaveLength(bucketKeys.length + 1);
      for (const key of bucketKeys) expect(bucketOf(key)[1].Properties.BucketName, key).toBeUndefined();
    });

    it.each(bucketKeys)('bucket %s is private, SSL-only and encrypted with the stage key', (key) => {
      const [bucketId, bucket] = bucketOf(key);
      const p = bucket.Properties;
      expect(p.BucketEncryption).toEqual({
        ServerSideEncryptionConfiguration: [
          {
            BucketKeyEnabled: true,
            ServerSideEncryptionByDefault: {
              SSEAlgorithm: 'aws:kms',
              KMSMasterKeyID: { 'Fn::GetAtt': [keyLogicalId(), 'Arn'] },
            },
          },
        ],
      });
      expect(p.PublicAccessBlockConfiguration).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(p.LifecycleConfiguration.Rules).toContainEqual(
        expect.objectContaining({ Status: 'Enabled', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 } }),
      );
      // kept stages: versioned, old versions expire; server access logs into the logs bucket
      if (name === 'dev') {
        expect(p.VersioningConfiguration?.Status).not.toBe('Enabled');
      } else {
        expect(p.VersioningConfiguration).toEqual({ Status: 'Enabled' });
        expect(p.LifecycleConfiguration.Rules).toContainEqual(
          expect.objectContaining({
            Status: 'Enabled',
            NoncurrentVersionExpiration: { NoncurrentDays: NONCURRENT_VERSION_DAYS },
            ExpiredObjectDeleteMarker: true,
          }),
        );
        expect(bucket.DeletionPolicy).toBe('Retain');
      }
      const [logsId, logs] = single(
        resources(stateful, 'AWS::S3::Bucket').filter(([id]) => id.startsWith('AccessLogsBucket')),
        'access logs bucket',
      );
      expect(p.LoggingConfiguration).toEqual({ DestinationBucketName: { Ref: logsId }, LogFilePrefix: `${key}/` });
      expect(
        logs.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault,
      ).toEqual({ SSEAlgorithm: 'AES256' });
      expect(logs.Properties.PublicAccessBlockConfiguration.RestrictPublicBuckets).toBe(true);
      expect(logs.Properties.LifecycleConfiguration.Rules).toContainEqual(
        expect.objectContaining({ ExpirationInDays: ACCESS_LOG_RETENTION_DAYS, Status: 'Enabled' }),
      );
      const policy = single(
        resources(stateful, 'AWS::S3::BucketPolicy').filter(([, bp]) => bp.Properties.Bucket?.Ref === bucketId),
        `policy of ${key}`,
      )[1];
      expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Action: 's3:*',
          Principal: { AWS: '*' },
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          Resource: [
            { 'Fn::GetAtt': [bucketId, 'Arn'] },
            { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] },
          ],
        }),
      );
    });

    it(`${name === 'dev' ? 'empties and deletes' : 'retains'} buckets with the stack`, () => {
      for (const key of bucketKeys) {
        const [bucketId, bucket] = bucketOf(key);
        expect(bucket.DeletionPolicy, key).toBe(name === 'dev' ? 'Delete' : 'Retain');
        const emptiers = resources(stateful, 'Custom::S3AutoDeleteObjects').filter(
          ([, c]) => c.Properties.BucketName?.Ref === bucketId,
        );
        expect(emptiers, key).toHaveLength(name === 'dev' ? 1 : 0);
      }
    });

    it('has no Keycloak or Airflow secret when the stage uses the builtin adapters', () => {
      expect(stage.idp ?? 'builtin').toBe('builtin');
      expect(stage.workflow ?? 'builtin').toBe('builtin');
      // prod has its bootstrap admin key, nothing else
      stateful.resourceCountIs('AWS::SecretsManager::Secret', stage.adminPsk ? 1 : 0);
      if (stage.adminPsk)
        stateful.hasResourceProperties('AWS::SecretsManager::Secret', { Name: `dpm/${name}/admin-psk` });
    });

    it('has a rotating KMS key with the stage alias', () => {
      stateful.resourceCountIs('AWS::KMS::Key', 1);
      stateful.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
      stateful.hasResourceProperties('AWS::KMS::Alias', {
        AliasName: `alias/dpm-${name}`,
        TargetKeyId: { 'Fn::GetAtt': [keyLogicalId(), 'Arn'] },
      });
    });

    it.each(queueDefs.map((q) => [q.id, q] as const))('queue %s redrives to its encrypted DLQ', (_, def) => {
      const queues = resources(stateful, 'AWS::SQS::Queue');
      const [dlqId, dlq] = single(
        queues.filter(([, q]) => q.Properties.QueueName === deadLetterQueueName(name, def)),
        'dead-letter queue',
      );
      const [queueId, queue] = single(
        queues.filter(([, q]) => q.Properties.QueueName === physicalQueueName(name, def)),
        'queue',
      );
      const encryptedWithKey = { 'Fn::GetAtt': [keyLogicalId(), 'Arn'] };
      expect(queue.Properties.VisibilityTimeout).toBe(def.visibilityTimeoutSeconds);
      expect(queue.Properties.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
        maxReceiveCount: def.maxReceiveCount,
      });
      expect(queue.Properties.KmsMasterKeyId).toEqual(encryptedWithKey);
      expect(dlq.Properties.KmsMasterKeyId).toEqual(encryptedWithKey);
      expect(dlq.Properties.MessageRetentionPeriod).toBe(def.deadLetterRetentionDays * 86_400);
      // The dead-letter handler's timeout is checked against the same window.
      expect(dlq.Properties.VisibilityTimeout).toBe(def.visibilityTimeoutSeconds);

      for (const id of [queueId, dlqId]) {
        const policy = single(
          resources(stateful, 'AWS::SQS::QueuePolicy').filter(([, p]) =>
            JSON.stringify(p.Properties.Queues).includes(`"${id}"`),
          ),
          `policy of ${id}`,
        )[1];
        expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
          expect.objectContaining({
            Effect: 'Deny',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        );
      }
    });

    /** Queues whose dead-letter queue a dead-letter handler drains (the crew runs'). */
    const handledKeys = (Object.keys(QUEUES) as QueueKey[]).filter((key) =>
      workers.some((w) => w.consumes === key && w.deadLetter),
    );
    const handled = (def: QueueDefinition) => handledKeys.some((key) => QUEUES[key] === def);

    it('drains the crew-run dead-letter queue with a handler, and no other', () => {
      expect(handledKeys).toEqual(['crewRuns']);
    });

    it.each(queueDefs.map((q) => [q.id, q] as const))(
      'alarms as soon as a message of %s is dead-lettered',
      (_, def) => {
        const [, dlqId] = queueIds(def);
        const alarmOf = (alarmName: string) =>
          single(
            resources(stateful, 'AWS::CloudWatch::Alarm').filter(([, a]) => a.Properties.AlarmName === alarmName),
            alarmName,
          )[1];
        const common = {
          Namespace: 'AWS/SQS',
          Period: 300,
          EvaluationPeriods: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          Threshold: 1,
          TreatMissingData: 'notBreaching',
        };
        if (!handled(def)) {
          // Nothing drains it: its depth is what was dead-lettered and not yet looked at.
          expect(alarmOf(`${deadLetterQueueName(name, def)}-depth`).Properties).toMatchObject({
            ...common,
            MetricName: 'ApproximateNumberOfMessagesVisible',
            Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
            Statistic: 'Maximum',
          });
          return;
        }
        // The handler empties it at once (depth stays 0): count what it receives.
        expect(alarmOf(`${deadLetterQueueName(name, def)}-received`).Properties).toMatchObject({
          ...common,
          MetricName: 'NumberOfMessagesReceived',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
          Statistic: 'Sum',
        });
        // The handler's own failures are bounded: a few receives, then the parked queue, whose depth alarms.
        const [parkedId, parked] = queueNamed(parkedQueueName(name, def));
        const dlq = queueNamed(deadLetterQueueName(name, def))[1];
        expect(dlq.Properties.RedrivePolicy).toEqual({
          deadLetterTargetArn: { 'Fn::GetAtt': [parkedId, 'Arn'] },
          maxReceiveCount: DEAD_LETTER_HANDLER_RECEIVES,
        });
        expect(DEAD_LETTER_HANDLER_RECEIVES).toBeLessThanOrEqual(5);
        expect(parked.Properties).toMatchObject({
          MessageRetentionPeriod: def.deadLetterRetentionDays * 86_400,
          KmsMasterKeyId: { 'Fn::GetAtt': [keyLogicalId(), 'Arn'] },
        });
        expect(parked.Properties.RedrivePolicy).toBeUndefined();
        expect(alarmOf(`${parkedQueueName(name, def)}-depth`).Properties).toMatchObject({
          ...common,
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [parkedId, 'QueueName'] } }],
          Statistic: 'Maximum',
        });
        // Nothing consumes the parked queue.
        for (const [, mapping] of resources(stateless, 'AWS::Lambda::EventSourceMapping'))
          expect(JSON.stringify(mapping.Properties.EventSourceArn)).not.toContain(parkedId);
      },
    );

    it('has the dead-letter alarms, one oldest-message alarm per queue and one throttle alarm per table, and nothing else', () => {
      const alarms = resources(stateful, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties.AlarmName as string);
      expect(alarms.sort()).toEqual(
        [
          ...queueDefs.map((q) => `${deadLetterQueueName(name, q)}-${handled(q) ? 'received' : 'depth'}`),
          ...queueDefs.filter(handled).map((q) => `${parkedQueueName(name, q)}-depth`),
          ...queueDefs.map((q) => `${physicalQueueName(name, q)}-oldest-message`),
          ...streamConsumers.map((c) => `dpm-${name}-${c.name}-dlq-depth`),
          ...tableEntries.map(([, def]) => `dpm-${name}-${def.id}-throttles`),
        ].sort(),
      );
    });

    it('alarms when the oldest message of a queue waits past its bound (its consumer stopped)', () => {
      for (const def of queueDefs) {
        const [queueId] = queueIds(def);
        const [, alarm] = single(
          resources(stateful, 'AWS::CloudWatch::Alarm').filter(
            ([, a]) => a.Properties.AlarmName === `${physicalQueueName(name, def)}-oldest-message`,
          ),
          `oldest-message alarm of ${def.id}`,
        );
        expect(alarm.Properties).toMatchObject({
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateAgeOfOldestMessage',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
          Statistic: 'Maximum',
          Threshold: def.oldestMessageAlarmSeconds,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          TreatMissingData: 'notBreaching',
        });
        // past the longest delay a message is sent with (15 min)
        expect(def.oldestMessageAlarmSeconds).toBeGreaterThan(900);
      }
    });

    it.each(tableEntries.map(([key, def]) => [def.id, key] as const))(
      'alarms on any throttled request to table %s, over every operation',
      (id) => {
        const [, alarm] = single(
          resources(stateful, 'AWS::CloudWatch::Alarm').filter(
            ([, a]) => a.Properties.AlarmName === `dpm-${name}-${id}-throttles`,
          ),
          `throttle alarm of ${id}`,
        );
        expect(alarm.Properties).toMatchObject({
          Threshold: 1,
          EvaluationPeriods: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          TreatMissingData: 'notBreaching',
        });
        const metrics = alarm.Properties.Metrics as { Id: string; Expression?: string; MetricStat?: any }[];
        const stats = metrics.filter((m) => m.MetricStat);
        expect(stats.length).toBeGreaterThan(5);
        for (const m of stats) {
          expect(m.MetricStat.Metric.Namespace).toBe('AWS/DynamoDB');
          expect(m.MetricStat.Metric.MetricName).toBe('ThrottledRequests');
          expect(m.MetricStat.Period).toBe(300);
        }
        expect(stats.map((m) => m.MetricStat.Metric.Dimensions.find((d: any) => d.Name === 'Operation').Value)).toEqual(
          expect.arrayContaining(['GetItem', 'PutItem', 'Query', 'UpdateItem', 'TransactWriteItems', 'BatchGetItem']),
        );
      },
    );

    it("alarms when the API's 5xx answers pass the stage's share of its requests", () => {
      const [, alarm] = single(
        resources(stateless, 'AWS::CloudWatch::Alarm').filter(
          ([, a]) => a.Properties.AlarmName === `dpm-${name}-api-5xx-rate`,
        ),
        '5xx alarm',
      );
      expect(alarm.Properties.Threshold).toBe(stageNamed(name).serverErrorAlarmPercent);
      const metrics = alarm.Properties.Metrics as { Id: string; Expression?: string; MetricStat?: any }[];
      expect(metrics.find((m) => m.Expression)?.Expression).toBe('IF(requests > 0, 100 * errors / requests, 0)');
      const byId = Object.fromEntries(metrics.filter((m) => m.MetricStat).map((m) => [m.Id, m.MetricStat]));
      expect(byId.errors.Metric).toMatchObject({ Namespace: 'AWS/ApiGateway', MetricName: '5xx' });
      expect(byId.requests.Metric).toMatchObject({ Namespace: 'AWS/ApiGateway', MetricName: 'Count' });
      for (const stat of [byId.errors, byId.requests]) {
        expect(stat.Stat).toBe('Sum');
        expect(stat.Period).toBe(300);
        expect(stat.Metric.Dimensions).toEqual([{ Name: 'ApiId', Value: { Ref: expect.any(String) } }]);
      }
    });

    it('alarms on failed invocations and on a p99 duration near the timeout of each function', () => {
      const named = (suffix: string) =>
        resources(stateless, 'AWS::CloudWatch::Alarm').filter(([, a]) =>
          (a.Properties.AlarmName as string).endsWith(suffix),
        );
      expect(
        named('-errors')
          .map(([, a]) => a.Properties.AlarmName)
          .sort(),
      ).toEqual(functionDefs.map((fn) => `dpm-${name}-${fn.name}-errors`).sort());
      for (const [, alarm] of named('-errors'))
        expect(alarm.Properties).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'Errors',
          Statistic: 'Sum',
          Period: 300,
          Threshold: 1,
          TreatMissingData: 'notBreaching',
        });
      for (const { name: fn } of functionDefs) {
        const [, alarm] = single(
          named('-duration-p99').filter(([, a]) => a.Properties.AlarmName === `dpm-${name}-${fn}-duration-p99`),
          `duration alarm of ${fn}`,
        );
        const timeoutMs = functionOf(fn)[1].Properties.Timeout * 1000;
        expect(alarm.Properties, fn).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'Duration',
          ExtendedStatistic: 'p99',
          Threshold: Math.round(0.8 * timeoutMs),
          EvaluationPeriods: 3,
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionOf(fn)[0] } }],
        });
      }
    });

    it('alarms on any throttled invocation of each function', () => {
      const alarms = resources(stateless, 'AWS::CloudWatch::Alarm').filter(([, a]) =>
        (a.Properties.AlarmName as string).endsWith('-throttles'),
      );
      expect(alarms.map(([, a]) => a.Properties.AlarmName).sort()).toEqual(
        functionDefs.map((fn) => `dpm-${name}-${fn.name}-throttles`).sort(),
      );
      for (const [, alarm] of alarms) {
        expect(alarm.Properties).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'Throttles',
          Statistic: 'Sum',
          Period: 300,
          Threshold: 1,
        });
      }
    });

    it("notifies the stage's alarm topic (prod requires one), or no one", () => {
      for (const t of [stateful, stateless])
        for (const [, alarm] of resources(t, 'AWS::CloudWatch::Alarm'))
          expect(alarm.Properties.AlarmActions).toEqual(stage.alarmTopicArn ? [stage.alarmTopicArn] : undefined);
      expect(stage.alarmTopicArn !== undefined).toBe(name === 'prod');
    });

    it('sets the crew-runs queue to five receives', () => {
      const queue = resources(stateful, 'AWS::SQS::Queue').find(
        ([, q]) => q.Properties.QueueName === `dpm-${name}-crew-runs`,
      );
      expect(queue?.[1].Properties.RedrivePolicy.maxReceiveCount).toBe(5);
    });
  });

  describe('stateless stack', () => {
    it('gives every function the build number (-c buildNumber=<git sha>) that GET /api/health/ping reports', () => {
      const { stateless: built } = synthesize(name, { buildNumber: 'abc1234' });
      const ours = resources(built, 'AWS::Lambda::Function').filter(([, f]) =>
        String(f.Properties.FunctionName).startsWith(`dpm-${name}-`),
      );
      expect(ours).toHaveLength(functionDefs.length);
      for (const [, f] of ours)
        expect(f.Properties.Environment.Variables.BUILD_NUMBER, f.Properties.FunctionName).toBe('abc1234');
    });

    it('has one arm64 Node 24 function per group, per worker and per stream consumer', () => {
      const ours = resources(stateless, 'AWS::Lambda::Function').filter(([, f]) =>
        String(f.Properties.FunctionName).startsWith(`dpm-${name}-`),
      );
      expect(ours).toHaveLength(groups.length + workers.length + streamConsumers.length);
      expect(ours.map(([, f]) => f.Properties.FunctionName)).toEqual(
        expect.arrayContaining([
          `dpm-${name}-platform`,
          `dpm-${name}-crews`,
          `dpm-${name}-dataproduct`,
          `dpm-${name}-data-shares`,
          `dpm-${name}-mcps`,
          `dpm-${name}-finetune`,
          `dpm-${name}-crews-worker`,
          `dpm-${name}-crews-dead-letter`,
          `dpm-${name}-domain-events`,
          `dpm-${name}-domain-events-publisher`,
          `dpm-${name}-domain-events-dispatcher`,
        ]),
      );
      for (const { name: fn } of functionDefs) {
        const p = functionOf(fn)[1].Properties;
        expect(p.Runtime).toBe('nodejs24.x');
        expect(p.Architectures).toEqual(['arm64']);
        expect(p.Handler).toBe('index.handler');
        expect(p.MemorySize).toBe(stage.lambdaMemoryMb);
        expect(p.LoggingConfig.LogFormat).toBe('JSON');
        // X-Ray active tracing where the stage traces (staging, prod), and only there.
        expect(p.TracingConfig, fn).toEqual(stage.tracing ? { Mode: 'Active' } : undefined);
      }
      expect(stage.tracing).toBe(name === 'prod');
    });

    it('times groups by the stage unless they say otherwise, and workers and stream consumers by their definition', () => {
      for (const group of groups) {
        const own = 'timeoutSeconds' in group ? (group as GroupDefinition).timeoutSeconds : undefined;
        expect(functionOf(group.name)[1].Properties.Timeout, group.name).toBe(own ?? stage.lambdaTimeoutSeconds);
        // API Gateway (HTTP API) ends an integration after 30 s whatever the Lambda does.
        expect(functionOf(group.name)[1].Properties.Timeout, group.name).toBeLessThan(30);
      }
      // E13 long polls (up to 20 s) fit in the crews group's time.
      expect(functionOf('crews')[1].Properties.Timeout).toBeGreaterThan(MAX_WAIT_SECONDS + 5);
      for (const worker of [...workers, ...streamConsumers])
        expect(functionOf(worker.name)[1].Properties.Timeout, worker.name).toBe(worker.timeoutSeconds);
      // A crew run outlasts an API request.
      expect(functionOf('crews-worker')[1].Properties.Timeout).toBeGreaterThan(stage.lambdaTimeoutSeconds);
    });

    it('throttles the HTTP API stage, and the expensive routes tighter, each a route of its group', () => {
      const [, apiStage] = single(resources(stateless, 'AWS::ApiGatewayV2::Stage'), 'API stage');
      expect(apiStage.Properties.DefaultRouteSettings).toMatchObject({
        ThrottlingRateLimit: stage.apiThrottle.rateLimit,
        ThrottlingBurstLimit: stage.apiThrottle.burstLimit,
      });
      expect(stage.expensiveRouteThrottle.rateLimit).toBeLessThan(stage.apiThrottle.rateLimit);
      expect(stage.expensiveRouteThrottle.burstLimit).toBeLessThan(stage.apiThrottle.burstLimit);
      const routes = new Map(
        resources(stateless, 'AWS::ApiGatewayV2::Route').map(([, r]) => [r.Properties.RouteKey, r.Properties.Target]),
      );
      expect(Object.keys(apiStage.Properties.RouteSettings).sort()).toEqual(
        EXPENSIVE_ROUTES.map((r) => `${r.method} ${r.path}`).sort(),
      );
      for (const route of EXPENSIVE_ROUTES) {
        const key = `${route.method} ${route.path}`;
        // served by the same integration (function) as the rest of its group's paths
        const group = groupForPath(route.path)!;
        expect(routes.get(key), key).toEqual(routes.get(`ANY ${group.prefixes[0]}/{proxy+}`));
        expect(apiStage.Properties.RouteSettings[key]).toEqual({
          ThrottlingRateLimit: stage.expensiveRouteThrottle.rateLimit,
          ThrottlingBurstLimit: stage.expensiveRouteThrottle.burstLimit,
        });
      }
    });

    it('writes an access log line per request with the fields an operator needs', () => {
      const [, apiStage] = single(resources(stateless, 'AWS::ApiGatewayV2::Stage'), 'API stage');
      const settings = apiStage.Properties.AccessLogSettings;
      expect(JSON.stringify(settings.DestinationArn)).toContain('ApiAccessLogs');
      const format = JSON.parse(settings.Format) as Record<string, string>;
      expect(format).toMatchObject({
        requestId: '$context.requestId',
        status: '$context.status',
        responseLatency: '$context.responseLatency',
        integrationLatency: '$context.integrationLatency',
        integrationStatus: '$context.integrationStatus',
        errorMessage: '$context.error.message',
        integrationError: '$context.integrationErrorMessage',
        userAgent: '$context.identity.userAgent',
        routeKey: '$context.routeKey',
      });
      // Never a header or a query string: credentials travel there.
      for (const value of Object.values(format)) expect(value).not.toMatch(/header|querystring|authorizer/i);
    });

    it('answers no browser origin by default (no CORS configuration)', () => {
      const [, api] = single(resources(stateless, 'AWS::ApiGatewayV2::Api'), 'HTTP API');
      expect(stage.corsOrigins ?? []).toEqual([]);
      expect(api.Properties.CorsConfiguration).toBeUndefined();
    });

    it('reserves concurrency for the crews API, the crew worker, the events publisher and the webhook worker (none on dev)', () => {
      for (const { name: fn } of functionDefs) {
        const reserved = functionOf(fn)[1].Properties.ReservedConcurrentExecutions;
        const expected = (stage.reservedConcurrency as Record<string, number> | undefined)?.[fn];
        expect(reserved, fn).toBe(expected);
        if ((RESERVED_FUNCTIONS as readonly string[]).includes(fn) && name !== 'dev')
          expect(reserved, fn).toBeGreaterThan(0);
      }
      // A flood of E13 long polls takes at most the crews API's own reservation (the fair-use limits).
      expect(functionOf('crews')[1].Properties.ReservedConcurrentExecutions).toEqual(
        name === 'dev' ? undefined : expect.any(Number),
      );
      if (name === 'dev') expect(stage.reservedConcurrency).toBeUndefined();
    });

    it("caps the concurrency of every SQS event source, within its function's reservation", () => {
      for (const worker of workers) {
        const mapping = single(mappingsOf(worker.name), `mapping of ${worker.name}`).Properties;
        const max = mapping.ScalingConfig?.MaximumConcurrency;
        expect(max, worker.name).toBe(
          worker.name === 'crews-worker' ? stage.crewWorkerMaxConcurrency : stage.queueWorkerMaxConcurrency,
        );
        expect(max).toBeGreaterThanOrEqual(2);
        const reserved = functionOf(worker.name)[1].Properties.ReservedConcurrentExecutions;
        if (reserved !== undefined) expect(max, worker.name).toBeLessThanOrEqual(reserved);
      }
    });

    it('refuses a stage whose worker may carry more than its reservation (throttles burn receive counts)', () => {
      const tooMany = stage.reservedConcurrency
        ? { crewWorkerMaxConcurrency: stage.reservedConcurrency['crews-worker'] + 1 }
        : { reservedConcurrency: { crews: 1, 'crews-worker': 1, 'domain-events-publisher': 1, 'webhooks-worker': 1 } };
      expect(() => synthesize(name, { stage: tooMany })).toThrow(
        new RegExp(
          `^stage "${name}": worker "crews-worker" maxConcurrency \\(\\d+\\) must not exceed its reserved concurrency \\(\\d+\\)$`,
        ),
      );
    });

    it('gives each function its own log group with the stage retention', () => {
      for (const { name: fn } of functionDefs) {
        const logGroupId = functionOf(fn)[1].Properties.LoggingConfig.LogGroup.Ref;
        const logGroup = stateless.toJSON().Resources[logGroupId] as Resource;
        expect(logGroup.Type).toBe('AWS::Logs::LogGroup');
        expect(logGroup.Properties.RetentionInDays).toBe(stage.logRetentionDays);
        expect(logGroup.DeletionPolicy).toBe(name === 'dev' ? 'Delete' : 'Retain');
      }
    });

    it('sets the environment from the stage record, omitting unset values', () => {
      for (const fn of functionDefs) {
        const env = functionOf(fn.name)[1].Properties.Environment.Variables;
        expect(env).toMatchObject({
          STAGE: name,
          POWERTOOLS_SERVICE_NAME: `dpm-${fn.name}`,
          EVENTS_TTL_DAYS: '30',
        });
        // Node would parse the bundle's source map at every cold start (service-function.ts).
        expect(env.NODE_OPTIONS).toBeUndefined();
        const optional = {
          AUTH_ISSUER: stage.authIssuer,
          AUTH_AUDIENCE: stage.authAudience,
          AUTH_JWKS_URL: stage.authJwksUrl,
          LLM_BASE_URL: stage.llmBaseUrl,
          LLM_MODEL: stage.llmModel,
        } as Record<string, string | undefined>;
        for (const [variable, value] of Object.entries(optional)) expect(env[variable]).toBe(value);
        const sendsToCrewRuns = 'sendsTo' in fn && (fn as GroupDefinition).sendsTo?.includes('crewRuns');
        expect('CREW_RUN_QUEUE_URL' in env, fn.name).toBe(sendsToCrewRuns === true);
        // The key is a secret: never plain environment.
        expect('LLM_API_KEY' in env, fn.name).toBe(false);
        // Neither dev nor prod sets an identity provider: the service's default (builtin) holds.
        // Nor a workflow engine: migration keeps the builtin one.
        for (const variable of [
          'IDP',
          'KEYCLOAK_URL',
          'KEYCLOAK_ADMIN_CLIENT_SECRET',
          'KEYCLOAK_ADMIN_CLIENT_SECRET_ARN',
          'WORKFLOW',
          'AIRFLOW_BASE_URL',
          'AIRFLOW_USERNAME',
          'AIRFLOW_PASSWORD',
          'AIRFLOW_PASSWORD_ARN',
        ]) {
          expect(variable in env, `${fn.name} ${variable}`).toBe(false);
        }
      }
    });

    it('runs no function in a VPC', () => {
      expect(stage.migrationVpc).toBeUndefined();
      for (const { name: fn } of functionDefs) expect(functionOf(fn)[1].Properties.VpcConfig, fn).toBeUndefined();
      stateless.resourceCountIs('AWS::EC2::SecurityGroup', 0);
    });

    it('gives the crews function the crew-run queue URL and lets it send there', () => {
      const [queueId] = queueIds(QUEUES.crewRuns);
      const env = functionOf('crews')[1].Properties.Environment.Variables;
      expect(env.CREW_RUN_QUEUE_URL).toEqual(imported(queueId, 'Ref'));
      const onQueue = statementsOnId('crews', queueId).flatMap(actions);
      expect(onQueue).toContain('sqs:SendMessage');
      expect(onQueue).not.toContain('sqs:ReceiveMessage');
      expect(onQueue).not.toContain('sqs:DeleteMessage');
    });

    it('feeds each worker from its queue (or dead-letter queue) with partial batch responses', () => {
      expect(resources(stateless, 'AWS::Lambda::EventSourceMapping')).toHaveLength(
        workers.length + streamConsumers.reduce((n, c) => n + c.streams.length, 0),
      );
      for (const worker of workers) {
        const [queueId, dlqId] = queueIds(QUEUES[worker.consumes]);
        const mapping = single(mappingsOf(worker.name), `mapping of ${worker.name}`);
        expect(mapping.Properties).toEqual(
          expect.objectContaining({
            EventSourceArn: imported(worker.deadLetter ? dlqId : queueId, 'Arn'),
            BatchSize: worker.batchSize,
            FunctionResponseTypes: ['ReportBatchItemFailures'],
          }),
        );
      }
      for (const group of groups) expect(mappingsOf(group.name), group.name).toEqual([]);
    });

    it('runs crew runs from the crew-runs queue and their failures from its dead-letter queue', () => {
      const [queueId, dlqId] = queueIds(QUEUES.crewRuns);
      const worker = single(mappingsOf('crews-worker'), 'crews-worker mapping').Properties;
      expect(worker.EventSourceArn).toEqual(imported(queueId, 'Arn'));
      expect(worker.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
      // one run per invocation, no batching window, the stage's concurrency (issue 16)
      expect(worker.BatchSize).toBe(1);
      expect(worker.MaximumBatchingWindowInSeconds ?? 0).toBe(0);
      expect(worker.ScalingConfig).toEqual({ MaximumConcurrency: stage.crewWorkerMaxConcurrency });
      const deadLetter = single(mappingsOf('crews-dead-letter'), 'crews-dead-letter mapping').Properties;
      expect(deadLetter.EventSourceArn).toEqual(imported(dlqId, 'Arn'));
      expect(deadLetter.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    });

    it('lets each worker consume only the queue it is fed from, and send only where it declares', () => {
      // The stateful stack exports each queue's ARN; a statement names its queue by that export.
      const names = (resource: unknown, logicalId: string) =>
        JSON.stringify(resource).includes(`FnGetAtt${logicalId}Arn`);
      for (const worker of workers) {
        const [queueId, dlqId] = queueIds(QUEUES[worker.consumes]);
        const consumed = worker.deadLetter ? dlqId : queueId;
        const sendsTo = (('sendsTo' in worker ? worker.sendsTo : undefined) ?? []).map(
          (key) => queueIds(QUEUES[key])[0],
        );
        const sqs = statementsOf(worker.name).filter((s) => actions(s).some((a) => a.startsWith('sqs:')));
        const on = (logicalId: string) => sqs.filter((s) => names(s.Resource, logicalId)).flatMap(actions);
        expect(on(consumed), worker.name).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
        for (const s of sqs) {
          const consumesHere = names(s.Resource, consumed);
          const sendsHere = sendsTo.some((id) => names(s.Resource, id));
          expect(consumesHere || sendsHere, `${worker.name}: ${JSON.stringify(s.Resource)}`).toBe(true);
          if (!sendsHere) expect(actions(s), worker.name).not.toContain('sqs:SendMessage');
        }
        for (const id of sendsTo) expect(on(id), worker.name).toContain('sqs:SendMessage');
      }
      // hard facts: the crew worker queues long runs again; the dead-letter handler sends nowhere
      expect(WORKERS.find((w) => w.name === 'crews-worker')).toMatchObject({ sendsTo: ['crewRuns'] });
      expect(statementsOf('crews-dead-letter').filter((s) => actions(s).includes('sqs:SendMessage'))).toEqual([]);
    });

    it('runs webhook deliveries from the webhook queue, below its visibility timeout, opening secrets without sealing any', () => {
      const [queueId] = queueIds(QUEUES.webhookDeliveries);
      const worker = WORKERS.find((w) => w.name === 'webhooks-worker')!;
      expect(worker.timeoutSeconds).toBeLessThan(QUEUES.webhookDeliveries.visibilityTimeoutSeconds);
      expect(single(mappingsOf('webhooks-worker'), 'webhooks-worker mapping').Properties).toMatchObject({
        EventSourceArn: imported(queueId, 'Arn'),
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      const fn = functionOf('webhooks-worker')[1].Properties;
      expect(fn.Timeout).toBe(30);
      expect(fn.Environment.Variables).toMatchObject({
        WEBHOOK_QUEUE_URL: imported(queueId, 'Ref'),
        KMS_KEY_ID: imported(keyLogicalId(), 'Arn'),
      });
      // Decrypt opens the secrets; the rest is what writing its tables and sending its retries need
      // (an encrypted queue's producer makes a data key): nothing of its own to seal with.
      expect(kmsActionsOnKey('webhooks-worker')).toEqual(
        [...new Set([...KEY_ACTIONS.tableReadWrite, ...KEY_ACTIONS.queueSend])].sort(),
      );
      for (const table of [TABLES.webhooks, TABLES.webhookDeliveries])
        expect(statementsOn('webhooks-worker', table).flatMap(actions), table.id).toEqual(
          expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query']),
        );
      for (const table of [TABLES.keys, TABLES.domainEvents, TABLES.decisions])
        expect(statementsOn('webhooks-worker', table), table.id).toEqual([]);
    });

    it('lets the webhooks group seal secrets, write endpoints and deliveries, and queue deliveries', () => {
      const [queueId] = queueIds(QUEUES.webhookDeliveries);
      const env = functionOf('webhooks')[1].Properties.Environment.Variables;
      expect(env.WEBHOOK_QUEUE_URL).toEqual(imported(queueId, 'Ref'));
      expect(env.KMS_KEY_ID).toEqual(imported(keyLogicalId(), 'Arn'));
      expect(kmsActionsOnKey('webhooks')).toEqual(expect.arrayContaining(['kms:GenerateDataKey', 'kms:Decrypt']));
      const onQueue = statementsOnId('webhooks', queueId).flatMap(actions);
      expect(onQueue).toContain('sqs:SendMessage');
      expect(onQueue).not.toContain('sqs:ReceiveMessage');
      for (const table of [TABLES.webhooks, TABLES.webhookDeliveries])
        expect(statementsOn('webhooks', table).flatMap(actions), table.id).toEqual(
          expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']),
        );
      expect(statementsOn('webhooks', TABLES.domainEvents)).toEqual([]);
    });

    it('lets the crews worker use crew-runs and events but not decisions or keys', () => {
      const [queueId] = queueIds(QUEUES.crewRuns);
      const onQueue = statementsOnId('crews-worker', queueId).flatMap(actions);
      expect(onQueue).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
      for (const table of [TABLES.crewRuns, TABLES.runLog]) {
        expect(statementsOn('crews-worker', table).flatMap(actions), table.id).toEqual(
          expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']),
        );
      }
      for (const table of [TABLES.decisions, TABLES.keys]) {
        expect(statementsOn('crews-worker', table), table.id).toEqual([]);
      }
      // Decrypting messages and items needs the stateful key.
      const kms = statementsOf('crews-worker').filter((s) => actions(s).includes('kms:Decrypt'));
      expect(JSON.stringify(kms.map((s) => s.Resource))).toContain(keyLogicalId());
    });

    it('routes every prefix, exact path and $default to the right function', () => {
      const integrationTarget = Object.fromEntries(
        resources(stateless, 'AWS::ApiGatewayV2::Integration').map(([id, i]) => [
          id,
          i.Properties.IntegrationUri['Fn::GetAtt'][0] as string,
        ]),
      );
      const routes = Object.fromEntries(
        resources(stateless, 'AWS::ApiGatewayV2::Route').map(([, r]) => [
          r.Properties.RouteKey as string,
          integrationTarget[r.Properties.Target['Fn::Join'][1][1].Ref as string],
        ]),
      );
      const expected: Record<string, string> = { $default: functionOf('platform')[0] };
      for (const group of groups) {
        const fn = functionOf(group.name)[0];
        for (const prefix of group.prefixes) {
          expected[`ANY ${prefix}`] = fn;
          expected[`ANY ${prefix}/{proxy+}`] = fn;
        }
        for (const path of group.exactPaths ?? []) expected[`GET ${path}`] = fn;
      }
      // the expensive routes (throttled apart) go to their group's function too
      for (const route of EXPENSIVE_ROUTES)
        expected[`${route.method} ${route.path}`] = functionOf(groupForPath(route.path)!.name)[0];
      expect(routes).toEqual(expected);
      // /api/health/ping reaches platform through its prefix's proxy route.
      expect(Object.keys(routes)).toEqual(
        expect.arrayContaining([
          'ANY /api/decisions/{proxy+}',
          'ANY /api/decisions',
          'ANY /api/health/{proxy+}',
          'GET /openapi.json',
          'GET /asyncapi.json',
          'GET /docs',
          '$default',
        ]),
      );
      expect(routes['ANY /api/decisions/{proxy+}']).toBe(functionOf('decisions')[0]);
      for (const route of [
        'ANY /api/crew-templates/{proxy+}',
        'ANY /api/crew-runs/{proxy+}',
        'ANY /api/events/{proxy+}',
      ]) {
        expect(routes[route], route).toBe(functionOf('crews')[0]);
      }
      for (const [prefix, fn] of [
        ['/api/dataproduct', 'dataproduct'],
        ['/api/data_shares', 'data-shares'],
        ['/api/mcps', 'mcps'],
        ['/api/finetune', 'finetune'],
      ] as const) {
        expect(routes[`ANY ${prefix}`], prefix).toBe(functionOf(fn)[0]);
        expect(routes[`ANY ${prefix}/{proxy+}`], prefix).toBe(functionOf(fn)[0]);
      }
      // Domain events: the feed itself and one event.
      expect(routes['ANY /api/domain-events']).toBe(functionOf('domain-events')[0]);
      expect(routes['ANY /api/domain-events/{proxy+}']).toBe(functionOf('domain-events')[0]);
      // Workers are reached through their queues only, stream consumers through their streams.
      for (const worker of [...workers, ...streamConsumers])
        expect(Object.values(routes), worker.name).not.toContain(functionOf(worker.name)[0]);
    });

    it('has one HTTP API without CORS and outputs its URL', () => {
      stateless.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
      const api = single(resources(stateless, 'AWS::ApiGatewayV2::Api'), 'api')[1];
      expect(api.Properties).toMatchObject({ Name: `dpm-${name}`, ProtocolType: 'HTTP' });
      expect(api.Properties.CorsConfiguration).toBeUndefined();
      stateless.hasResourceProperties('AWS::ApiGatewayV2::Stage', { StageName: '$default', AutoDeploy: true });
      expect(Object.keys(stateless.findOutputs('ApiUrl'))).toEqual(['ApiUrl']);
    });

    it('grants each group and worker exactly the table access it declares', () => {
      for (const fn of functionDefs) {
        for (const [key, def] of tableEntries) {
          const granted = statementsOn(fn.name, def).flatMap(actions);
          const declared = fn.tables[key];
          if (declared === undefined) expect(granted, `${fn.name} on ${key}`).toEqual([]);
          else if (declared === 'read') {
            expect(granted.length, `${fn.name} reads ${key}`).toBeGreaterThan(0);
            expect(
              granted.filter((a) => !DYNAMODB_READ_ACTIONS.has(a)),
              `${fn.name} on ${key}`,
            ).toEqual([]);
          } else
            expect(granted, `${fn.name} writes ${key}`).toEqual(
              expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']),
            );
        }
        const sends = statementsOf(fn.name).flatMap(actions).includes('sqs:SendMessage');
        const declaredSends = 'sendsTo' in fn ? ((fn as GroupDefinition).sendsTo ?? []) : [];
        // A stream consumer sends to its dead-letter queue only (see test/infra/events.test.ts).
        expect(sends, `${fn.name} sends`).toBe(declaredSends.length > 0 || isStreamConsumer(fn.name));
      }
    });

    it('lets decisions write decisions and only read keys', () => {
      const onDecisions = statementsOn('decisions', TABLES.decisions).flatMap(actions);
      expect(onDecisions).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query']));
      const onKeys = statementsOn('decisions', TABLES.keys).flatMap(actions);
      expect(onKeys).toContain('dynamodb:GetItem');
      expect(onKeys).not.toContain('dynamodb:PutItem');
      expect(onKeys).not.toContain('dynamodb:DeleteItem');
      // The grant covers the table's indexes too, each by name (no `index/*`).
      const resourcesOnKeys = JSON.stringify(statementsOn('decisions', TABLES.keys).map((s) => s.Resource));
      expect(TABLES.keys.indexes.length).toBeGreaterThan(0);
      for (const index of TABLES.keys.indexes) expect(resourcesOnKeys).toContain(`/index/${index.name}"`);
      expect(resourcesOnKeys).not.toContain('/index/*');
      const kms = statementsOf('decisions').filter((s) => actions(s).includes('kms:Decrypt'));
      expect(JSON.stringify(kms.map((s) => s.Resource))).toContain(keyLogicalId());
    });

    it('keeps data products by pk, listed by name and by role, streamed; every group checking keys reads them', () => {
      const p = tableNamed(TABLES.dataProducts)[1].Properties;
      expect(p.TableName).toBe(`dpm-${name}-data-products`);
      expect(p.KeySchema).toEqual([{ AttributeName: 'pk', KeyType: 'HASH' }]);
      expect(p.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
      expect(
        Object.fromEntries(
          p.GlobalSecondaryIndexes.map((i: { IndexName: string; KeySchema: unknown }) => [i.IndexName, i.KeySchema]),
        ),
      ).toEqual({
        by_name: [
          { AttributeName: 'list_pk', KeyType: 'HASH' },
          { AttributeName: 'name', KeyType: 'RANGE' },
        ],
        by_role: [
          { AttributeName: 'list_role', KeyType: 'HASH' },
          { AttributeName: 'name', KeyType: 'RANGE' },
        ],
      });
      // A key stops with its data product (docs/sdk.md): whoever checks keys reads products too.
      const checkingKeys = groups.filter((g) => g.tables.keys !== undefined);
      expect(checkingKeys.length).toBeGreaterThan(10);
      for (const g of checkingKeys) {
        const granted = statementsOn(g.name, TABLES.dataProducts).flatMap(actions);
        expect(granted, g.name).toContain('dynamodb:GetItem');
        if (g.name !== 'dataproduct') expect(granted, g.name).not.toContain('dynamodb:PutItem');
      }
      expect(statementsOn('dataproduct', TABLES.dataProducts).flatMap(actions)).toEqual(
        expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query']),
      );
    });

    it('gives buckets to exactly the groups that declare them, with their names', () => {
      const withBuckets = groups.filter((g) => g.buckets).map((g) => g.name);
      expect(withBuckets).toContain('finetune');
      for (const other of ['platform', 'decisions', 'crews', 'dataproduct', 'data-shares', 'mcps']) {
        expect(withBuckets).not.toContain(other);
      }
      for (const fn of functionDefs) {
        const declared = ('buckets' in fn ? (fn as GroupDefinition).buckets : undefined) ?? {};
        const env = functionOf(fn.name)[1].Properties.Environment.Variables;
        const s3 = statementsOf(fn.name).filter((s) => actions(s).some((a) => a.startsWith('s3:')));
        for (const key of bucketKeys) {
          const onBucket = s3.filter((s) => resourcesOf(s).some((r) => isBucketArn(key)(r) || isObjectsArn(key)(r)));
          if (declared[key] === undefined) {
            expect(env[BUCKET_VARIABLE[key]], `${fn.name} ${key}`).toBeUndefined();
            expect(onBucket, `${fn.name} on ${key}`).toEqual([]);
          } else {
            expect(env[BUCKET_VARIABLE[key]], `${fn.name} ${key}`).toEqual(imported(bucketOf(key)[0], 'Ref'));
            expect(onBucket.length, `${fn.name} on ${key}`).toBeGreaterThan(0);
          }
        }
        if (Object.keys(declared).length === 0) expect(s3, `${fn.name} S3`).toEqual([]);
      }
    });

    it('lets finetune read, write, list and delete artifacts, and use the key that encrypts them', () => {
      const statements = statementsOf('finetune');
      const [bucketId] = bucketOf('artifacts');
      expect(functionOf('finetune')[1].Properties.Environment.Variables.ARTIFACTS_BUCKET).toEqual(
        imported(bucketId, 'Ref'),
      );
      for (const action of ['s3:GetObject', 's3:PutObject', 's3:DeleteObject']) {
        expect(allows(statements, action, isObjectsArn('artifacts', 'finetune/*')), action).toBe(true);
        // only its prefix: not every object of the bucket
        expect(allows(statements, action, isObjectsArn('artifacts', '*')), action).toBe(false);
      }
      expect(allows(statements, 's3:ListBucket', isBucketArn('artifacts')), 's3:ListBucket').toBe(true);
      // Not beyond the bucket: no S3 action on every resource.
      expect(allows(statements, 's3:GetObject', (r) => r === '*')).toBe(false);
      // SSE-KMS objects: writing needs a data key, reading needs decrypt.
      expect(allows(statements, 'kms:GenerateDataKey', isKeyArn)).toBe(true);
      expect(allows(statements, 'kms:Decrypt', isKeyArn)).toBe(true);
    });

    it('gives KMS_KEY_ID to exactly the groups that seal secrets', () => {
      const sealers = groups.filter((g) => g.usesKms).map((g) => g.name);
      expect(sealers).toContain('data-shares');
      // a crew run's own webhook secret (E2 `webhook_url`) is sealed where the run is made
      expect(sealers).toContain('crews');
      // a key's creation answer, kept sealed for Idempotency-Key repeats (docs/identity-and-keys.md, idempotency keys)
      expect(sealers).toContain('dataproduct');
      for (const other of ['platform', 'decisions', 'mcps', 'finetune']) {
        expect(sealers).not.toContain(other);
      }
      for (const fn of functionDefs) {
        const env = functionOf(fn.name)[1].Properties.Environment.Variables;
        const usesKms = 'usesKms' in fn && (fn as GroupDefinition).usesKms === true;
        if (usesKms) expect(env.KMS_KEY_ID, fn.name).toEqual(imported(keyLogicalId(), 'Arn'));
        else expect(env.KMS_KEY_ID, fn.name).toBeUndefined();
      }
    });

    it('grants data-shares exactly kms:GenerateDataKey and kms:Decrypt on top of its table grants', () => {
      const onKey = kmsActionsOnKey('data-shares');
      expect(onKey).toEqual(expect.arrayContaining(['kms:GenerateDataKey', 'kms:Decrypt']));
      // Encrypted tables already bring their KMS actions (mcps has the same table grants);
      // the envelope-encryption grant adds these two and nothing else.
      const fromTables = kmsActionsOnKey('mcps');
      expect(fromTables.length).toBeGreaterThan(0);
      expect(onKey).toEqual([...new Set([...fromTables, 'kms:GenerateDataKey', 'kms:Decrypt'])].sort());
      expect(onKey.filter((a) => a === 'kms:*' || a === 'kms:CreateGrant')).toEqual([]);
      // The exact `kms:GenerateDataKey` (not the tables' `kms:GenerateDataKey*`) comes only from a
      // group's usesKms (it seals), a send to an encrypted queue or a bucket write; a worker's usesKms only opens.
      for (const fn of functionDefs) {
        const seals = groups.some((g) => g.name === fn.name && g.usesKms === true);
        const sends = ('sendsTo' in fn && (fn.sendsTo as readonly string[]).length > 0) || isStreamConsumer(fn.name);
        const writesObjects = Object.values(('buckets' in fn && (fn as GroupDefinition).buckets) || {}).includes(
          'readWrite',
        );
        expect(kmsActionsOnKey(fn.name).includes('kms:GenerateDataKey'), fn.name).toBe(seals || sends || writesObjects);
        // Nothing here re-encrypts: CDK's own grants would add kms:ReEncrypt*.
        expect(
          kmsActionsOnKey(fn.name).filter((a) => a.startsWith('kms:ReEncrypt')),
          fn.name,
        ).toEqual([]);
      }
    });

    it('gives platform no DynamoDB, SQS or KMS permission', () => {
      const granted = statementsOf('platform').flatMap(actions);
      expect(granted.filter((a) => /^(dynamodb|sqs|kms|s3|secretsmanager):/.test(a))).toEqual([]);
    });

    it('grants no service-wide wildcard action (dynamodb:*, *) and no action on every resource', () => {
      for (const { name: fn } of functionDefs) {
        for (const s of statementsOf(fn)) {
          expect(
            actions(s).filter((a) => a === '*' || a.endsWith(':*')),
            fn,
          ).toEqual([]);
          // The only resource-less actions are CloudWatch/X-Ray telemetry writes, which have no
          // resource, and a stream consumer's dynamodb:ListStreams.
          if (resourcesOf(s).includes('*'))
            expect(
              actions(s).every(
                (a) => /^(xray|cloudwatch|logs):/.test(a) || (isStreamConsumer(fn) && a === 'dynamodb:ListStreams'),
              ),
              `${fn}: ${actions(s)}`,
            ).toBe(true);
        }
      }
    });

    it('never grants DynamoDB, SQS, S3, KMS or Secrets Manager on every resource (but listing streams)', () => {
      for (const { name: fn } of functionDefs) {
        for (const s of statementsOf(fn)) {
          const guarded = actions(s).filter(
            (a) =>
              /^(dynamodb|sqs|s3|kms|secretsmanager|events):/.test(a) &&
              !(isStreamConsumer(fn) && a === 'dynamodb:ListStreams'),
          );
          if (guarded.length > 0) expect(resourcesOf(s), `${fn}: ${guarded}`).not.toContain('*');
        }
      }
      // It is granted to the stream consumers, and to no one else.
      for (const { name: fn } of functionDefs) {
        expect(statementsOf(fn).flatMap(actions).includes('dynamodb:ListStreams'), fn).toBe(isStreamConsumer(fn));
      }
    });
  });
});
