import { randomUUID } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { conditionally, isConditionFailed, isDependencyFailure } from '../aws/errors.js';
import { randomSecret } from '../crypto.js';
import { Conflict } from '../errors.js';
import { logger } from '../logger.js';
import type { IdentityProvider, IdpClient, NewIdpClient } from '../ports/idp.js';
import type { Sealed, SecretBox } from '../secrets.js';
import { type Clock, systemClock } from '../clock.js';

/** A client as stored in TABLES.idpClients: the secret only ever sealed. */
interface ClientItem {
  client_id: string;
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  service_accounts_enabled: boolean;
  secret: Sealed;
  created_at: string;
  secret_updated_at: string;
}

/** The sealed secret is bound to its client, so it cannot be copied onto another one. */
const sealContext = (clientId: string) => `idp-client:${clientId}`;

/** The built-in identity provider: confidential clients in DynamoDB, secrets encrypted. */
export class BuiltinIdentityProvider implements IdentityProvider {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly box: SecretBox,
    /** When a client or its secret is made: the system's time unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  async createClient(client: NewIdpClient): Promise<IdpClient> {
    const secret = randomSecret();
    const at = this.clock.iso();
    const item: ClientItem = {
      client_id: client.clientId,
      id: randomUUID(),
      name: client.name,
      description: client.description ?? null,
      enabled: true,
      service_accounts_enabled: true,
      secret: await this.box.seal(secret, sealContext(client.clientId)),
      created_at: at,
      secret_updated_at: at,
    };
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(client_id)',
        }),
      );
    } catch (err) {
      if (isConditionFailed(err)) throw new Conflict(`Client ${client.clientId} already exists`);
      throw err;
    }
    return toClient(item, secret);
  }

  async getClient(clientId: string): Promise<IdpClient | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { client_id: clientId }, ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    const item = out.Item as ClientItem;
    return toClient(item, await this.open(item));
  }

  async regenerateSecret(clientId: string): Promise<IdpClient | undefined> {
    const secret = randomSecret();
    const sealed = await this.box.seal(secret, sealContext(clientId));
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { client_id: clientId },
          UpdateExpression: 'SET secret = :secret, secret_updated_at = :at',
          ConditionExpression: 'attribute_exists(client_id)',
          ExpressionAttributeValues: { ':secret': sealed, ':at': this.clock.iso() },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toClient(out.Attributes as ClientItem, secret);
    } catch (err) {
      if (isConditionFailed(err)) return undefined;
      throw err;
    }
  }

  deleteClient(clientId: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { client_id: clientId },
          ConditionExpression: 'attribute_exists(client_id)',
        }),
      ),
    );
  }

  /**
   * A secret that cannot be decrypted (a lost or replaced master key) reads as null; KMS
   * not answering is an outage, not an unreadable secret.
   */
  private async open(item: ClientItem): Promise<string | null> {
    try {
      return await this.box.open(item.secret, sealContext(item.client_id));
    } catch (err) {
      if (isDependencyFailure(err)) throw err;
      logger.warn('client secret could not be decrypted', {
        client_id: item.client_id,
        error: (err as Error).name,
      });
      return null;
    }
  }
}

const toClient = (item: ClientItem, secret: string | null): IdpClient => ({
  id: item.id,
  client_id: item.client_id,
  name: item.name,
  enabled: item.enabled,
  service_accounts_enabled: item.service_accounts_enabled,
  secret,
});
