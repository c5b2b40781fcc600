import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUPS, WORKERS, type GroupDefinition, type WorkerDefinition } from '../../infra/groups.js';
import {
  QUEUES,
  TABLES,
  deadLetterQueueName,
  physicalQueueName,
  physicalTableName,
  type QueueDefinition,
  type TableDefinition,
  type TableKey,
} from '../../infra/tables.js';
import { REPOSITORY_ROOT } from '../../infra/aws/service-function.js';
import { STAGES, stageNamed, type Stage, type StageName } from '../../infra/aws/stages.js';
import { StatefulStack } from '../../infra/aws/stateful-stack.js';
import { StatelessStack } from '../../infra/aws/stateless-stack.js';

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

const groups: readonly GroupDefinition[] = GROUPS;
const workers: readonly WorkerDefinition[] = WORKERS;
/** Every Lambda the stateless stack builds: groups serve HTTP, workers consume queues. */
const functionDefs: readonly { name: string; entry: string; tables: WorkerDefinition['tables'] }[] = [
  ...groups,
  ...workers,
];
const tableEntries = Object.entries(TABLES) as [TableKey, TableDefinition][];
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

// Stub handlers stand in for functions/: bundling is skipped, but NodejsFunction still
// insists that the entry file and a lock file exist.
let stubRoot: string;
beforeAll(() => {
  stubRoot = mkdtempSync(join(tmpdir(), 'dpm-infra-'));
  writeFileSync(join(stubRoot, 'package-lock.json'), '{}');
  for (const { entry } of functionDefs) {
    mkdirSync(dirname(join(stubRoot, entry)), { recursive: true });
    writeFileSync(join(stubRoot, entry), 'export const handler = async () => ({});\n');
  }
});
afterAll(() => rmSync(stubRoot, { recursive: true, force: true }));

/** Synthesizes both stacks as app.ts does, with cdk.json's feature flags and no bundling. */
function synthesize(name: StageName, options: { stage?: Partial<Stage>; workers?: readonly WorkerDefinition[] } = {}) {
  const cdkJson = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
  const app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  const stage = { ...stageNamed(name), ...options.stage };
  const stateful = new StatefulStack(app, `Dpm-${name}-Stateful`, { stage });
  const stateless = new StatelessStack(app, `Dpm-${name}-Stateless`, {
    stage,
    tables: stateful.tables,
    queues: stateful.queues,
    deadLetterQueues: stateful.deadLetterQueues,
    projectRoot: stubRoot,
    ...(options.workers && { workers: options.workers }),
  });
  return { stateful: Template.fromStack(stateful), stateless: Template.fromStack(stateless) };
}

const resources = (t: Template, type: string) => Object.entries(t.findResources(type)) as [string, Resource][];

const single = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1);
  return items[0]!;
};

const actions = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe.each(['dev', 'prod'] as const)('stage %s', (name) => {
  const stage = STAGES[name];
  let stateful: Template;
  let stateless: Template;
  beforeAll(() => {
    ({ stateful, stateless } = synthesize(name));
  });

  const tableNamed = (def: TableDefinition): [string, Resource] =>
    single(
      resources(stateful, 'AWS::DynamoDB::Table').filter(
        ([, r]) => r.Properties.TableName === physicalTableName(name, def),
      ),
      `table ${def.id}`,
    );

  const keyLogicalId = () => single(resources(stateful, 'AWS::KMS::Key'), 'KMS key')[0];

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
  const functionOf = (fn: string): [string, Resource] =>
    single(
      resources(stateless, 'AWS::Lambda::Function').filter(
        ([, r]) => r.Properties.FunctionName === `dpm-${name}-${fn}`,
      ),
      `function of ${fn}`,
    );

  /** The statements of every policy attached to the function's role. */
  const statementsOf = (fn: string): Statement[] => {
    const roleId = functionOf(fn)[1].Properties.Role['Fn::GetAtt'][0];
    return resources(stateless, 'AWS::IAM::Policy')
      .filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Statement[]);
  };

  /** Statements whose resources reference a stateful resource (a cross-stack import names its logical id). */
  const statementsOnId = (fn: string, logicalId: string) =>
    statementsOf(fn).filter((s) => JSON.stringify(s.Resource).includes(`${logicalId}Arn`));

  const statementsOn = (fn: string, def: TableDefinition) => statementsOnId(fn, tableNamed(def)[0]);

  /** The function's SQS event source mappings. */
  const mappingsOf = (fn: string): Resource[] => {
    const fnId = functionOf(fn)[0];
    return resources(stateless, 'AWS::Lambda::EventSourceMapping')
      .filter(([, m]) => m.Properties.FunctionName?.Ref === fnId)
      .map(([, m]) => m);
  };

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

    it('keys the decisions table by pk/sk with the sparse published index', () => {
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
      ]);
      expect(tableNamed(TABLES.events)[1].Properties.TimeToLiveSpecification).toEqual({
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

    it.each(queueDefs.map((q) => [q.id, q] as const))(
      'alarms as soon as dead-letter queue %s holds a message',
      (_, def) => {
        const [, dlqId] = queueIds(def);
        const [, alarm] = single(
          resources(stateful, 'AWS::CloudWatch::Alarm').filter(
            ([, a]) => a.Properties.AlarmName === `${deadLetterQueueName(name, def)}-depth`,
          ),
          `alarm of ${def.id}`,
        );
        expect(alarm.Properties).toMatchObject({
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
      },
    );

    it('has exactly the crew-runs dead-letter alarm, at one message', () => {
      const alarms = resources(stateful, 'AWS::CloudWatch::Alarm');
      expect(alarms.map(([, a]) => a.Properties.AlarmName)).toEqual([`dpm-${name}-crew-runs-dlq-depth`]);
      expect(alarms[0]![1].Properties.Threshold).toBe(1);
    });

    it('sets the crew-runs queue to five receives', () => {
      const queue = resources(stateful, 'AWS::SQS::Queue').find(
        ([, q]) => q.Properties.QueueName === `dpm-${name}-crew-runs`,
      );
      expect(queue?.[1].Properties.RedrivePolicy.maxReceiveCount).toBe(5);
    });
  });

  describe('stateless stack', () => {
    it('has one arm64 Node 22 function per group and per worker', () => {
      const ours = resources(stateless, 'AWS::Lambda::Function').filter(([, f]) =>
        String(f.Properties.FunctionName).startsWith(`dpm-${name}-`),
      );
      expect(ours).toHaveLength(groups.length + workers.length);
      expect(ours.map(([, f]) => f.Properties.FunctionName)).toEqual(
        expect.arrayContaining([
          `dpm-${name}-platform`,
          `dpm-${name}-crews`,
          `dpm-${name}-crews-worker`,
          `dpm-${name}-crews-dead-letter`,
        ]),
      );
      for (const { name: fn } of functionDefs) {
        const p = functionOf(fn)[1].Properties;
        expect(p.Runtime).toBe('nodejs22.x');
        expect(p.Architectures).toEqual(['arm64']);
        expect(p.Handler).toBe('index.handler');
        expect(p.MemorySize).toBe(stage.lambdaMemoryMb);
        expect(p.LoggingConfig.LogFormat).toBe('JSON');
      }
    });

    it('times groups by the stage and workers by their definition', () => {
      for (const group of groups) expect(functionOf(group.name)[1].Properties.Timeout).toBe(stage.lambdaTimeoutSeconds);
      for (const worker of workers) expect(functionOf(worker.name)[1].Properties.Timeout).toBe(worker.timeoutSeconds);
      // A crew run outlasts an API request.
      expect(functionOf('crews-worker')[1].Properties.Timeout).toBeGreaterThan(stage.lambdaTimeoutSeconds);
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
          NODE_OPTIONS: '--enable-source-maps',
          POWERTOOLS_SERVICE_NAME: `dpm-${fn.name}`,
          EVENTS_TTL_DAYS: '30',
        });
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
      }
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
      expect(resources(stateless, 'AWS::Lambda::EventSourceMapping')).toHaveLength(workers.length);
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
      const deadLetter = single(mappingsOf('crews-dead-letter'), 'crews-dead-letter mapping').Properties;
      expect(deadLetter.EventSourceArn).toEqual(imported(dlqId, 'Arn'));
      expect(deadLetter.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    });

    it('lets each worker consume only the queue it is fed from, and send to none', () => {
      for (const worker of workers) {
        const [queueId, dlqId] = queueIds(QUEUES[worker.consumes]);
        const consumed = worker.deadLetter ? dlqId : queueId;
        const sqs = statementsOf(worker.name).filter((s) => actions(s).some((a) => a.startsWith('sqs:')));
        expect(sqs.length, worker.name).toBeGreaterThan(0);
        for (const s of sqs) {
          expect(s.Resource, worker.name).toEqual(imported(consumed, 'Arn'));
          expect(actions(s), worker.name).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
          expect(actions(s), worker.name).not.toContain('sqs:SendMessage');
        }
      }
    });

    it('lets the crews worker use crew-runs and events but not decisions or keys', () => {
      const [queueId] = queueIds(QUEUES.crewRuns);
      const onQueue = statementsOnId('crews-worker', queueId).flatMap(actions);
      expect(onQueue).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
      for (const table of [TABLES.crewRuns, TABLES.events]) {
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
      expect(routes).toEqual(expected);
      // /api/health/ping reaches platform through its prefix's proxy route.
      expect(Object.keys(routes)).toEqual(
        expect.arrayContaining([
          'ANY /api/decisions/{proxy+}',
          'ANY /api/decisions',
          'ANY /api/health/{proxy+}',
          'GET /openapi.json',
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
      // Workers are reached through their queues only.
      for (const worker of workers) expect(Object.values(routes)).not.toContain(functionOf(worker.name)[0]);
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
        expect(sends, `${fn.name} sends`).toBe(declaredSends.length > 0);
      }
    });

    it('lets decisions write decisions and only read keys', () => {
      const onDecisions = statementsOn('decisions', TABLES.decisions).flatMap(actions);
      expect(onDecisions).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query']));
      const onKeys = statementsOn('decisions', TABLES.keys).flatMap(actions);
      expect(onKeys).toContain('dynamodb:GetItem');
      expect(onKeys).not.toContain('dynamodb:PutItem');
      expect(onKeys).not.toContain('dynamodb:DeleteItem');
      // The grant covers the table's indexes (`published`, `by_psk`) too.
      const resourcesOnKeys = JSON.stringify(statementsOn('decisions', TABLES.keys).map((s) => s.Resource));
      expect(resourcesOnKeys).toContain('/index/*');
      const kms = statementsOf('decisions').filter((s) => actions(s).includes('kms:Decrypt'));
      expect(JSON.stringify(kms.map((s) => s.Resource))).toContain(keyLogicalId());
    });

    it('gives platform no DynamoDB, SQS or KMS permission', () => {
      const granted = statementsOf('platform').flatMap(actions);
      expect(granted.filter((a) => /^(dynamodb|sqs|kms):/.test(a))).toEqual([]);
    });

    it('never grants DynamoDB or SQS on every resource', () => {
      for (const { name: fn } of functionDefs) {
        for (const s of statementsOf(fn)) {
          if (actions(s).some((a) => /^(dynamodb|sqs):/.test(a))) expect(s.Resource).not.toBe('*');
        }
      }
    });
  });
});

describe('workers', () => {
  const crewsWorker = workers.find((w) => w.name === 'crews-worker')!;
  const deadLetter = workers.find((w) => w.name === 'crews-dead-letter')!;

  it('are defined for crew runs and their dead letters', () => {
    expect(crewsWorker).toMatchObject({ consumes: 'crewRuns' });
    expect(crewsWorker.deadLetter ?? false).toBe(false);
    expect(deadLetter).toMatchObject({ consumes: 'crewRuns', deadLetter: true });
  });

  it('all finish inside the visibility timeout of the queue they consume', () => {
    for (const worker of workers) {
      expect(worker.timeoutSeconds, worker.name).toBeLessThan(QUEUES[worker.consumes].visibilityTimeoutSeconds);
    }
  });

  it('refuses to synthesize a worker that could outlive its queue visibility timeout', () => {
    const visibility = QUEUES.crewRuns.visibilityTimeoutSeconds;
    expect(visibility).toBe(180);
    expect(() => synthesize('dev', { workers: [{ ...crewsWorker, timeoutSeconds: 180 }] })).toThrow(
      /^worker "crews-worker" timeout \(180 s\) must be below the visibility timeout of queue "crew-runs" \(180 s\)$/,
    );
    expect(() => synthesize('dev', { workers: [{ ...deadLetter, timeoutSeconds: 600 }] })).toThrow(
      /^worker "crews-dead-letter" timeout \(600 s\) must be below the visibility timeout of queue "crew-runs-dlq" \(180 s\)$/,
    );
    expect(() => synthesize('dev', { workers: [{ ...crewsWorker, timeoutSeconds: 179 }] })).not.toThrow();
  });

  it('get the LLM model and crew HTTP hosts from the stage record, but never an API key', () => {
    const { stateless } = synthesize('dev', {
      stage: {
        llmBaseUrl: 'https://llm.example.com/v1',
        llmModel: 'model-x',
        crewHttpAllowedHosts: ['a.example.com', 'b.example.com'],
      },
    });
    const worker = single(
      resources(stateless, 'AWS::Lambda::Function').filter(
        ([, f]) => f.Properties.FunctionName === 'dpm-dev-crews-worker',
      ),
      'crews worker',
    )[1];
    const env = worker.Properties.Environment.Variables;
    expect(env).toMatchObject({
      LLM_BASE_URL: 'https://llm.example.com/v1',
      LLM_MODEL: 'model-x',
      CREW_HTTP_ALLOWED_HOSTS: 'a.example.com,b.example.com',
      EVENTS_TTL_DAYS: '30',
      POWERTOOLS_SERVICE_NAME: 'dpm-crews-worker',
    });
    expect(env.LLM_API_KEY).toBeUndefined();
  });
});

describe('stage record', () => {
  it('names the known stages when the stage is unknown', () => {
    expect(() => stageNamed('qa')).toThrow(/unknown stage "qa"; known stages: dev, staging, prod$/);
  });

  it('turns point-in-time recovery off for dev only', () => {
    expect(
      Object.entries(STAGES)
        .filter(([, s]) => !s.pointInTimeRecovery)
        .map(([n]) => n),
    ).toEqual(['dev']);
  });
});
