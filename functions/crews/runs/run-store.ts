import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../../../shared/aws/errors.js';
import { listAll, listAttributes, listPartition, withoutListAttributes } from '../../../shared/aws/listing.js';
import { decodeCursor, encodeCursor, type PositionedPage, queryPage } from '../../../shared/aws/pagination.js';
import { type Page } from '../../../shared/page.js';
import { outboxEvent, eventPut, type EventsTable } from '../../../shared/events/events-table.js';
import { unstamped } from '../../../shared/events/stamp.js';
import type { Change } from '../../../shared/events/types.js';
import type { RunLogEntry, CrewRun, RunStatus } from './run-schemas.js';
import type { Step, Variable } from '../templates/template-schemas.js';

/*
 * Free-form JSON (variable defaults, run values, event data) is stored as JSON text, so
 * any JSON value round-trips where DynamoDB's native types would refuse some.
 */
const json = (value: unknown) => JSON.stringify(value ?? null);
const parsed = (text: unknown): unknown => (typeof text === 'string' ? JSON.parse(text) : undefined);

/** A run as GET /api/crew-runs/{id} answers it. */
export const toRun = (item: RunItem): CrewRun => {
  // Items written without their steps (by hand, or by tools) still answer a whole progress.
  const total = Array.isArray(item.steps) ? item.steps.length : 0;
  return {
    correlation_id: item.correlation_id,
    template_id: item.template_id,
    status: item.status,
    values: item.values,
    created_by: item.created_by,
    created_at: item.created_at,
    started_at: item.started_at ?? null,
    finished_at: item.finished_at ?? null,
    event_count: item.event_count,
    error: item.error ?? null,
    progress: {
      // Runs stored before progress was kept: none counted, or all once it succeeded.
      completed_steps: item.completed_steps ?? (item.status === 'succeeded' ? total : 0),
      total_steps: total,
      current_step: item.current_step ?? null,
    },
    step_ids: Array.isArray(item.steps) ? item.steps.map((step) => step.id) : [],
    rerun_of: item.rerun_of ?? null,
    schedule_id: item.schedule_id ?? null,
  };
};

/** A stored run as the service and the runner (and its events) see it. */
export function storedRun(item: Record<string, unknown>): RunItem {
  const sequence = typeof item.ev_seq === 'number' ? { event_sequence: item.ev_seq } : {};
  const {
    open: _open,
    slot_queue: _queue,
    values_json,
    variables_json,
    lease_owner,
    lease_until,
    ...run
  } = withoutListAttributes<Record<string, unknown>>(unstamped(item));
  const lease =
    typeof lease_owner === 'string' && typeof lease_until === 'number'
      ? { lease: { owner: lease_owner, until: lease_until } }
      : {};
  const variables = variables_json === undefined ? {} : { variables: parsed(variables_json) };
  return { ...run, ...lease, ...variables, ...sequence, values: parsed(values_json) ?? {} } as RunItem;
}

function runItem(run: RunItem): Record<string, unknown> {
  const { values, variables, event_sequence: _sequence, lease: _lease, ...rest } = run;
  return { ...rest, values_json: json(values), ...(variables ? { variables_json: json(variables) } : {}) };
}

/** A run log entry's item; it says whether its run has its own webhook (the dispatcher skips those that have none). */
function logEntryItem(entry: RunLogEntry, run: Pick<RunItem, 'expires_at' | 'run_webhook'>): Record<string, unknown> {
  const { data, ...rest } = entry;
  return {
    ...rest,
    ...(data !== undefined ? { data_json: json(data) } : {}),
    ...(run.run_webhook !== undefined ? { run_webhook: run.run_webhook } : {}),
    expires_at: run.expires_at,
  };
}

/** Whether a run log item's run has no webhook of its own (entries written before runs said so may have one). */
export const entryOfRunWithoutWebhook = (item: Record<string, unknown>): boolean => item.run_webhook === false;

/** The subject of a run's domain events (docs/events-and-webhooks.md). */
export const runSubject = (correlationId: string) => `crew-runs/${correlationId}`;

/** The run as a write leaves it: its fields updated, its event count moved on. */
const runAfter = (run: RunItem, update: RunUpdate, eventCount: number): RunItem => ({
  ...run,
  ...update,
  event_count: eventCount,
});

/**
 * A status change of a run made by a write before that write's last one (the runner writes
 * a run of `render` steps whole: started, then succeeded), with the run as that change left it.
 */
export interface EarlierChange {
  readonly change: Change;
  /** The run's fields as that change left them (the write's update so far). */
  readonly update: RunUpdate;
  /** The run's event count right after that change. */
  readonly eventCount: number;
}

/** An E13 event as GET /api/events answers it, from its stored item. */
export function toRunLogEntry(item: Record<string, unknown>): RunLogEntry {
  const { expires_at: _ttl, run_webhook: _hook, data_json, ...entry } = item;
  return (data_json === undefined ? entry : { ...entry, data: parsed(data_json) }) as RunLogEntry;
}

/** A run as stored: its public record plus the steps it executes (a snapshot). */
export interface RunItem extends Omit<CrewRun, 'progress' | 'step_ids' | 'rerun_of' | 'schedule_id'> {
  /** The starter's principal; absent on runs stored before principals were. */
  created_by_principal?: string;
  steps: Step[];
  /**
   * The template's variables when the run started (a snapshot, like `steps`: a rerun's values
   * are checked against them); absent on runs stored before it was kept.
   */
  variables?: Variable[];
  /** The run a rerun reruns. */
  rerun_of?: string;
  /** The schedule that started the run. */
  schedule_id?: string;
  expires_at: number;
  /** Steps completed so far; absent on runs stored before progress was kept. */
  completed_steps?: number;
  /** The step running, waiting or that failed; null (or absent) when none. */
  current_step?: string | null;
  /** The delivery executing the run, when one holds it (`lease_owner`, `lease_until`; runner.ts). */
  lease?: { readonly owner: string; readonly until: number };
  /** The template's name when the run started; absent on runs stored before it was kept. */
  template_name?: string;
  /**
   * While an `approval` step waits: what the approvers' inbox shows of it, and the keys of
   * the sparse `waiting_steps` index (its role, and `<since>#c#<correlation_id>`), written
   * with it. Every write that moves the run out of `waiting` removes the three.
   */
  waiting?: WaitingStep;
  waiting_role?: string;
  waiting_key?: string;
  /**
   * The roles of the approval steps that have waited in this run: their holders may read it
   * (docs/reviewing.md), from the moment a step waits and after it is decided.
   */
  approval_roles?: string[];
  /** Its template's `max_concurrent_runs` when the run was queued, with its slot key (run-limits.ts). */
  limit?: RunLimit;
  /** Its template's `run_timeout_seconds` when the run was queued. */
  run_timeout_seconds?: number;
  /**
   * The sequence of the run's last domain event (`ev_seq`): its changes' events are written
   * with the changes (the outbox), each at the next sequence. Absent on items written by hand.
   */
  event_sequence?: number;
  /**
   * Whether the run has its own webhook (E2 `webhook_url`): its log entries say so, so the
   * dispatcher reads the endpoint only for runs that have one. Absent on runs stored before.
   */
  run_webhook?: boolean;
}

/**
 * A run's concurrency limit: at most `max` runs of one slot `key` (a hash of the template
 * and its rendered `concurrency_key`) hold a slot at once.
 */
export interface RunLimit {
  readonly key: string;
  readonly max: number;
}

/** The approval step a run waits on, as the approvers' inbox lists it. */
export interface WaitingStep {
  readonly step_id: string;
  readonly role: string;
  readonly prompt: string;
  readonly since: string;
  readonly expires_at: string;
}

/**
 * A delivery's hold on a run in a write of the runner (one executor at a time, runner.ts):
 * the write succeeds only while no other delivery holds an unexpired lease, and holds it
 * `until` (ms since the epoch) or, with null, lets it go.
 */
export interface LeaseWrite {
  readonly owner: string;
  /** The writer's clock: a lease that ended before it may be taken over. */
  readonly now: number;
  readonly until: number | null;
}

/** The condition of a lease-holding write: the lease is free, has lapsed, or is the writer's. */
const LEASE_FREE = '(attribute_not_exists(#lease_until) OR #lease_until < :lease_now OR #lease_owner = :lease_owner)';
const LEASE_NAMES = { '#lease_owner': 'lease_owner', '#lease_until': 'lease_until' };

/** What GET /api/crew-runs filters on; `owner` (a principal) for a caller's own runs. */
export interface RunFilter {
  readonly owner?: string;
  readonly status?: CrewRun['status'];
  readonly templateId?: string;
}

/** Which unfinished runs a bulk cancel reads; `owner` (a principal) for a caller's own runs. */
export interface OpenRunFilter {
  readonly owner?: string;
  readonly templateId?: string;
  readonly statuses?: readonly RunStatus[];
  /** Only runs queued before this instant (ISO 8601 UTC with milliseconds, as `created_at`). */
  readonly createdBefore?: string;
}

/** Every run's listing partition (index `by_created`). */
export const RUN_LIST_PK = 'run';

const OPEN = 'open';

/** Index `open_runs` (infra/tables.ts): only unfinished runs, whose `open` is OPEN. */
const OPEN_RUNS = { name: 'open_runs', partitionKey: 'open', sortKey: 'created_at' } as const;

/** Index `by_creator_principal` (infra/tables.ts): each starter's runs by `created_key`. */
const RUNS_BY_OWNER = {
  name: 'by_creator_principal',
  partitionKey: 'created_by_principal',
  sortKey: 'created_key',
} as const;

/** A run in one of these has no more events to come (and leaves the `open_runs` index). */
export const FINISHED_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

/** Index `waiting_steps` (infra/tables.ts): only runs waiting on an approval step, by its role. */
const WAITING_STEPS = { name: 'waiting_steps', partitionKey: 'waiting_role', sortKey: 'waiting_key' } as const;

/** What a run leaving `waiting` loses: it leaves the `waiting_steps` index. */
const WAITING_ATTRIBUTES = ['waiting_role', 'waiting_key', 'waiting'] as const;

/**
 * Index `slot_queue` (infra/tables.ts): only `pending` runs with a concurrency limit, by
 * their slot key, oldest first: the line of runs waiting for a slot.
 */
export const SLOT_QUEUE = { name: 'slot_queue', partitionKey: 'slot_queue', sortKey: 'created_key' } as const;

/** Where a run stands in its slot key's line (`created_key`, as listings sort it). */
export type QueuedRun = Pick<RunItem, 'created_at' | 'correlation_id'>;

/** Fields of the run written together with an event. */
export type RunUpdate = Partial<
  Pick<
    RunItem,
    | 'status'
    | 'started_at'
    | 'finished_at'
    | 'error'
    | 'completed_steps'
    | 'current_step'
    | 'waiting'
    | 'approval_roles'
  >
>;

/**
 * One more write a run's creating transaction makes, on its own condition: a schedule fire's
 * record of the run and the schedule's own update with its `crew.schedule.fired` event
 * (schedule-store.ts `fireWrites`), so that the run and its fire's effects exist together.
 */
export type ExtraWrite = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** Runs and their events as the service and the runner see them (its public methods; DynamoRunStore below implements them). */
export interface RunStore {
  /**
   * The run, its first events (event 0; a rerun's carried-over steps after it) and, when it
   * has one, its own webhook endpoint and `also` (a schedule fire's writes): one
   * transaction. Answers the run as stored, or undefined when a condition of `also` refused it
   * (nothing is stored).
   */
  create(
    run: RunItem,
    first: RunLogEntry | readonly RunLogEntry[],
    change: Change,
    webhook?: Record<string, unknown>,
    also?: readonly ExtraWrite[],
  ): Promise<RunItem | undefined>;
  get(correlationId: string): Promise<RunItem | undefined>;
  /**
   * Runs newest first, filtered (one page of at most `limit`; one Query, never a Scan), from
   * the index that holds the fewest runs besides the wanted ones: an owner's runs from their
   * own index, an unfinished status from the sparse `open_runs`, anything else from
   * `by_created`; the other filters within it.
   */
  list(filter: RunFilter, limit: number, cursor: string | undefined): Promise<Page<RunItem>>;
  /**
   * Runs waiting on an approval step of `role`, placed after `after` (a position), oldest
   * first: at most `limit`, and whether the index may hold more after them.
   */
  waitingAfter(role: string, after: string, limit: number): Promise<PositionedPage<RunItem>>;
  /** Ids of runs not yet finished, oldest first (one page of at most `limit`). */
  openRuns(limit: number, cursor: string | undefined): Promise<Page<string>>;
  /**
   * Unfinished runs matching `filter`, oldest first: at most `limit`, and whether more match.
   * An owner's are read from their own index (no one else's run is read), anyone's from the
   * sparse `open_runs` (no finished run is read); the other filters within it.
   */
  openRunsMatching(filter: OpenRunFilter, limit: number): Promise<{ runs: RunItem[]; more: boolean }>;
  /**
   * Appends the events, the first at the run's next index and the rest after it: the events
   * and the run's new count (and status) are one transaction conditioned on the count, so
   * indices have no gaps and no duplicates. False when the index was taken. Several events
   * go together where nothing observable happens between them (a step's closing event and
   * the next step's opening one). With `lease`, also conditioned on it (the runner's writes).
   * `run` is the run as read (or as the caller's last write left it): each status change's
   * domain event (`earlier` ones, then `change`) is written in the same transaction, at the
   * run's next sequences, with the run as that change left it as its data.
   */
  append(
    run: RunItem,
    written: RunLogEntry | readonly RunLogEntry[],
    update?: RunUpdate,
    change?: Change,
    lease?: LeaseWrite,
    earlier?: readonly EarlierChange[],
  ): Promise<boolean>;
  /**
   * Takes the run's lease without an event (a delivery resuming a step whose `step.started`
   * is already written), conditioned on the run's event count as read. False when the count
   * moved or another delivery holds an unexpired lease.
   */
  takeLease(correlationId: string, lease: LeaseWrite & { until: number }, eventCount: number): Promise<boolean>;
  /** Extends `owner`'s lease to `until`; answers the run, or undefined when the lease is no longer theirs. */
  renewLease(correlationId: string, owner: string, until: number): Promise<RunItem | undefined>;
  /** Lets `owner`'s lease go (nothing when it is not theirs). */
  releaseLease(correlationId: string, owner: string): Promise<void>;
  /**
   * Events with index ≥ `from`, ascending: one Query, however long the run is (fewer than
   * `limit` when they hold more than the 1 MB a Query reads).
   */
  logEntries(correlationId: string, from: number, limit: number): Promise<RunLogEntry[]>;
  /** Every event of a run (the worker rebuilds the run's progress from them). */
  allLogEntries(correlationId: string): Promise<RunLogEntry[]>;
}

/** DynamoDB repository for runs and their events (TABLES.crewRuns, TABLES.runLog). */
export class DynamoRunStore implements RunStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly runsTable: string,
    private readonly runLogTable: string,
    /**
     * Where a run's domain events go, written in the transaction of the change (the outbox):
     * a store without it reads and writes runs but refuses to change one.
     */
    private readonly events?: EventsTable,
    /** Where a run's own webhook endpoint goes (E2 `webhook_url`). */
    private readonly webhooksTable?: string,
  ) {}

  /**
   * The transaction items recording `changes` (docs/events-and-webhooks.md), the first at the sequence after
   * `lastSequence`; each event's data is the run as its change left it.
   */
  private changeEvents(
    run: RunItem,
    changes: readonly { change: Change; after: RunItem }[],
    lastSequence: number,
  ): ReturnType<typeof eventPut>[] {
    if (changes.length === 0) return [];
    if (!this.events) throw new Error('run store without the domain events table: a run cannot change');
    const events = this.events;
    return changes.map(({ change, after }, i) =>
      eventPut(
        events,
        outboxEvent(events, runSubject(run.correlation_id), change, lastSequence + i, { ...toRun(after) }),
      ),
    );
  }

  /**
   * The run, its first events (event 0; a rerun's carried-over steps after it) and, when it
   * has one, its own webhook endpoint: one transaction.
   */
  async create(
    run: RunItem,
    first: RunLogEntry | readonly RunLogEntry[],
    change: Change,
    webhook?: Record<string, unknown>,
    also?: readonly ExtraWrite[],
  ): Promise<RunItem | undefined> {
    if (webhook && !this.webhooksTable) throw new Error('run store without a webhooks table: no per-run webhook');
    const entries: readonly RunLogEntry[] = Array.isArray(first) ? first : [first as RunLogEntry];
    const stored: RunItem = { ...run, run_webhook: webhook !== undefined, event_sequence: 1 };
    const write = this.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.runsTable,
              Item: {
                ...runItem(stored),
                open: OPEN,
                // A run with a concurrency limit waits in its key's line until it starts.
                ...(run.limit ? { [SLOT_QUEUE.partitionKey]: run.limit.key } : {}),
                ...listAttributes(RUN_LIST_PK, run.created_at, run.correlation_id),
                ev_seq: stored.event_sequence,
              },
              ConditionExpression: 'attribute_not_exists(correlation_id)',
            },
          },
          ...entries.map((entry) => ({
            Put: {
              TableName: this.runLogTable,
              Item: logEntryItem(entry, stored),
              ConditionExpression: 'attribute_not_exists(correlation_id)',
            },
          })),
          // its `queued` event, at sequence 1
          ...this.changeEvents(stored, [{ change, after: stored }], 0),
          ...(webhook
            ? [
                {
                  Put: {
                    TableName: this.webhooksTable,
                    Item: webhook,
                    ConditionExpression: 'attribute_not_exists(id)',
                  },
                },
              ]
            : []),
          ...(also ?? []),
        ],
      }),
    );
    if (!also) {
      await write;
      return stored;
    }
    // Only `also`'s conditions can refuse (the run's id is new): its writes say which held.
    return (await conditionally(write)) ? stored : undefined;
  }

  async get(correlationId: string): Promise<RunItem | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.runsTable, Key: { correlation_id: correlationId }, ConsistentRead: true }),
    );
    return out.Item ? storedRun(out.Item) : undefined;
  }

  /**
   * Runs newest first, filtered (one page of at most `limit`; one Query, never a Scan), from
   * the index that holds the fewest runs besides the wanted ones: an owner's runs from their
   * own index, an unfinished status from the sparse `open_runs`, anything else from
   * `by_created`; the other filters within it.
   */
  async list(filter: RunFilter, limit: number, cursor: string | undefined): Promise<Page<RunItem>> {
    const where: [string, string][] = [];
    if (filter.status !== undefined) where.push(['status', filter.status]);
    if (filter.templateId !== undefined) where.push(['template_id', filter.templateId]);
    const page = {
      db: this.db,
      tableName: this.runsTable,
      tableKeys: ['correlation_id'],
      limit,
      cursor,
      newestFirst: true,
      where,
    };
    const found =
      filter.owner !== undefined
        ? await listPartition(page, RUNS_BY_OWNER, filter.owner)
        : filter.status !== undefined && !FINISHED_STATUSES.has(filter.status)
          ? await listPartition(page, OPEN_RUNS, OPEN)
          : await listAll(page, RUN_LIST_PK);
    return { items: found.items.map(storedRun), nextCursor: found.nextCursor };
  }

  /** Runs waiting on an approval step of `role` after `after`, oldest first; `more` from LastEvaluatedKey. */
  async waitingAfter(role: string, after: string, limit: number): Promise<PositionedPage<RunItem>> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.runsTable,
        IndexName: WAITING_STEPS.name,
        // DynamoDB takes no empty string in a key condition: from the start, the partition alone.
        KeyConditionExpression: after ? '#pk = :role AND #sk > :after' : '#pk = :role',
        ExpressionAttributeNames: {
          '#pk': WAITING_STEPS.partitionKey,
          ...(after ? { '#sk': WAITING_STEPS.sortKey } : {}),
        },
        ExpressionAttributeValues: after ? { ':role': role, ':after': after } : { ':role': role },
        Limit: limit,
      }),
    );
    return {
      items: (out.Items ?? []).map((item) => ({ position: String(item.waiting_key), item: storedRun(item) })),
      more: out.LastEvaluatedKey !== undefined,
    };
  }

  /** Ids of runs not yet finished, oldest first (one page of at most `limit`). */
  async openRuns(limit: number, cursor: string | undefined): Promise<Page<string>> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.runsTable,
        IndexName: 'open_runs',
        KeyConditionExpression: '#open = :open',
        ExpressionAttributeNames: { '#open': 'open' },
        ExpressionAttributeValues: { ':open': OPEN },
        ProjectionExpression: 'correlation_id',
        Limit: limit,
        ExclusiveStartKey: decodeCursor(
          cursor,
          (k) =>
            k.open === OPEN &&
            typeof k.correlation_id === 'string' &&
            k.correlation_id !== '' &&
            typeof k.created_at === 'string' &&
            k.created_at !== '',
        ),
      }),
    );
    return {
      items: (out.Items ?? []).map((i) => String(i.correlation_id)),
      nextCursor: encodeCursor(out.LastEvaluatedKey),
    };
  }

  /**
   * Unfinished runs matching `filter`, oldest first: at most `limit`, and whether more match.
   * An owner's are read from their own index (no one else's run is read), anyone's from the
   * sparse `open_runs` (no finished run is read); the other filters within it.
   */
  async openRunsMatching(filter: OpenRunFilter, limit: number): Promise<{ runs: RunItem[]; more: boolean }> {
    const index = filter.owner !== undefined ? RUNS_BY_OWNER : OPEN_RUNS;
    const names: Record<string, string> = { '#p': index.partitionKey };
    const values: Record<string, unknown> = { ':p': filter.owner ?? OPEN };
    let keyCondition = '#p = :p';
    if (filter.createdBefore !== undefined) {
      // `created_key` is `<created_at>#<id>`: below the instant exactly when `created_at` is.
      names['#s'] = index.sortKey;
      values[':before'] = filter.createdBefore;
      keyCondition += ' AND #s < :before';
    }
    const filters: string[] = [];
    if (filter.owner !== undefined) {
      // The owner's index holds their finished runs too: only those still carrying `open`.
      names['#open'] = 'open';
      filters.push('attribute_exists(#open)');
    }
    if (filter.templateId !== undefined) {
      names['#template'] = 'template_id';
      values[':template'] = filter.templateId;
      filters.push('#template = :template');
    }
    if (filter.statuses !== undefined) {
      names['#status'] = 'status';
      const statuses = [...new Set(filter.statuses)].map((status, i) => {
        values[`:status${i}`] = status;
        return `:status${i}`;
      });
      filters.push(`#status IN (${statuses.join(', ')})`);
    }
    const page = await queryPage(
      this.db,
      {
        TableName: this.runsTable,
        IndexName: index.name,
        KeyConditionExpression: keyCondition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
      },
      {
        limit,
        start: undefined,
        keyAttributes: ['correlation_id', index.partitionKey, index.sortKey],
        readAhead: limit,
      },
    );
    return { runs: page.items.map(storedRun), more: page.nextCursor !== undefined };
  }

  /**
   * Appends the events, the first at the run's next index and the rest after it: the events
   * and the run's new count (and status) are one transaction conditioned on the count, so
   * indices have no gaps and no duplicates. False when the index was taken. Several events
   * go together where nothing observable happens between them (a step's closing event and
   * the next step's opening one). With `lease`, also conditioned on it (the runner's writes).
   */
  async append(
    run: RunItem,
    written: RunLogEntry | readonly RunLogEntry[],
    update: RunUpdate = {},
    /** The run's change when `update` changes its status (its domain event). */
    change?: Change,
    lease?: LeaseWrite,
    earlier: readonly EarlierChange[] = [],
  ): Promise<boolean> {
    const entries = Array.isArray(written) ? written : [written as RunLogEntry];
    const first = entries[0];
    if (!first) throw new Error('nothing to append');
    entries.forEach((e, i) => {
      if (e.index !== first.index + i) throw new Error(`entries to append are not consecutive at index ${e.index}`);
    });
    const next = first.index + entries.length;
    const changes = [
      ...earlier.map((e) => ({ change: e.change, after: runAfter(run, e.update, e.eventCount) })),
      ...(change ? [{ change, after: runAfter(run, update, next) }] : []),
    ];
    const lastSequence = run.event_sequence ?? 0;
    const changeEvents = this.changeEvents(run, changes, lastSequence);
    const names: Record<string, string> = changes.length ? { '#ev_seq': 'ev_seq' } : {};
    const values: Record<string, unknown> = {
      ':index': first.index,
      ':next': next,
      ...(changes.length ? { ':ev_seq': lastSequence + changes.length } : {}),
    };
    const sets = ['event_count = :next', ...(changes.length ? ['#ev_seq = :ev_seq'] : [])];
    Object.entries(update).forEach(([attr, value], i) => {
      names[`#u${i}`] = attr;
      values[`:u${i}`] = value;
      sets.push(`#u${i} = :u${i}`);
    });
    // A finished run leaves the `open_runs` index; a retried one comes back to it.
    const removes: string[] = [];
    if (update.status) {
      names['#open'] = 'open';
      if (FINISHED_STATUSES.has(update.status)) removes.push('#open');
      else {
        values[':open'] = OPEN;
        sets.push('#open = :open');
      }
      // A run that stops waiting (decided, expired, cancelled, timed out) leaves the inbox.
      if (update.status === 'waiting' && update.waiting) {
        names['#wr'] = 'waiting_role';
        names['#wk'] = 'waiting_key';
        values[':wr'] = update.waiting.role;
        values[':wk'] = `${update.waiting.since}#c#${run.correlation_id}`;
        sets.push('#wr = :wr', '#wk = :wk');
      } else if (update.status !== 'waiting') {
        WAITING_ATTRIBUTES.forEach((attr, i) => {
          names[`#w${i}`] = attr;
          removes.push(`#w${i}`);
        });
      }
      // A run with a concurrency limit is in its key's line while `pending`, and only then.
      if (run.limit) {
        names['#sq'] = SLOT_QUEUE.partitionKey;
        if (update.status === 'pending') {
          values[':sq'] = run.limit.key;
          sets.push('#sq = :sq');
        } else removes.push('#sq');
      }
    }
    let condition = 'event_count = :index';
    if (lease) {
      Object.assign(names, LEASE_NAMES);
      Object.assign(values, { ':lease_owner': lease.owner, ':lease_now': lease.now });
      condition += ` AND ${LEASE_FREE}`;
      if (lease.until === null) removes.push('#lease_owner', '#lease_until');
      else {
        values[':lease_until'] = lease.until;
        sets.push('#lease_owner = :lease_owner', '#lease_until = :lease_until');
      }
    }
    const remove = removes.length ? ` REMOVE ${removes.join(', ')}` : '';
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            ...entries.map((entry) => ({
              Put: {
                TableName: this.runLogTable,
                Item: logEntryItem(entry, run),
                ConditionExpression: 'attribute_not_exists(correlation_id)',
              },
            })),
            ...changeEvents,
            {
              Update: {
                TableName: this.runsTable,
                Key: { correlation_id: run.correlation_id },
                UpdateExpression: `SET ${sets.join(', ')}${remove}`,
                ConditionExpression: condition,
                ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
                ExpressionAttributeValues: values,
              },
            },
          ],
        }),
      );
      return true;
    } catch (err) {
      if (
        err instanceof TransactionCanceledException &&
        err.CancellationReasons?.some((r) => r.Code === 'ConditionalCheckFailed')
      ) {
        return false;
      }
      throw err;
    }
  }

  /**
   * Takes the run's lease without an event (a delivery resuming a step whose `step.started`
   * is already written), conditioned on the run's event count as read. False when the count
   * moved or another delivery holds an unexpired lease.
   */
  async takeLease(correlationId: string, lease: LeaseWrite & { until: number }, eventCount: number): Promise<boolean> {
    return conditionally(
      this.leaseUpdate(
        correlationId,
        'SET #lease_owner = :lease_owner, #lease_until = :lease_until',
        `event_count = :count AND ${LEASE_FREE}`,
        { ':count': eventCount, ':lease_owner': lease.owner, ':lease_now': lease.now, ':lease_until': lease.until },
      ),
    );
  }

  /** Extends `owner`'s lease to `until`; answers the run, or undefined when the lease is no longer theirs. */
  async renewLease(correlationId: string, owner: string, until: number): Promise<RunItem | undefined> {
    try {
      const out = await this.leaseUpdate(
        correlationId,
        'SET #lease_until = :lease_until',
        '#lease_owner = :lease_owner',
        { ':lease_owner': owner, ':lease_until': until },
        true,
      );
      return out.Attributes ? storedRun(out.Attributes) : undefined;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /** Lets `owner`'s lease go (nothing when it is not theirs). */
  async releaseLease(correlationId: string, owner: string): Promise<void> {
    await conditionally(
      this.leaseUpdate(correlationId, 'REMOVE #lease_owner, #lease_until', '#lease_owner = :lease_owner', {
        ':lease_owner': owner,
      }),
    );
  }

  /** One conditional update of the run's lease attributes; with `returnRun`, the run as written. */
  private leaseUpdate(
    correlationId: string,
    update: string,
    condition: string,
    values: Record<string, unknown>,
    returnRun = false,
  ) {
    return this.db.send(
      new UpdateCommand({
        TableName: this.runsTable,
        Key: { correlation_id: correlationId },
        UpdateExpression: update,
        ConditionExpression: condition,
        ExpressionAttributeNames: LEASE_NAMES,
        ExpressionAttributeValues: values,
        ...(returnRun ? { ReturnValues: 'ALL_NEW' as const } : {}),
      }),
    );
  }

  /**
   * Events with index ≥ `from`, ascending: one Query, however long the run is (fewer than
   * `limit` when they hold more than the 1 MB a Query reads).
   */
  async logEntries(correlationId: string, from: number, limit: number): Promise<RunLogEntry[]> {
    return (await this.eventPage(correlationId, from, limit)).events;
  }

  /** Every event of a run (the worker rebuilds the run's progress from them). */
  async allLogEntries(correlationId: string): Promise<RunLogEntry[]> {
    const all: RunLogEntry[] = [];
    for (;;) {
      const page = await this.eventPage(correlationId, all.length, 1000);
      all.push(...page.events);
      if (!page.more || page.events.length === 0) return all;
    }
  }

  private async eventPage(
    correlationId: string,
    from: number,
    limit: number,
  ): Promise<{ events: RunLogEntry[]; more: boolean }> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.runLogTable,
        KeyConditionExpression: 'correlation_id = :id AND #index >= :from',
        ExpressionAttributeNames: { '#index': 'index' },
        ExpressionAttributeValues: { ':id': correlationId, ':from': from },
        Limit: limit,
        ConsistentRead: true,
      }),
    );
    return { events: (out.Items ?? []).map(toRunLogEntry), more: out.LastEvaluatedKey !== undefined };
  }
}
