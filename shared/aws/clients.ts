import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from '../config.js';

/**
 * One DynamoDB document client per endpoint, built from config and reused across
 * invocations. Emulators get dummy credentials; short timeouts make an outage a fast 503
 * rather than a hung request.
 */
const documentClients = new Map<string, DynamoDBDocumentClient>();

export interface ClientTarget {
  readonly region: string;
  readonly endpoint: string | undefined;
}

export function emulatorOptions(target: ClientTarget) {
  return {
    region: target.region,
    maxAttempts: 3,
    ...(target.endpoint
      ? {
          endpoint: target.endpoint,
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }
      : {}),
  };
}

export function requestTimeouts() {
  return { connectionTimeout: 1_000, requestTimeout: 5_000 };
}

export function documentClient(config: Pick<Config, 'region' | 'endpoints'>): DynamoDBDocumentClient {
  const endpoint = config.endpoints.dynamodb;
  const cacheKey = `${config.region}|${endpoint ?? ''}`;
  let client = documentClients.get(cacheKey);
  if (!client) {
    const base = new DynamoDBClient({
      ...emulatorOptions({ region: config.region, endpoint }),
      requestHandler: requestTimeouts(),
    });
    client = DynamoDBDocumentClient.from(base, {
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    });
    documentClients.set(cacheKey, client);
  }
  return client;
}
