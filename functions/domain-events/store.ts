import { GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailed } from '../../shared/aws/errors.js';
import { decodeCursor, mergedQueryPage, queryPage } from '../../shared/aws/pagination.js';
import { type Page } from '../../shared/page.js';
import { eventItem, type EventsTable, FEED_PARTITION, storedEvent } from '../../shared/events/events-table.js';
import type { DomainEvent } from '../../shared/events/types.js';

const FEED = FEED_PARTITION;
const TABLE_KEYS = ['subject', 'sequence'] as const;
const FEED_KEYS = [...TABLE_KEYS, 'feed', 'feed_key'] as const;

export interface FeedFilter {
  /** Only events of these types (`dpm.x.y`); none when empty. */
  readonly types?: readonly string[];
  readonly subject?: string;
  /** ISO 8601: recorded at or after. */
  readonly since?: string;
}

export type RecordResult = 'recorded' | 'duplicate' | 'conflict';

/** The events table (TABLES.domainEvents): the feed the API serves and the dispatcher reads. */
export interface EventStore {
  /**
   * Records an event once: a second delivery of the same stream record is a `duplicate`;
   * another event holding the place of its sequence is a `conflict`.
   */
  record(event: DomainEvent, now?: Date): Promise<RecordResult>;
  get(id: string): Promise<DomainEvent | undefined>;
  /** Oldest first: by sequence for one subject, else in the order the events were recorded. */
  list(filter: FeedFilter, limit: number, cursor: string | undefined): Promise<Page<DomainEvent>>;
}

/** DynamoDB repository for the events table. */
export class DynamoEventStore implements EventStore {
  private readonly tableName: string;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: EventsTable,
  ) {
    this.tableName = table.tableName;
  }

  /**
   * Records an event once: a second delivery of the same stream record finds its own event
   * there (`duplicate`); another event holding the place of its sequence is a `conflict`.
   */
  async record(event: DomainEvent, now = new Date()): Promise<RecordResult> {
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: eventItem(this.table, event, now),
          ConditionExpression: 'attribute_not_exists(subject)',
        }),
      );
      return 'recorded';
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      const existing = await this.db.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { subject: event.subject, sequence: event.sequence },
          ConsistentRead: true,
          ProjectionExpression: 'id',
        }),
      );
      return existing.Item?.id === event.id ? 'duplicate' : 'conflict';
    }
  }

  async get(id: string): Promise<DomainEvent | undefined> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'by_id',
        KeyConditionExpression: 'id = :id',
        ExpressionAttributeValues: { ':id': id },
        Limit: 1,
      }),
    );
    const key = out.Items?.[0];
    if (!key) return undefined;
    // by_id may project only keys: the whole event from the table
    const full = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { subject: key.subject, sequence: key.sequence } }),
    );
    return full.Item ? storedEvent(full.Item) : undefined;
  }

  /** Oldest first: by sequence for one subject, else in the order the events were recorded. */
  async list(filter: FeedFilter, limit: number, cursor: string | undefined): Promise<Page<DomainEvent>> {
    if (filter.types?.length === 0) {
      // no type to read (a prefix of none): still refuse a cursor this list never handed out
      decodeCursor(cursor, filter.subject !== undefined ? isSubjectKey(filter.subject) : isFeedKey);
      return { items: [], nextCursor: undefined };
    }
    const page =
      filter.subject !== undefined
        ? await this.listSubject(filter.subject, filter, limit, cursor)
        : filter.types
          ? await this.listTypes(filter.types, filter.since, limit, cursor)
          : await this.listFeed(filter.since, limit, cursor);
    return { items: page.items.map(storedEvent), nextCursor: page.nextCursor };
  }

  /** One subject's events by sequence; the type and time filters read past what they leave out. */
  private listSubject(subject: string, filter: FeedFilter, limit: number, cursor: string | undefined) {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':subject': subject };
    const filters: string[] = [];
    if (filter.types) {
      names['#type'] = 'type';
      filter.types.forEach((type, i) => (values[`:type${i}`] = type));
      filters.push(`#type IN (${filter.types.map((_, i) => `:type${i}`).join(', ')})`);
    }
    if (filter.since) {
      names['#time'] = 'time';
      values[':since'] = filter.since;
      filters.push('#time >= :since');
    }
    return queryPage(
      this.db,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'subject = :subject',
        ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
        ...(filters.length ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
      },
      {
        limit,
        start: decodeCursor(cursor, isSubjectKey(subject)),
        keyAttributes: TABLE_KEYS,
        ...(filters.length ? { readAhead: FILTERED_READ_AHEAD } : {}),
      },
    );
  }

  /** The whole feed (`by_time`), from `since` on. */
  private listFeed(since: string | undefined, limit: number, cursor: string | undefined) {
    const values: Record<string, unknown> = { ':feed': FEED };
    let key = 'feed = :feed';
    if (since) {
      // recorded after it happened: the recording key narrows the read, the time decides
      values[':since'] = since;
      key += ' AND feed_key >= :since';
    }
    return queryPage(
      this.db,
      {
        TableName: this.tableName,
        IndexName: 'by_time',
        KeyConditionExpression: key,
        ...(since ? { FilterExpression: '#time >= :since', ExpressionAttributeNames: { '#time': 'time' } } : {}),
        ExpressionAttributeValues: values,
      },
      { limit, start: decodeCursor(cursor, isFeedKey), keyAttributes: FEED_KEYS },
    );
  }

  /**
   * The feed's events of some types: one Query of `by_type` per type, merged in recording
   * order, so what is read grows with the page, never with the events of other types in
   * between. The cursor is the feed's (`by_time`) key of the last event handed out; each
   * type's Query continues after its recording key, which is unique (it ends in the id).
   */
  private listTypes(types: readonly string[], since: string | undefined, limit: number, cursor: string | undefined) {
    const after = decodeCursor(cursor, isFeedKey)?.feed_key as string | undefined;
    const values: Record<string, unknown> = since ? { ':since': since } : {};
    let key = '#type = :type';
    if (after !== undefined) {
      values[':after'] = after;
      key += ' AND feed_key > :after';
    } else if (since) {
      key += ' AND feed_key >= :since';
    }
    return mergedQueryPage(
      this.db,
      types.map((type) => ({
        TableName: this.tableName,
        IndexName: 'by_type',
        KeyConditionExpression: key,
        // recorded after it happened: the recording key narrows the read, the time decides
        ...(since ? { FilterExpression: '#time >= :since' } : {}),
        ExpressionAttributeNames: { '#type': 'type', ...(since ? { '#time': 'time' } : {}) },
        ExpressionAttributeValues: { ...values, ':type': type },
      })),
      { limit, sortKey: 'feed_key', keyAttributes: FEED_KEYS },
    );
  }
}

/** A key of one subject's events (the table's key). */
const isSubjectKey = (subject: string) => (k: Record<string, unknown>) =>
  k.subject === subject && typeof k.sequence === 'number' && Object.keys(k).length === 2;

/** A key of the feed (`by_time`): the cursor of the feed, filtered by type or not. */
const isFeedKey = (k: Record<string, unknown>) =>
  k.feed === FEED &&
  typeof k.feed_key === 'string' &&
  typeof k.subject === 'string' &&
  typeof k.sequence === 'number' &&
  Object.keys(k).length === 4;

/** Items a filtered Query of one subject evaluates at least (what DynamoDB's Limit counts). */
const FILTERED_READ_AHEAD = 100;
