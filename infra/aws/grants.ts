import { Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { DlqDestinationConfig, IEventSourceDlq, IEventSourceMapping, IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { TABLES, type BucketKey, type TableDefinition, type TableKey } from '../tables.js';
import { acknowledgeFindings } from './nag.js';

/**
 * Least privilege for the stateless stack's Lambdas: exactly the actions each declared use
 * needs (infra/groups.ts), on exactly the declared resources.
 */

/**
 * What the service does with a table's items (never a Scan, a DescribeTable or a batch
 * write): transactions are authorized by these per-item actions too.
 */
export const TABLE_ACTIONS = {
  read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'],
  readWrite: [
    'dynamodb:GetItem',
    'dynamodb:BatchGetItem',
    'dynamodb:Query',
    'dynamodb:ConditionCheckItem',
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:DeleteItem',
  ],
} as const;

/**
 * The stage key's actions each use needs, and nothing more (CDK's own grants add
 * `kms:ReEncrypt*`, which nothing here does). DynamoDB encrypts and decrypts a table's items
 * with the table's key on the caller's behalf; SQS producers need a data key and decrypt
 * (the consumer's decrypt comes with its event source); SSE-KMS objects are written with a
 * data key and read with decrypt; envelope encryption of secrets (shared/aws/kms.ts) seals
 * with a data key and opens with decrypt.
 */
export const KEY_ACTIONS = {
  tableRead: ['kms:Decrypt', 'kms:DescribeKey'],
  tableReadWrite: ['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey*'],
  queueSend: ['kms:GenerateDataKey', 'kms:Decrypt'],
  objectsRead: ['kms:Decrypt'],
  objectsReadWrite: ['kms:Decrypt', 'kms:GenerateDataKey'],
  secretsSeal: ['kms:GenerateDataKey', 'kms:Decrypt'],
  secretsOpen: ['kms:Decrypt'],
} as const;

/** Where the reason for `kms:GenerateDataKey*` on tables is written (cdk-nag acknowledges it by id). */
const TABLE_DATA_KEY_WILDCARD = 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]';

/**
 * Least privilege: exactly the declared tables and their indexes, by name (no `index/*`), the
 * item actions of TABLE_ACTIONS and the key actions of KEY_ACTIONS.
 */
export function grantTables(
  fn: IGrantable & IConstruct,
  tables: Readonly<Record<TableKey, ITable>>,
  declared: Partial<Record<TableKey, 'read' | 'readWrite'>>,
  key: IKey,
): void {
  const access = Object.entries(declared) as [TableKey, 'read' | 'readWrite'][];
  for (const [tableKey, kind] of access) {
    const arn = tables[tableKey].tableArn;
    const def: TableDefinition = TABLES[tableKey];
    fn.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [...TABLE_ACTIONS[kind]],
        resources: [arn, ...def.indexes.map((index) => `${arn}/index/${index.name}`)],
      }),
    );
  }
  if (access.length === 0) return;
  const writes = access.some(([, kind]) => kind === 'readWrite');
  key.grant(fn, ...(writes ? KEY_ACTIONS.tableReadWrite : KEY_ACTIONS.tableRead));
  if (writes) {
    Validations.of(fn).acknowledge({
      id: TABLE_DATA_KEY_WILDCARD,
      reason:
        'DynamoDB asks the stage key for data keys of the tables this function writes on its behalf ' +
        '(GenerateDataKey and its WithoutPlaintext form); the grant names only the stage key',
    });
  }
}

/** Sending to the declared queues: the SQS send actions on exactly those queues, and the key's KEY_ACTIONS.queueSend. */
export function grantSends(fn: IGrantable, queues: readonly IQueue[], key: IKey): void {
  if (queues.length === 0) return;
  fn.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'],
      resources: queues.map((q) => q.queueArn),
    }),
  );
  key.grant(fn, ...KEY_ACTIONS.queueSend);
}

/** CDK's SqsDlq, granting the sends as grantSends does (SqsDlq's grant adds `kms:ReEncrypt*`). */
export class SqsDeadLetterDestination implements IEventSourceDlq {
  constructor(
    private readonly queue: IQueue,
    private readonly key: IKey,
  ) {}

  bind(_target: IEventSourceMapping, targetHandler: IFunction): DlqDestinationConfig {
    grantSends(targetHandler, [this.queue], this.key);
    return { destination: this.queue.queueArn };
  }
}

/**
 * Objects under the declared prefix (read: get; readWrite: get, put, delete), listing only
 * that prefix, and the key's KEY_ACTIONS for SSE-KMS objects.
 */
export function grantBuckets(
  fn: IGrantable & IConstruct,
  buckets: Readonly<Record<BucketKey, IBucket>>,
  declared: Partial<Record<BucketKey, 'read' | 'readWrite'>>,
  prefixes: Partial<Record<BucketKey, string>>,
  key: IKey,
): void {
  for (const [bucketKey, access] of Object.entries(declared) as [BucketKey, 'read' | 'readWrite'][]) {
    const bucket = buckets[bucketKey];
    const prefix = prefixes[bucketKey] ?? '';
    const objects = bucket.arnForObjects(`${prefix}*`);
    fn.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: access === 'readWrite' ? ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'] : ['s3:GetObject'],
        resources: [objects],
      }),
    );
    fn.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
        ...(prefix && { conditions: { StringLike: { 's3:prefix': [`${prefix}*`] } } }),
      }),
    );
    key.grant(fn, ...(access === 'readWrite' ? KEY_ACTIONS.objectsReadWrite : KEY_ACTIONS.objectsRead));
    acknowledgeFindings(fn, {
      rule: 'AwsSolutions-IAM5',
      finding: new RegExp(`^Resource::.*${bucketKey}Bucket.*/${escapeRegExp(prefix)}\\*$`),
      reason: `the objects of the ${bucketKey} bucket under the function's declared prefix "${prefix}": keys it makes at run time`,
    });
  }
}

/** Exactly GetSecretValue on exactly the one secret (not grantRead, which adds DescribeSecret). */
export function grantSecretValue(grantee: IGrantable, secret: ISecret): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
  );
}

/**
 * Amazon Bedrock model invocation on exactly one model or inference profile: Converse needs
 * bedrock:InvokeModel, ConverseStream bedrock:InvokeModelWithResponseStream.
 */
export function grantModelInvocation(grantee: IGrantable, modelArn: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'],
      resources: [modelArn],
    }),
  );
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
