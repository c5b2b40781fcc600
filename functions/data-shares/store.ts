import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../../shared/aws/errors.js';
import {
  listAll,
  listAttributes,
  listOwned,
  OWNER_PRINCIPAL_INDEX,
  withoutListAttributes,
} from '../../shared/aws/listing.js';
import type { Page } from '../../shared/page.js';
import { outboxEvent, eventPut, type EventsTable, lastSequence } from '../../shared/events/events-table.js';
import { stampUpdate, unstamped } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { IdpClient } from '../../shared/ports/idp.js';
import type { SharedClient } from './schemas.js';

const LIST_PK = 'share';
/** Index `by_idp_id` (infra/tables.ts): completed shares by their identity provider's id. */
const BY_IDP_ID = 'by_idp_id';

/** A share in the registry (TABLES.dataShares). */
export interface ShareItem {
  name: string;
  /** The owner's name, for showing. */
  owner: string;
  /** The owner's principal (docs/identity-and-keys.md, principals); absent on shares stored before principals were. */
  owner_principal?: string;
  description: string | null;
  tables: string[];
  created_at: string;
  /** The identity provider's client id (the share's name). */
  client_id: string;
  /** The identity provider's internal id; absent while the name is only reserved. */
  idp_id?: string;
  enabled?: boolean;
  service_accounts_enabled?: boolean;
  /** Present while the name is reserved and the client is being created. */
  reservation?: string;
}

export type NewShare = Omit<ShareItem, 'idp_id' | 'enabled' | 'service_accounts_enabled' | 'reservation'>;

/** A share as read, with the sequence of its last stamped change (`ev_seq`; absent on shares stored before events were). */
export interface StoredShare extends ShareItem {
  readonly seq: number | undefined;
}

/** The subject of a share's domain events (docs/events-and-webhooks.md): names can be used again, the subject goes on. */
export const shareSubject = (name: string) => `data-shares/${name}`;

/** What the identity provider reported for the created client. */
export interface ClientFields {
  idp_id: string;
  enabled: boolean;
  service_accounts_enabled: boolean;
}

/** The data-share registry as the service sees it. */
export interface DataShareStore {
  /**
   * Reserves the name; false when it is taken (a reservation made before `staleBefore`
   * belongs to a creation that died half way and is taken over).
   */
  reserve(share: NewShare, reservation: string, staleBefore: string): Promise<boolean>;
  /** Turns our reservation into a share, stamped with `change`; undefined when the reservation is no longer ours. */
  complete(name: string, reservation: string, client: ClientFields, change: Change): Promise<ShareItem | undefined>;
  /**
   * Records a rotation of the secret (never the secret itself) on the share created at
   * `createdAt`, not on one created again under its name; undefined when it is gone.
   */
  rotated(name: string, createdAt: string, client: ClientFields, change: Change): Promise<ShareItem | undefined>;
  /** Gives a reserved name back (only our own reservation). */
  release(name: string, reservation: string): Promise<void>;
  /** The share or reservation of that name, read consistently. */
  get(name: string): Promise<StoredShare | undefined>;
  /** The name of the share whose identity-provider id is `id`; eventually consistent, so read the share and check. */
  nameOfId(id: string): Promise<string | undefined>;
  /** Every share, oldest first; reservations are left out. */
  list(limit: number, cursor: string | undefined): Promise<Page<ShareItem>>;
  /** The shares of the principal `owner`, oldest first; reservations are left out. */
  listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<ShareItem>>;
  /**
   * Removes the share read as `share` with its deletion event (`data`: the share without its
   * secret), if unchanged since it was read; false when it is gone or changed.
   */
  delete(share: StoredShare, change: Change, data: Record<string, unknown>): Promise<boolean>;
}

/**
 * DynamoDB repository for the data-share registry. The writes that change a share stamp it
 * with their change (shared/events/stamp.ts): the completion of a creation, a rotation; a
 * deletion records its event in the events table in the deleting transaction. Reservations
 * are no shares and are never stamped. Without `events` (a store built alone, outside the
 * composition root) deletions record no event and creations start their sequence at 1.
 */
export class DynamoDataShareStore implements DataShareStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly events: EventsTable,
  ) {}

  /**
   * Reserves the name with one conditional put: it succeeds when the name is free, or
   * when it holds a reservation made before `staleBefore` (a creation that died half way).
   */
  reserve(share: NewShare, reservation: string, staleBefore: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...share, reservation, ...listAttributes(LIST_PK, share.created_at, share.name) },
          ConditionExpression:
            'attribute_not_exists(#name) OR (attribute_exists(#reservation) AND #created_at < :stale)',
          // `name` is a DynamoDB reserved word, hence the placeholders.
          ExpressionAttributeNames: { '#name': 'name', '#reservation': 'reservation', '#created_at': 'created_at' },
          ExpressionAttributeValues: { ':stale': staleBefore },
        }),
      ),
    );
  }

  /**
   * Turns our reservation into a share, stamped with its creation; undefined when the
   * reservation is no longer ours. The name may have been a share before: its subject's
   * sequence goes on from the last event recorded (read once the name is ours, so a
   * deletion of the earlier share is already recorded).
   */
  async complete(
    name: string,
    reservation: string,
    client: ClientFields,
    change: Change,
  ): Promise<ShareItem | undefined> {
    const last = await lastSequence(this.db, this.events, shareSubject(name));
    // The stamp of a new subject, continuing its sequence: `ev_seq` is set, not added to.
    const stamp = stampUpdate(change);
    const { ':ev_one': _one, ...stampValues } = stamp.values;
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { name },
          UpdateExpression: `SET #idp_id = :id, #enabled = :enabled, #sae = :sae, ${stamp.set}, #ev_seq = :ev_seq REMOVE #reservation`,
          ConditionExpression: '#reservation = :reservation',
          ExpressionAttributeNames: {
            '#idp_id': 'idp_id',
            '#enabled': 'enabled',
            '#sae': 'service_accounts_enabled',
            '#reservation': 'reservation',
            ...stamp.names,
          },
          ExpressionAttributeValues: {
            ':id': client.idp_id,
            ':enabled': client.enabled,
            ':sae': client.service_accounts_enabled,
            ':reservation': reservation,
            ...stampValues,
            ':ev_seq': last + 1,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toShareItem(out.Attributes ?? {});
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /**
   * Records a rotation of the share's secret (the secret itself is never stored): the
   * client's state as the identity provider reported it, stamped with the change. Only
   * the share created at `createdAt` (not one created again under its name); undefined
   * when it is gone.
   */
  async rotated(name: string, createdAt: string, client: ClientFields, change: Change): Promise<ShareItem | undefined> {
    const stamp = stampUpdate(change);
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { name },
          UpdateExpression: `SET #idp_id = :id, #enabled = :enabled, #sae = :sae, ${stamp.set} ADD ${stamp.add}`,
          ConditionExpression:
            'attribute_exists(#name) AND attribute_not_exists(#reservation) AND #created_at = :created',
          ExpressionAttributeNames: {
            '#name': 'name',
            '#idp_id': 'idp_id',
            '#enabled': 'enabled',
            '#sae': 'service_accounts_enabled',
            '#reservation': 'reservation',
            '#created_at': 'created_at',
            ...stamp.names,
          },
          ExpressionAttributeValues: {
            ':id': client.idp_id,
            ':enabled': client.enabled,
            ':sae': client.service_accounts_enabled,
            ':created': createdAt,
            ...stamp.values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toShareItem(out.Attributes ?? {});
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /** Gives a reserved name back (only our own reservation). */
  async release(name: string, reservation: string): Promise<void> {
    await conditionally(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { name },
          ConditionExpression: '#reservation = :reservation',
          ExpressionAttributeNames: { '#reservation': 'reservation' },
          ExpressionAttributeValues: { ':reservation': reservation },
        }),
      ),
    );
  }

  async get(name: string): Promise<StoredShare | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { name }, ConsistentRead: true }));
    if (!out.Item) return undefined;
    const seq = out.Item.ev_seq;
    return { ...toShareItem(out.Item), seq: typeof seq === 'number' ? seq : undefined };
  }

  /**
   * The name of the share whose identity-provider id is `id`, from the sparse `by_idp_id`
   * index (one Query, one item). The index is eventually consistent: the caller reads the
   * share itself by name and checks that it still has this id.
   */
  async nameOfId(id: string): Promise<string | undefined> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: BY_IDP_ID,
        KeyConditionExpression: '#idp_id = :id',
        ExpressionAttributeNames: { '#idp_id': 'idp_id', '#name': 'name' },
        ExpressionAttributeValues: { ':id': id },
        ProjectionExpression: '#name',
        Limit: 1,
      }),
    );
    const name = out.Items?.[0]?.name;
    return typeof name === 'string' ? name : undefined;
  }

  /** Every share, oldest first; reservations in flight are left out. */
  async list(limit: number, cursor: string | undefined): Promise<Page<ShareItem>> {
    return complete(await listAll(this.page(limit, cursor), LIST_PK));
  }

  /** The shares of the principal `owner`, oldest first; reservations in flight are left out. */
  async listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<ShareItem>> {
    return complete(await listOwned(this.page(limit, cursor), OWNER_PRINCIPAL_INDEX, owner));
  }

  /**
   * Removes the share read as `share` with its `data_share.deleted` event (`data`: the share
   * as GET answered it, without its secret) in one transaction, conditioned on the share
   * being unchanged since it was read; false when it is gone or changed (nothing is
   * deleted then). A reservation is never removed here.
   */
  async delete(share: StoredShare, change: Change, data: Record<string, unknown>): Promise<boolean> {
    const { name, seq } = share;
    const condition = {
      ConditionExpression: `attribute_exists(#name) AND attribute_not_exists(#reservation) AND ${
        seq === undefined ? 'attribute_not_exists(#seq)' : '#seq = :seq'
      }`,
      ExpressionAttributeNames: { '#name': 'name', '#reservation': 'reservation', '#seq': 'ev_seq' },
      ...(seq === undefined ? {} : { ExpressionAttributeValues: { ':seq': seq } }),
    };
    const Key = { name };
    const event = outboxEvent(this.events, shareSubject(name), change, seq ?? 0, data);
    return conditionally(
      this.db.send(
        new TransactWriteCommand({
          TransactItems: [{ Delete: { TableName: this.tableName, Key, ...condition } }, eventPut(this.events, event)],
        }),
      ),
    );
  }

  /** Pages of shares; names reserved by a creation in flight are not shares yet. */
  private page(limit: number, cursor: string | undefined) {
    return { db: this.db, tableName: this.tableName, tableKeys: ['name'], limit, cursor, without: 'reservation' };
  }
}

/** A stored share as the service sees it: listing attributes and the change stamp left out. */
export const toShareItem = (item: Record<string, unknown>) => withoutListAttributes<ShareItem>(unstamped(item));

function complete(page: Page<Record<string, unknown>>): Page<ShareItem> {
  return { items: page.items.map(toShareItem), nextCursor: page.nextCursor };
}

/**
 * The response for a share: the registry's fields, the client's current state when read.
 * With neither client nor secret, what lists answer and what the share's domain events
 * carry as data (never the secret).
 */
export function toDataShare(item: ShareItem, client: IdpClient | undefined, secret: string | null): SharedClient {
  return {
    id: client?.id ?? item.idp_id ?? '',
    client_id: item.client_id,
    name: item.name,
    enabled: client?.enabled ?? item.enabled ?? false,
    service_accounts_enabled: client?.service_accounts_enabled ?? item.service_accounts_enabled ?? false,
    secret,
    owner: item.owner,
    description: item.description ?? null,
    tables: item.tables ?? [],
    created_at: item.created_at,
  };
}
