import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../aws/errors.js';
import { listAll, listAttributes, listOwned, withoutListAttributes } from '../aws/listing.js';
import type { Page } from '../page.js';
import { stampNew, stampUpdate, unstamped } from '../events/stamp.js';
import type { Change } from '../events/types.js';

/** A pre-shared key as stored: the secret itself never is, only its SHA-256 hash. */
export interface KeyRecord {
  key_hash: string;
  psk: string;
  dataproduct_id: string | null;
  description: string;
  /** The creator's roles when the key was made: the key acts with these. */
  roles: string[];
  /** The creator's name, for showing. */
  created_by: string;
  /** The creator's principal (docs/identity-and-keys.md, principals); absent on keys stored before principals were. */
  created_by_principal?: string;
  created_at: string;
  /**
   * Hashes of the keys this key was made or extended through, oldest first: it stops when
   * any of them is deleted or expires (docs/identity-and-keys.md, key lineage).
   */
  lineage?: string[];
  /** Expiry in epoch milliseconds: a number, so extensions can be added atomically. */
  valid_until_ms: number;
  deleted_at?: string;
}

const LIST_PK = 'key';

/**
 * The data product that always exists (docs/sdk.md): keys are made for it without a stored
 * product, and it is never deleted.
 */
export const DEFAULT_DATAPRODUCT_ID = 'default';

/** No key is valid past 9999-12-31: later dates have no ISO 8601 form the contract allows. */
export const MAX_VALID_UNTIL_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** What verifying a pre-shared key reads: one key by its hash. */
export type KeyLookup = Pick<KeyStore, 'getByHash'>;
/** The keys table as services see it (its public methods; KeyStore below implements them). */
export type KeyRepository = Pick<KeyStore, keyof KeyStore>;

/** DynamoDB repository for the keys table (see TABLES.keys). */
export class KeyStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async getByHash(keyHash: string): Promise<KeyRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { key_hash: keyHash } }));
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /**
   * Stores a new key; false when a key with that hash exists already. `change`, when given,
   * is stamped on it for its domain event (`psk.created`, docs/events-and-webhooks.md).
   */
  async createIfAbsent(record: KeyRecord, change?: Change): Promise<boolean> {
    return conditionally(
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...toItem(record),
            ...listAttributes(LIST_PK, record.created_at, record.key_hash),
            ...(change ? stampNew(change) : {}),
          },
          ConditionExpression: 'attribute_not_exists(key_hash)',
        }),
      ),
    );
  }

  async findByPskId(psk: string): Promise<KeyRecord[]> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'by_psk',
        KeyConditionExpression: 'psk = :psk',
        ExpressionAttributeValues: { ':psk': psk },
      }),
    );
    return (out.Items ?? []).map(fromItem);
  }

  /** Keys made by the principal `creator` (or every key), oldest first; deleted ones only when asked. */
  async list(
    creator: string | undefined,
    includeDeleted: boolean,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<KeyRecord>> {
    const page = {
      db: this.db,
      tableName: this.tableName,
      tableKeys: ['key_hash'],
      limit,
      cursor,
      ...(includeDeleted ? {} : { without: 'deleted_at' }),
    };
    const out = creator
      ? await listOwned(page, { name: 'by_creator_principal', ownerAttribute: 'created_by_principal' }, creator)
      : await listAll(page, LIST_PK);
    return { items: out.items.map(fromItem), nextCursor: out.nextCursor };
  }

  /**
   * Marks a key deleted unless it already is; false when it was. A key is kept (listed with
   * `deleted_at`), so `change`, when given, is stamped on it (`psk.deleted`).
   */
  async markDeleted(keyHash: string, at: string, change?: Change): Promise<boolean> {
    const stamp = change ? stampUpdate(change) : undefined;
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: keyHash },
          UpdateExpression: stamp ? `SET deleted_at = :at, ${stamp.set} ADD ${stamp.add}` : 'SET deleted_at = :at',
          ConditionExpression: 'attribute_exists(key_hash) AND attribute_not_exists(deleted_at)',
          ...(stamp ? { ExpressionAttributeNames: stamp.names } : {}),
          ExpressionAttributeValues: { ':at': at, ...stamp?.values },
        }),
      ),
    );
  }

  /** Brings a key back as live with the given roles and expiry (the bootstrap admin key). */
  async restore(keyHash: string, roles: string[], validUntilMs: number): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { key_hash: keyHash },
        UpdateExpression: 'SET #roles = :roles, valid_until_ms = :until REMOVE deleted_at',
        ConditionExpression: 'attribute_exists(key_hash)',
        ExpressionAttributeNames: { '#roles': 'roles' },
        ExpressionAttributeValues: { ':roles': roles, ':until': validUntilMs },
      }),
    );
  }

  /**
   * Adds `addMs` to a live (not deleted, not expired at `nowMs`) key's expiry in one
   * atomic update, so concurrent extensions all count, unless the result would pass
   * `maxMs`; `lineage` joins the key's lineage in the same update. Undefined when the key
   * is not live or the bound would be passed. `change`, when given, is stamped on the key
   * (`psk.extended`).
   */
  async addToExpiry(
    keyHash: string,
    addMs: number,
    nowMs: number,
    maxMs: number,
    lineage: readonly string[],
    change?: Change,
  ): Promise<KeyRecord | undefined> {
    return this.updateExpiry(keyHash, change, {
      sets: [],
      adds: ['valid_until_ms :add', ...(lineage.length ? ['lineage :lineage'] : [])],
      ConditionExpression:
        'attribute_exists(key_hash) AND attribute_not_exists(deleted_at) AND valid_until_ms >= :now AND valid_until_ms <= :last',
      ExpressionAttributeValues: {
        ':add': addMs,
        ':now': nowMs,
        ':last': maxMs - addMs,
        ...(lineage.length ? { ':lineage': new Set(lineage) } : {}),
      },
    });
  }

  /**
   * Sets a key's expiry, if it is still `expectedMs` (compare-and-set); `lineage` joins its
   * lineage; `change`, when given, is stamped on the key (`psk.extended`).
   */
  async replaceExpiry(
    keyHash: string,
    expectedMs: number,
    newMs: number,
    lineage: readonly string[],
    change?: Change,
  ): Promise<KeyRecord | undefined> {
    return this.updateExpiry(keyHash, change, {
      sets: ['valid_until_ms = :new'],
      adds: lineage.length ? ['lineage :lineage'] : [],
      ConditionExpression: 'attribute_not_exists(deleted_at) AND valid_until_ms = :expected',
      ExpressionAttributeValues: {
        ':new': newMs,
        ':expected': expectedMs,
        ...(lineage.length ? { ':lineage': new Set(lineage) } : {}),
      },
    });
  }

  private async updateExpiry(
    keyHash: string,
    change: Change | undefined,
    update: {
      sets: string[];
      adds: string[];
      ConditionExpression: string;
      ExpressionAttributeValues: Record<string, unknown>;
    },
  ): Promise<KeyRecord | undefined> {
    const stamp = change ? stampUpdate(change) : undefined;
    const sets = stamp ? [...update.sets, stamp.set] : update.sets;
    const adds = stamp ? [...update.adds, stamp.add] : update.adds;
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: keyHash },
          UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', adds.length ? `ADD ${adds.join(', ')}` : '']
            .filter(Boolean)
            .join(' '),
          ConditionExpression: update.ConditionExpression,
          ...(stamp ? { ExpressionAttributeNames: stamp.names } : {}),
          ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ...stamp?.values },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return fromItem(out.Attributes ?? {});
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }
}

/** Lineage is a string set in the table (so extensions can join it atomically), an array here. */
function toItem(record: KeyRecord): Record<string, unknown> {
  const { lineage, ...rest } = record;
  return lineage?.length ? { ...rest, lineage: new Set(lineage) } : rest;
}

/** A stored key as services see it: without its listing attributes and its change stamp. */
export function fromItem(item: Record<string, unknown>): KeyRecord {
  const record = withoutListAttributes<KeyRecord & { lineage?: Iterable<string> }>(unstamped(item));
  return record.lineage ? { ...record, lineage: [...record.lineage] } : record;
}
