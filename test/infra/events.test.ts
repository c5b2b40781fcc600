import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { STREAM_CONSUMERS, type StreamConsumerDefinition, WORKERS } from '../../infra/groups.js';
import {
  QUEUES,
  TABLES,
  deadLetterQueueName,
  physicalQueueName,
  physicalTableName,
  type TableDefinition,
  type TableKey,
} from '../../infra/tables.js';
import {
  ITERATOR_AGE_ALARM,
  STREAM_DEAD_LETTER_RETENTION_DAYS,
  STREAM_RETRY,
  eventBusName,
  streamDeadLetterQueueName,
} from '../../infra/aws/domain-events.js';
import { STAGES, type StageName } from '../../infra/aws/stages.js';
import {
  actions,
  functionDefs,
  functionIn,
  importOf,
  mappingsIn,
  resources,
  resourcesOf,
  single,
  statementsIn,
  streamConsumers,
  withStubHandlers,
  type Resource,
} from './support.js';

/** Domain events on AWS (docs/events-and-webhooks.md): streams, the stream consumers, the stage's bus, webhook queues. */

const { synthesize, synthesizeOnce } = withStubHandlers();
const tableEntries = Object.entries(TABLES) as [TableKey, TableDefinition][];
const publisher = streamConsumers.find((c) => c.name === 'domain-events-publisher')!;
const dispatcher = streamConsumers.find((c) => c.name === 'domain-events-dispatcher')!;
const STREAM_READ_ACTIONS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];

describe.each(['dev', 'staging', 'prod'] as const)('domain events on stage %s', (name: StageName) => {
  const stage = STAGES[name];
  let stateful: Template;
  let stateless: Template;
  beforeAll(() => {
    ({ stateful, stateless } = synthesizeOnce(name));
  }, 60_000);

  const tableId = (def: TableDefinition): string =>
    single(
      resources(stateful, 'AWS::DynamoDB::Table').filter(
        ([, r]) => r.Properties.TableName === physicalTableName(name, def),
      ),
      `table ${def.id}`,
    )[0];
  const queueNamed = (queueName: string): [string, Resource] =>
    single(
      resources(stateful, 'AWS::SQS::Queue').filter(([, q]) => q.Properties.QueueName === queueName),
      queueName,
    );
  const keyId = () => single(resources(stateful, 'AWS::KMS::Key'), 'KMS key')[0];
  const busId = () => single(resources(stateful, 'AWS::Events::EventBus'), 'event bus')[0];
  const consumerDeadLetterId = (c: StreamConsumerDefinition) => queueNamed(streamDeadLetterQueueName(name, c))[0];
  const alarmNamed = (t: Template, alarmName: string): Resource =>
    single(
      resources(t, 'AWS::CloudWatch::Alarm').filter(([, a]) => a.Properties.AlarmName === alarmName),
      alarmName,
    )[1];
  /** Whether a policy resource (or any of them) names a stateful resource's attribute, imported. */
  const names = (resource: unknown, logicalId: string, attribute: 'Arn' | 'StreamArn') =>
    JSON.stringify(resource).includes(`FnGetAtt${logicalId}${attribute}`);
  /** The functions allowed to send to a queue of the stateful stack, by name. */
  const sendersTo = (queueId: string) =>
    functionDefs
      .filter((fn) =>
        statementsIn(stateless, name, fn.name).some(
          (s) => actions(s).includes('sqs:SendMessage') && names(s.Resource, queueId, 'Arn'),
        ),
      )
      .map((fn) => fn.name)
      .sort();

  describe('stateful stack', () => {
    it('streams new and old images of exactly the tables that declare a stream', () => {
      const streamed = tableEntries.filter(([, def]) => def.stream === true).map(([key]) => key);
      expect(streamed).toContain('domainEvents');
      // the run log: the dispatcher sends its entries to their runs' own webhooks
      expect(streamed).toContain('runLog');
      for (const [key, def] of tableEntries) {
        const table = stateful.toJSON().Resources[tableId(def)] as Resource;
        expect(table.Properties.StreamSpecification, key).toEqual(
          def.stream ? { StreamViewType: 'NEW_AND_OLD_IMAGES' } : undefined,
        );
      }
    });

    it('keeps the domain events table like the others: its TTL, the stage recovery and removal, the stage key', () => {
      const table = stateful.toJSON().Resources[tableId(TABLES.domainEvents)] as Resource;
      expect(table.Properties.TableName).toBe(`dpm-${name}-domain-events`);
      expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at', Enabled: true });
      // the type filter's index, by type in recording order; the only one added in this release
      expect(table.Properties.GlobalSecondaryIndexes.map((ix: { IndexName: string }) => ix.IndexName)).toEqual([
        'by_time',
        'by_id',
        'by_type',
      ]);
      expect(table.Properties.GlobalSecondaryIndexes[2]).toEqual({
        IndexName: 'by_type',
        KeySchema: [
          { AttributeName: 'type', KeyType: 'HASH' },
          { AttributeName: 'feed_key', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      });
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({
        PointInTimeRecoveryEnabled: stage.pointInTimeRecovery,
      });
      expect(table.Properties.SSESpecification).toMatchObject({ KMSMasterKeyId: { 'Fn::GetAtt': [keyId(), 'Arn'] } });
      expect(table.DeletionPolicy).toBe(name === 'dev' ? 'Delete' : 'Retain');
    });

    it(`has the bus dpm-${name} and an archive of every event put on it, kept the stage's days`, () => {
      const [id, bus] = single(resources(stateful, 'AWS::Events::EventBus'), 'event bus');
      expect(eventBusName(name)).toBe(`dpm-${name}`);
      expect(bus.Properties.Name).toBe(`dpm-${name}`);
      // An archive needs the AWS-owned key: no customer-managed key on the bus.
      expect(bus.Properties.KmsKeyIdentifier).toBeUndefined();
      const [, archive] = single(resources(stateful, 'AWS::Events::Archive'), 'archive');
      expect(archive.Properties.SourceArn).toEqual({ 'Fn::GetAtt': [id, 'Arn'] });
      expect(archive.Properties.ArchiveName).toBe(`dpm-${name}`);
      // No pattern: every event; never 0 days, which EventBridge reads as forever.
      expect(archive.Properties.EventPattern).toBeUndefined();
      expect(archive.Properties.RetentionDays).toBe(stage.eventArchiveRetentionDays);
      expect(archive.Properties.RetentionDays).toBeGreaterThanOrEqual(1);
      // Not the empty KmsKeyIdentifier CDK renders by default (aws/aws-cdk#37847).
      expect('KmsKeyIdentifier' in archive.Properties).toBe(false);
      for (const r of [bus, archive]) expect(r.DeletionPolicy).toBe(name === 'dev' ? 'Delete' : 'Retain');
    });

    it('has the webhook delivery queue, redriving to its encrypted dead-letter queue after five receives', () => {
      const [dlqId, dlq] = queueNamed(`dpm-${name}-webhook-deliveries-dlq`);
      const [queueId, queue] = queueNamed(`dpm-${name}-webhook-deliveries`);
      expect(physicalQueueName(name, QUEUES.webhookDeliveries)).toBe(`dpm-${name}-webhook-deliveries`);
      expect(deadLetterQueueName(name, QUEUES.webhookDeliveries)).toBe(`dpm-${name}-webhook-deliveries-dlq`);
      expect(queue.Properties.VisibilityTimeout).toBe(180);
      expect(queue.Properties.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
        maxReceiveCount: 5,
      });
      expect(dlq.Properties.MessageRetentionPeriod).toBe(14 * 86_400);
      for (const [id, q] of [
        [queueId, queue],
        [dlqId, dlq],
      ] as const) {
        expect(q.Properties.KmsMasterKeyId, id).toEqual({ 'Fn::GetAtt': [keyId(), 'Arn'] });
        const policy = single(
          resources(stateful, 'AWS::SQS::QueuePolicy').filter(([, p]) =>
            JSON.stringify(p.Properties.Queues).includes(`"${id}"`),
          ),
          `policy of ${id}`,
        )[1];
        expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
          expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        );
      }
    });

    it.each(STREAM_CONSUMERS.map((c) => [c.name, c] as const))(
      'gives stream consumer %s an encrypted dead-letter queue of its own',
      (consumerName, consumer) => {
        const [, dlq] = queueNamed(`dpm-${name}-${consumerName}-dlq`);
        expect(dlq.Properties.MessageRetentionPeriod).toBe(STREAM_DEAD_LETTER_RETENTION_DAYS * 86_400);
        expect(dlq.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [keyId(), 'Arn'] });
        expect(streamDeadLetterQueueName(name, consumer)).toBe(`dpm-${name}-${consumerName}-dlq`);
      },
    );

    it('alarms as soon as the webhook or a stream consumer dead-letter queue holds a message', () => {
      const queueNames = [
        `dpm-${name}-webhook-deliveries-dlq`,
        ...streamConsumers.map((c) => streamDeadLetterQueueName(name, c)),
      ];
      for (const queueName of queueNames) {
        const [dlqId] = queueNamed(queueName);
        expect(alarmNamed(stateful, `${queueName}-depth`).Properties, queueName).toMatchObject({
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
          Statistic: 'Maximum',
          Period: 300,
          EvaluationPeriods: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          Threshold: 1,
          TreatMissingData: 'notBreaching',
        });
      }
    });
  });

  describe('stateless stack', () => {
    it.each(STREAM_CONSUMERS.map((c) => [c.name, c] as const))(
      'feeds %s from each of its streams: partial batch responses, bisected, bounded retries, failures to its DLQ',
      (consumerName, consumer) => {
        const mappings = mappingsIn(stateless, name, consumerName);
        expect(mappings).toHaveLength(consumer.streams.length);
        const fed = consumer.streams.map((key) => {
          const mapping = single(
            mappings.filter((m) => names(m.Properties.EventSourceArn, tableId(TABLES[key]), 'StreamArn')),
            `${consumerName} mapping of ${key}`,
          );
          expect(mapping.Properties, key).toEqual({
            FunctionName: { Ref: functionIn(stateless, name, consumerName)[0] },
            EventSourceArn: importOf(name, tableId(TABLES[key]), 'StreamArn'),
            StartingPosition: 'TRIM_HORIZON',
            BatchSize: consumer.batchSize,
            FunctionResponseTypes: ['ReportBatchItemFailures'],
            BisectBatchOnFunctionError: true,
            MaximumRetryAttempts: STREAM_RETRY.retryAttempts,
            MaximumRecordAgeInSeconds: STREAM_RETRY.maxRecordAgeHours * 3600,
            DestinationConfig: {
              OnFailure: { Destination: importOf(name, consumerDeadLetterId(consumer), 'Arn') },
            },
          });
          return key;
        });
        expect(new Set(fed).size).toBe(consumer.streams.length);
      },
    );

    it('has the publisher read every domain table stream, and the dispatcher the events table and crew run events', () => {
      const streamed = tableEntries.filter(([, def]) => def.stream === true).map(([key]) => key);
      expect(dispatcher.streams).toEqual(['domainEvents', 'runLog']);
      expect([...publisher.streams].sort()).toEqual(
        streamed.filter((k) => !(dispatcher.streams as readonly string[]).includes(k)).sort(),
      );
      expect(STREAM_RETRY.retryAttempts).toBeGreaterThan(0);
      expect(STREAM_RETRY.maxRecordAgeHours).toBeLessThanOrEqual(24);
      // Every stream has exactly one reader (DynamoDB serves at most two per shard).
      const readers = streamed.map((key) =>
        resources(stateless, 'AWS::Lambda::EventSourceMapping').filter(([, m]) =>
          names(m.Properties.EventSourceArn, tableId(TABLES[key]), 'StreamArn'),
        ),
      );
      for (const [i, r] of readers.entries()) expect(r, streamed[i]).toHaveLength(1);
    });

    it.each(STREAM_CONSUMERS.map((c) => [c.name, c] as const))(
      'lets %s read exactly its streams and send only to its own dead-letter queue and the queues it declares',
      (consumerName, consumer) => {
        const statements = statementsIn(stateless, name, consumerName);
        const streamIds = tableEntries
          .filter(([, def]) => def.stream)
          .map(([key, def]) => [key, tableId(def)] as const);
        for (const [key, id] of streamIds) {
          const onStream = statements.filter((s) => names(s.Resource, id, 'StreamArn')).flatMap(actions);
          if ((consumer.streams as readonly string[]).includes(key))
            expect(onStream, `${consumerName} on the ${key} stream`).toEqual(
              expect.arrayContaining(STREAM_READ_ACTIONS),
            );
          else expect(onStream, `${consumerName} on the ${key} stream`).toEqual([]);
        }
        // Reading a stream never brings a write.
        for (const s of statements.filter((s) => JSON.stringify(s.Resource).includes('StreamArn')))
          expect(
            actions(s).every((a) => STREAM_READ_ACTIONS.includes(a)),
            JSON.stringify(s),
          ).toBe(true);
        const sqs = statements.filter((s) => actions(s).some((a) => a.startsWith('sqs:')));
        expect(sqs.length).toBeGreaterThan(0);
        const declared = (('sendsTo' in consumer ? consumer.sendsTo : undefined) ?? []).map(
          (key) => queueNamed(physicalQueueName(name, QUEUES[key]))[0],
        );
        const allowed = [consumerDeadLetterId(consumer), ...declared].map((id) => importOf(name, id, 'Arn'));
        const sentTo = new Set<string>();
        for (const s of sqs) {
          for (const resource of resourcesOf(s)) {
            expect(allowed, consumerName).toContainEqual(resource);
            sentTo.add(JSON.stringify(resource));
          }
          expect(
            actions(s)
              .filter((a) => a.startsWith('sqs:'))
              .sort(),
          ).toEqual(['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
        }
        expect(sentTo.size, consumerName).toBe(allowed.length);
      },
    );

    it('lets the dispatcher queue webhook deliveries: it sends to both lanes, whose URLs it gets', () => {
      expect(dispatcher.sendsTo).toEqual(['webhookDeliveries', 'runWebhookDeliveries']);
      const [queueId] = queueNamed(`dpm-${name}-webhook-deliveries`);
      const [runQueueId] = queueNamed(`dpm-${name}-run-webhook-deliveries`);
      const env = functionIn(stateless, name, dispatcher.name)[1].Properties.Environment.Variables;
      expect(env.WEBHOOK_QUEUE_URL).toEqual(importOf(name, queueId, 'Ref'));
      expect(env.RUN_WEBHOOK_QUEUE_URL).toEqual(importOf(name, runQueueId, 'Ref'));
      const onWebhookTables = (key: 'webhooks' | 'webhookDeliveries') =>
        statementsIn(stateless, name, dispatcher.name)
          .filter((s) => names(s.Resource, tableId(TABLES[key]), 'Arn'))
          .flatMap(actions);
      // It reads endpoints, marks a cancelled run's own stopped (an update), and writes deliveries.
      expect(onWebhookTables('webhooks')).toEqual(
        expect.arrayContaining(['dynamodb:Query', 'dynamodb:GetItem', 'dynamodb:UpdateItem']),
      );
      expect(onWebhookTables('webhookDeliveries')).toEqual(
        expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem']),
      );
    });

    it('lets the publisher write the events table and the dispatcher and the events group only read it', () => {
      const onEvents = (fn: string) =>
        statementsIn(stateless, name, fn)
          .filter((s) => names(s.Resource, tableId(TABLES.domainEvents), 'Arn'))
          .flatMap(actions);
      expect(onEvents('domain-events-publisher')).toEqual(
        expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query']),
      );
      for (const fn of ['domain-events-dispatcher', 'domain-events']) {
        expect(onEvents(fn), fn).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:Query']));
        expect(
          onEvents(fn).filter((a) => /Put|Update|Delete|BatchWrite/.test(a)),
          fn,
        ).toEqual([]);
      }
    });

    it('lets the dispatcher, and nothing else, put events, and only on the stage bus', () => {
      const busArn = importOf(name, busId(), 'Arn');
      for (const fn of functionDefs) {
        const onEvents = statementsIn(stateless, name, fn.name).filter((s) =>
          actions(s).some((a) => a.startsWith('events:')),
        );
        if (fn.name === dispatcher.name) {
          expect(onEvents).toEqual([{ Effect: 'Allow', Action: 'events:PutEvents', Resource: busArn }]);
        } else expect(onEvents, fn.name).toEqual([]);
      }
      expect(streamConsumers.filter((c) => c.putsEvents).map((c) => c.name)).toEqual(['domain-events-dispatcher']);
      // No policy of either stack (custom resources included) grants it elsewhere.
      for (const t of [stateful, stateless]) {
        const policies = resources(t, 'AWS::IAM::Policy').filter(([, p]) =>
          JSON.stringify(p.Properties.PolicyDocument).includes('events:'),
        );
        expect(policies).toHaveLength(t === stateless ? 1 : 0);
      }
    });

    it('names the bus to the dispatcher only, and gives the stream consumers the stage environment', () => {
      for (const fn of functionDefs) {
        const env = functionIn(stateless, name, fn.name)[1].Properties.Environment.Variables;
        if (fn.name === dispatcher.name) expect(env.EVENT_BUS_NAME).toEqual(importOf(name, busId(), 'Ref'));
        else expect(env.EVENT_BUS_NAME, fn.name).toBeUndefined();
      }
      for (const consumer of streamConsumers) {
        expect(functionIn(stateless, name, consumer.name)[1].Properties.Environment.Variables).toMatchObject({
          STAGE: name,
          EVENTS_TTL_DAYS: String(stage.eventsTtlDays),
          POWERTOOLS_SERVICE_NAME: `dpm-${consumer.name}`,
        });
      }
    });

    it.each(STREAM_CONSUMERS.map((c) => [c.name] as const))(
      'alarms when %s falls behind its streams for three periods',
      (consumerName) => {
        expect(alarmNamed(stateless, `dpm-${name}-${consumerName}-iterator-age`).Properties).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'IteratorAge',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionIn(stateless, name, consumerName)[0] } }],
          Statistic: 'Maximum',
          Period: 300,
          EvaluationPeriods: ITERATOR_AGE_ALARM.evaluationPeriods,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          Threshold: ITERATOR_AGE_ALARM.thresholdSeconds * 1000,
          TreatMissingData: 'notBreaching',
        });
        expect(ITERATOR_AGE_ALARM).toEqual({ thresholdSeconds: 60, evaluationPeriods: 3 });
      },
    );

    it('routes the domain event feed and single events to the events group', () => {
      const fnId = functionIn(stateless, name, 'domain-events')[0];
      const integrationIds = resources(stateless, 'AWS::ApiGatewayV2::Integration')
        .filter(([, i]) => i.Properties.IntegrationUri['Fn::GetAtt'][0] === fnId)
        .map(([id]) => id);
      const routed = resources(stateless, 'AWS::ApiGatewayV2::Route')
        .filter(([, r]) => integrationIds.includes(r.Properties.Target['Fn::Join'][1][1].Ref))
        .map(([, r]) => r.Properties.RouteKey)
        .sort();
      expect(routed).toEqual(['ANY /api/domain-events', 'ANY /api/domain-events/{proxy+}']);
    });

    it('feeds the webhook worker from the webhook queue; the queue is sent to only by the dispatcher, the webhooks group and the worker', () => {
      const [queueId] = queueNamed(`dpm-${name}-webhook-deliveries`);
      const [dlqId] = queueNamed(`dpm-${name}-webhook-deliveries-dlq`);
      const mapping = single(mappingsIn(stateless, name, 'webhooks-worker'), 'webhooks-worker mapping');
      expect(mapping.Properties).toMatchObject({
        EventSourceArn: importOf(name, queueId, 'Arn'),
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      expect(sendersTo(queueId)).toEqual(['domain-events-dispatcher', 'webhooks', 'webhooks-worker']);
      // Nothing consumes the dead-letter queue: its depth alarm calls an operator.
      expect(JSON.stringify(stateless.toJSON()).includes(dlqId)).toBe(false);
    });

    it("feeds crew runs' own webhooks from a lane of their own: its queue, dead-letter queue, alarms and worker", () => {
      const [queueId, queue] = queueNamed(`dpm-${name}-run-webhook-deliveries`);
      const [dlqId] = queueNamed(`dpm-${name}-run-webhook-deliveries-dlq`);
      const worker = WORKERS.find((w) => w.name === 'run-webhooks-worker')!;
      expect(worker).toMatchObject({ entry: 'functions/webhooks/worker-handler.ts', consumes: 'runWebhookDeliveries' });
      expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * worker.timeoutSeconds);
      expect(queue.Properties.RedrivePolicy).toMatchObject({
        maxReceiveCount: QUEUES.runWebhookDeliveries.maxReceiveCount,
      });
      // Its own function and event source: receivers that hang hold neither the webhook worker nor its source.
      const mapping = single(mappingsIn(stateless, name, 'run-webhooks-worker'), 'run-webhooks-worker mapping');
      expect(mapping.Properties).toMatchObject({
        EventSourceArn: importOf(name, queueId, 'Arn'),
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      expect(mapping.Properties.ScalingConfig).toEqual(
        single(mappingsIn(stateless, name, 'webhooks-worker'), 'webhooks-worker mapping').Properties.ScalingConfig,
      );
      expect(functionIn(stateless, name, 'run-webhooks-worker')[0]).not.toBe(
        functionIn(stateless, name, 'webhooks-worker')[0],
      );
      expect(sendersTo(queueId)).toEqual(['domain-events-dispatcher', 'run-webhooks-worker', 'webhooks']);
      // Alarmed as the other queues: a message dead-lettered, or a consumer that stopped taking them.
      expect(alarmNamed(stateful, `dpm-${name}-run-webhook-deliveries-dlq-depth`).Properties.Dimensions).toEqual([
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } },
      ]);
      expect(alarmNamed(stateful, `dpm-${name}-run-webhook-deliveries-oldest-message`).Properties.Dimensions).toEqual([
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } },
      ]);
      expect(JSON.stringify(stateless.toJSON()).includes(dlqId)).toBe(false);
    });
  });
});

describe('event archive retention', () => {
  it('is a whole number of days ≥ 1 on every stage, shortest on dev and longest on prod', () => {
    for (const [stageName, s] of Object.entries(STAGES)) {
      expect(Number.isInteger(s.eventArchiveRetentionDays), stageName).toBe(true);
      expect(s.eventArchiveRetentionDays, stageName).toBeGreaterThanOrEqual(1);
    }
    expect(STAGES.dev.eventArchiveRetentionDays).toBeLessThan(STAGES.staging.eventArchiveRetentionDays);
    expect(STAGES.staging.eventArchiveRetentionDays).toBeLessThanOrEqual(STAGES.prod.eventArchiveRetentionDays);
  });

  it('refuses to synthesize a stage whose archive would keep events forever (0 days) or part of a day', () => {
    expect(() => synthesize('dev', { stage: { eventArchiveRetentionDays: 0 } })).toThrow(
      /^stage "dev" eventArchiveRetentionDays must be a whole number of days ≥ 1, not 0$/,
    );
    expect(() => synthesize('prod', { stage: { eventArchiveRetentionDays: 1.5 } })).toThrow(
      /^stage "prod" eventArchiveRetentionDays must be a whole number of days ≥ 1, not 1.5$/,
    );
    expect(() => synthesize('dev', { stage: { eventArchiveRetentionDays: 1 } })).not.toThrow();
  }, 60_000);
});

describe('stream consumer checks', () => {
  it('refuses to synthesize a consumer of a table without a stream', () => {
    expect(() =>
      synthesize('dev', { streamConsumers: [{ ...publisher, streams: ['decisions', 'mcpServers', 'idpClients'] }] }),
    ).toThrow(/^stream consumer "domain-events-publisher" reads table "idp-clients", which has no stream$/);
  });

  it('refuses to synthesize a consumer without a dead-letter queue in the stateful stack', () => {
    expect(() => synthesize('dev', { streamConsumers: [{ ...dispatcher, name: 'events-other' }] })).toThrow(
      /^stream consumer "events-other" has no dead-letter queue in the stateful stack$/,
    );
  });
});
