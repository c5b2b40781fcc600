import { DeleteCommand, GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../../shared/aws/errors.js';
import { listAll, listAttributes } from '../../shared/aws/listing.js';
import type { Page } from '../../shared/aws/pagination.js';
import type { Sealed } from '../../shared/secrets.js';
import type { ConfigField, CountField } from './schemas.js';

const CONFIG_ID = 'current';

/** The configuration item as stored: plain values, the secret keys sealed. */
export type ConfigItem = Partial<Record<ConfigField, string | number | Sealed>> & {
  updated_by?: string;
  updated_at?: string;
};

export interface ConfigWrite {
  readonly set: Partial<Record<ConfigField, string | number | Sealed>>;
  readonly remove: readonly ConfigField[];
  readonly updatedBy: string;
  readonly updatedAt: string;
  /** The write happens only if this field is stored (`present`) or is not. */
  readonly requires?: { readonly field: CountField; readonly present: boolean };
}

/** The one migration configuration item. */
export interface ConfigStore {
  get(): Promise<ConfigItem>;
  /** Writes only the given fields; the item as it was before, or undefined when `requires` did not hold. */
  update(write: ConfigWrite): Promise<ConfigItem | undefined>;
}

/** DynamoDB repository for the one migration configuration item (TABLES.migrationConfig). */
export class DynamoConfigStore implements ConfigStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(): Promise<ConfigItem> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { id: CONFIG_ID }, ConsistentRead: true }),
    );
    return withoutId(out.Item);
  }

  /**
   * One UpdateItem touching only the given fields, so concurrent updates of different
   * fields all survive. Returns the item as it was just before this write (empty when
   * there was none), or undefined when `requires` did not hold.
   */
  async update(write: ConfigWrite): Promise<ConfigItem | undefined> {
    const names: Record<string, string> = { '#updated_by': 'updated_by', '#updated_at': 'updated_at' };
    const values: Record<string, unknown> = { ':updated_by': write.updatedBy, ':updated_at': write.updatedAt };
    const sets = ['#updated_by = :updated_by', '#updated_at = :updated_at'];
    Object.entries(write.set).forEach(([field, value], i) => {
      names[`#s${i}`] = field;
      values[`:s${i}`] = value;
      sets.push(`#s${i} = :s${i}`);
    });
    const removes = write.remove.map((field, i) => {
      names[`#r${i}`] = field;
      return `#r${i}`;
    });
    let condition: string | undefined;
    if (write.requires) {
      names['#pair'] = write.requires.field;
      condition = write.requires.present ? 'attribute_exists(#pair)' : 'attribute_not_exists(#pair)';
    }
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id: CONFIG_ID },
          UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_OLD',
        }),
      );
      return withoutId(out.Attributes);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }
}

const withoutId = (item: Record<string, unknown> | undefined): ConfigItem => {
  const { id: _id, ...rest } = item ?? {};
  return rest as ConfigItem;
};

const LIST_PK = 'connection';

/** A workflow connection as stored (TABLES.migrationConnections): the password sealed. */
export interface ConnectionRecord {
  conn_id: string;
  conn_type: string;
  host: string;
  port: number | null;
  schema: string | null;
  login: string | null;
  password: Sealed | null;
  extra: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}

export interface ConnectionWrite {
  readonly conn_id: string;
  readonly conn_type: string;
  readonly host: string;
  readonly port: number | null;
  readonly schema: string | null;
  readonly login: string | null;
  readonly extra: Record<string, unknown> | null;
  /**
   * A sealed password sets it, null removes it, undefined keeps the stored one: but only
   * for the host it was given for (see `put`).
   */
  readonly password: Sealed | null | undefined;
  readonly at: string;
}

const OPTIONAL_FIELDS = ['port', 'schema', 'login'] as const;

/** The registry of workflow connections. */
export interface ConnectionStore {
  /** Creates or replaces a connection; undefined when a kept password's host condition failed. */
  put(write: ConnectionWrite): Promise<ConnectionRecord | undefined>;
  get(connId: string): Promise<ConnectionRecord | undefined>;
  /** Oldest first. */
  list(limit: number, cursor: string | undefined): Promise<Page<ConnectionRecord>>;
  /** Deletes a connection; false when there was none. */
  delete(connId: string): Promise<boolean>;
}

/** DynamoDB repository for the registry of workflow connections. */
export class DynamoConnectionStore implements ConnectionStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Creates or replaces a connection in one UpdateItem: created_at (and the listing
   * position) stay as they were; fields left empty are removed. A write that keeps the
   * stored password (undefined) is conditioned on the stored host being the written one
   * (or on there being no password), in the same write: a password never follows its
   * connection to another host, even when a concurrent write changed the host in
   * between. Undefined when that condition failed.
   */
  async put(write: ConnectionWrite): Promise<ConnectionRecord | undefined> {
    const names: Record<string, string> = {
      '#conn_type': 'conn_type',
      '#host': 'host',
      '#updated_at': 'updated_at',
      '#created_at': 'created_at',
      '#list_pk': 'list_pk',
      '#created_key': 'created_key',
    };
    const listing = listAttributes(LIST_PK, write.at, write.conn_id);
    const values: Record<string, unknown> = {
      ':conn_type': write.conn_type,
      ':host': write.host,
      ':at': write.at,
      ':list_pk': listing.list_pk,
      ':created_key': listing.created_key,
    };
    const sets = [
      '#conn_type = :conn_type',
      '#host = :host',
      '#updated_at = :at',
      '#created_at = if_not_exists(#created_at, :at)',
      '#list_pk = :list_pk',
      '#created_key = if_not_exists(#created_key, :created_key)',
    ];
    const removes: string[] = [];
    const assign = (field: string, value: unknown) => {
      names[`#${field}`] = field;
      if (value === null) {
        removes.push(`#${field}`);
      } else {
        values[`:${field}`] = value;
        sets.push(`#${field} = :${field}`);
      }
    };
    for (const field of OPTIONAL_FIELDS) assign(field, write[field]);
    // JSON text: DynamoDB cannot hold every JSON value (numbers beyond its range, for one).
    assign('extra', write.extra === null ? null : JSON.stringify(write.extra));
    let condition: string | undefined;
    if (write.password !== undefined) assign('password', write.password);
    else {
      names['#password'] = 'password';
      condition = 'attribute_not_exists(#password) OR #host = :host';
    }
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { conn_id: write.conn_id },
          UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toRecord(out.Attributes!);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  async get(connId: string): Promise<ConnectionRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { conn_id: connId }, ConsistentRead: true }),
    );
    return out.Item ? toRecord(out.Item) : undefined;
  }

  /** Oldest first. */
  async list(limit: number, cursor: string | undefined): Promise<Page<ConnectionRecord>> {
    const page = await listAll(
      { db: this.db, tableName: this.tableName, tableKeys: ['conn_id'], limit, cursor },
      LIST_PK,
    );
    return { items: page.items.map(toRecord), nextCursor: page.nextCursor };
  }

  /** Deletes a connection; false when there was none. */
  async delete(connId: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { conn_id: connId },
          ConditionExpression: 'attribute_exists(conn_id)',
        }),
      ),
    );
  }
}

const toRecord = (item: Record<string, unknown>): ConnectionRecord => ({
  conn_id: item.conn_id as string,
  conn_type: item.conn_type as string,
  host: item.host as string,
  port: (item.port as number | undefined) ?? null,
  schema: (item.schema as string | undefined) ?? null,
  login: (item.login as string | undefined) ?? null,
  password: (item.password as Sealed | undefined) ?? null,
  extra: typeof item.extra === 'string' ? (JSON.parse(item.extra) as Record<string, unknown>) : null,
  created_at: item.created_at as string,
  updated_at: item.updated_at as string,
});
