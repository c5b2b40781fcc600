import {
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../../shared/aws/errors.js';
import { listAll, listAttributes } from '../../shared/aws/listing.js';
import type { Page } from '../../shared/page.js';
import { Conflict } from '../../shared/errors.js';
import { outboxEvent, eventPut, type EventsTable } from '../../shared/events/events-table.js';
import { stampNew, stampUpdate } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { McpServer } from './schemas.js';
import { AGAIN, retry } from '../../shared/retry.js';

const LIST_PK = 'mcp';

/** Deletions that lose this many races in a row to concurrent replacements give up (409). */
const DELETE_ATTEMPTS = 5;

/** The fields a replacement writes; id and created_at stay as they were. */
export type McpServerFields = Pick<McpServer, 'name' | 'command' | 'args' | 'enabled' | 'env' | 'updated_at'>;

/** MCP server configurations as the service sees them. */
export interface McpServerStore {
  /** Stores a new server, its creation stamped (`change`). */
  create(server: McpServer, change: Change): Promise<void>;
  /** Read consistently, so a server just created or replaced is found as it is. */
  get(id: string): Promise<McpServer | undefined>;
  /** Oldest first. */
  list(limit: number, cursor: string | undefined): Promise<Page<McpServer>>;
  /** Replaces an existing server's fields (id and created_at stay); undefined when there is no such server. */
  replace(id: string, fields: McpServerFields, change: Change): Promise<McpServer | undefined>;
  /** Deletes a server with its deletion event; the deleted server, or undefined when there was none. */
  delete(id: string, change: Change): Promise<McpServer | undefined>;
}

/** The subject of a server's domain events (docs/events-and-webhooks.md). */
export const serverSubject = (id: string) => `mcps/${id}`;

/**
 * DynamoDB repository for MCP server configurations (TABLES.mcpServers). Every write that
 * changes a server stamps it with its change (shared/events/stamp.ts); a deletion records
 * its event in the events table in the deleting transaction. Without `events` (a store
 * built alone, outside the composition root) deletions record no event.
 */
export class DynamoMcpServerStore implements McpServerStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly events: EventsTable,
  ) {}

  async create(server: McpServer, change: Change): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...server, ...listAttributes(LIST_PK, server.created_at, server.id), ...stampNew(change) },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  async get(id: string): Promise<McpServer | undefined> {
    const item = await this.read(id);
    return item ? toMcpServer(item) : undefined;
  }

  /** Oldest first. */
  async list(limit: number, cursor: string | undefined): Promise<Page<McpServer>> {
    const page = await listAll({ db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor }, LIST_PK);
    return { items: page.items.map(toMcpServer), nextCursor: page.nextCursor };
  }

  /**
   * Replaces an existing server's fields in one conditional write and returns the result
   * (with its original id and created_at); undefined when there is no such server.
   */
  async replace(id: string, fields: McpServerFields, change: Change): Promise<McpServer | undefined> {
    const entries = Object.entries(fields);
    const stamp = stampUpdate(change);
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :f${i}`).join(', ')}, ${stamp.set} ADD ${stamp.add}`,
          ConditionExpression: 'attribute_exists(id)',
          ExpressionAttributeNames: {
            ...Object.fromEntries(entries.map(([name], i) => [`#f${i}`, name])),
            ...stamp.names,
          },
          ExpressionAttributeValues: {
            ...Object.fromEntries(entries.map(([, value], i) => [`:f${i}`, value])),
            ...stamp.values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? toMcpServer(out.Attributes) : undefined;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /**
   * Deletes a server with its `mcp.server.deleted` event (data: the server as it was) in one
   * transaction, conditioned on the server being unchanged since it was read; a server
   * replaced meanwhile is read again. Answers the deleted server, or undefined when there
   * was none.
   */
  async delete(id: string, change: Change): Promise<McpServer | undefined> {
    const deleted = await retry(
      async () => {
        const item = await this.read(id);
        if (!item) return undefined;
        const server = toMcpServer(item);
        const seq = typeof item.ev_seq === 'number' ? item.ev_seq : undefined;
        return (await this.deleteAt(id, seq, server, change)) ? server : AGAIN;
      },
      { attempts: DELETE_ATTEMPTS },
    );
    if (deleted.done) return deleted.value;
    throw new Conflict(`MCP server ${id} kept changing while being deleted`);
  }

  /** The delete (and its event) if the server is still at `seq`; false when it is not. */
  private async deleteAt(id: string, seq: number | undefined, server: McpServer, change: Change): Promise<boolean> {
    const condition = {
      ConditionExpression: `attribute_exists(id) AND ${seq === undefined ? 'attribute_not_exists(#seq)' : '#seq = :seq'}`,
      ExpressionAttributeNames: { '#seq': 'ev_seq' },
      ...(seq === undefined ? {} : { ExpressionAttributeValues: { ':seq': seq } }),
    };
    const event = outboxEvent(this.events, serverSubject(id), change, seq ?? 0, server);
    return conditionally(
      this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            { Delete: { TableName: this.tableName, Key: { id }, ...condition } },
            eventPut(this.events, event),
          ],
        }),
      ),
    );
  }

  /** Consistent, so a client that has just created or replaced a server reads it back. */
  private async read(id: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    return out.Item;
  }
}

/**
 * The public record, fields in the contract's order (DynamoDB keeps no attribute order):
 * what GET answers, and the data of the server's domain events. Keys, listing attributes
 * and the change stamp are left out.
 */
export const toMcpServer = (item: Record<string, unknown>): McpServer => {
  const s = item as McpServer;
  return {
    id: s.id,
    name: s.name,
    command: s.command,
    args: s.args,
    enabled: s.enabled,
    env: s.env,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
};
