import { GetCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KeyRecord } from '../../shared/auth/key-store.js';
import { conditionally } from '../../shared/aws/errors.js';
import { decodeCursor, mergedQueryPage } from '../../shared/aws/pagination.js';
import { type Page } from '../../shared/page.js';
import { Conflict } from '../../shared/errors.js';
import { stampNew, stampUpdate, unstamped } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { DataProduct, KeyInfo } from './schemas.js';
import { AGAIN, retry } from '../../shared/retry.js';

/** A data product as stored: the public fields, the creator's principal and, once deleted, when. */
export interface DataProductRecord extends DataProduct {
  /** The creator's principal (docs/identity-and-keys.md, principals), beside the name shown in `created_by`. */
  created_by_principal: string;
  deleted_at?: string;
}

/** The `by_name` partition of the live products. */
const LIST_PK = 'product';
/** Creations whose name claim met another transaction at that moment are tried this often. */
const CREATE_ATTEMPTS = 3;

const productKey = (id: string) => `P#${id}`;
const nameKey = (name: string) => `N#${name}`;

/** The subject of a product's domain events (docs/events-and-webhooks.md). */
export const productSubject = (id: string) => `dataproducts/${id}`;

/** The data products table as services see it. */
export interface DataProductStore {
  /** Stores a new product and claims its name; false when another product has the name. */
  create(product: DataProductRecord, change: Change): Promise<boolean>;
  /** A product, deleted ones too (with `deleted_at`); read consistently. */
  get(id: string): Promise<DataProductRecord | undefined>;
  /** Whether the product was deleted: false for a live product and for an id never stored. */
  isDeleted(id: string): Promise<boolean>;
  /** Live products by name: all of them, or those of some roles. */
  list(
    roles: readonly string[] | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<DataProductRecord>>;
  /**
   * Marks a live product deleted (stamped `change`), takes it off the lists and releases its
   * name; false when it is not there or deleted already.
   */
  markDeleted(product: DataProductRecord, change: Change): Promise<boolean>;
}

/**
 * DynamoDB repository for data products (TABLES.dataProducts): each product with the claim
 * on its name, written and removed in one transaction. Writes stamp the product with their
 * change (`dataproduct.created`, `.deleted`); a deleted product is kept, marked.
 */
export class DynamoDataProductStore implements DataProductStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Stores a new product and claims its name; false when another product has the name.
   * A claim that met a concurrent transaction is tried again, so of two creations of one
   * name one is stored and the other finds the name taken.
   */
  async create(product: DataProductRecord, change: Change): Promise<boolean> {
    const created = await retry(
      async () => {
        try {
          await this.db.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Put: {
                    TableName: this.tableName,
                    Item: {
                      pk: productKey(product.id),
                      ...product,
                      list_pk: LIST_PK,
                      list_role: product.role_name,
                      ...stampNew(change),
                    },
                    ConditionExpression: 'attribute_not_exists(pk)',
                  },
                },
                {
                  Put: {
                    TableName: this.tableName,
                    Item: { pk: nameKey(product.name), id: product.id },
                    ConditionExpression: 'attribute_not_exists(pk)',
                  },
                },
              ],
            }),
          );
          return true;
        } catch (err) {
          const codes = cancellationCodes(err);
          if (!codes) throw err;
          if (codes.includes('ConditionalCheckFailed')) return false;
          return AGAIN;
        }
      },
      { attempts: CREATE_ATTEMPTS },
    );
    if (created.done) return created.value;
    throw new Conflict(`Data product ${product.name} is being created concurrently`);
  }

  /** A product, deleted ones too (with `deleted_at`); consistent, so a product just made is found. */
  async get(id: string): Promise<DataProductRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: productKey(id) }, ConsistentRead: true }),
    );
    return out.Item ? toDataProductRecord(out.Item) : undefined;
  }

  /**
   * Whether the product was deleted: false for a live product and for an id never stored
   * (keys made for any id before products were stored keep working). Reads one attribute.
   */
  async isDeleted(id: string): Promise<boolean> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: productKey(id) },
        ProjectionExpression: 'deleted_at',
        ConsistentRead: true,
      }),
    );
    return typeof out.Item?.deleted_at === 'string';
  }

  /**
   * Live products by name: all of them (`by_name`), or those of some roles (one Query of
   * `by_role` per role, merged by name), so a role filter reads only that role's products.
   * The cursor is the last name handed out; each Query continues after it.
   */
  async list(
    roles: readonly string[] | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<DataProductRecord>> {
    const after = decodeCursor(cursor, isNameKey)?.name as string | undefined;
    const partitions = roles?.length
      ? roles.map((role) => ({ index: 'by_role', attribute: 'list_role', value: role }))
      : [{ index: 'by_name', attribute: 'list_pk', value: LIST_PK }];
    const page = await mergedQueryPage(
      this.db,
      partitions.map((p) => ({
        TableName: this.tableName,
        IndexName: p.index,
        KeyConditionExpression: after === undefined ? '#p = :p' : '#p = :p AND #name > :after',
        ExpressionAttributeNames: { '#p': p.attribute, ...(after === undefined ? {} : { '#name': 'name' }) },
        ExpressionAttributeValues: { ':p': p.value, ...(after === undefined ? {} : { ':after': after }) },
      })),
      { limit, sortKey: 'name', keyAttributes: ['name'] },
    );
    return { items: page.items.map(toDataProductRecord), nextCursor: page.nextCursor };
  }

  /**
   * Marks a live product deleted (stamped `change`), takes it off the lists and releases its
   * name, in one transaction; false when it is not there or deleted already.
   */
  async markDeleted(product: DataProductRecord, change: Change): Promise<boolean> {
    const stamp = stampUpdate(change);
    return conditionally(
      this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: { pk: productKey(product.id) },
                UpdateExpression: `SET deleted_at = :at, ${stamp.set} REMOVE list_pk, list_role ADD ${stamp.add}`,
                ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at)',
                ExpressionAttributeNames: stamp.names,
                ExpressionAttributeValues: { ':at': change.at, ...stamp.values },
              },
            },
            {
              Delete: {
                TableName: this.tableName,
                Key: { pk: nameKey(product.name) },
                ConditionExpression: '#id = :id',
                ExpressionAttributeNames: { '#id': 'id' },
                ExpressionAttributeValues: { ':id': product.id },
              },
            },
          ],
        }),
      ),
    );
  }
}

/** A list cursor: the name of the last product handed out. */
const isNameKey = (k: Record<string, unknown>) => typeof k.name === 'string' && Object.keys(k).length === 1;

/** The codes of a cancelled transaction's items, or undefined for any other failure. */
function cancellationCodes(err: unknown): string[] | undefined {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | undefined;
  if (e?.name !== 'TransactionCanceledException') return undefined;
  return (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
}

/** Whether a stored item is a product (not the claim on a name). */
export const isProductItem = (item: Record<string, unknown>): boolean =>
  typeof item.pk === 'string' && item.pk.startsWith('P#');

/** A stored product as services see it: without its key, listing attributes and change stamp. */
export function toDataProductRecord(item: Record<string, unknown>): DataProductRecord {
  const { pk: _pk, list_pk: _list, list_role: _role, ...rest } = unstamped(item);
  return rest as unknown as DataProductRecord;
}

/** The public record, fields in the contract's order: what the list answers, and its events' data. */
export const toDataProduct = (r: DataProduct): DataProduct => ({
  id: r.id,
  name: r.name,
  role_name: r.role_name,
  domain_urn: r.domain_urn,
  // a product made without SQL is stored with query null
  query: r.query ?? null,
  is_view: r.is_view,
  created_by: r.created_by,
  created_at: r.created_at,
});

/**
 * A pre-shared key (stored by shared/auth/key-store.ts) as its list answers it (no secret, no
 * hash): also the data of its domain events.
 */
export const toKeyInfo = (r: KeyRecord): KeyInfo => ({
  psk: r.psk,
  dataproduct_id: r.dataproduct_id,
  description: r.description,
  valid_until: new Date(r.valid_until_ms).toISOString(),
  created_by: r.created_by,
  created_at: r.created_at,
  deleted_at: r.deleted_at ?? null,
});
