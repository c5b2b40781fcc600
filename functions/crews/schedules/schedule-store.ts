import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../../../shared/aws/errors.js';
import { listAll, listAttributes, listPartition, withoutListAttributes } from '../../../shared/aws/listing.js';
import { decodeCursor, queryPage } from '../../../shared/aws/pagination.js';
import { type Page } from '../../../shared/page.js';
import { eventPut, type EventsTable, outboxEvent } from '../../../shared/events/events-table.js';
import { stampNew, stampUpdate, unstamped } from '../../../shared/events/stamp.js';
import type { Change } from '../../../shared/events/types.js';
import type { CrewSchedule } from './schedule-schemas.js';
import { type ExtraWrite, type RunItem, storedRun } from '../runs/run-store.js';
import { AGAIN, retry } from '../../../shared/retry.js';

/** Tries to delete an item whose change stamp moved on between read and write. */
const DELETE_ROUNDS = 5;

/*
 * Crew schedules (docs/crews.md, schedules) in the crew-schedules table, keyed by
 * `schedule_id` and `item`: the schedule itself (`item` = `schedule`), and one item per run it
 * started (`item` = `run#<scheduled time>`), written in the run's creating transaction (so a
 * listed run exists, and a second run for the same fire cannot be made: the item is put on
 * condition that it does not exist). The same transaction updates the schedule (`last_run_at`,
 * `last_correlation_id`, `next_run_at` and the stamp of its `crew.schedule.fired` event), so a
 * run a fire started never lacks its event. A fire that started nothing has its own item
 * (`item` = `skip#<scheduled time>`), put with the schedule's `last_skipped_at` and its event
 * in one transaction. Each of a fire's two records is put on condition that the fire has
 * neither, so a fire ends once: one run, or one skip. GET /api/crew-schedules/{id}/runs is one
 * Query of the run items, newest first, and one BatchGetItem of the runs.
 */

/** The `item` of a schedule's own item (its runs' items are `run#<scheduled time>`). */
export const SCHEDULE_ITEM = 'schedule';
const SCHEDULE = SCHEDULE_ITEM;
const LIST_PK = 'crew-schedule';
const RUN_PREFIX = 'run#';
const SKIP_PREFIX = 'skip#';
/**
 * How long a skipped fire's record is kept: SQS keeps a message 14 days at most, so no copy
 * of the fire arrives later (a run's record is kept as long as the run).
 */
const SKIP_RECORD_SECONDS = 14 * 86_400;
/** Sparse (only schedule items carry `template_id`): a deleted template's schedules. */
const BY_TEMPLATE = { name: 'by_template', partitionKey: 'template_id', sortKey: 'created_key' } as const;

/** A schedule as stored: the answer's fields, and whose it is (by principal: docs/identity-and-keys.md). */
export interface ScheduleItem extends CrewSchedule {
  readonly created_by_principal: string;
  /**
   * When the expression was last set (creation, or a PATCH that changed it): a `rate()` counts
   * from here (docs/crews.md). Schedules stored before it was kept have their `updated_at` instead.
   */
  readonly expression_set_at?: string;
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
    | 'expression_set_at'
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
  /**
   * A fire's writes, made in the run's creating transaction (RunStore.create): its record of
   * the run, on condition that the fire has none yet, and `update` of the schedule with the
   * stamp of `change`, on condition that it is still as `seen` was and ran no later fire.
   */
  fireWrites(
    seen: ScheduleItem,
    scheduledTime: string,
    run: RunItem,
    update: ScheduleUpdate,
    change: Change,
  ): readonly ExtraWrite[];
  /**
   * Records the fire at `scheduledTime` as one that started nothing, with `update` of the
   * schedule and the stamp of `change` (its `crew.schedule.fired` event): one transaction, on
   * condition that the fire has no record yet and the schedule is still as `seen` was. False
   * when a condition refused it (nothing is stored).
   */
  skip(seen: ScheduleItem, scheduledTime: string, update: ScheduleUpdate, change: Change): Promise<boolean>;
  /** Whether the fire at `scheduledTime` has its record: it started its run, or was skipped. */
  hasFired(scheduleId: string, scheduledTime: string): Promise<boolean>;
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
  const { created_by_principal: _p, expression_set_at: _e, ...schedule } = item;
  return schedule;
};

/** Where a schedule's `rate()` counts from (ISO 8601): its expression's last setting. */
export const rateAnchor = (item: ScheduleItem): string => item.expression_set_at ?? item.updated_at;

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
    return conditionally(this.db.send(new UpdateCommand(this.updateInput(seen, update, change))));
  }

  /** `update` with the stamp of `change`, on condition that the schedule is still as `seen` was. */
  private updateInput(seen: ScheduleItem, update: ScheduleUpdate, change: Change) {
    const stamp = stampUpdate(change);
    const names: Record<string, string> = { ...stamp.names, '#updated': 'updated_at' };
    const values: Record<string, unknown> = { ...stamp.values, ':seen': seen.updated_at };
    const sets = Object.entries(scheduleAttributes(update)).map(([name, value], i) => {
      names[`#a${i}`] = name;
      values[`:a${i}`] = value;
      return `#a${i} = :a${i}`;
    });
    return {
      TableName: this.tableName,
      Key: { schedule_id: seen.id, item: SCHEDULE },
      UpdateExpression: `SET ${[...sets, stamp.set].join(', ')} ADD ${stamp.add}`,
      ConditionExpression: 'attribute_exists(schedule_id) AND #updated = :seen',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
  }

  async delete(id: string, change: Change): Promise<boolean> {
    const tried = await retry(
      async () => {
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
        // changed or deleted meanwhile: read it again
        return deleted ? true : AGAIN;
      },
      { attempts: DELETE_ROUNDS },
    );
    if (tried.done) return tried.value;
    throw new Error(`crew schedule ${id}: gave up deleting after repeated concurrent changes`);
  }

  fireWrites(
    seen: ScheduleItem,
    scheduledTime: string,
    run: RunItem,
    update: ScheduleUpdate,
    change: Change,
  ): readonly ExtraWrite[] {
    const schedule = this.updateInput(seen, update, change);
    return [
      {
        Put: {
          TableName: this.tableName,
          Item: {
            schedule_id: seen.id,
            item: `${RUN_PREFIX}${scheduledTime}`,
            correlation_id: run.correlation_id,
            created_at: run.created_at,
            // Kept as long as the run is.
            expires_at: run.expires_at,
          },
          ConditionExpression: 'attribute_not_exists(schedule_id)',
        },
      },
      this.notSkipped(seen.id, scheduledTime),
      {
        Update: {
          ...schedule,
          // ...and `last_run_at` only moves forward (a late fire records no earlier time).
          ConditionExpression: `${schedule.ConditionExpression} AND (attribute_not_exists(#last_run) OR attribute_type(#last_run, :null_type) OR #last_run < :fired_at)`,
          ExpressionAttributeNames: { ...schedule.ExpressionAttributeNames, '#last_run': 'last_run_at' },
          ExpressionAttributeValues: {
            ...schedule.ExpressionAttributeValues,
            ':null_type': 'NULL',
            ':fired_at': scheduledTime,
          },
        },
      },
    ];
  }

  async skip(seen: ScheduleItem, scheduledTime: string, update: ScheduleUpdate, change: Change): Promise<boolean> {
    return conditionally(
      this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: {
                  schedule_id: seen.id,
                  item: `${SKIP_PREFIX}${scheduledTime}`,
                  // kept from the change's own instant (its clock), not a clock of the store's
                  expires_at: Math.floor(Date.parse(change.at) / 1000) + SKIP_RECORD_SECONDS,
                },
                ConditionExpression: 'attribute_not_exists(schedule_id)',
              },
            },
            {
              ConditionCheck: {
                TableName: this.tableName,
                Key: { schedule_id: seen.id, item: `${RUN_PREFIX}${scheduledTime}` },
                ConditionExpression: 'attribute_not_exists(schedule_id)',
              },
            },
            { Update: this.updateInput(seen, update, change) },
          ],
        }),
      ),
    );
  }

  async hasFired(scheduleId: string, scheduledTime: string): Promise<boolean> {
    const records = await Promise.all(
      [RUN_PREFIX, SKIP_PREFIX].map((prefix) =>
        this.db.send(
          new GetCommand({
            TableName: this.tableName,
            Key: { schedule_id: scheduleId, item: `${prefix}${scheduledTime}` },
            ConsistentRead: true,
            ProjectionExpression: 'schedule_id',
          }),
        ),
      ),
    );
    return records.some((out) => out.Item !== undefined);
  }

  /** A fire's run is recorded on condition that the fire was not skipped (its other record). */
  private notSkipped(scheduleId: string, scheduledTime: string): ExtraWrite {
    return {
      ConditionCheck: {
        TableName: this.tableName,
        Key: { schedule_id: scheduleId, item: `${SKIP_PREFIX}${scheduledTime}` },
        ConditionExpression: 'attribute_not_exists(schedule_id)',
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
