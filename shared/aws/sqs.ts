import { SQSClient } from '@aws-sdk/client-sqs';
import type { Config } from '../config.js';
import { emulatorOptions, requestTimeouts } from './client-options.js';

const sqsClients = new Map<string, SQSClient>();

/** One SQS client per endpoint, built from config (kept apart so non-SQS bundles skip it). */
export function sqsClient(config: Pick<Config, 'region' | 'endpoints'>): SQSClient {
  const endpoint = config.endpoints.sqs;
  const cacheKey = `${config.region}|${endpoint ?? ''}`;
  let client = sqsClients.get(cacheKey);
  if (!client) {
    client = new SQSClient({
      ...emulatorOptions({ region: config.region, endpoint }),
      requestHandler: requestTimeouts(),
    });
    sqsClients.set(cacheKey, client);
  }
  return client;
}
