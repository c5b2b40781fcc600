import type { Lazy } from '../../shared/aws/lazy.js';
import type { Sqs } from '../../shared/aws/sqs.js';
import type { DeliveryRecord } from './store.js';

/**
 * One message of the webhook delivery queue: make attempt `attempt` (0 for the first) of
 * series `series` of a delivery, once `due` (epoch milliseconds) has come. A message whose
 * series or attempt the delivery has left behind is stale and is dropped.
 */
export interface DeliveryMessage {
  readonly endpoint_id: string;
  readonly delivery_id: string;
  readonly series: number;
  readonly attempt: number;
  readonly due: number;
  /** How often it has waited for an earlier delivery of its endpoint and subject. */
  readonly waits?: number;
}

/** SQS delays a message at most this long: a longer wait is made of several. */
export const MAX_DELAY_SECONDS = 900;

/** Where delivery messages go (tests hand services a fake). */
export interface DeliveryQueue {
  /** Sends each message, visible after its `delaySeconds` (at most MAX_DELAY_SECONDS). */
  send(messages: readonly { message: DeliveryMessage; delaySeconds: number }[]): Promise<void>;
}

/** The message's delay: until it is due, at most what SQS allows. */
export const delayUntil = (due: number, nowMs: number): number =>
  Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((due - nowMs) / 1000)));

/** The message that makes a delivery's current attempt, when it is due. */
export function currentMessage(
  d: Pick<DeliveryRecord, 'endpoint_id' | 'id' | 'series' | 'attempts' | 'next_attempt_at'>,
  nowMs: number,
): { message: DeliveryMessage; delaySeconds: number } {
  const due = d.next_attempt_at ? Date.parse(d.next_attempt_at) : nowMs;
  return {
    message: { endpoint_id: d.endpoint_id, delivery_id: d.id, series: d.series, attempt: d.attempts, due },
    delaySeconds: delayUntil(due, nowMs),
  };
}

/** The webhook delivery queue on SQS (QUEUES.webhookDeliveries). */
export class SqsDeliveryQueue implements DeliveryQueue {
  constructor(
    private readonly sqs: Lazy<Sqs>,
    private readonly queueUrl: string | undefined,
  ) {}

  async send(messages: readonly { message: DeliveryMessage; delaySeconds: number }[]): Promise<void> {
    if (messages.length === 0) return;
    if (!this.queueUrl)
      throw Object.assign(new Error('webhook delivery queue is not configured'), { name: 'QueueDoesNotExist' });
    const { sdk, client } = await this.sqs();
    for (let start = 0; start < messages.length; start += 10) {
      const chunk = messages.slice(start, start + 10);
      const out = await client.send(
        new sdk.SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map(({ message, delaySeconds }, i) => ({
            Id: String(i),
            MessageBody: JSON.stringify(message),
            DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.round(delaySeconds))),
          })),
        }),
      );
      if (out.Failed && out.Failed.length > 0) {
        const first = out.Failed[0]!;
        throw Object.assign(new Error(`webhook delivery messages not queued: ${first.Code ?? 'unknown'}`), {
          name: first.SenderFault ? 'InvalidParameterValue' : 'ServiceUnavailable',
        });
      }
    }
  }
}
