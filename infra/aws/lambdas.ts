import { Annotations, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Vpc, type IVpc } from 'aws-cdk-lib/aws-ec2';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { LambdaDefinition } from '../groups.js';
import type { BucketKey, QueueKey, TableKey } from '../tables.js';
import {
  KEY_ACTIONS,
  grantBuckets,
  grantModelInvocation,
  grantSecretValue,
  grantSends,
  grantTables,
} from './grants.js';
import { grantScheduleManagement } from './schedules.js';
import { ServiceFunction, constructId } from './service-function.js';
import { airflowSettings, bedrockModelArn, keycloakSettings, migrationVpcSettings, type Stage } from './stages.js';

/**
 * Every Lambda of the stateless stack, whatever starts it (a route, a queue, a stream), built
 * one way from its definition in infra/groups.ts: its environment, grants and secrets follow
 * from what it declares, and from nothing else (no list of names kept apart).
 */

/** What the stateless stack gives its Lambdas: the stage, the stateful stack's resources and secrets. */
export interface LambdaResources {
  readonly stage: Stage;
  readonly tables: Readonly<Record<TableKey, ITable>>;
  readonly queues: Readonly<Record<QueueKey, IQueue>>;
  readonly buckets: Readonly<Record<BucketKey, IBucket>>;
  /** The stage key: Lambdas with `usesKms` seal and open secrets with it. */
  readonly key: IKey;
  /** The stage's bus `dpm-<stage>`: Lambdas with `putsEvents` put events on it. */
  readonly eventBus: IEventBus;
  /** Crew schedules' group `dpm-<stage>`: Lambdas with `managesSchedules` create their schedules in it. */
  readonly scheduleGroup: IScheduleGroup;
  /** The role those schedules send to the crew-run queue as: Lambdas with `managesSchedules` pass it. */
  readonly schedulerRole: IRole;
  /** Required when the stage's identity provider is Keycloak (the stateful stack creates it). */
  readonly keycloakAdminClientSecret?: ISecret;
  /** Required when the stage's workflow engine is Airflow (the stateful stack creates it). */
  readonly airflowPassword?: ISecret;
  /** The bootstrap admin key's secret, when the stage has one. */
  readonly adminPsk?: ISecret;
  /** The model endpoint's API key, when the stage keeps one. */
  readonly llmApiKey?: ISecret;
  /** Where entries resolve from; defaults to the repository root. */
  readonly projectRoot?: string;
  /** Reported by GET /api/health/ping (`-c buildNumber=<git sha>`). */
  readonly buildNumber?: string;
  /** The stage's migrationVpc, imported once (importMigrationVpc): where Lambdas `inMigrationVpc` run. */
  readonly migrationVpc?: IVpc;
}

/** The variable through which a sending Lambda learns each queue's URL (read by shared/config.ts). */
const QUEUE_URL_VARIABLE: Record<QueueKey, string> = {
  crewRuns: 'CREW_RUN_QUEUE_URL',
  webhookDeliveries: 'WEBHOOK_QUEUE_URL',
  runWebhookDeliveries: 'RUN_WEBHOOK_QUEUE_URL',
};

/** The variable through which a Lambda learns each bucket's (CDK-generated) name. */
const BUCKET_NAME_VARIABLE: Record<BucketKey, string> = { artifacts: 'ARTIFACTS_BUCKET' };

/** A stage whose identity provider or workflow engine needs a secret must be given it (before any construct). */
export function assertSecretsGiven(resources: LambdaResources): void {
  const { stage } = resources;
  if (keycloakSettings(stage) && !resources.keycloakAdminClientSecret) {
    throw new Error(`stage "${stage.name}" uses keycloak but no admin client secret was passed`);
  }
  if (airflowSettings(stage) && !resources.airflowPassword) {
    throw new Error(`stage "${stage.name}" uses airflow but no Airflow password secret was passed`);
  }
}

/** The stage's migrationVpc, imported from its ids (no lookup, so synth stays offline); see StageSettings.migrationVpc. */
export function importMigrationVpc(scope: Construct, stage: Stage): IVpc | undefined {
  const settings = migrationVpcSettings(stage);
  if (!settings) return undefined;
  const vpc = Vpc.fromVpcAttributes(scope, 'MigrationVpc', {
    vpcId: settings.vpcId,
    availabilityZones: [...settings.availabilityZones],
    privateSubnetIds: [...settings.privateSubnetIds],
  });
  // Lambda places network interfaces in the subnets and never reads their route tables.
  Annotations.of(vpc).acknowledgeWarning(
    '@aws-cdk/aws-ec2:noSubnetRouteTableId',
    'the migration function only needs the subnet ids',
  );
  return vpc;
}

/** The Lambda's reserved concurrency on this stage, when it declares `reservesConcurrency` and the stage reserves any. */
export const reservedConcurrencyOf = (
  stage: Stage,
  definition: Pick<LambdaDefinition, 'name' | 'reservesConcurrency'>,
): number | undefined =>
  definition.reservesConcurrency
    ? (stage.reservedConcurrency as Readonly<Record<string, number>> | undefined)?.[definition.name]
    : undefined;

/**
 * A Lambda's ServiceFunction from its definition: the stage's shared variables, and for each
 * declared use its variables and exactly its grants (tables, queues, buckets, the stage key,
 * the bus, the secrets it reads). Its trigger (route, queue, streams) is the caller's.
 */
export function lambdaFor(scope: Construct, definition: LambdaDefinition, resources: LambdaResources): ServiceFunction {
  const { stage, key } = resources;
  const keycloak = keycloakSettings(stage);
  const airflow = airflowSettings(stage);
  const secrets = secretsOf(definition, resources);
  const fn = new ServiceFunction(scope, constructId(definition.name), {
    stage,
    name: definition.name,
    entry: definition.entry,
    projectRoot: resources.projectRoot,
    reservedConcurrency: reservedConcurrencyOf(stage, definition),
    timeoutSeconds: definition.timeoutSeconds,
    bundledFiles: definition.bundledFiles,
    builtFiles: definition.builtFiles,
    ...(definition.inMigrationVpc && resources.migrationVpc && { vpc: resources.migrationVpc }),
    // A secret stays in Secrets Manager: only its ARN is in the environment.
    environment: {
      ...sharedEnvironment(resources),
      ...(definition.putsEvents && { EVENT_BUS_NAME: resources.eventBus.eventBusName }),
      ...(definition.managesSchedules && {
        SCHEDULE_GROUP_NAME: resources.scheduleGroup.scheduleGroupName,
        SCHEDULER_ROLE_ARN: resources.schedulerRole.roleArn,
        CREW_RUN_QUEUE_ARN: resources.queues.crewRuns.queueArn,
      }),
      ...Object.fromEntries(
        (definition.sendsTo ?? []).map((queue) => [QUEUE_URL_VARIABLE[queue], resources.queues[queue].queueUrl]),
      ),
      ...Object.fromEntries(
        (Object.keys(definition.buckets ?? {}) as BucketKey[]).map((bucket) => [
          BUCKET_NAME_VARIABLE[bucket],
          resources.buckets[bucket].bucketName,
        ]),
      ),
      ...(definition.usesKms && { KMS_KEY_ID: key.keyArn }),
      ...(definition.usesIdp &&
        definedOnly({
          IDP: stage.idp,
          KEYCLOAK_URL: keycloak?.url,
          KEYCLOAK_REALM: keycloak?.realm,
          KEYCLOAK_ADMIN_CLIENT_ID: keycloak?.adminClientId,
          KEYCLOAK_ADMIN_CLIENT_SECRET_ARN: secrets.idp?.secretArn,
        })),
      ...(definition.usesWorkflow &&
        definedOnly({
          WORKFLOW: stage.workflow,
          AIRFLOW_BASE_URL: airflow?.baseUrl,
          AIRFLOW_USERNAME: airflow?.username,
          AIRFLOW_PASSWORD_ARN: secrets.workflow?.secretArn,
        })),
      ...(secrets.adminPsk && { DPM_ADMIN_PSK_ARN: secrets.adminPsk.secretArn }),
      ...(secrets.llm && { LLM_API_KEY_ARN: secrets.llm.secretArn }),
    },
  });
  // Least privilege: exactly what the Lambda declares, with the key actions of KEY_ACTIONS. The
  // order is the order of the role's statements, kept as deployed (the model's key before the
  // queues, the other secrets last).
  grantTables(fn, resources.tables, definition.tables, key);
  if (secrets.llm) grantSecretValue(fn, secrets.llm);
  // Bedrock (Converse signs with the role, no key): invoking exactly the stage's model or inference profile.
  if (definition.usesLlm && resources.stage.llmProvider === 'bedrock' && resources.stage.llmModel) {
    grantModelInvocation(fn, bedrockModelArn(resources.stage.llmModel, Stack.of(fn)));
  }
  grantSends(
    fn,
    (definition.sendsTo ?? []).map((queue) => resources.queues[queue]),
    key,
  );
  grantBuckets(fn, resources.buckets, definition.buckets ?? {}, definition.bucketPrefixes ?? {}, key);
  // Envelope encryption (shared/aws/kms.ts): exactly these, not grantEncryptDecrypt. The key also
  // encrypts the tables, so a table grant may already bring some of them; this grant keeps the
  // need explicit should the keys ever split.
  if (definition.usesKms) {
    key.grant(fn, ...(definition.opensSecretsOnly ? KEY_ACTIONS.secretsOpen : KEY_ACTIONS.secretsSeal));
  }
  // events:PutEvents on exactly the stage's bus.
  if (definition.putsEvents) resources.eventBus.grantPutEventsTo(fn);
  if (definition.managesSchedules) grantScheduleManagement(fn, resources.scheduleGroup, resources.schedulerRole);
  for (const secret of [secrets.idp, secrets.workflow, secrets.adminPsk]) if (secret) grantSecretValue(fn, secret);
  return fn;
}

/** What every Lambda of the stage is told. */
const sharedEnvironment = ({ stage, buildNumber }: LambdaResources): Record<string, string> =>
  definedOnly({
    AUTH_ISSUER: stage.authIssuer,
    AUTH_AUDIENCE: stage.authAudience,
    AUTH_JWKS_URL: stage.authJwksUrl,
    AUTH_DOCS_CLIENT_ID: stage.authDocsClientId,
    AUTH_CONSOLE_CLIENT_ID: stage.authConsoleClientId,
    EVENTS_TTL_DAYS: String(stage.eventsTtlDays),
    BUILD_NUMBER: buildNumber,
    CREW_HTTP_ALLOWED_HOSTS: stage.crewHttpAllowedHosts.length > 0 ? stage.crewHttpAllowedHosts.join(',') : undefined,
    WEBHOOK_ALLOWED_HOSTS: stage.webhookAllowedHosts.length > 0 ? stage.webhookAllowedHosts.join(',') : undefined,
    WEBHOOK_RETRY_SCHEDULE: stage.webhookRetrySchedule?.join(','),
    LLM_PROVIDER: stage.llmProvider,
    LLM_BASE_URL: stage.llmBaseUrl,
    LLM_MODEL: stage.llmModel,
    // LLM_API_KEY is never in plain env: LLM_API_KEY_ARN names its secret (secretsOf).
  });

/**
 * The secrets a Lambda reads (exactly GetSecretValue on each), by the need that brings it, when
 * the stage has them: the identity provider's admin client and Airflow's password when the
 * stage uses Keycloak and Airflow, the admin key for a Lambda that checks pre-shared keys (it
 * reads the keys table), the model endpoint's API key.
 */
function secretsOf(
  definition: LambdaDefinition,
  resources: LambdaResources,
): { readonly idp?: ISecret; readonly workflow?: ISecret; readonly adminPsk?: ISecret; readonly llm?: ISecret } {
  const { stage } = resources;
  return {
    idp: definition.usesIdp && keycloakSettings(stage) ? resources.keycloakAdminClientSecret : undefined,
    workflow: definition.usesWorkflow && airflowSettings(stage) ? resources.airflowPassword : undefined,
    adminPsk: definition.tables.keys !== undefined ? resources.adminPsk : undefined,
    llm: definition.usesLlm ? resources.llmApiKey : undefined,
  };
}

const definedOnly = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
