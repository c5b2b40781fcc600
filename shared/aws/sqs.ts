import type { Config } from '../config.js';
import { emulatorOptions, requestTimeouts } from './client-options.js';
import { type Lazy, lazy } from './lazy.js';
import { mapLimit } from '../concurrency.js';

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

/** One message of `sendBatches`: its JSON body, and how long it stays invisible (seconds, SQS: at most 900). */
export interface BatchMessage {
  readonly body: string;
  readonly delaySeconds?: number;
}

/**
 * Sends `messages` to the queue ten a SendMessageBatch (the most SQS takes), `atOnce` batches
 * in flight. A message SQS refuses fails the whole with an error named as the SDK names its
 * own (a sender fault: InvalidParameterValue; else ServiceUnavailable, an outage: 503).
 * `what` names the messages in that error.
 */
export async function sendBatches(
  sqs: Lazy<Sqs>,
  queueUrl: string,
  messages: readonly BatchMessage[],
  what: string,
  atOnce = 1,
): Promise<void> {
  if (messages.length === 0) return;
  const { sdk, client } = await sqs();
  const batches: (readonly BatchMessage[])[] = [];
  for (let start = 0; start < messages.length; start += 10) batches.push(messages.slice(start, start + 10));
  await mapLimit(batches, atOnce, async (batch) => {
    const out = await client.send(
      new sdk.SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: batch.map(({ body, delaySeconds }, i) => ({
          Id: String(i),
          MessageBody: body,
          ...(delaySeconds !== undefined ? { DelaySeconds: delaySeconds } : {}),
        })),
      }),
    );
    if (out.Failed && out.Failed.length > 0) {
      const first = out.Failed[0]!;
      throw Object.assign(new Error(`${what} not queued: ${first.Code ?? 'unknown'}`), {
        name: first.SenderFault ? 'InvalidParameterValue' : 'ServiceUnavailable',
      });
    }
  });
}
