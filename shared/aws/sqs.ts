import type { Config } from '../config.js';
import { emulatorOptions, requestTimeouts } from './client-options.js';
import { type Lazy, lazy } from './lazy.js';

export type SqsSdk = typeof import('@aws-sdk/client-sqs');
/** An SQS client and the SDK module its commands come from. */
export interface Sqs {
  readonly sdk: SqsSdk;
  readonly client: InstanceType<SqsSdk['SQSClient']>;
}

const loadSdk = (): Promise<SqsSdk> => import('@aws-sdk/client-sqs');
const clients = new Map<string, Lazy<Sqs>>();

/** One SQS client per endpoint, made on first use (kept apart so non-SQS bundles skip it). */
export function sqsAccess(config: Pick<Config, 'region' | 'endpoints'>): Lazy<Sqs> {
  const endpoint = config.endpoints.sqs;
  const cacheKey = `${config.region}|${endpoint ?? ''}`;
  let access = clients.get(cacheKey);
  if (!access) {
    access = lazy(async () => {
      const sdk = await loadSdk();
      const client = new sdk.SQSClient({
        ...emulatorOptions({ region: config.region, endpoint }),
        requestHandler: requestTimeouts(),
      });
      return { sdk, client };
    });
    clients.set(cacheKey, access);
  }
  return access;
}
