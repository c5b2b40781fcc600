import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { ensureTables } from '../../infra/local/provision.js';
import { physicalTableName, TABLES } from '../../infra/tables.js';
import { documentClient, emulatorOptions } from '../../shared/aws/clients.js';

describe('local provisioning', () => {
  it('adds the indexes a kept table lacks (data of an earlier version), keeping its items', async () => {
    const stage = `upgrade${Date.now() % 100000}`;
    const endpoint = inject('dynamodbEndpoint');
    const client = new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint }));
    const db = documentClient({
      region: 'us-east-1',
      endpoints: { dynamodb: endpoint, sqs: undefined, s3: undefined },
    });
    const name = physicalTableName(stage, TABLES.catalog);
    try {
      // The catalog table as an earlier version created it: no by_domain index.
      await client.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            { AttributeName: 'sk', AttributeType: 'S' },
          ],
        }),
      );
      await db.send(
        new PutCommand({ TableName: name, Item: { pk: 'ENTITY#urn:x', sk: 'META', urn: 'urn:x', domain: 'Sales' } }),
      );

      await ensureTables(client, stage, { catalog: TABLES.catalog });
      const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table!;
      expect(table.GlobalSecondaryIndexes?.map((ix) => [ix.IndexName, ix.IndexStatus])).toEqual([
        ['by_domain', 'ACTIVE'],
      ]);
      const found = await db.send(
        new QueryCommand({
          TableName: name,
          IndexName: 'by_domain',
          KeyConditionExpression: '#d = :d',
          ExpressionAttributeNames: { '#d': 'domain' },
          ExpressionAttributeValues: { ':d': 'Sales' },
        }),
      );
      expect(found.Items?.map((i) => i.urn)).toEqual(['urn:x']);
      // A second start changes nothing.
      await ensureTables(client, stage, { catalog: TABLES.catalog });
    } finally {
      client.destroy();
    }
  }, 120_000);
});
