import { Annotations, CfnOutput, Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { MathExpression, Stats } from 'aws-cdk-lib/aws-cloudwatch';
import {
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  LogGroupLogDestination,
  type CfnStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { CORS } from '../../shared/cors.js';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Vpc } from 'aws-cdk-lib/aws-ec2';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import {
  StartingPosition,
  type DlqDestinationConfig,
  type IEventSourceDlq,
  type IEventSourceMapping,
  type IFunction,
} from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  EXPENSIVE_ROUTES,
  GROUPS,
  groupForPath,
  STREAM_CONSUMERS,
  WORKERS,
  type GroupDefinition,
  type GroupName,
  type StreamConsumerDefinition,
  type WorkerDefinition,
} from '../groups.js';
import { QUEUES, TABLES, type BucketKey, type QueueKey, type TableDefinition, type TableKey } from '../tables.js';
import { ALARM_PERIOD, stageAlarm } from './alarms.js';
import { ITERATOR_AGE_ALARM, STREAM_RETRY } from './domain-events.js';
import { acknowledgeFindings } from './nag.js';
import { ServiceFunction } from './service-function.js';
import {
  airflowSettings,
  assertDeployable,
  keycloakSettings,
  migrationVpcSettings,
  RESERVED_FUNCTIONS,
  type ReservedFunction,
  type Stage,
} from './stages.js';

/** A function's p99 duration alarm fires above this share of its timeout. */
export const DURATION_ALARM_SHARE = 0.8;

/** The function's reserved concurrency on this stage, if it has any. */
const reservedFor = (stage: Stage, name: string): number | undefined =>
  (RESERVED_FUNCTIONS as readonly string[]).includes(name)
    ? stage.reservedConcurrency?.[name as ReservedFunction]
    : undefined;

export interface StatelessStackProps extends StackProps {
  readonly stage: Stage;
  readonly tables: Readonly<Record<TableKey, ITable>>;
  readonly queues: Readonly<Record<QueueKey, IQueue>>;
  readonly deadLetterQueues: Readonly<Record<QueueKey, IQueue>>;
  readonly buckets: Readonly<Record<BucketKey, IBucket>>;
  /** The stage key: groups with `usesKms` seal and open secrets with it. */
  readonly key: IKey;
  /** Required when the stage's identity provider is Keycloak (the stateful stack creates it). */
  readonly keycloakAdminClientSecret?: ISecret;
  /** Required when the stage's workflow engine is Airflow (the stateful stack creates it). */
  readonly airflowPassword?: ISecret;
  /** The bootstrap admin key's secret, when the stage has one. */
  readonly adminPsk?: ISecret;
  /** The model endpoint's API key, when the stage keeps one. */
  readonly llmApiKey?: ISecret;
  /** The stage's bus `dpm-<stage>`: stream consumers with `putsEvents` put events on it. */
  readonly eventBus: IEventBus;
  /** Each stream consumer's dead-letter queue, by consumer name (the stateful stack creates them). */
  readonly streamDeadLetterQueues: Readonly<Record<string, IQueue>>;
  /** Where group and worker entries resolve from; defaults to the repository root. */
  readonly projectRoot?: string;
  /** Queue consumers; defaults to `WORKERS` (tests pass others to exercise the checks). */
  readonly workers?: readonly WorkerDefinition[];
  /** Stream consumers; defaults to `STREAM_CONSUMERS` (tests pass others to exercise the checks). */
  readonly streamConsumers?: readonly StreamConsumerDefinition[];
  /** Reported by GET /api/health/ping (`-c buildNumber=<git sha>`). */
  readonly buildNumber?: string;
}

/** The variable through which a sending group learns each queue's URL (read by shared/config.ts). */
const QUEUE_URL_VARIABLE: Record<QueueKey, string> = {
  crewRuns: 'CREW_RUN_QUEUE_URL',
  webhookDeliveries: 'WEBHOOK_QUEUE_URL',
  runWebhookDeliveries: 'RUN_WEBHOOK_QUEUE_URL',
};

/** The variable through which a group learns each bucket's (CDK-generated) name. */
const BUCKET_NAME_VARIABLE: Record<BucketKey, string> = { artifacts: 'ARTIFACTS_BUCKET' };

/** Groups that talk to the identity provider (IDP, KEYCLOAK_*): the data-shares adapter. */
const IDP_GROUPS: readonly GroupName[] = ['data-shares'];

/** Groups that talk to the workflow engine (WORKFLOW, AIRFLOW_*): migration's E3 and E4. */
const WORKFLOW_GROUPS: readonly GroupName[] = ['migration'];

/** Functions that call the language model (crew `llm` steps, E12's rephrasing). */
const LLM_FUNCTIONS: readonly string[] = ['crews-worker', 'query'];

/** Groups whose probes connect to the customer's hosts: the only ones placed in the stage's migrationVpc. */
const VPC_GROUPS: readonly GroupName[] = ['migration'];

/** Serves `$default`, so unknown paths get the service's JSON 404 rather than API Gateway's. */
const FALLBACK_GROUP: GroupName = 'platform';

/**
 * Compute and routing: one Lambda per endpoint group behind one HTTP API, one per queue worker,
 * one per stream consumer.
 */
export class StatelessStack extends Stack {
  readonly functions: ReadonlyMap<string, ServiceFunction>;
  readonly api: HttpApi;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    const { stage } = props;
    assertDeployable(stage);
    const groups: readonly GroupDefinition[] = GROUPS;
    const workers: readonly WorkerDefinition[] = props.workers ?? WORKERS;
    const streamConsumers: readonly StreamConsumerDefinition[] = props.streamConsumers ?? STREAM_CONSUMERS;
    // Before any construct: a misfit fails the synth with one line, not a half-built tree.
    for (const worker of workers) assertFitsVisibilityTimeout(worker);
    for (const worker of workers) assertConcurrencyWithinReservation(stage, worker);
    for (const consumer of streamConsumers) assertStreamsExist(consumer, props.streamDeadLetterQueues);
    const keycloak = keycloakSettings(stage);
    if (keycloak && !props.keycloakAdminClientSecret) {
      throw new Error(`stage "${stage.name}" uses keycloak but no admin client secret was passed`);
    }
    const airflow = airflowSettings(stage);
    if (airflow && !props.airflowPassword) {
      throw new Error(`stage "${stage.name}" uses airflow but no Airflow password secret was passed`);
    }
    const vpcSettings = migrationVpcSettings(stage);
    /** The stateful stack's queues of these keys (what a function declares in `sendsTo`). */
    const queuesOf = (keys: readonly QueueKey[] = []): IQueue[] => keys.map((key) => props.queues[key]);

    const sharedEnvironment = definedOnly({
      AUTH_ISSUER: stage.authIssuer,
      AUTH_AUDIENCE: stage.authAudience,
      AUTH_JWKS_URL: stage.authJwksUrl,
      AUTH_DOCS_CLIENT_ID: stage.authDocsClientId,
      AUTH_CONSOLE_CLIENT_ID: stage.authConsoleClientId,
      EVENTS_TTL_DAYS: String(stage.eventsTtlDays),
      BUILD_NUMBER: props.buildNumber,
      CREW_HTTP_ALLOWED_HOSTS: stage.crewHttpAllowedHosts.length > 0 ? stage.crewHttpAllowedHosts.join(',') : undefined,
      WEBHOOK_ALLOWED_HOSTS: stage.webhookAllowedHosts.length > 0 ? stage.webhookAllowedHosts.join(',') : undefined,
      WEBHOOK_RETRY_SCHEDULE: stage.webhookRetrySchedule?.join(','),
      LLM_BASE_URL: stage.llmBaseUrl,
      LLM_MODEL: stage.llmModel,
      // LLM_API_KEY is never in plain env: LLM_API_KEY_ARN names its secret (see llmApiKeySecret).
    });
    // The admin client's secret stays in Secrets Manager: only its ARN is in the environment.
    const idpEnvironment = definedOnly({
      IDP: stage.idp,
      KEYCLOAK_URL: keycloak?.url,
      KEYCLOAK_REALM: keycloak?.realm,
      KEYCLOAK_ADMIN_CLIENT_ID: keycloak?.adminClientId,
      KEYCLOAK_ADMIN_CLIENT_SECRET_ARN: keycloak && props.keycloakAdminClientSecret?.secretArn,
    });
    // Likewise the Airflow password: only its ARN.
    const workflowEnvironment = definedOnly({
      WORKFLOW: stage.workflow,
      AIRFLOW_BASE_URL: airflow?.baseUrl,
      AIRFLOW_USERNAME: airflow?.username,
      AIRFLOW_PASSWORD_ARN: airflow && props.airflowPassword?.secretArn,
    });
    // Imported from its ids (no lookup, so synth stays offline); see StageSettings.migrationVpc.
    const vpc =
      vpcSettings &&
      Vpc.fromVpcAttributes(this, 'MigrationVpc', {
        vpcId: vpcSettings.vpcId,
        availabilityZones: [...vpcSettings.availabilityZones],
        privateSubnetIds: [...vpcSettings.privateSubnetIds],
      });
    // Lambda places network interfaces in the subnets and never reads their route tables.
    if (vpc) {
      Annotations.of(vpc).acknowledgeWarning(
        '@aws-cdk/aws-ec2:noSubnetRouteTableId',
        'the migration function only needs the subnet ids',
      );
    }

    const functions = new Map<string, ServiceFunction>();
    const integrations = new Map<string, HttpLambdaIntegration>();
    for (const group of groups) {
      const queueEnvironment = Object.fromEntries(
        (group.sendsTo ?? []).map((key) => [QUEUE_URL_VARIABLE[key], props.queues[key].queueUrl]),
      );
      const bucketEnvironment = Object.fromEntries(
        (Object.keys(group.buckets ?? {}) as BucketKey[]).map((key) => [
          BUCKET_NAME_VARIABLE[key],
          props.buckets[key].bucketName,
        ]),
      );
      const usesIdp = IDP_GROUPS.includes(group.name as GroupName);
      const usesWorkflow = WORKFLOW_GROUPS.includes(group.name as GroupName);
      // Groups that check pre-shared keys (they read the keys table) must know the admin key.
      const checksKeys = group.tables.keys !== undefined;
      const fn = new ServiceFunction(this, constructId(group.name), {
        stage,
        name: group.name,
        entry: group.entry,
        projectRoot: props.projectRoot,
        reservedConcurrency: reservedFor(stage, group.name),
        ...('bundledFiles' in group && { bundledFiles: group.bundledFiles }),
        ...('builtFiles' in group && { builtFiles: group.builtFiles }),
        ...('timeoutSeconds' in group && { timeoutSeconds: group.timeoutSeconds }),
        ...(vpc && VPC_GROUPS.includes(group.name as GroupName) && { vpc }),
        environment: {
          ...sharedEnvironment,
          ...queueEnvironment,
          ...bucketEnvironment,
          ...(group.usesKms && { KMS_KEY_ID: props.key.keyArn }),
          ...(usesIdp && idpEnvironment),
          ...(usesWorkflow && workflowEnvironment),
          ...(checksKeys && props.adminPsk && { DPM_ADMIN_PSK_ARN: props.adminPsk.secretArn }),
          ...(LLM_FUNCTIONS.includes(group.name) && props.llmApiKey && { LLM_API_KEY_ARN: props.llmApiKey.secretArn }),
        },
      });
      // Least privilege: exactly what the group declares, with the key actions of KEY_ACTIONS.
      grantTables(fn, props.tables, group.tables, props.key);
      grantSends(fn, queuesOf(group.sendsTo), props.key);
      grantBuckets(fn, props.buckets, group.buckets ?? {}, group.bucketPrefixes ?? {}, props.key);
      // Envelope encryption (shared/aws/kms.ts): exactly these two, not grantEncryptDecrypt. The
      // key also encrypts the tables, so a table grant may already bring some of them; this grant
      // keeps the need explicit should the keys ever split.
      if (group.usesKms) props.key.grant(fn, 'kms:GenerateDataKey', 'kms:Decrypt');
      // Exactly GetSecretValue on exactly the one secret (not grantRead, which adds DescribeSecret).
      if (usesIdp && keycloak) grantSecretValue(fn, props.keycloakAdminClientSecret!);
      if (usesWorkflow && airflow) grantSecretValue(fn, props.airflowPassword!);
      if (checksKeys && props.adminPsk) grantSecretValue(fn, props.adminPsk);
      if (LLM_FUNCTIONS.includes(group.name) && props.llmApiKey) grantSecretValue(fn, props.llmApiKey);

      functions.set(group.name, fn);
      integrations.set(group.name, new HttpLambdaIntegration(`${constructId(group.name)}Integration`, fn.lambda));
    }

    // Workers: no route; the event source adds the queue's consume grant (and its key's decrypt).
    for (const worker of workers) {
      const fn = new ServiceFunction(this, constructId(worker.name), {
        stage,
        name: worker.name,
        reservedConcurrency: reservedFor(stage, worker.name),
        entry: worker.entry,
        projectRoot: props.projectRoot,
        timeoutSeconds: worker.timeoutSeconds,
        environment: {
          ...sharedEnvironment,
          ...Object.fromEntries(
            (worker.sendsTo ?? []).map((key) => [QUEUE_URL_VARIABLE[key], props.queues[key].queueUrl]),
          ),
          ...(worker.usesKms && { KMS_KEY_ID: props.key.keyArn }),
          ...(LLM_FUNCTIONS.includes(worker.name) && props.llmApiKey && { LLM_API_KEY_ARN: props.llmApiKey.secretArn }),
        },
      });
      grantTables(fn, props.tables, worker.tables, props.key);
      // Opens sealed secrets only (the webhook worker): no GenerateDataKey.
      if (worker.usesKms) props.key.grant(fn, 'kms:Decrypt');
      if (LLM_FUNCTIONS.includes(worker.name) && props.llmApiKey) grantSecretValue(fn, props.llmApiKey);
      grantSends(fn, queuesOf(worker.sendsTo), props.key);
      const queue = (worker.deadLetter ? props.deadLetterQueues : props.queues)[worker.consumes];
      fn.lambda.addEventSource(
        new SqsEventSource(queue, {
          batchSize: worker.batchSize,
          reportBatchItemFailures: true,
          // At most this many invocations at once: a flood of messages waits in the queue
          // instead of throttling the function (which would use up receive counts).
          maxConcurrency: maxConcurrencyOf(stage, worker),
          ...(worker.name === 'crews-worker' && { maxBatchingWindow: Duration.seconds(0) }),
        }),
      );
      functions.set(worker.name, fn);
    }

    // Stream consumers: no route; each event source adds its stream's read grant (and the key's
    // decrypt), its dead-letter destination the send grant on that queue.
    const streamFunctions = new Map<string, ServiceFunction>();
    for (const consumer of streamConsumers) {
      const fn = new ServiceFunction(this, constructId(consumer.name), {
        stage,
        name: consumer.name,
        reservedConcurrency: reservedFor(stage, consumer.name),
        entry: consumer.entry,
        projectRoot: props.projectRoot,
        timeoutSeconds: consumer.timeoutSeconds,
        environment: {
          ...sharedEnvironment,
          ...(consumer.putsEvents && { EVENT_BUS_NAME: props.eventBus.eventBusName }),
          ...Object.fromEntries(
            (consumer.sendsTo ?? []).map((key) => [QUEUE_URL_VARIABLE[key], props.queues[key].queueUrl]),
          ),
        },
      });
      grantTables(fn, props.tables, consumer.tables, props.key);
      grantSends(fn, queuesOf(consumer.sendsTo), props.key);
      // events:PutEvents on exactly the stage's bus.
      if (consumer.putsEvents) props.eventBus.grantPutEventsTo(fn);
      Validations.of(fn).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'the stream event source needs dynamodb:ListStreams, which takes no resource (it lists stream ARNs ' +
          'and reads no data; test/infra checks that nothing else is granted on every resource)',
      });
      const onFailure = new SqsDeadLetterDestination(props.streamDeadLetterQueues[consumer.name]!, props.key);
      for (const key of consumer.streams) {
        fn.lambda.addEventSource(
          new DynamoEventSource(props.tables[key], {
            startingPosition: StartingPosition.TRIM_HORIZON,
            batchSize: consumer.batchSize,
            // Partial batch responses: the first failed record comes back with all after it, so
            // one item's records keep their order.
            reportBatchItemFailures: true,
            bisectBatchOnError: true,
            retryAttempts: STREAM_RETRY.retryAttempts,
            maxRecordAge: Duration.hours(STREAM_RETRY.maxRecordAgeHours),
            onFailure,
          }),
        );
      }
      functions.set(consumer.name, fn);
      streamFunctions.set(consumer.name, fn);
    }
    this.functions = functions;

    const fallback = integrations.get(FALLBACK_GROUP);
    if (!fallback) throw new Error(`no group named "${FALLBACK_GROUP}" to serve unknown paths`);

    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      logGroupName: `/aws/apigateway/dpm-${stage.name}`,
      retention: stage.logRetentionDays,
      removalPolicy: stage.removalPolicy,
    });
    // Checked with the rest of the stage by assertDeployable.
    const corsOrigins = stage.corsOrigins ?? [];
    this.api = new HttpApi(this, 'Api', {
      apiName: `dpm-${stage.name}`,
      defaultIntegration: fallback,
      createDefaultStage: false,
      // The same rules as the local platform (shared/cors.ts); none without origins.
      ...(corsOrigins.length > 0 && {
        corsPreflight: {
          allowOrigins: [...corsOrigins],
          allowMethods: CORS.allowMethods.map((m) => CorsHttpMethod[m]),
          allowHeaders: [...CORS.allowHeaders],
          exposeHeaders: [...CORS.exposeHeaders],
          maxAge: Duration.seconds(CORS.maxAgeSeconds),
        },
      }),
    });
    // API Gateway authorizes nothing: every route's Lambda authenticates the caller itself (API.md §1:
    // a pre-shared key or a Bearer token, and public routes such as ping and the docs), since an
    // HTTP API's JWT authorizer can check neither the keys nor the mix; anonymous floods meet the throttle.
    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'authentication inside the functions (API.md §1: pre-shared keys and Bearer tokens, public ping and ' +
        'docs), which no API Gateway authorizer can do; the stage throttle bounds anonymous requests',
    });
    // Declared by hand because only an explicit stage takes access-log settings.
    const apiStage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      // Every route; anonymous floods are refused here, before any Lambda runs.
      throttle: stage.apiThrottle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            routeKey: '$context.routeKey',
            path: '$context.path',
            status: '$context.status',
            responseLength: '$context.responseLength',
            // The whole answer's time, and the function's part of it.
            responseLatency: '$context.responseLatency',
            integrationLatency: '$context.integrationLatency',
            integrationStatus: '$context.integrationStatus',
            // API Gateway's own refusals (throttled, no route) and the integration's failures.
            errorMessage: '$context.error.message',
            integrationError: '$context.integrationErrorMessage',
            userAgent: '$context.identity.userAgent',
            protocol: '$context.protocol',
          }),
        ),
      },
    });

    for (const group of groups) {
      const integration = integrations.get(group.name)!;
      for (const prefix of group.prefixes) {
        this.api.addRoutes({ path: prefix, methods: [HttpMethod.ANY], integration });
        this.api.addRoutes({ path: `${prefix}/{proxy+}`, methods: [HttpMethod.ANY], integration });
      }
      for (const path of group.exactPaths ?? []) {
        this.api.addRoutes({ path, methods: [HttpMethod.GET], integration });
      }
    }
    // The expensive routes: routes of their own (to their group's function) with a tighter throttle.
    // CloudFormation's RouteSettings is a map of route key → settings, as written here.
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const route of EXPENSIVE_ROUTES) {
      const group = groupForPath(route.path);
      if (!group) throw new Error(`no group serves ${route.path}`);
      this.api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: integrations.get(group.name)!,
      });
      routeSettings[`${route.method} ${route.path}`] = {
        ThrottlingRateLimit: stage.expensiveRouteThrottle.rateLimit,
        ThrottlingBurstLimit: stage.expensiveRouteThrottle.burstLimit,
      };
    }
    (apiStage.node.defaultChild as CfnStage).routeSettings = routeSettings;

    // The API's 5xx answers as a share of its requests; any throttled invocation of a function.
    stageAlarm(this, 'ServerErrorRateAlarm', stage, {
      name: 'api-5xx-rate',
      description: `More than ${stage.serverErrorAlarmPercent}% of the API's answers are 5xx`,
      metric: new MathExpression({
        label: '5xx %',
        expression: 'IF(requests > 0, 100 * errors / requests, 0)',
        usingMetrics: {
          errors: this.api.metricServerError({ period: ALARM_PERIOD, statistic: Stats.SUM }),
          requests: this.api.metricCount({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        },
        period: ALARM_PERIOD,
      }),
      threshold: stage.serverErrorAlarmPercent,
    });
    for (const [name, fn] of functions) {
      stageAlarm(this, `${constructId(name)}ThrottleAlarm`, stage, {
        name: `${name}-throttles`,
        description: `Invocations of dpm-${stage.name}-${name} are throttled`,
        metric: fn.lambda.metricThrottles({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        threshold: 1,
      });
      // An invocation that failed as a whole (a crash, a timeout; not a handled 4xx/5xx answer).
      stageAlarm(this, `${constructId(name)}ErrorAlarm`, stage, {
        name: `${name}-errors`,
        description: `Invocations of dpm-${stage.name}-${name} failed`,
        metric: fn.lambda.metricErrors({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        threshold: 1,
      });
      // Close to its timeout for a quarter of an hour: the next slowdown times it out.
      const timeoutMs = fn.lambda.timeout!.toMilliseconds();
      stageAlarm(this, `${constructId(name)}DurationAlarm`, stage, {
        name: `${name}-duration-p99`,
        description: `The p99 duration of dpm-${stage.name}-${name} is above ${DURATION_ALARM_SHARE * 100} % of its timeout`,
        metric: fn.lambda.metricDuration({ period: ALARM_PERIOD, statistic: Stats.p(99) }),
        threshold: Math.round(DURATION_ALARM_SHARE * timeoutMs),
        evaluationPeriods: 3,
      });
    }

    // A consumer falling behind its streams: events reach the feed, the bus and webhooks late.
    for (const [name, fn] of streamFunctions) {
      stageAlarm(this, `${constructId(name)}IteratorAgeAlarm`, stage, {
        name: `${name}-iterator-age`,
        description:
          `Records wait more than ${ITERATOR_AGE_ALARM.thresholdSeconds} s for dpm-${stage.name}-${name} ` +
          `(${ITERATOR_AGE_ALARM.evaluationPeriods} periods in a row)`,
        metric: fn.lambda.metric('IteratorAge', { period: ALARM_PERIOD, statistic: Stats.MAXIMUM }),
        threshold: ITERATOR_AGE_ALARM.thresholdSeconds * 1000,
        evaluationPeriods: ITERATOR_AGE_ALARM.evaluationPeriods,
      });
    }

    new CfnOutput(this, 'ApiUrl', { value: apiStage.url, description: `dpm ${stage.name} HTTP API` });
  }
}

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
 * data key and read with decrypt.
 */
export const KEY_ACTIONS = {
  tableRead: ['kms:Decrypt', 'kms:DescribeKey'],
  tableReadWrite: ['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey*'],
  queueSend: ['kms:GenerateDataKey', 'kms:Decrypt'],
  objectsRead: ['kms:Decrypt'],
  objectsReadWrite: ['kms:Decrypt', 'kms:GenerateDataKey'],
} as const;

/** Where the reason for `kms:GenerateDataKey*` on tables is written (cdk-nag acknowledges it by id). */
const TABLE_DATA_KEY_WILDCARD = 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]';

/**
 * Least privilege: exactly the declared tables and their indexes, by name (no `index/*`), the
 * item actions of TABLE_ACTIONS and the key actions of KEY_ACTIONS.
 */
function grantTables(
  fn: ServiceFunction,
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
function grantSends(fn: IGrantable, queues: readonly IQueue[], key: IKey): void {
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
class SqsDeadLetterDestination implements IEventSourceDlq {
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
function grantBuckets(
  fn: ServiceFunction,
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

function grantSecretValue(grantee: IGrantable, secret: ISecret): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
  );
}

/**
 * SQS hides a received message for the visibility timeout; a worker still running past it
 * would see the message redelivered. AWS advises at least six times the function's timeout
 * for an SQS event source (room for its retries of a throttled batch before the message
 * comes back). The dead-letter queue shares the definition's timeout (see the stateful stack).
 */
export const VISIBILITY_PER_TIMEOUT = 6;

function assertFitsVisibilityTimeout(worker: WorkerDefinition): void {
  const queue = QUEUES[worker.consumes];
  if (queue.visibilityTimeoutSeconds < VISIBILITY_PER_TIMEOUT * worker.timeoutSeconds) {
    throw new Error(
      `queue "${queue.id}${worker.deadLetter ? '-dlq' : ''}" visibility timeout (${queue.visibilityTimeoutSeconds} s) ` +
        `must be at least ${VISIBILITY_PER_TIMEOUT} times the timeout of worker "${worker.name}" (${worker.timeoutSeconds} s)`,
    );
  }
}

/** The SQS event source's `maxConcurrency` of a worker on the stage. */
export const maxConcurrencyOf = (stage: Stage, worker: Pick<WorkerDefinition, 'name'>): number =>
  worker.name === 'crews-worker' ? stage.crewWorkerMaxConcurrency : stage.queueWorkerMaxConcurrency;

/**
 * A function throttled below its event source's `maxConcurrency` hands batches back to the
 * queue, each a receive more, until messages reach the dead-letter queue without having
 * failed: the event source may never carry more than the function's reservation.
 */
function assertConcurrencyWithinReservation(stage: Stage, worker: WorkerDefinition): void {
  const reserved = reservedFor(stage, worker.name);
  const max = maxConcurrencyOf(stage, worker);
  if (reserved !== undefined && max > reserved) {
    throw new Error(
      `stage "${stage.name}": worker "${worker.name}" maxConcurrency (${max}) must not exceed its reserved concurrency (${reserved})`,
    );
  }
}

/**
 * A stream consumer reads only tables that have a stream (DynamoEventSource would fail with
 * the construct path instead), and the stateful stack must have made its dead-letter queue.
 */
function assertStreamsExist(
  consumer: StreamConsumerDefinition,
  deadLetterQueues: Readonly<Record<string, IQueue>>,
): void {
  for (const key of consumer.streams) {
    if ((TABLES[key] as TableDefinition).stream !== true) {
      throw new Error(`stream consumer "${consumer.name}" reads table "${TABLES[key].id}", which has no stream`);
    }
  }
  if (!deadLetterQueues[consumer.name]) {
    throw new Error(`stream consumer "${consumer.name}" has no dead-letter queue in the stateful stack`);
  }
}

/** `data-shares` → `DataShares`: construct ids stay stable and readable. */
const constructId = (name: string): string => name.replace(/(^|-)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase());

const definedOnly = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
