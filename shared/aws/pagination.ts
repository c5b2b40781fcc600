import { QueryCommand, type DynamoDBDocumentClient, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { Invalid, valueError } from '../errors.js';
import type { Page } from '../page.js';

/** Opaque list cursors: the DynamoDB `LastEvaluatedKey`, base64url-encoded JSON. */
export function encodeCursor(key: Record<string, unknown> | undefined): string | undefined {
  return key ? Buffer.from(JSON.stringify(key), 'utf8').toString('base64url') : undefined;
}

/** A cursor this service did not hand out: the `cursor` query parameter is invalid. */
export class InvalidCursor extends Invalid {
  constructor(cursor: string) {
    super([valueError(['query', 'cursor'], 'not a cursor returned in X-Next-Cursor', cursor)]);
  }
}

/**
 * Decodes a cursor; `fits` checks that it is a key of the query being continued (a
 * foreign key would make DynamoDB refuse the query).
 */
export function decodeCursor(
  cursor: string | undefined,
  fits: (key: Record<string, unknown>) => boolean,
): Record<string, unknown> | undefined {
  if (cursor === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value) && fits(value as Record<string, unknown>)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // fall through: any undecodable cursor is the caller's mistake
  }
  throw new InvalidCursor(cursor);
}

/**
 * One page of a Query: at most `limit` items from `start` on, and a cursor only when more
 * remain. DynamoDB hands back a `LastEvaluatedKey` whenever it stopped at `Limit`, also
 * when nothing follows; so this reads one item ahead (following `LastEvaluatedKey` past
 * the 1 MB a Query reads) and makes the cursor from the last item handed out: its
 * `keyAttributes` (the table's key and, for an index, the index's key), which must be
 * among the projected attributes.
 */
export async function queryPage(
  db: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'Limit' | 'ExclusiveStartKey'>,
  page: {
    limit: number;
    start: Record<string, unknown> | undefined;
    keyAttributes: readonly string[];
    /**
     * Items each Query evaluates at least: with a filter, DynamoDB's Limit counts the items
     * read before filtering, so a selective filter would take a round trip per item or two.
     */
    readAhead?: number;
  },
): Promise<Page<Record<string, unknown>>> {
  const items: Record<string, unknown>[] = [];
  let start = page.start;
  do {
    const out = await db.send(
      new QueryCommand({
        ...input,
        Limit: Math.max(page.limit + 1 - items.length, page.readAhead ?? 0),
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start && items.length <= page.limit);
  return pageOf(items, page);
}

/**
 * The page of `items` read one past `limit` when more remain: at most `limit` of them, and
 * a cursor (the last one's `keyAttributes`) only when one more was read.
 */
function pageOf(
  items: Record<string, unknown>[],
  page: { limit: number; keyAttributes: readonly string[] },
): Page<Record<string, unknown>> {
  if (items.length <= page.limit) return { items, nextCursor: undefined };
  const last = items[page.limit - 1]!;
  const key = Object.fromEntries(page.keyAttributes.map((name) => [name, last[name]]));
  return { items: items.slice(0, page.limit), nextCursor: encodeCursor(key) };
}

/**
 * Every item a Query finds, following `LastEvaluatedKey` page by page (each page reads at
 * most 1 MB). For the lists a rule needs whole; a list an API answers is paged by cursor.
 */
export async function queryAll(
  db: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * One page of several Queries merged in the order of a sort key they share: each Query is
 * one partition of an index read ascending by `sortKey` (string values, unique across the
 * Queries, compared as DynamoDB does: see `before`), and continues past the page before through its own key condition. At most
 * `limit` items, and a cursor (the last item's `keyAttributes`) only when more remain, as
 * `queryPage`. Each Query reads its share of the page at a time, and again only once all
 * it read was handed out: the items read stay within about twice the page plus two per
 * Query, however many items lie between them in the other partitions.
 */
export async function mergedQueryPage(
  db: DynamoDBDocumentClient,
  inputs: readonly Omit<QueryCommandInput, 'Limit' | 'ExclusiveStartKey'>[],
  page: { limit: number; sortKey: string; keyAttributes: readonly string[] },
): Promise<Page<Record<string, unknown>>> {
  const share = Math.ceil((page.limit + 1) / Math.max(inputs.length, 1));
  const streams = inputs.map((input) => ({
    input,
    read: [] as Record<string, unknown>[],
    taken: 0,
    next: undefined as Record<string, unknown> | undefined,
    started: false,
  }));
  type Stream = (typeof streams)[number];
  // Until the Query has an item not handed out yet, or has no more.
  const fill = async (s: Stream) => {
    while (s.taken === s.read.length && (!s.started || s.next)) {
      const out = await db.send(new QueryCommand({ ...s.input, Limit: share, ExclusiveStartKey: s.next }));
      s.started = true;
      s.read = out.Items ?? [];
      s.taken = 0;
      s.next = out.LastEvaluatedKey;
    }
  };
  const key = (s: Stream) => String(s.read[s.taken]![page.sortKey]);
  await Promise.all(streams.map(fill));
  const items: Record<string, unknown>[] = [];
  while (items.length <= page.limit) {
    let first: Stream | undefined;
    for (const s of streams) if (s.taken < s.read.length && (!first || before(key(s), key(first)))) first = s;
    if (!first) break;
    items.push(first.read[first.taken++]!);
    if (items.length <= page.limit) await fill(first);
  }
  return pageOf(items, page);
}

/**
 * Whether `a` sorts before `b` in DynamoDB's order of strings, their UTF-8 bytes: code
 * point order, which JavaScript's `<` (UTF-16 units) breaks beyond U+FFFF.
 */
const before = (a: string, b: string): boolean => Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0;

/**
 * An item of a sparse index read oldest first, with its place in it (its sort key): a list
 * merged from several such indexes continues after the last place it answered.
 */
export interface Positioned<T> {
  readonly position: string;
  readonly item: T;
}

/**
 * One read of such an index: its items in order, and whether the index may hold more after
 * them. A read answers fewer than it asked for not only at the end: DynamoDB stops a Query
 * at 1 MB of items read, so only the absence of `LastEvaluatedKey` says the end is reached.
 */
export interface PositionedPage<T> {
  readonly items: readonly Positioned<T>[];
  readonly more: boolean;
}
