import { Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { type Alarm, Stats } from 'aws-cdk-lib/aws-cloudwatch';
import { ALARM_PERIOD, stageAlarm } from './alarms.js';
import {
  AttributeType,
  BillingMode,
  Operation,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
  type Attribute,
} from 'aws-cdk-lib/aws-dynamodb';
import { type Archive, type CfnArchive, EventBus } from 'aws-cdk-lib/aws-events';
import type { Role } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Secret, type SecretProps } from 'aws-cdk-lib/aws-secretsmanager';
import type { ScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { STREAM_CONSUMERS, WORKERS, type StreamConsumerDefinition, type WorkerDefinition } from '../groups.js';
import {
  BUCKETS,
  QUEUES,
  TABLES,
  deadLetterQueueName,
  parkedQueueName,
  physicalQueueName,
  physicalTableName,
  type BucketKey,
  type KeyAttribute,
  type QueueDefinition,
  type QueueKey,
  type TableDefinition,
  type TableKey,
} from '../tables.js';
import {
  adminPskSecretName,
  llmApiKeySecretName,
  airflowPasswordSecretName,
  airflowSettings,
  assertDeployable,
  eventArchiveRetention,
  keycloakAdminClientSecretName,
  type Stage,
} from './stages.js';
import { STREAM_DEAD_LETTER_RETENTION_DAYS, eventBusName, streamDeadLetterQueueName } from './domain-events.js';
import { crewSchedules } from './schedules.js';

export interface StatefulStackProps extends StackProps {
  readonly stage: Stage;
}

/** Days an overwritten or deleted object of a kept bucket stays recoverable. */
export const NONCURRENT_VERSION_DAYS = 30;
/**
 * Receives of a dead-lettered message by its dead-letter handler before it is parked: a
 * failing handler tries each message this often (one visibility timeout apart), not for the
 * dead-letter queue's whole retention.
 */
export const DEAD_LETTER_HANDLER_RECEIVES = 3;
/** Days the buckets' server access logs are kept. */
export const ACCESS_LOG_RETENTION_DAYS = 90;

const ATTRIBUTE_TYPES = { S: AttributeType.STRING, N: AttributeType.NUMBER } as const;

const attribute = (a: KeyAttribute): Attribute => ({ name: a.name, type: ATTRIBUTE_TYPES[a.type] });

/** The DynamoDB operations the service makes (never a Scan): a throttle alarm watches each (at most 10 a math alarm). */
const SERVICE_OPERATIONS = [
  Operation.GET_ITEM,
  Operation.PUT_ITEM,
  Operation.UPDATE_ITEM,
  Operation.DELETE_ITEM,
  Operation.QUERY,
  Operation.BATCH_GET_ITEM,
  Operation.BATCH_WRITE_ITEM,
  Operation.TRANSACT_WRITE_ITEMS,
  Operation.TRANSACT_GET_ITEMS,
];

/**
 * Data that outlives deployments: tables (with their streams), queues, the event bus and its
 * archive, buckets, the key that encrypts them, DLQ alarms, secrets, the crew schedules' group.
 */
export class StatefulStack extends Stack {
  readonly key: Key;
  readonly tables: Readonly<Record<TableKey, Table>>;
  readonly queues: Readonly<Record<QueueKey, Queue>>;
  readonly deadLetterQueues: Readonly<Record<QueueKey, Queue>>;
  readonly deadLetterAlarms: Readonly<Record<QueueKey, Alarm>>;
  /** The stage's bus `dpm-<stage>` (docs/events-and-webhooks.md): the events dispatcher puts every domain event on it. */
  readonly eventBus: EventBus;
  /** Every event put on the bus, kept `eventArchiveRetentionDays` for replays. */
  readonly eventArchive: Archive;
  /** Crew schedules' EventBridge Scheduler group `dpm-<stage>` (docs/crews.md), and the role its schedules send as. */
  readonly scheduleGroup: ScheduleGroup;
  readonly schedulerRole: Role;
  /** Per STREAM_CONSUMERS entry, by name: where its event source sends the batches it gives up on. */
  readonly streamDeadLetterQueues: Readonly<Record<string, Queue>>;
  readonly buckets: Readonly<Record<BucketKey, Bucket>>;
  /** Only on stages whose identity provider is Keycloak. */
  readonly keycloakAdminClientSecret: Secret | undefined;
  /** Only on stages whose workflow engine is Airflow. */
  readonly airflowPassword: Secret | undefined;
  readonly adminPsk: Secret | undefined;
  readonly llmApiKey: Secret | undefined;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);
    const { stage } = props;
    assertDeployable(stage);

    this.key = new Key(this, 'Key', {
      alias: `alias/dpm-${stage.name}`,
      description: `dpm ${stage.name}: tables, queues, buckets and sealed secrets`,
      enableKeyRotation: true,
      removalPolicy: stage.removalPolicy,
    });

    const tables = {} as Record<TableKey, Table>;
    for (const [key, def] of Object.entries(TABLES) as [TableKey, TableDefinition][]) {
      // Table, not TableV2: a TableV2 with a customer-managed key cannot synthesize env-agnostic.
      const table = new Table(this, `${def.constructKey ?? key}Table`, {
        tableName: physicalTableName(stage.name, def),
        partitionKey: attribute(def.partitionKey),
        ...(def.sortKey && { sortKey: attribute(def.sortKey) }),
        ...(def.ttlAttribute && { timeToLiveAttribute: def.ttlAttribute }),
        // Both images: the publisher tells a change from a rewrite, the dispatcher reads new events.
        ...(def.stream && { stream: StreamViewType.NEW_AND_OLD_IMAGES }),
        billingMode: BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: stage.pointInTimeRecovery },
        encryption: TableEncryption.CUSTOMER_MANAGED,
        encryptionKey: this.key,
        removalPolicy: stage.removalPolicy,
        // Where the stage keeps its data, a table cannot be deleted by mistake (console, CLI, stack).
        deletionProtection: stage.removalPolicy === RemovalPolicy.RETAIN,
      });
      if (!stage.pointInTimeRecovery) {
        Validations.of(table).acknowledge({
          id: 'AwsSolutions-DDB3',
          reason: `stage ${stage.name} keeps disposable data (its removal policy destroys the tables): no point-in-time recovery`,
        });
      }
      for (const index of def.indexes) {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: attribute(index.partitionKey),
          ...(index.sortKey && { sortKey: attribute(index.sortKey) }),
          projectionType: ProjectionType.ALL,
        });
      }
      // Any throttled request (on-demand tables throttle only past their account limits or a hot key).
      stageAlarm(this, `${def.constructKey ?? key}ThrottleAlarm`, stage, {
        name: `${def.id}-throttles`,
        description: `Requests to ${physicalTableName(stage.name, def)} are throttled`,
        metric: table.metricThrottledRequestsForOperations({ operations: SERVICE_OPERATIONS, period: ALARM_PERIOD }),
        threshold: 1,
      });
      tables[key] = table;
    }
    this.tables = tables;

    // Every queue: encrypted with the stage key, SSL only, and kept with the stack where the
    // stage keeps its data (messages in flight are runs and deliveries not yet done).
    const encryption = {
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      removalPolicy: stage.removalPolicy,
    } as const;
    /**
     * `dpm-<stage>-<name>-depth` as soon as the dead-letter queue holds a message: next to the
     * queue it watches, so it survives stateless redeploys.
     */
    const deadLetterAlarm = (id: string, queue: Queue, name: string): Alarm =>
      stageAlarm(this, id, stage, {
        name: `${name}-depth`,
        description: `Messages are waiting in dpm-${stage.name}-${name}`,
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, statistic: Stats.MAXIMUM }),
        threshold: 1,
      });
    /**
     * A queue of a definition with its dead-letter queue and the latter's alarm. Where a
     * dead-letter handler drains the dead-letter queue (WORKERS with `deadLetter`), its depth
     * stays near 0, so the alarm counts the messages the handler receives instead; and the
     * handler's own failures are bounded: after DEAD_LETTER_HANDLER_RECEIVES receives a message
     * moves on to a parked queue nothing consumes, whose depth alarms.
     */
    const queueWithDeadLetter = (
      key: QueueKey,
      def: QueueDefinition,
    ): { queue: Queue; deadLetterQueue: Queue; alarm: Alarm } => {
      const handled = (WORKERS as readonly WorkerDefinition[]).some((w) => w.consumes === key && w.deadLetter);
      const parked = handled
        ? new Queue(this, `${key}ParkedQueue`, {
            queueName: parkedQueueName(stage.name, def),
            retentionPeriod: Duration.days(def.deadLetterRetentionDays),
            ...encryption,
          })
        : undefined;
      if (parked) deadLetterAlarm(`${key}ParkedDepthAlarm`, parked, `${def.id}-dlq-parked`);
      const deadLetterQueue = new Queue(this, `${key}DeadLetterQueue`, {
        queueName: deadLetterQueueName(stage.name, def),
        retentionPeriod: Duration.days(def.deadLetterRetentionDays),
        // A dead-letter handler consumes it too: same window, so one timeout check covers both.
        visibilityTimeout: Duration.seconds(def.visibilityTimeoutSeconds),
        ...(parked && { deadLetterQueue: { queue: parked, maxReceiveCount: DEAD_LETTER_HANDLER_RECEIVES } }),
        ...encryption,
      });
      const alarm = handled
        ? stageAlarm(this, `${key}DeadLetterReceivedAlarm`, stage, {
            name: `${def.id}-dlq-received`,
            description: `Messages of dpm-${stage.name}-${def.id} were dead-lettered (its dead-letter handler received them)`,
            metric: deadLetterQueue.metricNumberOfMessagesReceived({ period: ALARM_PERIOD, statistic: Stats.SUM }),
            threshold: 1,
          })
        : deadLetterAlarm(`${key}DeadLetterDepthAlarm`, deadLetterQueue, `${def.id}-dlq`);
      const queue = new Queue(this, `${key}Queue`, {
        queueName: physicalQueueName(stage.name, def),
        visibilityTimeout: Duration.seconds(def.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: def.maxReceiveCount },
        ...encryption,
      });
      // Its consumer stopped taking messages (throttled, failing to start, disabled).
      stageAlarm(this, `${key}OldestMessageAlarm`, stage, {
        name: `${def.id}-oldest-message`,
        description: `The oldest message of dpm-${stage.name}-${def.id} waits more than ${def.oldestMessageAlarmSeconds} s`,
        metric: queue.metricApproximateAgeOfOldestMessage({ period: ALARM_PERIOD, statistic: Stats.MAXIMUM }),
        threshold: def.oldestMessageAlarmSeconds,
      });
      return { queue, deadLetterQueue, alarm };
    };

    const queues = {} as Record<QueueKey, Queue>;
    const deadLetterQueues = {} as Record<QueueKey, Queue>;
    const deadLetterAlarms = {} as Record<QueueKey, Alarm>;
    for (const [key, def] of Object.entries(QUEUES) as [QueueKey, (typeof QUEUES)[QueueKey]][]) {
      const built = queueWithDeadLetter(key, def);
      queues[key] = built.queue;
      deadLetterQueues[key] = built.deadLetterQueue;
      deadLetterAlarms[key] = built.alarm;
    }
    this.queues = queues;
    this.deadLetterQueues = deadLetterQueues;
    this.deadLetterAlarms = deadLetterAlarms;

    const schedules = crewSchedules(this, stage, queues.crewRuns, this.key);
    this.scheduleGroup = schedules.group;
    this.schedulerRole = schedules.role;

    // Nothing consumes these: an operator reads what failed and redrives from the stream or the feed.
    const streamDeadLetterQueues: Record<string, Queue> = {};
    for (const consumer of STREAM_CONSUMERS as readonly StreamConsumerDefinition[]) {
      const id = constructId(consumer.name);
      const queue = new Queue(this, `${id}DeadLetterQueue`, {
        queueName: streamDeadLetterQueueName(stage.name, consumer),
        retentionPeriod: Duration.days(STREAM_DEAD_LETTER_RETENTION_DAYS),
        ...encryption,
      });
      deadLetterAlarm(`${id}DeadLetterDepthAlarm`, queue, `${consumer.name}-dlq`);
      Validations.of(queue).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason: `the dead-letter destination of ${consumer.name}'s stream event sources (Lambda sends it failed batches)`,
      });
      streamDeadLetterQueues[consumer.name] = queue;
    }
    this.streamDeadLetterQueues = streamDeadLetterQueues;

    // The default AWS-owned key, not the stage key: EventBridge archives no bus encrypted
    // with a customer-managed key. No event pattern: the archive keeps every event put on it.
    this.eventBus = new EventBus(this, 'EventBus', {
      eventBusName: eventBusName(stage.name),
      description: `dpm ${stage.name}: domain events`,
    });
    this.eventArchive = this.eventBus.archive('Archive', {
      archiveName: eventBusName(stage.name),
      description: `dpm ${stage.name}: every domain event, for replays`,
      eventPattern: {},
      retention: Duration.days(eventArchiveRetention(stage)),
    });
    // CDK renders `KmsKeyIdentifier: ""` for an archive without a key, which some regions refuse
    // (aws/aws-cdk#37847): leave the property out, as EventBridge's own default means.
    (this.eventArchive.node.defaultChild as CfnArchive).addPropertyDeletionOverride('KmsKeyIdentifier');
    this.eventBus.applyRemovalPolicy(stage.removalPolicy);
    this.eventArchive.applyRemovalPolicy(stage.removalPolicy);

    // CDK names buckets: their names are global. The one emptying Lambda (autoDeleteObjects, a
    // custom resource in this stack) exists only where the stage destroys, since CloudFormation
    // cannot delete a bucket that still holds objects.
    const destroys = stage.removalPolicy === RemovalPolicy.DESTROY;
    // Server access logs of the buckets (S3 writes them only into a bucket with S3-managed keys).
    const accessLogs = new Bucket(this, 'AccessLogsBucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(ACCESS_LOG_RETENTION_DAYS) }],
      removalPolicy: stage.removalPolicy,
      autoDeleteObjects: destroys,
    });
    const buckets = {} as Record<BucketKey, Bucket>;
    for (const key of Object.keys(BUCKETS) as BucketKey[]) {
      buckets[key] = new Bucket(this, `${key}Bucket`, {
        encryption: BucketEncryption.KMS,
        encryptionKey: this.key,
        bucketKeyEnabled: true,
        blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
        enforceSSL: true,
        // Where the stage keeps its data, an overwritten or deleted object stays recoverable
        // for NONCURRENT_VERSION_DAYS (a role that may delete objects cannot destroy them).
        versioned: !destroys,
        lifecycleRules: [
          { id: 'abort-incomplete-multipart-uploads', abortIncompleteMultipartUploadAfter: Duration.days(7) },
          ...(destroys
            ? []
            : [
                {
                  id: 'expire-old-versions',
                  noncurrentVersionExpiration: Duration.days(NONCURRENT_VERSION_DAYS),
                  expiredObjectDeleteMarker: true,
                },
              ]),
        ],
        serverAccessLogsBucket: accessLogs,
        serverAccessLogsPrefix: `${key}/`,
        removalPolicy: stage.removalPolicy,
        autoDeleteObjects: destroys,
      });
    }
    this.buckets = buckets;

    /**
     * A secret of the stage, `dpm <stage>: <description>`, kept as the stage keeps its data.
     * Encrypted by Secrets Manager's own key, so secretsmanager:GetSecretValue alone reads it.
     * cdk-nag's AwsSolutions-SMG4 asks for automatic rotation, which needs a rotation Lambda
     * that can change the value where it is used: these values belong to other systems or to
     * operators, as `noRotation` says.
     */
    const stageSecret = (
      id: string,
      secretName: string,
      description: string,
      noRotation: string,
      generate?: SecretProps['generateSecretString'],
    ): Secret => {
      const secret = new Secret(this, id, {
        secretName,
        description: `dpm ${stage.name}: ${description}`,
        removalPolicy: stage.removalPolicy,
        ...(generate && { generateSecretString: generate }),
      });
      Validations.of(secret).acknowledge({ id: 'AwsSolutions-SMG4', reason: noRotation });
      return secret;
    };
    // Created with a generated placeholder: put the real value after the first deploy
    // (`aws secretsmanager put-secret-value`).
    this.keycloakAdminClientSecret =
      stage.idp === 'keycloak'
        ? stageSecret(
            'KeycloakAdminClientSecret',
            keycloakAdminClientSecretName(stage.name),
            'secret of the Keycloak admin client used by data shares',
            "Keycloak's admin client secret: rotated in Keycloak, then put here by the operator",
          )
        : undefined;
    // Same arrangement for the Airflow user's password; an airflow stage missing its URL or
    // user fails here, before the stateless stack is built.
    this.airflowPassword = airflowSettings(stage)
      ? stageSecret(
          'AirflowPassword',
          airflowPasswordSecretName(stage.name),
          'password of the Airflow user that migration signs in as',
          "the Airflow user's password: changed in Airflow, then put here by the operator",
        )
      : undefined;
    // The bootstrap admin key: generated here, read from Secrets Manager by operators and by
    // the functions (which know it by hash until the keys group stores it).
    this.adminPsk = stage.adminPsk
      ? stageSecret(
          'AdminPsk',
          adminPskSecretName(stage.name),
          'the bootstrap admin pre-shared key (Authorization-PSK)',
          'the bootstrap admin key only makes the first keys (see docs/identity-and-keys.md): an operator rotates it by putting a ' +
            'new value, which function instances read when they start (redeploy to switch at once)',
          { passwordLength: 48, excludePunctuation: true },
        )
      : undefined;
    this.llmApiKey = stage.llmApiKeySecret
      ? stageSecret(
          'LlmApiKey',
          llmApiKeySecretName(stage.name),
          'API key of the OpenAI-compatible model endpoint',
          "the model provider's API key: issued and rotated by the provider, then put here by the operator",
        )
      : undefined;
  }
}

/** `domain-events-publisher` → `EventsPublisher`, as the stateless stack names the same consumer. */
const constructId = (name: string): string => name.replace(/(^|-)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase());
