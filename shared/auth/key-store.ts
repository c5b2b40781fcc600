import {
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../aws/errors.js';

/** A pre-shared key as stored: the secret itself never is, only its SHA-256 hash. */
export interface KeyRecord {
  key_hash: string;
  psk: string;
  dataproduct_id: string | null;
  description: string;
  /** The creator's roles when the key was made: the key acts with these. */
  roles: string[];
  created_by: string;
  created_at: string;
  valid_until: string;
  deleted_at?: string;
}

/** DynamoDB repository for the keys table (see TABLES.keys). */
export class KeyStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async getByHash(keyHash: string): Promise<KeyRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { key_hash: keyHash } }));
    return out.Item as KeyRecord | undefined;
  }

  /** Stores a new key; false when a key with that hash exists already. */
  async createIfAbsent(record: KeyRecord): Promise<boolean> {
    return conditionally(
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: record,
          ConditionExpression: 'attribute_not_exists(key_hash)',
        }),
      ),
    );
  }

  async findByPskId(psk: string): Promise<KeyRecord[]> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'by_psk',
        KeyConditionExpression: 'psk = :psk',
        ExpressionAttributeValues: { ':psk': psk },
      }),
    );
    return (out.Items ?? []) as KeyRecord[];
  }

  /** Marks a key deleted unless it already is; false when it was. */
  async markDeleted(keyHash: string, at: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key_hash: keyHash },
          UpdateExpression: 'SET deleted_at = :at',
          ConditionExpression: 'attribute_exists(key_hash) AND attribute_not_exists(deleted_at)',
          ExpressionAttributeValues: { ':at': at },
        }),
      ),
    );
  }
}
