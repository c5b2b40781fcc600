import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUPS, type GroupDefinition } from '../../infra/groups.js';
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
import { STAGES, stageNamed, type StageName } from '../../infra/aws/stages.js';
import { StatefulStack } from '../../infra/aws/stateful-stack.js';
import { StatelessStack } from '../../infra/aws/stateless-stack.js';

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

const groups: readonly GroupDefinition[] = GROUPS;
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
  for (const group of groups) {
    mkdirSync(dirname(join(stubRoot, group.entry)), { recursive: true });
    writeFileSync(join(stubRoot, group.entry), 'export const handler = async () => ({});\n');
  }
});
afterAll(() => rmSync(stubRoot, { recursive: true, force: true }));

/** Synthesizes both stacks as app.ts does, with cdk.json's feature flags and no bundling. */
function synthesize(name: StageName) {
  const cdkJson = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
  const app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  const stage = stageNamed(name);
  const stateful = new StatefulStack(app, `Dpm-${name}-Stateful`, { stage });
  const stateless = new StatelessStack(app, `Dpm-${name}-Stateless`, {
    stage,
    tables: stateful.tables,
    queues: stateful.queues,
    projectRoot: stubRoot,
  });
  return { stateful: Template.fromStack(stateful), stateless: Template.fromStack(stateless) };
}

const resources = (t: Template, type: string) =>
  Object.entries(t.findResources(type)) as [string, Resource][];

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

  const functionOf = (group: string): [string, Resource] =>
    single(
      resources(stateless, 'AWS::Lambda::Function').filter(
        ([, r]) => r.Properties.FunctionName === `dpm-${name}-${group}`,
      ),
      `function of ${group}`,
    );

  /** The statements of every policy attached to the group's function role. */
  const statementsOf = (group: string): Statement[] => {
    const roleId = functionOf(group)[1].Properties.Role['Fn::GetAtt'][0];
    return resources(stateless, 'AWS::IAM::Policy')
      .filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Statement[]);
  };

  /** Statements whose resources reference the table (a cross-stack reference names its logical id). */
  const statementsOn = (group: string, def: TableDefinition) => {
    const tableId = tableNamed(def)[0];
    return statementsOf(group).filter((s) => JSON.stringify(s.Resource).includes(tableId));
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

    it('sets the crew-runs queue to five receives', () => {
      const queue = resources(stateful, 'AWS::SQS::Queue').find(
        ([, q]) => q.Properties.QueueName === `dpm-${name}-crew-runs`,
      );
      expect(queue?.[1].Properties.RedrivePolicy.maxReceiveCount).toBe(5);
    });
  });

  describe('stateless stack', () => {
    it('has one arm64 Node 22 function per group', () => {
      const ours = resources(stateless, 'AWS::Lambda::Function').filter(([, f]) =>
        String(f.Properties.FunctionName).startsWith(`dpm-${name}-`),
      );
      expect(ours).toHaveLength(groups.length);
      expect(groups.length).toBeGreaterThanOrEqual(2);
      for (const group of groups) {
        const p = functionOf(group.name)[1].Properties;
        expect(p.Runtime).toBe('nodejs22.x');
        expect(p.Architectures).toEqual(['arm64']);
        expect(p.Handler).toBe('index.handler');
        expect(p.MemorySize).toBe(stage.lambdaMemoryMb);
        expect(p.LoggingConfig.LogFormat).toBe('JSON');
      }
    });

    it('gives each function its own log group with the stage retention', () => {
      for (const group of groups) {
        const logGroupId = functionOf(group.name)[1].Properties.LoggingConfig.LogGroup.Ref;
        const logGroup = stateless.toJSON().Resources[logGroupId] as Resource;
        expect(logGroup.Type).toBe('AWS::Logs::LogGroup');
        expect(logGroup.Properties.RetentionInDays).toBe(stage.logRetentionDays);
        expect(logGroup.DeletionPolicy).toBe(name === 'dev' ? 'Delete' : 'Retain');
      }
    });

    it('sets the environment from the stage record, omitting unset values', () => {
      for (const group of groups) {
        const env = functionOf(group.name)[1].Properties.Environment.Variables;
        expect(env).toMatchObject({
          STAGE: name,
          NODE_OPTIONS: '--enable-source-maps',
          POWERTOOLS_SERVICE_NAME: `dpm-${group.name}`,
          EVENTS_TTL_DAYS: '30',
        });
        const optional = {
          AUTH_ISSUER: stage.authIssuer,
          AUTH_AUDIENCE: stage.authAudience,
          AUTH_JWKS_URL: stage.authJwksUrl,
          LLM_BASE_URL: stage.llmBaseUrl,
        } as Record<string, string | undefined>;
        for (const [variable, value] of Object.entries(optional)) expect(env[variable]).toBe(value);
        expect('CREW_RUN_QUEUE_URL' in env).toBe(group.sendsTo?.includes('crewRuns') ?? false);
      }
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
    });

    it('has one HTTP API without CORS and outputs its URL', () => {
      stateless.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
      const api = single(resources(stateless, 'AWS::ApiGatewayV2::Api'), 'api')[1];
      expect(api.Properties).toMatchObject({ Name: `dpm-${name}`, ProtocolType: 'HTTP' });
      expect(api.Properties.CorsConfiguration).toBeUndefined();
      stateless.hasResourceProperties('AWS::ApiGatewayV2::Stage', { StageName: '$default', AutoDeploy: true });
      expect(Object.keys(stateless.findOutputs('ApiUrl'))).toEqual(['ApiUrl']);
    });

    it('grants each group exactly the table access it declares', () => {
      for (const group of groups) {
        for (const [key, def] of tableEntries) {
          const granted = statementsOn(group.name, def).flatMap(actions);
          const declared = group.tables[key];
          if (declared === undefined) expect(granted, `${group.name} on ${key}`).toEqual([]);
          else if (declared === 'read') {
            expect(granted.length, `${group.name} reads ${key}`).toBeGreaterThan(0);
            expect(granted.filter((a) => !DYNAMODB_READ_ACTIONS.has(a)), `${group.name} on ${key}`).toEqual([]);
          } else expect(granted, `${group.name} writes ${key}`).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']));
        }
        const sends = statementsOf(group.name).flatMap(actions).includes('sqs:SendMessage');
        expect(sends, `${group.name} sends`).toBe((group.sendsTo ?? []).length > 0);
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

    it('never grants DynamoDB on every resource', () => {
      for (const group of groups) {
        for (const s of statementsOf(group.name)) {
          if (actions(s).some((a) => a.startsWith('dynamodb:'))) expect(s.Resource).not.toBe('*');
        }
      }
    });
  });
});

describe('stage record', () => {
  it('names the known stages when the stage is unknown', () => {
    expect(() => stageNamed('qa')).toThrow(/unknown stage "qa"; known stages: dev, staging, prod$/);
  });

  it('turns point-in-time recovery off for dev only', () => {
    expect(Object.entries(STAGES).filter(([, s]) => !s.pointInTimeRecovery).map(([n]) => n)).toEqual(['dev']);
  });
});
