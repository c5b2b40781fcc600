import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed } from '../../shared/aws/errors.js';
import { listAll, listAttributes } from '../../shared/aws/listing.js';
import type { Page } from '../../shared/aws/pagination.js';
import type { McpServer } from './schemas.js';

const LIST_PK = 'mcp';

/** The fields a replacement writes; id and created_at stay as they were. */
export type McpServerFields = Pick<McpServer, 'name' | 'command' | 'args' | 'enabled' | 'env' | 'updated_at'>;

/** MCP server configurations as the service sees them (its public methods; DynamoMcpServerStore below implements them). */
export type McpServerStore = Pick<DynamoMcpServerStore, keyof DynamoMcpServerStore>;

/** DynamoDB repository for MCP server configurations (TABLES.mcpServers). */
export class DynamoMcpServerStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(server: McpServer): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...server, ...listAttributes(LIST_PK, server.created_at, server.id) },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  async get(id: string): Promise<McpServer | undefined> {
    // Consistent, so a client that has just created or replaced a server reads it back.
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    return out.Item ? toServer(out.Item) : undefined;
  }

  /** Oldest first. */
  async list(limit: number, cursor: string | undefined): Promise<Page<McpServer>> {
    const page = await listAll({ db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor }, LIST_PK);
    return { items: page.items.map(toServer), nextCursor: page.nextCursor };
  }

  /**
   * Replaces an existing server's fields in one conditional write and returns the result
   * (with its original id and created_at); undefined when there is no such server.
   */
  async replace(id: string, fields: McpServerFields): Promise<McpServer | undefined> {
    const entries = Object.entries(fields);
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :f${i}`).join(', ')}`,
          ConditionExpression: 'attribute_exists(id)',
          ExpressionAttributeNames: Object.fromEntries(entries.map(([name], i) => [`#f${i}`, name])),
          ExpressionAttributeValues: Object.fromEntries(entries.map(([, value], i) => [`:f${i}`, value])),
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? toServer(out.Attributes) : undefined;
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  /** Deletes a server; false when there was none. */
  async delete(id: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new DeleteCommand({ TableName: this.tableName, Key: { id }, ConditionExpression: 'attribute_exists(id)' }),
      ),
    );
  }
}

/** The public record, fields in the contract's order (DynamoDB keeps no attribute order). */
const toServer = (item: Record<string, unknown>): McpServer => {
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
