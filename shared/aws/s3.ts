import { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../config.js';
import { emulatorOptions, requestTimeouts } from './client-options.js';

const s3Clients = new Map<string, S3Client>();

/** One S3 client per endpoint (path-style for the local emulator). */
export function s3Client(config: Pick<Config, 'region' | 'endpoints'>): S3Client {
  const endpoint = config.endpoints.s3;
  const cacheKey = `${config.region}|${endpoint ?? ''}`;
  let client = s3Clients.get(cacheKey);
  if (!client) {
    client = new S3Client({
      ...emulatorOptions({ region: config.region, endpoint }),
      forcePathStyle: Boolean(endpoint),
      requestHandler: requestTimeouts(),
    });
    s3Clients.set(cacheKey, client);
  }
  return client;
}
