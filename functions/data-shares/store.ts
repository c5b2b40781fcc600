import {
  DeleteCommand,
  GetCommand,
  PutCommand,
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
import type { Page } from '../../shared/aws/pagination.js';

const LIST_PK = 'share';

/** A share in the registry (TABLES.dataShares). */
export interface ShareItem {
  name: string;
  /** The owner's name, for showing. */
  owner: string;
  /** The owner's principal (API.md §1); absent on shares stored before principals were. */
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

/** What the identity provider reported for the created client. */
export interface ClientFields {
  idp_id: string;
  enabled: boolean;
  service_accounts_enabled: boolean;
}

/** The data-share registry as the service sees it (its public methods; DynamoDataShareStore below implements them). */
export type DataShareStore = Pick<DynamoDataShareStore, keyof DynamoDataShareStore>;

/** DynamoDB repository for the data-share registry. */
export class DynamoDataShareStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
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

  /** Turns our reservation into a share; undefined when the reservation is no longer ours. */
  async complete(name: string, reservation: string, client: ClientFields): Promise<ShareItem | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { name },
          UpdateExpression: 'SET #idp_id = :id, #enabled = :enabled, #sae = :sae REMOVE #reservation',
          ConditionExpression: '#reservation = :reservation',
          ExpressionAttributeNames: {
            '#idp_id': 'idp_id',
            '#enabled': 'enabled',
            '#sae': 'service_accounts_enabled',
            '#reservation': 'reservation',
          },
          ExpressionAttributeValues: {
            ':id': client.idp_id,
            ':enabled': client.enabled,
            ':sae': client.service_accounts_enabled,
            ':reservation': reservation,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return strip(out.Attributes ?? {});
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

  async get(name: string): Promise<ShareItem | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { name }, ConsistentRead: true }));
    return out.Item ? strip(out.Item) : undefined;
  }

  /** Every share, oldest first; reservations in flight are left out. */
  async list(limit: number, cursor: string | undefined): Promise<Page<ShareItem>> {
    return complete(await listAll(this.page(limit, cursor), LIST_PK));
  }

  /** The shares of the principal `owner`, oldest first; reservations in flight are left out. */
  async listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<ShareItem>> {
    return complete(await listOwned(this.page(limit, cursor), OWNER_PRINCIPAL_INDEX, owner));
  }

  /** Removes a share; false when there was none. */
  delete(name: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { name },
          ConditionExpression: 'attribute_exists(#name)',
          ExpressionAttributeNames: { '#name': 'name' },
        }),
      ),
    );
  }

  /** Pages of shares; names reserved by a creation in flight are not shares yet. */
  private page(limit: number, cursor: string | undefined) {
    return { db: this.db, tableName: this.tableName, tableKeys: ['name'], limit, cursor, without: 'reservation' };
  }
}

const strip = (item: Record<string, unknown>) => withoutListAttributes<ShareItem>(item);

function complete(page: Page<Record<string, unknown>>): Page<ShareItem> {
  return { items: page.items.map(strip), nextCursor: page.nextCursor };
}
