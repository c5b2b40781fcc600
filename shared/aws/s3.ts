import type { Config } from '../config.js';
import { emulatorOptions, requestTimeouts } from './client-options.js';
import { type Lazy, lazy } from './lazy.js';

export type S3Sdk = typeof import('@aws-sdk/client-s3');
/** An S3 client and the SDK module its commands come from. */
export interface S3 {
  readonly sdk: S3Sdk;
  readonly client: InstanceType<S3Sdk['S3Client']>;
}

const loadSdk = (): Promise<S3Sdk> => import('@aws-sdk/client-s3');
const clients = new Map<string, Lazy<S3>>();

/** One S3 client per endpoint (path-style for the local emulator), made on first use. */
export function s3Access(config: Pick<Config, 'region' | 'endpoints'>): Lazy<S3> {
  const endpoint = config.endpoints.s3;
  const cacheKey = `${config.region}|${endpoint ?? ''}`;
  let access = clients.get(cacheKey);
  if (!access) {
    access = lazy(async () => {
      const sdk = await loadSdk();
      const client = new sdk.S3Client({
        ...emulatorOptions({ region: config.region, endpoint }),
        forcePathStyle: Boolean(endpoint),
        requestHandler: requestTimeouts(),
      });
      return { sdk, client };
    });
    clients.set(cacheKey, access);
  }
  return access;
}

/** A client made elsewhere (the local platform, tests), with the SDK module for its commands. */
export const s3With =
  (client: S3['client']): Lazy<S3> =>
  async () => ({ sdk: await loadSdk(), client });
