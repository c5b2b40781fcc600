import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from '../config.js';
import { emulatorOptions, requestTimeouts } from './client-options.js';

/**
 * One DynamoDB document client per endpoint, built from config and reused across
 * invocations. Emulators get dummy credentials; short timeouts make an outage a fast 503
 * rather than a hung request.
 */
const documentClients = new Map<string, DynamoDBDocumentClient>();

export function documentClient(config: Pick<Config, 'region' | 'endpoints'>): DynamoDBDocumentClient {
  const endpoint = config.endpoints.dynamodb;
  const cacheKey = `${config.region}|${endpoint ?? ''}`;
  let client = documentClients.get(cacheKey);
  if (!client) {
    const base = new DynamoDBClient({
      ...emulatorOptions({ region: config.region, endpoint }),
      requestHandler: requestTimeouts(),
    });
    // No SDK logger is configured, yet its middleware filters every input and output for
    // sensitive fields to hand them to the no-op logger: work on every call for nothing.
    base.middlewareStack.remove('loggerMiddleware');
    client = DynamoDBDocumentClient.from(base, {
      // Objects of user JSON may have an own key named `constructor`, which the marshaller
      // takes for a class instance unless told to convert those too.
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
    });
    documentClients.set(cacheKey, client);
  }
  return client;
}
