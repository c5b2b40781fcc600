import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { decodeCursor, queryPage, type Page } from './pagination.js';

/**
 * Listing support for tables with the `by_created` index (see infra/tables.ts): the
 * attributes every listable item carries, and one-Query pages over that index or over
 * an owner index.
 */
export const listAttributes = (listPk: string, createdAt: string, id: string) => ({
  list_pk: listPk,
  created_key: `${createdAt}#${id}`,
});

/** An item without its listing attributes. */
export function withoutListAttributes<T>(item: Record<string, unknown>): T {
  const { list_pk: _pk, created_key: _key, ...rest } = item;
  return rest as T;
}

export interface IndexPage {
  readonly db: DynamoDBDocumentClient;
  readonly tableName: string;
  /** The table's own key attribute names (they are part of an index's page key). */
  readonly tableKeys: readonly string[];
  readonly limit: number;
  readonly cursor: string | undefined;
  /**
   * Leave out items that carry this attribute (deleted keys, reserved names). Filtered in
   * the Query, so a page is still full when enough items follow, and never empty with a
   * cursor.
   */
  readonly without?: string;
}

async function queryIndex(
  page: IndexPage,
  indexName: string,
  partition: { name: string; value: string },
  sortKeyName: string,
): Promise<Page<Record<string, unknown>>> {
  const expected = new Set([...page.tableKeys, partition.name, sortKeyName]);
  const start = decodeCursor(
    page.cursor,
    (k) =>
      k[partition.name] === partition.value &&
      Object.keys(k).length === expected.size &&
      Object.keys(k).every((name) => expected.has(name) && typeof k[name] === 'string' && k[name] !== ''),
  );
  return queryPage(
    page.db,
    {
      TableName: page.tableName,
      IndexName: indexName,
      KeyConditionExpression: '#p = :p',
      ExpressionAttributeNames: { '#p': partition.name, ...(page.without ? { '#w': page.without } : {}) },
      ExpressionAttributeValues: { ':p': partition.value },
      ...(page.without ? { FilterExpression: 'attribute_not_exists(#w)' } : {}),
    },
    { limit: page.limit, start, keyAttributes: [...expected] },
  );
}

/** Every item, oldest first (index `by_created`). */
export function listAll(page: IndexPage, listPk: string): Promise<Page<Record<string, unknown>>> {
  return queryIndex(page, 'by_created', { name: 'list_pk', value: listPk }, 'created_key');
}

/** The index of items by their owner's principal (infra/tables.ts: `by_owner_principal`). */
export const OWNER_PRINCIPAL_INDEX = { name: 'by_owner_principal', ownerAttribute: 'owner_principal' } as const;

/** One owner's items, oldest first (an index keyed by the owner and `created_at`). */
export function listOwned(
  page: IndexPage,
  index: { name: string; ownerAttribute: string },
  owner: string,
): Promise<Page<Record<string, unknown>>> {
  return queryIndex(page, index.name, { name: index.ownerAttribute, value: owner }, 'created_at');
}
