import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../aws/errors.js';
import { listAll, listAttributes, listOwned, withoutListAttributes } from '../aws/listing.js';
import type { Page } from '../aws/pagination.js';

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
  /** The creator's principal (API.md §1); absent on keys stored before principals were. */
  created_by_principal?: string;
  created_at: string;
  /**
   * Hashes of the keys this key was made or extended through, oldest first: it stops when
   * any of them is deleted or expires (key lineage, API.md §1).
   */
  lineage?: string[];
  /** Expiry in epoch milliseconds: a number, so extensions can be added atomically. */
  valid_until_ms: number;
  deleted_at?: string;
}

const LIST_PK = 'key';

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

  /** Stores a new key; false when a key with that hash exists already. */
  async createIfAbsent(record: KeyRecord): Promise<boolean> {
    return conditionally(
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...toItem(record), ...listAttributes(LIST_PK, record.created_at, record.key_hash) },
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

  /** Marks a key deleted unless it already is; false when it was. */
  async markDeleted(keyHash: string, at: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: keyHash },
          UpdateExpression: 'SET deleted_at = :at',
          ConditionExpression: 'attribute_exists(key_hash) AND attribute_not_exists(deleted_at)',
          ExpressionAttributeValues: { ':at': at },
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
   * is not live or the bound would be passed.
   */
  async addToExpiry(
    keyHash: string,
    addMs: number,
    nowMs: number,
    maxMs: number,
    lineage: readonly string[],
  ): Promise<KeyRecord | undefined> {
    return this.updateExpiry(keyHash, {
      UpdateExpression: `ADD valid_until_ms :add${lineage.length ? ', lineage :lineage' : ''}`,
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

  /** Sets a key's expiry, if it is still `expectedMs` (compare-and-set); `lineage` joins its lineage. */
  async replaceExpiry(
    keyHash: string,
    expectedMs: number,
    newMs: number,
    lineage: readonly string[],
  ): Promise<KeyRecord | undefined> {
    return this.updateExpiry(keyHash, {
      UpdateExpression: `SET valid_until_ms = :new${lineage.length ? ' ADD lineage :lineage' : ''}`,
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
    update: {
      UpdateExpression: string;
      ConditionExpression: string;
      ExpressionAttributeValues: Record<string, unknown>;
    },
  ): Promise<KeyRecord | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: keyHash },
          ...update,
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

function fromItem(item: Record<string, unknown>): KeyRecord {
  const record = withoutListAttributes<KeyRecord & { lineage?: Iterable<string> }>(item);
  return record.lineage ? { ...record, lineage: [...record.lineage] } : record;
}
