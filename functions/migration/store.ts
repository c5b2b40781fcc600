import { GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../../shared/aws/errors.js';
import { listAll, listAttributes } from '../../shared/aws/listing.js';
import type { Page } from '../../shared/page.js';
import { outboxEvent, eventPut, lastSequence, type EventsTable } from '../../shared/events/events-table.js';
import { stampNew, stampUpdate, unstamped } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import { AGAIN, retry } from '../../shared/retry.js';
import type { Sealed } from '../../shared/secrets.js';
import {
  CONFIG_FIELDS,
  type ConfigField,
  type Connection,
  type CountField,
  type InfrastructureConfig,
  isSecretField,
} from './schemas.js';

export const CONFIG_ID = 'current';

/** The subject of the configuration's events (docs/events-and-webhooks.md). */
export const CONFIG_SUBJECT = 'migration/config';
/** The subject of a connection's events: its id is chosen by the caller, and can be used again. */
export const connectionSubject = (connId: string) => `migration/connections/${connId}`;

/** Rounds of a write that lost a race (the item changed or went in between) before giving up. */
const MAX_ATTEMPTS = 10;

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
  /** The change, stamped on the item for its domain event (`migration.config.updated`). */
  readonly change: Change;
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
    return toConfigItem(out.Item);
  }

  /**
   * One UpdateItem touching only the given fields, so concurrent updates of different
   * fields all survive. Returns the item as it was just before this write (empty when
   * there was none), or undefined when `requires` did not hold.
   */
  async update(write: ConfigWrite): Promise<ConfigItem | undefined> {
    const stamp = stampUpdate(write.change);
    const names: Record<string, string> = { '#updated_by': 'updated_by', '#updated_at': 'updated_at', ...stamp.names };
    const values: Record<string, unknown> = {
      ':updated_by': write.updatedBy,
      ':updated_at': write.updatedAt,
      ...stamp.values,
    };
    const sets = ['#updated_by = :updated_by', '#updated_at = :updated_at', stamp.set];
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
          UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''} ADD ${stamp.add}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_OLD',
        }),
      );
      return toConfigItem(out.Attributes);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }
}

/** The configuration item as the service sees it: without its key and its change stamp. */
export const toConfigItem = (item: Record<string, unknown> | undefined): ConfigItem => {
  const { id: _id, ...rest } = unstamped(item ?? {});
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
  /**
   * Creates or replaces a connection, stamped with `change` (`migration.connection.updated`);
   * undefined when a kept password's host condition failed.
   */
  put(write: ConnectionWrite, change: Change): Promise<ConnectionRecord | undefined>;
  get(connId: string): Promise<ConnectionRecord | undefined>;
  /** Oldest first. */
  list(limit: number, cursor: string | undefined): Promise<Page<ConnectionRecord>>;
  /**
   * Deletes a connection with its event (`change`, whose data is `data` of the connection
   * as it was); false when there was none.
   */
  delete(connId: string, change: Change, data: (before: ConnectionRecord) => Record<string, unknown>): Promise<boolean>;
  /**
   * Stamps a probe of the connection (`migration.connection.tested`) on it, if it is still
   * the one probed (last written at `updatedAt`); false when it changed or went since.
   */
  markTested(connId: string, updatedAt: string, change: Change): Promise<boolean>;
}

/** DynamoDB repository for the registry of workflow connections. */
export class DynamoConnectionStore implements ConnectionStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly eventsTable: EventsTable,
  ) {}

  /**
   * Creates or replaces a connection in one UpdateItem: created_at (and the listing
   * position) stay as they were; fields left empty are removed. A write that keeps the
   * stored password (undefined) is conditioned on the stored host being the written one
   * (or on there being no password), in the same write: a password never follows its
   * connection to another host, even when a concurrent write changed the host in
   * between. Undefined when that condition failed.
   *
   * The write is stamped with `change`. A stored connection counts its changes on (its
   * `ev_seq`); a new one goes on from the subject's last event, since an id can be used
   * again after a deletion: so the write is conditioned on the connection existing, or
   * on it not existing, and tried again the other way when that lost a race.
   */
  async put(write: ConnectionWrite, change: Change): Promise<ConnectionRecord | undefined> {
    const written = await retry<ConnectionRecord | undefined>(
      async () => {
        try {
          return toConnectionRecord(await this.write(write, change, 'exists'));
        } catch (err) {
          if (!isConditionFailed(err)) throw err;
        }
        const stored = await this.raw(write.conn_id);
        if (stored) {
          // There, so the host condition failed (or it was written again in between: once more).
          if (write.password === undefined && stored.password !== undefined && stored.host !== write.host) {
            return undefined;
          }
          return AGAIN;
        }
        const last = await lastSequence(this.db, this.eventsTable, connectionSubject(write.conn_id));
        try {
          return toConnectionRecord(await this.write(write, change, last));
        } catch (err) {
          if (!isConditionFailed(err)) throw err;
        }
        return AGAIN;
      },
      { attempts: MAX_ATTEMPTS },
    );
    if (written.done) return written.value;
    throw new Error(`writing connection ${write.conn_id}: too many concurrent changes`);
  }

  /**
   * One conditional UpdateItem of the connection: of a stored one (`exists`, its sequence
   * counted on), or of a new one whose subject's last event had sequence `last`.
   */
  private async write(
    write: ConnectionWrite,
    change: Change,
    existing: 'exists' | number,
  ): Promise<Record<string, unknown>> {
    const names: Record<string, string> = {
      '#conn_id': 'conn_id',
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
    let condition: string;
    let add = '';
    if (existing === 'exists') {
      const stamp = stampUpdate(change);
      Object.assign(names, stamp.names);
      Object.assign(values, stamp.values);
      sets.push(stamp.set);
      add = ` ADD ${stamp.add}`;
      condition = 'attribute_exists(#conn_id)';
      if (write.password === undefined) {
        names['#password'] = 'password';
        condition += ' AND (attribute_not_exists(#password) OR #host = :host)';
      }
    } else {
      // New: nothing stored, no password to keep.
      for (const [attr, value] of Object.entries(stampNew(change, existing))) {
        names[`#${attr}`] = attr;
        values[`:${attr}`] = value;
        sets.push(`#${attr} = :${attr}`);
      }
      condition = 'attribute_not_exists(#conn_id)';
    }
    if (write.password !== undefined) assign('password', write.password);
    const out = await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { conn_id: write.conn_id },
        UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}${add}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return out.Attributes!;
  }

  async get(connId: string): Promise<ConnectionRecord | undefined> {
    const item = await this.raw(connId);
    return item ? toConnectionRecord(item) : undefined;
  }

  /** Oldest first. */
  async list(limit: number, cursor: string | undefined): Promise<Page<ConnectionRecord>> {
    const page = await listAll(
      { db: this.db, tableName: this.tableName, tableKeys: ['conn_id'], limit, cursor },
      LIST_PK,
    );
    return { items: page.items.map(toConnectionRecord), nextCursor: page.nextCursor };
  }

  /**
   * Deletes a connection and records its event in one transaction, conditioned on the
   * connection being as it was read (its sequence): a change in between makes it read
   * and try again, so the event says what was deleted. False when there was none.
   */
  async delete(
    connId: string,
    change: Change,
    data: (before: ConnectionRecord) => Record<string, unknown>,
  ): Promise<boolean> {
    const deleted = await retry(
      async () => {
        const item = await this.raw(connId);
        if (!item) return false;
        const seq = typeof item.ev_seq === 'number' ? item.ev_seq : undefined;
        const event = outboxEvent(
          this.eventsTable,
          connectionSubject(connId),
          change,
          seq ?? 0,
          data(toConnectionRecord(item)),
        );
        // changed or deleted meanwhile (or a concurrent write): read it again
        if (
          await conditionally(
            this.db.send(
              new TransactWriteCommand({
                TransactItems: [
                  {
                    Delete: {
                      TableName: this.tableName,
                      Key: { conn_id: connId },
                      ConditionExpression:
                        seq === undefined
                          ? 'attribute_exists(conn_id) AND attribute_not_exists(ev_seq)'
                          : 'attribute_exists(conn_id) AND ev_seq = :seq',
                      ...(seq === undefined ? {} : { ExpressionAttributeValues: { ':seq': seq } }),
                    },
                  },
                  eventPut(this.eventsTable, event),
                ],
              }),
            ),
          )
        )
          return true;
        return AGAIN;
      },
      { attempts: MAX_ATTEMPTS },
    );
    if (deleted.done) return deleted.value;
    throw new Error(`deleting connection ${connId}: too many concurrent changes`);
  }

  async markTested(connId: string, updatedAt: string, change: Change): Promise<boolean> {
    const stamp = stampUpdate(change);
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { conn_id: connId },
          UpdateExpression: `SET ${stamp.set} ADD ${stamp.add}`,
          ConditionExpression: 'attribute_exists(#conn_id) AND #updated_at = :probed',
          ExpressionAttributeNames: { '#conn_id': 'conn_id', '#updated_at': 'updated_at', ...stamp.names },
          ExpressionAttributeValues: { ':probed': updatedAt, ...stamp.values },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
  }

  private async raw(connId: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { conn_id: connId }, ConsistentRead: true }),
    );
    return out.Item;
  }
}

/** A stored connection as the service sees it: only its fields (never the change stamp). */
export const toConnectionRecord = (item: Record<string, unknown>): ConnectionRecord => ({
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

/** The configuration as its GET answers it (no write-only field): also its events' data. */
export function toInfrastructureConfig(item: ConfigItem): InfrastructureConfig {
  const out: Record<string, unknown> = {};
  for (const field of CONFIG_FIELDS) if (!isSecretField(field)) out[field] = item[field] ?? null;
  out.updated_by = item.updated_by ?? null;
  out.updated_at = item.updated_at ?? null;
  return out as InfrastructureConfig;
}

/** A connection as its GET answers it (never its password): also its events' data. */
export function toConnection(r: ConnectionRecord): Connection {
  return {
    conn_id: r.conn_id,
    conn_type: r.conn_type,
    host: r.host,
    port: r.port,
    schema: r.schema,
    login: r.login,
    extra: r.extra,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
