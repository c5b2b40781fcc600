import { type BucketKey, type QueueKey, TABLES, type TableDefinition, type TableKey } from './tables.js';

/**
 * What every Lambda declares, whatever starts it (a route, a queue, a stream): the stateless
 * stack builds its environment, grants, secrets and alarms from this alone
 * (infra/aws/lambdas.ts), so a need is written here once, beside the Lambda that has it.
 */
export interface LambdaDefinition {
  readonly name: string;
  /** Handler module, relative to the repository root. */
  readonly entry: string;
  /**
   * Tables the Lambda may use, and how: the CDK grants exactly these. One that reads `keys`
   * checks pre-shared keys, so it may read the admin key's secret.
   */
  readonly tables: Partial<Record<TableKey, 'read' | 'readWrite'>>;
  /** Queues the Lambda sends to. */
  readonly sendsTo?: readonly QueueKey[];
  /** Buckets the Lambda uses, and how. */
  readonly buckets?: Partial<Record<BucketKey, 'read' | 'readWrite'>>;
  /** The key prefix a bucket grant is limited to (default: every object). */
  readonly bucketPrefixes?: Partial<Record<BucketKey, string>>;
  /** It seals and opens secrets with the stage's KMS key (KMS_KEY_ID; kms:GenerateDataKey and kms:Decrypt). */
  readonly usesKms?: boolean;
  /** With `usesKms`: it only opens secrets sealed elsewhere (kms:Decrypt, no kms:GenerateDataKey). */
  readonly opensSecretsOnly?: boolean;
  /** It talks to the identity provider (IDP, KEYCLOAK_* and the admin client's secret). */
  readonly usesIdp?: boolean;
  /** It talks to the workflow engine (WORKFLOW, AIRFLOW_* and the Airflow password). */
  readonly usesWorkflow?: boolean;
  /** It calls the language model (the model endpoint's API key, when the stage keeps one). */
  readonly usesLlm?: boolean;
  /** It puts events on the stage's EventBridge bus. */
  readonly putsEvents?: boolean;
  /**
   * It creates, updates and deletes the crew schedules' EventBridge Scheduler schedules
   * (SCHEDULE_GROUP_NAME, SCHEDULER_ROLE_ARN, CREW_RUN_QUEUE_ARN; the scheduler actions on the
   * stage group's schedules, and passing the scheduler role to Scheduler).
   */
  readonly managesSchedules?: boolean;
  /** It runs in the stage's migrationVpc, when the stage has one: it connects to the customer's hosts. */
  readonly inMigrationVpc?: boolean;
  /** The stage may reserve concurrency for it (StageSettings.reservedConcurrency, by name). */
  readonly reservesConcurrency?: boolean;
  /** The Lambda's timeout instead of the stage's `lambdaTimeoutSeconds`. */
  readonly timeoutSeconds?: number;
  /** Files read at run time, copied beside the Lambda bundle: folder → paths from the project root. */
  readonly bundledFiles?: Readonly<Record<string, readonly string[]>>;
  /** Files built at bundling time beside the Lambda bundle: folder → the build script (`<script> <outdir>`). */
  readonly builtFiles?: Readonly<Record<string, string>>;
}

/**
 * Endpoint groups: one Lambda each on AWS, one sub-app each locally. The path prefixes
 * are what API Gateway routes to the group (`ANY <prefix>/{proxy+}`), and what the local
 * server dispatches on, so both route the same way.
 */
export interface GroupDefinition extends LambdaDefinition {
  readonly prefixes: readonly string[];
  /** Exact paths (GET) outside the prefixes, such as `/openapi.json`. */
  readonly exactPaths?: readonly string[];
  /** It serves API Gateway's `$default` route: unknown paths get the service's JSON 404, not API Gateway's. */
  readonly servesUnknownPaths?: boolean;
  /**
   * The group's Lambda timeout instead of the stage's API timeout; below API Gateway's
   * 30 s integration timeout (HTTP API), which ends a request anyway.
   */
  readonly timeoutSeconds?: number;
}

export const GROUPS = [
  {
    name: 'platform',
    entry: 'functions/platform/handler.ts',
    prefixes: ['/api/health'],
    exactPaths: ['/openapi.json', '/asyncapi.json', '/docs', '/console'],
    servesUnknownPaths: true,
    tables: {},
    // /docs serves Swagger UI itself (no CDN): functions/platform/docs.ts reads these.
    bundledFiles: {
      'swagger-ui': [
        'node_modules/swagger-ui-dist/swagger-ui-bundle.js',
        'node_modules/swagger-ui-dist/swagger-ui.css',
        'node_modules/swagger-ui-dist/oauth2-redirect.html',
        'node_modules/swagger-ui-dist/oauth2-redirect.js',
        'node_modules/swagger-ui-dist/favicon-32x32.png',
      ],
      documents: ['functions/platform/openapi.json', 'functions/platform/asyncapi.json'],
    },
    // /openapi.json and /asyncapi.json: the generated documents, read on first use (functions/platform/compose.ts).
    // /console's script and style sheet, built from console/ (functions/platform/console.ts reads them).
    builtFiles: { console: 'infra/console-build.ts' },
  },
  {
    name: 'decisions',
    entry: 'functions/decisions/handler.ts',
    prefixes: ['/api/decisions'],
    // Every authenticated group reads the keys table to check pre-shared keys, and the data
    // products table: a key stops with its data product.
    tables: {
      idempotency: 'readWrite',
      decisions: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
    },
  },
  {
    name: 'crews',
    entry: 'functions/crews/handler.ts',
    prefixes: ['/api/crew-templates', '/api/crew-runs', '/api/events', '/api/crews', '/api/crew-schedules'],
    tables: {
      idempotency: 'readWrite',
      crewTemplates: 'readWrite',
      crewSchedules: 'readWrite',
      crewRuns: 'readWrite',
      runLog: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
      // a template's deletion and a run's changes record their events (the outbox)
      domainEvents: 'readWrite',
      // a run started with a `webhook_url` writes its own endpoint, its secret sealed
      webhooks: 'readWrite',
    },
    sendsTo: ['crewRuns'],
    usesKms: true,
    // /api/crew-schedules: one EventBridge Scheduler schedule per crew schedule.
    managesSchedules: true,
    // E13 long polls wait up to 20 s (MAX_WAIT_SECONDS) for the next event.
    timeoutSeconds: 28,
    // A flood of long polls takes at most its own reservation.
    reservesConcurrency: true,
  },
  {
    name: 'dataproduct',
    entry: 'functions/dataproduct/handler.ts',
    prefixes: ['/api/dataproduct'],
    // A product's domain and the SQL of an E12 suggestion come from the catalog and metastore.
    tables: {
      idempotency: 'readWrite',
      keys: 'readWrite',
      dataProducts: 'readWrite',
      catalog: 'read',
      metastore: 'read',
    },
    // A key's creation answer is kept sealed for `Idempotency-Key` repeats (it holds the secret).
    usesKms: true,
  },
  {
    name: 'data-shares',
    entry: 'functions/data-shares/handler.ts',
    prefixes: ['/api/data_shares'],
    tables: {
      idempotency: 'readWrite',
      dataShares: 'readWrite',
      idpClients: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
      domainEvents: 'readWrite',
    },
    usesKms: true,
    // The data-shares adapter registers each share's client with the identity provider.
    usesIdp: true,
  },
  {
    name: 'mcps',
    entry: 'functions/mcps/handler.ts',
    prefixes: ['/api/mcps'],
    tables: {
      idempotency: 'readWrite',
      mcpServers: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
      domainEvents: 'readWrite',
    },
  },
  {
    name: 'finetune',
    entry: 'functions/finetune/handler.ts',
    prefixes: ['/api/finetune'],
    // Reads the owners of a dataset's source documents.
    tables: {
      idempotency: 'readWrite',
      finetuneJobs: 'readWrite',
      documents: 'read',
      keys: 'read',
      dataProducts: 'read',
      domainEvents: 'readWrite',
    },
    buckets: { artifacts: 'readWrite' },
    // Its objects only (functions/finetune/artifacts.ts: `finetune/<job id>/`).
    bucketPrefixes: { artifacts: 'finetune/' },
  },
  {
    name: 'metastore',
    entry: 'functions/metastore/handler.ts',
    prefixes: ['/api/metastore', '/api/catalog'],
    // Creating a domain attaches the documents waiting for it.
    tables: {
      idempotency: 'readWrite',
      metastore: 'readWrite',
      catalog: 'readWrite',
      documents: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
    },
  },
  {
    name: 'documents',
    entry: 'functions/documents/handler.ts',
    prefixes: ['/api/documents'],
    tables: {
      idempotency: 'readWrite',
      documents: 'readWrite',
      catalog: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
    },
  },
  {
    name: 'migration',
    entry: 'functions/migration/handler.ts',
    prefixes: ['/api/migration'],
    tables: {
      migrationConfig: 'readWrite',
      migrationConnections: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
      domainEvents: 'readWrite',
    },
    usesKms: true,
    // E3 and E4 start and read workflow runs.
    usesWorkflow: true,
    // Its probes connect to the customer's hosts: the only Lambda in the stage's migrationVpc.
    inMigrationVpc: true,
  },
  {
    name: 'domain-events',
    entry: 'functions/domain-events/handler.ts',
    prefixes: ['/api/domain-events'],
    tables: { domainEvents: 'read', keys: 'read', dataProducts: 'read' },
  },
  {
    name: 'webhooks',
    entry: 'functions/webhooks/handler.ts',
    prefixes: ['/api/webhooks'],
    // Seals signing secrets; test and redeliver queue a delivery, in its endpoint's lane.
    tables: {
      idempotency: 'readWrite',
      webhooks: 'readWrite',
      webhookDeliveries: 'readWrite',
      keys: 'read',
      dataProducts: 'read',
    },
    sendsTo: ['webhookDeliveries', 'runWebhookDeliveries'],
    usesKms: true,
  },
  {
    // People in the loop (docs/reviewing.md): who the caller is, and the approvers' inbox read
    // from the sparse indexes of submitted versions and waiting approval steps.
    name: 'approvals',
    entry: 'functions/approvals/handler.ts',
    prefixes: ['/api/me', '/api/approvals'],
    tables: { decisions: 'read', crewRuns: 'read', keys: 'read', dataProducts: 'read' },
  },
  {
    name: 'query',
    entry: 'functions/query/handler.ts',
    prefixes: ['/api/query'],
    tables: { metastore: 'read', catalog: 'read', keys: 'read', dataProducts: 'read' },
    // E12's rephrasing and `POST /api/query/ask`'s answers.
    usesLlm: true,
  },
] as const satisfies readonly GroupDefinition[];

/** Queue consumers: Lambdas with an SQS event source (partial batch responses). */
export interface WorkerDefinition extends LambdaDefinition {
  readonly consumes: QueueKey;
  /** Consume the queue's dead-letter queue instead of the queue. */
  readonly deadLetter?: boolean;
  readonly batchSize: number;
  readonly timeoutSeconds: number;
  /** The stage setting (infra/aws/stages.ts) that caps its event source's concurrency. */
  readonly maxConcurrencySetting: 'crewWorkerMaxConcurrency' | 'queueWorkerMaxConcurrency';
  /** Seconds the event source gathers messages before invoking (SQS's default when absent). */
  readonly maxBatchingWindowSeconds?: number;
}

export const WORKERS = [
  {
    name: 'crews-worker',
    entry: 'functions/crews/worker/worker-handler.ts',
    consumes: 'crewRuns',
    // One run per invocation: a run in a minute's `wait` never holds back the others of its
    // batch (their messages are deleted when the invocation ends); parallelism is the event
    // source's maxConcurrency (the stage's crewWorkerMaxConcurrency), with no batching window.
    batchSize: 1,
    maxConcurrencySetting: 'crewWorkerMaxConcurrency',
    maxBatchingWindowSeconds: 0,
    // Below the queue's visibility timeout, so a message is not redelivered mid-run.
    timeoutSeconds: 150,
    tables: {
      crewRuns: 'readWrite',
      runLog: 'readWrite',
      // A run's status changes write their domain events in the same transaction (the outbox).
      domainEvents: 'readWrite',
      // A schedule's fire (docs/crews.md) starts its template's run and records it on the schedule.
      crewTemplates: 'read',
      crewSchedules: 'readWrite',
    },
    // Queues a long run again to go on.
    sendsTo: ['crewRuns'],
    // A fire finding its template deleted disables the schedule's Scheduler schedule.
    managesSchedules: true,
    // Crew `llm` steps.
    usesLlm: true,
    reservesConcurrency: true,
  },
  {
    name: 'crews-dead-letter',
    entry: 'functions/crews/worker/dead-letter-handler.ts',
    consumes: 'crewRuns',
    deadLetter: true,
    batchSize: 10,
    maxConcurrencySetting: 'queueWorkerMaxConcurrency',
    timeoutSeconds: 30,
    // An abandoned run's run.failed writes its domain event in the same transaction.
    tables: { crewRuns: 'readWrite', runLog: 'readWrite', domainEvents: 'readWrite' },
  },
  {
    // Posts webhook deliveries (docs/events-and-webhooks.md): at most 10 s each, in parallel across a batch.
    name: 'webhooks-worker',
    entry: 'functions/webhooks/worker-handler.ts',
    consumes: 'webhookDeliveries',
    batchSize: 10,
    maxConcurrencySetting: 'queueWorkerMaxConcurrency',
    timeoutSeconds: 30,
    // Disables endpoints (410, five days of failures); opens their signing secrets.
    tables: { webhooks: 'readWrite', webhookDeliveries: 'readWrite' },
    // Retries and waits are new messages on its own queue.
    sendsTo: ['webhookDeliveries'],
    usesKms: true,
    opensSecretsOnly: true,
    reservesConcurrency: true,
  },
  {
    // The same worker for crew runs' own webhooks, a lane of their own (the fair-use limits):
    // a function apart, so receivers that hang take neither the webhook worker's reserved
    // concurrency nor its event source's.
    name: 'run-webhooks-worker',
    entry: 'functions/webhooks/worker-handler.ts',
    consumes: 'runWebhookDeliveries',
    batchSize: 10,
    maxConcurrencySetting: 'queueWorkerMaxConcurrency',
    timeoutSeconds: 30,
    // Disables endpoints (410); opens their signing secrets.
    tables: { webhooks: 'readWrite', webhookDeliveries: 'readWrite' },
    sendsTo: ['runWebhookDeliveries'],
    usesKms: true,
    opensSecretsOnly: true,
  },
] as const satisfies readonly WorkerDefinition[];

/**
 * Stream consumers: Lambdas with DynamoDB stream event sources (partial batch responses,
 * records of one item in order). The publisher makes domain events of the domain tables'
 * stamped changes and writes them to the events table; the dispatcher hands what that
 * table's stream carries to the stage's EventBridge bus (and webhooks).
 */
export interface StreamConsumerDefinition extends LambdaDefinition {
  /** Tables whose streams it reads. */
  readonly streams: readonly TableKey[];
  readonly batchSize: number;
  readonly timeoutSeconds: number;
}

/** Streams the dispatcher reads: the recorded events, and the crew runs' E13 events (per-run webhooks). */
const DISPATCHED_STREAMS = ['domainEvents', 'runLog'] as const satisfies readonly TableKey[];

/** Every other table with a stream: their changes become events. */
const DOMAIN_STREAMS = (Object.keys(TABLES) as TableKey[]).filter(
  (k) => !(DISPATCHED_STREAMS as readonly TableKey[]).includes(k) && (TABLES[k] as TableDefinition).stream === true,
);

export const STREAM_CONSUMERS = [
  {
    name: 'domain-events-publisher',
    entry: 'functions/domain-events/publisher-handler.ts',
    streams: DOMAIN_STREAMS,
    batchSize: 100,
    timeoutSeconds: 60,
    tables: { domainEvents: 'readWrite' },
    reservesConcurrency: true,
  },
  {
    name: 'domain-events-dispatcher',
    entry: 'functions/domain-events/dispatcher-handler.ts',
    streams: DISPATCHED_STREAMS,
    batchSize: 100,
    timeoutSeconds: 60,
    // Fans each event out to the webhook endpoints that take it: one delivery each, queued
    // in its endpoint's lane; marks a cancelled run's endpoint stopped (fanout.ts).
    tables: { domainEvents: 'read', webhooks: 'readWrite', webhookDeliveries: 'readWrite' },
    putsEvents: true,
    sendsTo: ['webhookDeliveries', 'runWebhookDeliveries'],
  },
] as const satisfies readonly StreamConsumerDefinition[];

export type GroupName = (typeof GROUPS)[number]['name'];

type DeclaredLambda = (typeof GROUPS)[number] | (typeof WORKERS)[number] | (typeof STREAM_CONSUMERS)[number];

/** The Lambdas declaring `reservesConcurrency`: the names StageSettings.reservedConcurrency takes. */
export type ReservedFunction = Extract<DeclaredLambda, { readonly reservesConcurrency: true }>['name'];

export const RESERVED_FUNCTIONS: readonly ReservedFunction[] = (
  [...GROUPS, ...WORKERS, ...STREAM_CONSUMERS] as readonly LambdaDefinition[]
)
  .filter((l) => l.reservesConcurrency)
  .map((l) => l.name as ReservedFunction);

/**
 * Routes that cost far more than the rest (a model call, catalog writes, a table listing
 * of up to 1,000 tables, a queued crew run): API Gateway routes of their own, throttled
 * tighter than the stage (`expensiveRouteThrottle`).
 */
export const EXPENSIVE_ROUTES = [
  { method: 'POST', path: '/api/crew-templates/{template_id}/run' }, // E2
  { method: 'POST', path: '/api/metastore/classify/{catalog}/{schema}/{table}/accept' }, // E5
  { method: 'GET', path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables' }, // E10
  { method: 'GET', path: '/api/query/suggest/{domain}' }, // E12
  { method: 'POST', path: '/api/query/suggest' }, // E12
  { method: 'POST', path: '/api/query/ask' }, // docs/sdk.md: a model call
] as const;

/** The group that serves a path, or undefined when no group does. */
export function groupForPath(path: string): GroupDefinition | undefined {
  return (GROUPS as readonly GroupDefinition[]).find(
    (g) => g.exactPaths?.includes(path) || g.prefixes.some((p) => path === p || path.startsWith(`${p}/`)),
  );
}
