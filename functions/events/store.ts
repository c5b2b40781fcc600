import { GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailed } from '../../shared/aws/errors.js';
import { decodeCursor, queryPage, type Page } from '../../shared/aws/pagination.js';
import { eventItem, type EventsTable, FEED_PARTITION, storedEvent } from '../../shared/events/outbox.js';
import type { DomainEvent } from '../../shared/events/types.js';

const FEED = FEED_PARTITION;
const TABLE_KEYS = ['subject', 'sequence'] as const;
const FEED_KEYS = [...TABLE_KEYS, 'feed', 'feed_key'] as const;

export interface FeedFilter {
  /** An exact type (`dpm.x.y`) or a prefix ending in `.` (`dpm.x.`). */
  readonly type?: { readonly exact: string } | { readonly prefix: string };
  readonly subject?: string;
  /** ISO 8601: recorded at or after. */
  readonly since?: string;
}

export type RecordResult = 'recorded' | 'duplicate' | 'conflict';

/** The events table (TABLES.domainEvents): the feed the API serves and the dispatcher reads. */
export type EventStore = Pick<DynamoEventStore, keyof DynamoEventStore>;

export class DynamoEventStore {
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
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const filters: string[] = [];
    if (filter.type) {
      names['#type'] = 'type';
      if ('exact' in filter.type) {
        values[':type'] = filter.type.exact;
        filters.push('#type = :type');
      } else {
        values[':prefix'] = filter.type.prefix;
        filters.push('begins_with(#type, :prefix)');
      }
    }
    let key: string;
    let keyAttributes: readonly string[];
    let index: string | undefined;
    if (filter.subject !== undefined) {
      values[':subject'] = filter.subject;
      key = 'subject = :subject';
      keyAttributes = TABLE_KEYS;
      if (filter.since) {
        names['#time'] = 'time';
        values[':since'] = filter.since;
        filters.push('#time >= :since');
      }
    } else {
      index = 'by_time';
      values[':feed'] = FEED;
      key = 'feed = :feed';
      if (filter.since) {
        // recorded after it happened: the recording key narrows the read, the time decides
        values[':since'] = filter.since;
        key += ' AND feed_key >= :since';
        names['#time'] = 'time';
        filters.push('#time >= :since');
      }
      keyAttributes = FEED_KEYS;
    }
    const subject = filter.subject;
    const page = await queryPage(
      this.db,
      {
        TableName: this.tableName,
        ...(index ? { IndexName: index } : {}),
        KeyConditionExpression: key,
        ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
        ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
      },
      {
        limit,
        start: decodeCursor(cursor, (k) =>
          subject !== undefined
            ? k.subject === subject && typeof k.sequence === 'number' && Object.keys(k).length === 2
            : k.feed === FEED &&
              typeof k.feed_key === 'string' &&
              typeof k.subject === 'string' &&
              typeof k.sequence === 'number',
        ),
        keyAttributes,
      },
    );
    return { items: page.items.map(storedEvent), nextCursor: page.nextCursor };
  }
}
