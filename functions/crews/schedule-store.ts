import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../../shared/aws/errors.js';
import { listAll, listAttributes, listPartition, withoutListAttributes } from '../../shared/aws/listing.js';
import { decodeCursor, type Page, queryPage } from '../../shared/aws/pagination.js';
import { eventPut, type EventsTable, outboxEvent } from '../../shared/events/events-table.js';
import { stampNew, stampUpdate, unstamped } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { CrewSchedule } from './schemas.js';
import { type RunItem, storedRun } from './store.js';

/*
 * Crew schedules (API.md §4 "Runs people can plan on") in the crew-schedules table, keyed by
 * `schedule_id` and `item`: the schedule itself (`item` = `schedule`), and one item per run it
 * started (`item` = `run#<scheduled time>`), written in the run's creating transaction (so a
 * listed run exists, and a second run for the same fire cannot be made: the item is put on
 * condition that it does not exist). GET /api/crew-schedules/{id}/runs is one Query of those
 * items, newest first, and one BatchGetItem of the runs.
 */

/** The `item` of a schedule's own item (its runs' items are `run#<scheduled time>`). */
export const SCHEDULE_ITEM = 'schedule';
const SCHEDULE = SCHEDULE_ITEM;
const LIST_PK = 'crew-schedule';
const RUN_PREFIX = 'run#';
/** Sparse (only schedule items carry `template_id`): a deleted template's schedules. */
const BY_TEMPLATE = { name: 'by_template', partitionKey: 'template_id', sortKey: 'created_key' } as const;

/** A schedule as stored: the answer's fields, and whose it is (API.md §1: by principal). */
export interface ScheduleItem extends CrewSchedule {
  readonly created_by_principal: string;
}

/** What a schedule change may set (PATCH fields, and what a fire records). */
export type ScheduleUpdate = Partial<
  Pick<
    ScheduleItem,
    | 'expression'
    | 'timezone'
    | 'values'
    | 'overlap'
    | 'enabled'
    | 'next_run_at'
    | 'last_run_at'
    | 'last_correlation_id'
    | 'last_skipped_at'
    | 'updated_at'
  >
>;

export interface ScheduleStore {
  create(schedule: ScheduleItem, change: Change): Promise<void>;
  get(id: string): Promise<ScheduleItem | undefined>;
  /** Oldest first. */
  list(limit: number, cursor: string | undefined): Promise<Page<ScheduleItem>>;
  /** Every schedule of a template (a deleted template disables them). */
  ofTemplate(templateId: string, limit: number, cursor: string | undefined): Promise<Page<ScheduleItem>>;
  /**
   * Sets `update` when the schedule is still as `seen` was (its `updated_at` and event count):
   * false when it changed meanwhile or is gone.
   */
  update(seen: ScheduleItem, update: ScheduleUpdate, change: Change): Promise<boolean>;
  /** Deletes it with its `crew.schedule.deleted` event; false when it is gone. */
  delete(id: string, change: Change): Promise<boolean>;
  /** The item a run started by a fire is stored with (RunStore.create puts it in the run's transaction). */
  runItem(scheduleId: string, scheduledTime: string, run: RunItem): { table: string; item: Record<string, unknown> };
  /** The runs the schedule started, newest first. */
  runs(scheduleId: string, limit: number, cursor: string | undefined): Promise<Page<RunItem>>;
}

export const toSchedule = (item: Record<string, unknown>): ScheduleItem => {
  const {
    schedule_id,
    item: _kind,
    values_json,
    version: _v,
    ...rest
  } = unstamped(withoutListAttributes<Record<string, unknown>>(item));
  return {
    ...(rest as Omit<ScheduleItem, 'id' | 'values'>),
    id: schedule_id as string,
    values: typeof values_json === 'string' ? (JSON.parse(values_json) as Record<string, unknown>) : {},
    last_skipped_at: (rest.last_skipped_at as string | null | undefined) ?? null,
  };
};

/** The answer of a schedule (what its GET and its events say). */
export const toCrewSchedule = (item: ScheduleItem): CrewSchedule => {
  const { created_by_principal: _p, ...schedule } = item;
  return schedule;
};

/** Values are free-form JSON: stored as JSON text, so any value round-trips. */
const scheduleAttributes = (update: ScheduleUpdate): Record<string, unknown> => {
  const { values, ...rest } = update;
  return { ...rest, ...(values !== undefined ? { values_json: JSON.stringify(values) } : {}) };
};

export class DynamoScheduleStore implements ScheduleStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly runsTable: string,
    private readonly events: EventsTable,
  ) {}

  async create(schedule: ScheduleItem, change: Change): Promise<void> {
    const { id, ...fields } = schedule;
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          schedule_id: id,
          item: SCHEDULE,
          ...scheduleAttributes(fields),
          ...listAttributes(LIST_PK, schedule.created_at, id),
          ...stampNew(change),
        },
        ConditionExpression: 'attribute_not_exists(schedule_id)',
      }),
    );
  }

  async get(id: string): Promise<ScheduleItem | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { schedule_id: id, item: SCHEDULE }, ConsistentRead: true }),
    );
    return out.Item ? toSchedule(out.Item) : undefined;
  }

  async list(limit: number, cursor: string | undefined): Promise<Page<ScheduleItem>> {
    const page = await listAll(
      { db: this.db, tableName: this.tableName, tableKeys: ['schedule_id', 'item'], limit, cursor },
      LIST_PK,
    );
    return { items: page.items.map(toSchedule), nextCursor: page.nextCursor };
  }

  async ofTemplate(templateId: string, limit: number, cursor: string | undefined): Promise<Page<ScheduleItem>> {
    const page = await listPartition(
      { db: this.db, tableName: this.tableName, tableKeys: ['schedule_id', 'item'], limit, cursor },
      BY_TEMPLATE,
      templateId,
    );
    return { items: page.items.map(toSchedule), nextCursor: page.nextCursor };
  }

  async update(seen: ScheduleItem, update: ScheduleUpdate, change: Change): Promise<boolean> {
    const stamp = stampUpdate(change);
    const names: Record<string, string> = { ...stamp.names, '#updated': 'updated_at' };
    const values: Record<string, unknown> = { ...stamp.values, ':seen': seen.updated_at };
    const sets = Object.entries(scheduleAttributes(update)).map(([name, value], i) => {
      names[`#a${i}`] = name;
      values[`:a${i}`] = value;
      return `#a${i} = :a${i}`;
    });
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { schedule_id: seen.id, item: SCHEDULE },
          UpdateExpression: `SET ${[...sets, stamp.set].join(', ')} ADD ${stamp.add}`,
          ConditionExpression: 'attribute_exists(schedule_id) AND #updated = :seen',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }

  async delete(id: string, change: Change): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const out = await this.db.send(
        new GetCommand({ TableName: this.tableName, Key: { schedule_id: id, item: SCHEDULE }, ConsistentRead: true }),
      );
      if (!out.Item) return false;
      const seq = typeof out.Item.ev_seq === 'number' ? out.Item.ev_seq : 0;
      const event = outboxEvent(this.events, `crew-schedules/${id}`, change, seq, {
        ...toCrewSchedule(toSchedule(out.Item)),
      });
      const deleted = await conditionally(
        this.db.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Delete: {
                  TableName: this.tableName,
                  Key: { schedule_id: id, item: SCHEDULE },
                  ConditionExpression: 'ev_seq = :seq',
                  ExpressionAttributeValues: { ':seq': seq },
                },
              },
              eventPut(this.events, event),
            ],
          }),
        ),
      );
      if (deleted) return true;
      // changed or deleted meanwhile: read it again
    }
    throw new Error(`crew schedule ${id}: gave up deleting after repeated concurrent changes`);
  }

  runItem(scheduleId: string, scheduledTime: string, run: RunItem): { table: string; item: Record<string, unknown> } {
    return {
      table: this.tableName,
      item: {
        schedule_id: scheduleId,
        item: `${RUN_PREFIX}${scheduledTime}`,
        correlation_id: run.correlation_id,
        created_at: run.created_at,
        // Kept as long as the run is.
        expires_at: run.expires_at,
      },
    };
  }

  async runs(scheduleId: string, limit: number, cursor: string | undefined): Promise<Page<RunItem>> {
    const start = decodeCursor(
      cursor,
      (k) =>
        k.schedule_id === scheduleId &&
        typeof k.item === 'string' &&
        k.item.startsWith(RUN_PREFIX) &&
        Object.keys(k).length === 2,
    );
    const page = await queryPage(
      this.db,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'schedule_id = :id AND begins_with(#item, :run)',
        ExpressionAttributeNames: { '#item': 'item' },
        ExpressionAttributeValues: { ':id': scheduleId, ':run': RUN_PREFIX },
        ScanIndexForward: false,
      },
      { limit, start, keyAttributes: ['schedule_id', 'item'] },
    );
    const ids = page.items.map((i) => i.correlation_id as string);
    if (ids.length === 0) return { items: [], nextCursor: page.nextCursor };
    const found = new Map<string, RunItem>();
    let keys: Record<string, unknown>[] | undefined = ids.map((correlation_id) => ({ correlation_id }));
    for (let round = 0; keys && keys.length > 0 && round < 10; round++) {
      const out = await this.db.send(
        new BatchGetCommand({ RequestItems: { [this.runsTable]: { Keys: keys, ConsistentRead: true } } }),
      );
      for (const item of out.Responses?.[this.runsTable] ?? [])
        found.set(item.correlation_id as string, storedRun(item));
      keys = out.UnprocessedKeys?.[this.runsTable]?.Keys as Record<string, unknown>[] | undefined;
    }
    // A run past its expiry (deleted by TTL before its item here) is left out.
    return {
      items: ids.map((id) => found.get(id)).filter((r): r is RunItem => r !== undefined),
      nextCursor: page.nextCursor,
    };
  }
}
