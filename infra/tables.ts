/**
 * Table and queue definitions: the one source of truth for keys, indexes and TTL.
 * The CDK stateful stack and the local platform both build from these records.
 */
export interface KeyAttribute {
  readonly name: string;
  readonly type: 'S' | 'N';
}

export interface IndexDefinition {
  readonly name: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
}

export interface TableDefinition {
  /** Logical id; the physical name is `dpm-<stage>-<id>`. */
  readonly id: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  readonly indexes: readonly IndexDefinition[];
  /** Attribute holding an epoch-seconds expiry; DynamoDB deletes expired items. */
  readonly ttlAttribute?: string;
  /**
   * The table's stream (new and old images) feeds the events publisher, whose committed
   * changes become domain events (shared/events, docs/events-and-webhooks.md), or the events dispatcher
   * (the events table itself, and crew run events for per-run webhooks): infra/groups.ts
   * STREAM_CONSUMERS says which.
   */
  readonly stream?: true;
  /**
   * The CDK construct id's stem when it is not the key: a key renamed in code keeps its
   * deployed table (a new construct id would make CloudFormation replace it, data and all).
   */
  readonly constructKey?: string;
}

export interface QueueDefinition {
  readonly id: string;
  readonly visibilityTimeoutSeconds: number;
  /** Receives after which a message moves to the dead-letter queue. */
  readonly maxReceiveCount: number;
  readonly deadLetterRetentionDays: number;
  /**
   * An alarm fires when the oldest message has waited this long: past the longest delay a
   * message is sent with (a timer or a retry waits at most 15 minutes at a time) plus room
   * to be taken, so only a consumer that stopped taking messages trips it.
   */
  readonly oldestMessageAlarmSeconds: number;
}

const S = (name: string): KeyAttribute => ({ name, type: 'S' });
const N = (name: string): KeyAttribute => ({ name, type: 'N' });

/**
 * Every item of a listable table carries `list_pk` (one value per table) and
 * `created_key` (`<created_at>#<id>`): listing everything, oldest first, is one Query.
 */
const BY_CREATED: IndexDefinition = { name: 'by_created', partitionKey: S('list_pk'), sortKey: S('created_key') };

/**
 * An owner's items, oldest first: keyed by the owner's principal (docs/identity-and-keys.md, principals), never the
 * name. Items stored before principals were have none, so no owner list shows them.
 */
const BY_OWNER_PRINCIPAL: IndexDefinition = {
  name: 'by_owner_principal',
  partitionKey: S('owner_principal'),
  sortKey: S('created_at'),
};

/**
 * Name-keyed owner indexes of earlier versions, no longer queried. CloudFormation cannot
 * add one index and delete another of a table in one update, so they are deleted in the
 * release after every stage has its principal index.
 */
const RETIRED_BY_OWNER: IndexDefinition = { name: 'by_owner', partitionKey: S('owner'), sortKey: S('created_at') };

export const TABLES = {
  /** Decision versions (`D#<workspace>#<key>` / `V#<version>`) and their per-key counter. */
  decisions: {
    id: 'decisions',
    stream: true,
    partitionKey: S('pk'),
    sortKey: S('sk'),
    indexes: [
      // Sparse: only approved versions carry pub_pk, so the newest approved is one Query.
      { name: 'published', partitionKey: S('pub_pk'), sortKey: N('pub_sk') },
      // Sparse: only submitted versions carry sub_pk, so the approvers' inbox (GET
      // /api/approvals) reads them alone, oldest first, however many other versions there
      // are (added in an earlier release); versions submitted before it have no sub_pk and
      // are listed once rejected and submitted again.
      { name: 'submitted', partitionKey: S('sub_pk'), sortKey: S('sub_sk') },
      // Sparse: only the latest version of each key carries keys_pk (one value) and keys_sk
      // (`<workspace>#<key>`, escaped), so the list of decisions (GET /api/decisions) reads
      // one item per key, by workspace then key, however many versions there are
      // (functions/decisions/store.ts). The one index this table gains in this release
      // (CloudFormation adds one per update); keys whose versions all predate it get their
      // item with the next write of one of their versions.
      { name: 'keys', partitionKey: S('keys_pk'), sortKey: S('keys_sk') },
    ],
  },
  /** Pre-shared keys, addressed by the SHA-256 hash of their secret. */
  keys: {
    id: 'keys',
    stream: true,
    partitionKey: S('key_hash'),
    indexes: [
      { name: 'by_psk', partitionKey: S('psk') },
      { name: 'by_creator_principal', partitionKey: S('created_by_principal'), sortKey: S('created_at') },
      // Retired (see RETIRED_BY_OWNER).
      { name: 'by_creator', partitionKey: S('created_by'), sortKey: S('created_at') },
      BY_CREATED,
    ],
  },
  /**
   * Data products (docs/sdk.md), two items each, written together: the product (`P#<id>`)
   * and the claim on its name (`N#<name>`), so two products never share a name. A deleted
   * product stays, marked `deleted_at` (its keys are refused by that: shared/auth/psk.ts),
   * and loses its name claim and its listing attributes: `by_name` (`list_pk`) lists the
   * live products by name, `by_role` (`list_role`, the product's role) one role's.
   */
  dataProducts: {
    id: 'data-products',
    stream: true,
    partitionKey: S('pk'),
    indexes: [
      { name: 'by_name', partitionKey: S('list_pk'), sortKey: S('name') },
      { name: 'by_role', partitionKey: S('list_role'), sortKey: S('name') },
    ],
  },
  /** Crew templates; every item carries `list_pk = "template"` so listing is one Query. */
  crewTemplates: {
    id: 'crew-templates',
    stream: true,
    partitionKey: S('id'),
    indexes: [
      BY_CREATED,
      // A crew type of the SDK is a template by name (POST /api/crews/run): one Query finds the
      // templates of a name, and two of one name are told apart from one (docs/sdk.md).
      { name: 'by_name', partitionKey: S('name') },
    ],
  },
  /** Crew runs, with the template's steps as they were when the run started. */
  crewRuns: {
    id: 'crew-runs',
    stream: true,
    partitionKey: S('correlation_id'),
    indexes: [
      // Sparse: only unfinished runs carry `open`, so they can be found and queued again; an
      // admin's GET /api/crew-runs?status= of an unfinished status reads only these.
      { name: 'open_runs', partitionKey: S('open'), sortKey: S('created_at') },
      // GET /api/crew-runs, newest first (an admin's, and a finished status filtered in it).
      BY_CREATED,
      // A caller's own runs, newest first, without reading anyone else's (added in the
      // previous release: CloudFormation adds one index per update). Every run stored
      // since principals were carries `created_by_principal` and `created_key`, so DynamoDB
      // fills it from the runs already there; older runs have no principal and were in no
      // one's own list before either.
      { name: 'by_creator_principal', partitionKey: S('created_by_principal'), sortKey: S('created_key') },
      // Sparse: only a run waiting on an approval step carries `waiting_role` (the step's
      // role) and `waiting_key` (`<waiting since>#c#<id>`): the approvers' inbox reads each
      // of the caller's roles' waiting steps alone, oldest first (added in the previous release).
      { name: 'waiting_steps', partitionKey: S('waiting_role'), sortKey: S('waiting_key') },
      // Sparse: only a `pending` run of a template with `max_concurrent_runs` carries
      // `slot_queue` (its slot key, a hash): the line of runs waiting for a slot of that key,
      // oldest first, so a freed slot goes to the oldest (docs/crews.md). The slots themselves are
      // items of this table keyed `slots#<key>` (crews/runs/slot-store.ts), in no index. This release's
      // one index of this table.
      { name: 'slot_queue', partitionKey: S('slot_queue'), sortKey: S('created_key') },
    ],
    ttlAttribute: 'expires_at',
  },
  /**
   * Crew schedules (docs/crews.md, schedules): the schedule (`item` = `schedule`,
   * listable, streamed: its changes and fires are domain events) and one item per run it
   * started (`item` = `run#<scheduled time>`, put in the run's creating transaction on
   * condition that it is new: one run per fire; kept as long as the run).
   */
  crewSchedules: {
    id: 'crew-schedules',
    stream: true,
    partitionKey: S('schedule_id'),
    sortKey: S('item'),
    indexes: [
      BY_CREATED,
      // Sparse (only schedules carry `template_id`): a deleted template disables its schedules.
      { name: 'by_template', partitionKey: S('template_id'), sortKey: S('created_key') },
    ],
    ttlAttribute: 'expires_at',
  },
  /**
   * The run log (E13): one entry per item, gap-free `index` per run. Streamed: the domain
   * events dispatcher sends each entry to its run's own webhook (E2 `webhook_url`).
   */
  runLog: {
    id: 'events',
    // Deployed as `events` before the run log had its name.
    constructKey: 'events',
    stream: true,
    partitionKey: S('correlation_id'),
    sortKey: N('index'),
    indexes: [],
    ttlAttribute: 'expires_at',
  },
  /**
   * `Idempotency-Key` records (docs/identity-and-keys.md, idempotency keys): Powertools' idempotency layout (`id` = the hash of
   * the caller's principal and key, `status`, `validation` = the request's hash, `data` = the
   * answer, sealed when it holds a secret), kept 24 hours (`expiration`).
   */
  idempotency: {
    id: 'idempotency',
    partitionKey: S('id'),
    indexes: [],
    ttlAttribute: 'expiration',
  },
  /** Data shares: the registry of shared identity-provider clients, by name. */
  dataShares: {
    id: 'data-shares',
    stream: true,
    partitionKey: S('name'),
    indexes: [
      BY_OWNER_PRINCIPAL,
      RETIRED_BY_OWNER,
      BY_CREATED,
      // A share by its identity-provider id (GET and DELETE /api/data_shares/{share_id},
      // docs/sdk.md): sparse, only completed shares carry `idp_id`. This release's one index of this table.
      { name: 'by_idp_id', partitionKey: S('idp_id') },
    ],
  },
  /** The built-in identity provider's confidential clients (secrets encrypted). */
  idpClients: {
    id: 'idp-clients',
    partitionKey: S('client_id'),
    indexes: [],
  },
  mcpServers: {
    id: 'mcp-servers',
    stream: true,
    partitionKey: S('id'),
    indexes: [BY_CREATED],
  },
  finetuneJobs: {
    id: 'finetune-jobs',
    stream: true,
    partitionKey: S('id'),
    indexes: [BY_OWNER_PRINCIPAL, RETIRED_BY_OWNER, BY_CREATED],
  },
  /** The migration infrastructure configuration: one item (`id = "current"`). */
  migrationConfig: {
    id: 'migration-config',
    stream: true,
    partitionKey: S('id'),
    indexes: [],
  },
  /** Workflow connections of the migration DAGs (passwords encrypted). */
  migrationConnections: {
    id: 'migration-connections',
    stream: true,
    partitionKey: S('conn_id'),
    indexes: [BY_CREATED],
  },
  /**
   * The built-in metastore: catalogs (`CATALOG` / name), schemas (`SCHEMA#<catalog>` /
   * name) and tables (`TABLE#<catalog>#<schema>` / name, with columns). No stream: a
   * table's events are written with its registration (the subject also changes in the catalog).
   */
  metastore: {
    id: 'metastore',
    partitionKey: S('pk'),
    sortKey: S('sk'),
    indexes: [],
  },
  /**
   * The built-in metadata catalog: tags, glossary terms and domains (`TAG` | `TERM` |
   * `DOMAIN` / name) and each entity's annotations (`ENTITY#<urn>` / `META`). Entity
   * items carry `domain` once attached to one: the sparse `by_domain` index lists a
   * domain's tables and documents (E12) without walking the metastore.
   */
  catalog: {
    id: 'catalog',
    stream: true,
    partitionKey: S('pk'),
    sortKey: S('sk'),
    indexes: [{ name: 'by_domain', partitionKey: S('domain'), sortKey: S('pk') }],
  },
  /** Ingested documents and their enrichment; `pending_domain` while a new domain awaits creation. */
  documents: {
    id: 'documents',
    stream: true,
    partitionKey: S('id'),
    indexes: [
      BY_OWNER_PRINCIPAL,
      RETIRED_BY_OWNER,
      BY_CREATED,
      { name: 'by_pending_domain', partitionKey: S('pending_domain'), sortKey: S('created_at') },
    ],
  },
  /**
   * Webhook endpoints (docs/events-and-webhooks.md), by id; the signing secrets only ever sealed. Streamed:
   * an endpoint disabled by its deliveries is the event `webhook.endpoint.disabled`.
   */
  webhooks: {
    id: 'webhooks',
    stream: true,
    partitionKey: S('id'),
    indexes: [BY_CREATED],
    // A crew run's own endpoint expires with its run.
    ttlAttribute: 'expires_at',
  },
  /**
   * Webhook deliveries, these kinds of item:
   * - the delivery, `D#<endpoint>` / `<delivery id>`; `by_endpoint` and `by_endpoint_status`
   *   (`<endpoint>#<status>`) list an endpoint's newest first; the sparse `open_deliveries`
   *   holds those still pending or retrying (`open`), so they can be queued again;
   * - its claim, `E#<endpoint>` / `<event id>`: one delivery per endpoint and event, however
   *   often the dispatcher is handed the event;
   * - while it is open, its place in line, `O#<endpoint>#<subject>` / `<sequence>#<delivery id>`:
   *   a delivery goes out only when none of the same endpoint and subject is before it (read
   *   consistently, which an index cannot be);
   * - the endpoint's in-flight slots, `S#<endpoint>` / `slot#<n>`: an attempt holds one (a
   *   conditional write with an expiry), so at most that many go to one endpoint at once;
   * - a crew runs' starter's share of the per-run lane, `P#<principal hashed>` / `slots`: its
   *   runs' endpoints' slots as entries (`<endpoint>#<n>` → holder and lease end), so that one
   *   conditional write takes an endpoint's slot and one of the principal's few at once;
   * - the starter's deliveries parked while its share is held, `W#<principal hashed>` /
   *   `<parked at>#<delivery id>#<nonce>` (the queue message under `message`, no index
   *   attribute): the attempt that ends wakes the oldest.
   */
  webhookDeliveries: {
    id: 'webhook-deliveries',
    partitionKey: S('pk'),
    sortKey: S('sk'),
    indexes: [
      { name: 'by_endpoint', partitionKey: S('endpoint_id'), sortKey: S('created_key') },
      { name: 'by_endpoint_status', partitionKey: S('endpoint_status'), sortKey: S('created_key') },
      { name: 'open_deliveries', partitionKey: S('open'), sortKey: S('created_key') },
    ],
    ttlAttribute: 'expires_at',
  },
  /**
   * Domain events (docs/events-and-webhooks.md): one item per event, gap-free `sequence` per subject. The
   * publisher writes the events it derives from the domain tables' streams; a deletion
   * writes its event here in the transaction that deletes. `by_time` is the feed, oldest
   * first; `by_type` is each type's part of it, so a `type` filter reads only events of
   * that type (every item has always carried `type` and `feed_key`: the index covers the
   * old ones); `by_id` finds one event. This table's own stream feeds the dispatcher
   * (EventBridge, webhooks).
   */
  domainEvents: {
    id: 'domain-events',
    stream: true,
    partitionKey: S('subject'),
    sortKey: N('sequence'),
    indexes: [
      { name: 'by_time', partitionKey: S('feed'), sortKey: S('feed_key') },
      { name: 'by_id', partitionKey: S('id') },
      // The one index this table gains in this release (CloudFormation adds one per update).
      { name: 'by_type', partitionKey: S('type'), sortKey: S('feed_key') },
    ],
    ttlAttribute: 'expires_at',
  },
} as const satisfies Record<string, TableDefinition>;

/** Object storage: the local platform creates `dpm-<stage>-<id>`; on AWS CDK names it. */
export const BUCKETS = {
  /** Artifacts of jobs (fine-tuning datasets under `finetune/<job id>/`). */
  artifacts: { id: 'artifacts' },
} as const satisfies Record<string, { id: string }>;

export type BucketKey = keyof typeof BUCKETS;

export const QUEUES = {
  crewRuns: {
    id: 'crew-runs',
    // Six times the crew worker's timeout (150 s), as AWS advises for SQS event sources.
    visibilityTimeoutSeconds: 900,
    maxReceiveCount: 5,
    deadLetterRetentionDays: 14,
    oldestMessageAlarmSeconds: 1800,
  },
  /**
   * Webhook deliveries (docs/events-and-webhooks.md): one message per attempt (or wait) of a delivery, sent
   * by the events dispatcher, the webhooks API (test, redeliver) and the delivery worker,
   * whose timeout stays below the visibility timeout. The API's endpoints only: crew runs'
   * own have the next queue.
   */
  webhookDeliveries: {
    id: 'webhook-deliveries',
    // Six times the webhook worker's timeout (30 s).
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    deadLetterRetentionDays: 14,
    oldestMessageAlarmSeconds: 1800,
  },
  /**
   * The deliveries to crew runs' own webhooks (E2 `webhook_url`), a lane of their own with
   * its own consumers (the fair-use limits): any user's receiver that hangs holds only these.
   */
  runWebhookDeliveries: {
    id: 'run-webhook-deliveries',
    // Six times the run webhook worker's timeout (30 s).
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    deadLetterRetentionDays: 14,
    oldestMessageAlarmSeconds: 1800,
  },
} as const satisfies Record<string, QueueDefinition>;

export type TableKey = keyof typeof TABLES;
export type QueueKey = keyof typeof QUEUES;

export const physicalTableName = (stage: string, table: TableDefinition): string => `dpm-${stage}-${table.id}`;

export const physicalQueueName = (stage: string, queue: QueueDefinition): string => `dpm-${stage}-${queue.id}`;

export const deadLetterQueueName = (stage: string, queue: QueueDefinition): string => `dpm-${stage}-${queue.id}-dlq`;

/** Where dead-lettered messages its dead-letter handler failed on wait for an operator (AWS only). */
export const parkedQueueName = (stage: string, queue: QueueDefinition): string => `dpm-${stage}-${queue.id}-dlq-parked`;
