import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { EventBridgeScheduler } from '../shared/adapters/eventbridge-scheduler.js';
import type { ScheduleFire, Scheduler } from '../shared/ports/scheduler.js';
import { LocalScheduler } from './crews/schedules/local-scheduler.js';
import { physicalTableName, TABLES, type TableKey } from '../infra/tables.js';
import { AirflowWorkflow, deferredWorkflow } from '../shared/adapters/airflow.js';
import { BuiltinCatalog } from '../shared/adapters/builtin-catalog.js';
import { BuiltinIdentityProvider } from '../shared/adapters/builtin-idp.js';
import { BuiltinMetastore } from '../shared/adapters/builtin-metastore.js';
import { BuiltinWorkflow } from '../shared/adapters/builtin-workflow.js';
import { DataHubCatalog } from '../shared/adapters/datahub.js';
import { EmfBusinessMetrics, NoBusinessMetrics } from '../shared/adapters/emf-metrics.js';
import { EventBridgeBus, LocalEventBus } from '../shared/adapters/eventbridge.js';
import { KeycloakIdentityProvider } from '../shared/adapters/keycloak.js';
import { BedrockChatModel } from '../shared/adapters/bedrock.js';
import { OpenAiChatModel } from '../shared/adapters/openai.js';
import { TrinoMetastore } from '../shared/adapters/trino.js';
import { Authenticator } from '../shared/auth/authenticator.js';
import { JwtVerifier } from '../shared/auth/jwt.js';
import { KeyStore } from '../shared/auth/key-store.js';
import { PskVerifier } from '../shared/auth/psk.js';
import { documentClient } from '../shared/aws/clients.js';
import { kmsKeyWrapper } from '../shared/aws/kms.js';
import { type Clock, systemClock } from '../shared/clock.js';
import { type Config, loadConfig } from '../shared/config.js';
import type { EventsTable } from '../shared/events/events-table.js';
import type { MetadataCatalog } from '../shared/ports/catalog.js';
import type { EventBus } from '../shared/ports/event-bus.js';
import type { IdentityProvider } from '../shared/ports/idp.js';
import type { ChatModel } from '../shared/ports/llm.js';
import type { Metastore } from '../shared/ports/metastore.js';
import type { BusinessMetrics } from '../shared/ports/metrics.js';
import type { WorkflowEngine } from '../shared/ports/workflow.js';
import { LocalKeyWrapper, SecretBox } from '../shared/secrets.js';
import { DynamoDataProductStore } from './dataproduct/store.js';

/**
 * The composition root's shared half: config, the SDK clients, authentication and the
 * choice of every adapter (METASTORE, CATALOG, IDP, WORKFLOW, LLM_*), made here and
 * nowhere else. Each group's `compose.ts` builds its stores and services from these; a
 * Lambda's `handler.ts` and the local platform call those builders. One function per
 * adapter, so a bundle keeps only the adapters its group uses.
 */
export interface Runtime {
  readonly config: Config;
  readonly db: DynamoDBDocumentClient;
  readonly keys: KeyStore;
  /** Data products: every group reads them, as a key stops with its product (docs/sdk.md). */
  readonly dataProducts: DynamoDataProductStore;
  readonly psk: PskVerifier;
  readonly authenticator: Authenticator;
  /** Where domain events are recorded (docs/events-and-webhooks.md). */
  readonly eventsTable: EventsTable;
  /** The time every service, worker and lease of this runtime reads (RuntimeOptions.clock). */
  readonly clock: Clock;
  tableName(table: TableKey): string;
}

export interface RuntimeOptions {
  /** The clock the runtime's services read: the system's unless given (a test's ManualClock). */
  readonly clock?: Clock;
}

/** A secret from Secrets Manager; its SDK client is loaded only by the stages that read one. */
const secretValue = (region: string, arn: string): Promise<string> =>
  import('../shared/aws/secrets-manager.js').then((m) => m.secretValue(region, arn));

export function createRuntime(
  config: Config,
  db: DynamoDBDocumentClient = documentClient(config),
  options: RuntimeOptions = {},
): Runtime {
  const tableName = (table: TableKey) => physicalTableName(config.stage, TABLES[table]);
  const keys = new KeyStore(db, tableName('keys'));
  const dataProducts = new DynamoDataProductStore(db, tableName('dataProducts'));
  const adminPskArn = config.adminPskArn;
  const clock = options.clock ?? systemClock;
  const psk = new PskVerifier(
    keys,
    config.adminPsk ?? (adminPskArn ? () => secretValue(config.region, adminPskArn) : undefined),
    dataProducts,
    clock,
  );
  return {
    config,
    db,
    keys,
    dataProducts,
    psk,
    authenticator: new Authenticator(new JwtVerifier(config.auth), psk),
    eventsTable: { tableName: tableName('domainEvents'), ttlDays: config.eventsTtlDays, source: `dpm/${config.stage}` },
    clock,
    tableName,
  };
}

let lambdaRuntime: Runtime | undefined;

/** The Lambda's runtime, built once per container from the environment. */
export function lambdaRuntimeFromEnv(): Runtime {
  lambdaRuntime ??= createRuntime(loadConfig());
  return lambdaRuntime;
}

/** Whether `runtime` is this Lambda's (lambdaRuntimeFromEnv), not the local platform's or a test's. */
export const onLambda = (runtime: Runtime): boolean => runtime === lambdaRuntime;

/**
 * What fires crew schedules: the stage's EventBridge Scheduler group when SCHEDULE_GROUP_NAME
 * is set (AWS), else this process's timers (the local platform: one per runtime, so the API
 * that sets a schedule and the platform's start that sets them all share it). `send` puts a
 * fire on the crew-run queue (the local timers' only way out, as Scheduler's target on AWS).
 */
export function scheduler(runtime: Runtime, send: (fire: ScheduleFire) => Promise<void>): Scheduler {
  const { scheduleGroupName, schedulerRoleArn, crewRunQueueArn, region } = runtime.config;
  if (scheduleGroupName) {
    if (!schedulerRoleArn || !crewRunQueueArn)
      throw new Error('SCHEDULE_GROUP_NAME needs SCHEDULER_ROLE_ARN and CREW_RUN_QUEUE_ARN');
    return new EventBridgeScheduler({
      groupName: scheduleGroupName,
      roleArn: schedulerRoleArn,
      queueArn: crewRunQueueArn,
      region,
    });
  }
  let local = localSchedulers.get(runtime);
  if (!local) {
    local = new LocalScheduler(send, runtime.clock);
    localSchedulers.set(runtime, local);
  }
  return local;
}

const localSchedulers = new WeakMap<Runtime, LocalScheduler>();

/** Stops this runtime's local schedule timers (the local platform stops); nothing on AWS. */
export function stopLocalScheduler(runtime: Runtime): void {
  localSchedulers.get(runtime)?.stop();
}

/** Secrets at rest: KMS when KMS_KEY_ID is set (AWS), else the local key file. */
export function secrets(runtime: Runtime): SecretBox {
  const { region, kmsKeyId, dataDir } = runtime.config;
  return new SecretBox(kmsKeyId ? kmsKeyWrapper(region, kmsKeyId) : new LocalKeyWrapper(dataDir));
}

/** The bus chosen by `EVENT_BUS_NAME`: the stage's EventBridge bus, or nothing beyond the feed (local). */
export function eventBus(runtime: Runtime): EventBus {
  const { eventBusName, stage, region } = runtime.config;
  return eventBusName ? new EventBridgeBus(eventBusName, stage, region) : new LocalEventBus();
}

/**
 * Business metrics of a Lambda that emits them (the events publisher, the webhook
 * worker): on the Lambda's runtime (`lambdaRuntimeFromEnv`), CloudWatch EMF lines on
 * stdout; on any other (the local platform's, tests') nothing, so `npm start` prints no
 * EMF. The EMF adapter loads Powertools Metrics on its first flush: the HTTP groups,
 * which never call this, bundle none of it.
 */
export function businessMetrics(
  runtime: Runtime,
  service: 'domain-events-dispatcher' | 'webhooks-worker',
): BusinessMetrics {
  return runtime === lambdaRuntime ? new EmfBusinessMetrics(service, runtime.config.stage) : new NoBusinessMetrics();
}

/** The metastore chosen by `METASTORE`: Trino, or tables in DynamoDB. */
export function metastore(runtime: Runtime): Metastore {
  const { config } = runtime;
  if (config.adapters.metastore === 'trino') {
    if (!config.trino) throw new Error('METASTORE=trino needs TRINO_URL and TRINO_USER');
    return new TrinoMetastore(config.trino, { db: runtime.db });
  }
  return new BuiltinMetastore(runtime.db, runtime.tableName('metastore'));
}

/** The metadata catalog chosen by `CATALOG`: DataHub, or entities in DynamoDB. */
export function metadataCatalog(runtime: Runtime): MetadataCatalog {
  const { config } = runtime;
  if (config.adapters.catalog === 'datahub') {
    if (!config.datahub) throw new Error('CATALOG=datahub needs DATAHUB_GMS_URL and DATAHUB_TOKEN');
    return new DataHubCatalog(config.datahub);
  }
  return new BuiltinCatalog(runtime.db, runtime.tableName('catalog'));
}

/** The identity provider chosen by `IDP`: Keycloak's admin API, or clients in DynamoDB. */
export function identityProvider(runtime: Runtime): IdentityProvider {
  const { config } = runtime;
  if (config.adapters.idp === 'keycloak') {
    if (!config.keycloak) throw new Error('IDP=keycloak needs the KEYCLOAK_* settings');
    const { clientSecret, ...settings } = config.keycloak;
    return new KeycloakIdentityProvider({
      ...settings,
      clientSecret: 'value' in clientSecret ? clientSecret.value : () => secretValue(config.region, clientSecret.arn),
    });
  }
  return new BuiltinIdentityProvider(runtime.db, runtime.tableName('idpClients'), secrets(runtime), runtime.clock);
}

/** The workflow engine chosen by `WORKFLOW`: Airflow's REST API, or probes from here. */
export function workflowEngine(runtime: Runtime): WorkflowEngine {
  const { config } = runtime;
  if (config.adapters.workflow === 'airflow') {
    if (!config.airflow) throw new Error('WORKFLOW=airflow needs the AIRFLOW_* settings');
    const { password, ...settings } = config.airflow;
    if ('value' in password) return new AirflowWorkflow({ ...settings, password: password.value });
    return deferredWorkflow(
      async () => new AirflowWorkflow({ ...settings, password: await secretValue(config.region, password.arn) }),
    );
  }
  return new BuiltinWorkflow({ s3Endpoint: config.endpoints.s3 });
}

/**
 * The configured model (LLM_PROVIDER, docs/configuration.md): an OpenAI-compatible
 * endpoint (LLM_BASE_URL, LLM_MODEL, and LLM_API_KEY or, on AWS, the secret at
 * LLM_API_KEY_ARN), Amazon Bedrock's Converse API signed by the process's AWS credentials
 * (LLM_MODEL, no key), or the local stand-in (spoken to like OpenAI's); undefined when no
 * model is configured.
 */
export function chatModel(config: Config): ChatModel | undefined {
  const { provider, baseUrl, model, apiKey, apiKeyArn } = config.llm;
  if (provider === 'bedrock') {
    return new BedrockChatModel({ region: config.region, model: model!, ...(baseUrl ? { endpoint: baseUrl } : {}) });
  }
  if (!provider || !baseUrl) return undefined;
  return new OpenAiChatModel({
    provider,
    baseUrl,
    model,
    apiKey: apiKey ?? (apiKeyArn ? () => secretValue(config.region, apiKeyArn) : undefined),
  });
}

/** The model of crew `llm` steps, and how long one call may take (LLM_TIMEOUT_SECONDS). */
export function stepModel(config: Config): { model: ChatModel | undefined; timeoutMs: number } {
  return { model: chatModel(config), timeoutMs: config.llm.timeoutMs };
}

/**
 * The model that writes SQL and rewords suggestions (`ask`, E12): none under the local
 * stand-in, which knows no language, so those keep their deterministic catalog path.
 */
export function languageModel(config: Config): ChatModel | undefined {
  return config.llm.provider === 'local' ? undefined : chatModel(config);
}
