import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { conditionally, isConditionFailed } from '../../../shared/aws/errors.js';
import { dropLapsed } from '../../../shared/aws/leased-slots.js';
import { listAttributes } from '../../../shared/aws/listing.js';
import { type QueuedRun, RUN_LIST_PK, SLOT_QUEUE } from './run-store.js';

/*
 * The slots of runs' concurrency limits (run-limits.ts): one item per limit key in the runs
 * table, and the line of `pending` runs waiting for one (the `slot_queue` index of the runs
 * the run store writes). The runner takes, renews and lets them go.
 */

/** The runs holding a slot of a limit: correlation id → when its lease ends (ms since the epoch), lapsed ones included. */
export type SlotHolders = Readonly<Record<string, number>>;

/** A limit's slots as read: its holders, and a version that every change of who holds one moves on. */
export interface Slots {
  readonly holders: SlotHolders;
  readonly version: number;
}

/**
 * The condition of taking a slot: fewer than `fewerThan` others hold one (lapsed holders
 * included), or the slots are still as read (`as`; undefined: none was taken yet), the
 * `dropping` holders (lapsed: shared/aws/leased-slots.ts, with their lease ends as read) let go
 * in the same write.
 */
export type SlotCondition =
  | { readonly fewerThan: number }
  | { readonly as: Slots | undefined; readonly dropping: readonly (readonly [string, number])[] };

/**
 * The item holding a limit's slots, in the runs table beside the runs (whose ids are UUIDs):
 * `holders` maps each holder's correlation id to when its lease ends.
 */
const slotItemKey = (key: string) => ({ correlation_id: `slots#${key}` });

/** The slots as stored (a holder's lease end is a number; anything else is no holder). */
function toSlots(item: Record<string, unknown>): Slots {
  const stored = item.holders && typeof item.holders === 'object' ? (item.holders as Record<string, unknown>) : {};
  const holders = Object.fromEntries(
    Object.entries(stored).filter((e): e is [string, number] => typeof e[1] === 'number'),
  );
  return { holders, version: typeof item.version === 'number' ? item.version : 0 };
}

/** The key condition of a slot key's line, before `before` when given. */
function slotQueueKey(key: string, before?: QueuedRun) {
  return {
    KeyConditionExpression: before ? '#q = :key AND #k < :before' : '#q = :key',
    ExpressionAttributeNames: { '#q': SLOT_QUEUE.partitionKey, ...(before ? { '#k': SLOT_QUEUE.sortKey } : {}) },
    ExpressionAttributeValues: {
      ':key': key,
      ...(before
        ? { ':before': listAttributes(RUN_LIST_PK, before.created_at, before.correlation_id).created_key }
        : {}),
    },
  };
}

/** The slots of runs' concurrency limits, as the runner uses them. */
export interface SlotStore {
  /**
   * Runs in the line of slot `key` (`pending` runs with that limit), oldest first: at most
   * `limit` ids, of those queued before `before` when given (one Query of the sparse
   * `slot_queue` index, eventually consistent).
   */
  slotQueue(key: string, limit: number, before?: QueuedRun): Promise<string[]>;
  /** How many runs wait in the line of slot `key` before `before` (Queries that count, no items read out). */
  slotQueueCount(key: string, before: QueuedRun): Promise<number>;
  /** The slots of `key`, read consistently; undefined before the first was taken. */
  slots(key: string): Promise<Slots | undefined>;
  /**
   * Holds a slot of `key` for run `holder` until `until` (ms) when `when` holds, or when it
   * holds one already: one conditional write; the slots' item is kept at least until
   * `expiresAt` (epoch seconds). Not taken: the slots as they were (undefined: none yet).
   */
  takeSlot(
    key: string,
    holder: string,
    until: number,
    expiresAt: number,
    when: SlotCondition,
  ): Promise<{ readonly taken: true } | { readonly taken: false; readonly slots: Slots | undefined }>;
  /** Extends `holder`'s slot of `key` to `until`; false when it holds none (it lapsed and was given to another). */
  renewSlot(key: string, holder: string, until: number): Promise<boolean>;
  /** Lets `holder`'s slot of `key` go (nothing when it holds none); answers the holders left. */
  releaseSlot(key: string, holder: string): Promise<SlotHolders>;
}

/** DynamoDB repository of the slots (TABLES.crewRuns: the slot items and the `slot_queue` index). */
export class DynamoSlotStore implements SlotStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly runsTable: string,
  ) {}

  async slotQueue(key: string, limit: number, before?: QueuedRun): Promise<string[]> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.runsTable,
        IndexName: SLOT_QUEUE.name,
        ...slotQueueKey(key, before),
        ProjectionExpression: 'correlation_id',
        Limit: limit,
      }),
    );
    return (out.Items ?? []).map((i) => String(i.correlation_id));
  }

  async slotQueueCount(key: string, before: QueuedRun): Promise<number> {
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.runsTable,
          IndexName: SLOT_QUEUE.name,
          ...slotQueueKey(key, before),
          Select: 'COUNT',
          ExclusiveStartKey: start,
        }),
      );
      count += out.Count ?? 0;
      start = out.LastEvaluatedKey;
    } while (start);
    return count;
  }

  async slots(key: string): Promise<Slots | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.runsTable, Key: slotItemKey(key), ConsistentRead: true }),
    );
    return out.Item ? toSlots(out.Item) : undefined;
  }

  async takeSlot(
    key: string,
    holder: string,
    until: number,
    expiresAt: number,
    when: SlotCondition,
  ): Promise<{ readonly taken: true } | { readonly taken: false; readonly slots: Slots | undefined }> {
    // The holders' ids go in as attribute names (placeholders), never into the expression text.
    const names: Record<string, string> = {
      '#holders': 'holders',
      '#h': holder,
      '#version': 'version',
      '#exp': 'expires_at',
    };
    const values: Record<string, unknown> = { ':until': until, ':one': 1, ':exp': expiresAt };
    let write: () => Promise<unknown>;
    if ('as' in when && when.as === undefined) {
      const first = new PutCommand({
        TableName: this.runsTable,
        Item: { ...slotItemKey(key), holders: { [holder]: until }, version: 1, expires_at: expiresAt },
        ConditionExpression: 'attribute_not_exists(correlation_id)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      write = () => this.db.send(first);
    } else {
      let condition: string;
      const removes: string[] = [];
      if ('fewerThan' in when) {
        values[':n'] = when.fewerThan;
        condition = 'attribute_exists(#holders.#h) OR size(#holders) < :n';
      } else {
        values[':version'] = when.as!.version;
        const drops = dropLapsed(when.dropping);
        Object.assign(names, drops.names);
        Object.assign(values, drops.values);
        removes.push(...drops.removes);
        condition = ['#version = :version', ...drops.conditions].join(' AND ');
      }
      const update = new UpdateCommand({
        TableName: this.runsTable,
        Key: slotItemKey(key),
        UpdateExpression: `SET #holders.#h = :until, #exp = :exp${removes.length ? ` REMOVE ${removes.join(', ')}` : ''} ADD #version :one`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      write = () => this.db.send(update);
    }
    try {
      await write();
      return { taken: true };
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      // The document client does not unmarshall the item returned with a failed condition.
      const old = (err as { Item?: Parameters<typeof unmarshall>[0] }).Item;
      return { taken: false, slots: old ? toSlots(unmarshall(old)) : undefined };
    }
  }

  async renewSlot(key: string, holder: string, until: number): Promise<boolean> {
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.runsTable,
          Key: slotItemKey(key),
          UpdateExpression: 'SET #holders.#h = :until',
          ConditionExpression: 'attribute_exists(#holders.#h)',
          ExpressionAttributeNames: { '#holders': 'holders', '#h': holder },
          ExpressionAttributeValues: { ':until': until },
        }),
      ),
    );
  }

  async releaseSlot(key: string, holder: string): Promise<SlotHolders> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.runsTable,
          Key: slotItemKey(key),
          UpdateExpression: 'REMOVE #holders.#h ADD #version :one',
          ConditionExpression: 'attribute_exists(#holders.#h)',
          ExpressionAttributeNames: { '#holders': 'holders', '#h': holder, '#version': 'version' },
          ExpressionAttributeValues: { ':one': 1 },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return out.Attributes ? toSlots(out.Attributes).holders : {};
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      const old = (err as { Item?: Parameters<typeof unmarshall>[0] }).Item;
      return old ? toSlots(unmarshall(old)).holders : {};
    }
  }
}
