import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { decodeCursor, queryPage } from './pagination.js';
import { type Page } from '../page.js';

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
  /** Newest first (the index's sort key descending); oldest first when left out. */
  readonly newestFirst?: boolean;
  /** Only items whose attribute equals the value, for every pair (filtered in the Query, like `without`). */
  readonly where?: readonly (readonly [attribute: string, value: string])[];
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
  const names: Record<string, string> = { '#p': partition.name };
  const values: Record<string, unknown> = { ':p': partition.value };
  const filters: string[] = [];
  if (page.without) {
    names['#w'] = page.without;
    filters.push('attribute_not_exists(#w)');
  }
  (page.where ?? []).forEach(([attribute, value], i) => {
    names[`#f${i}`] = attribute;
    values[`:f${i}`] = value;
    filters.push(`#f${i} = :f${i}`);
  });
  return queryPage(
    page.db,
    {
      TableName: page.tableName,
      IndexName: indexName,
      KeyConditionExpression: '#p = :p',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
      ...(page.newestFirst ? { ScanIndexForward: false } : {}),
    },
    {
      limit: page.limit,
      start,
      keyAttributes: [...expected],
      ...(filters.length ? { readAhead: FILTERED_READ_AHEAD } : {}),
    },
  );
}

/** Items a filtered listing Query evaluates at least (what DynamoDB's Limit counts). */
const FILTERED_READ_AHEAD = 100;

/** Every item, oldest first (newest first with `newestFirst`; index `by_created`). */
export function listAll(page: IndexPage, listPk: string): Promise<Page<Record<string, unknown>>> {
  return queryIndex(page, 'by_created', { name: 'list_pk', value: listPk }, 'created_key');
}

/**
 * One partition of an index, e.g. an owner's items or a sparse index's (oldest first;
 * newest first with `newestFirst`).
 */
export function listPartition(
  page: IndexPage,
  index: { name: string; partitionKey: string; sortKey: string },
  value: string,
): Promise<Page<Record<string, unknown>>> {
  return queryIndex(page, index.name, { name: index.partitionKey, value }, index.sortKey);
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
