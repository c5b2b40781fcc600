import type { Lazy } from '../../shared/aws/lazy.js';
import type { Sqs } from '../../shared/aws/sqs.js';
import { backoffMs } from '../../shared/retry.js';
import { isRunEndpointId } from './run-endpoint.js';
import type { WebhookDelivery } from './schemas.js';

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
  /** How often it has found its endpoint with every in-flight slot taken (no attempt counted). */
  readonly busy?: number;
  /**
   * A crew run's delivery parked while its starter's share of the per-run lane is held: its
   * place in the starter's wait list, on the message that looks again later should no wake
   * come (one such message per delivery, as for one waiting in line).
   */
  readonly parked?: string;
  /** Sent by a wake from that wait list (parked again, if need be, without a message of its own). */
  readonly woken?: boolean;
}

/**
 * The two delivery lanes (the fair-use limits): the endpoints of the webhooks API, and the
 * crew runs' own (any user's URL), each its own queue and consumers, so a per-run receiver
 * that hangs delays nothing but its own run's deliveries.
 */
export type DeliveryLane = 'endpoints' | 'runs';

/** The lane of an endpoint's deliveries: every place that queues one goes through this. */
export const laneOf = (endpointId: string): DeliveryLane => (isRunEndpointId(endpointId) ? 'runs' : 'endpoints');

/** SQS delays a message at most this long: a longer wait is made of several. */
export const MAX_DELAY_SECONDS = 900;

/**
 * A delivery that waits in line, or parked for its starter's share, looks again after 16, 32,
 * 64 s… up to MAX_DELAY_SECONDS: only a fallback, since the one before it (the attempt that
 * lets the share's slot go) wakes it when done, which is lost only with a worker that died.
 * Rarely, so that the lines of many runs whose receivers hang (a run's events are one line)
 * cost the store and the per-run lane little while they wait.
 */
export const inLineDelaySeconds = (waited: number): number =>
  backoffMs(waited, { baseMs: 16_000, maxMs: MAX_DELAY_SECONDS * 1000 }) / 1000;

/** Where delivery messages go (tests hand services a fake). */
export interface DeliveryQueue {
  /** Sends each message, visible after its `delaySeconds` (at most MAX_DELAY_SECONDS). */
  send(messages: readonly { message: DeliveryMessage; delaySeconds: number }[]): Promise<void>;
}

/** The message's delay: until it is due, at most what SQS allows. */
export const delayUntil = (due: number, nowMs: number): number =>
  Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((due - nowMs) / 1000)));

/**
 * What of a delivery names its current attempt (a stored delivery, delivery-store.ts's
 * `DeliveryRecord`, has it: the store keeps messages, so it is the one that imports this module).
 */
type Current = Pick<WebhookDelivery, 'id' | 'attempts' | 'next_attempt_at'> & {
  readonly endpoint_id: string;
  readonly series: number;
};

/** The message that makes a delivery's current attempt, when it is due. */
export function currentMessage(d: Current, nowMs: number): { message: DeliveryMessage; delaySeconds: number } {
  const due = d.next_attempt_at ? Date.parse(d.next_attempt_at) : nowMs;
  return {
    message: { endpoint_id: d.endpoint_id, delivery_id: d.id, series: d.series, attempt: d.attempts, due },
    delaySeconds: delayUntil(due, nowMs),
  };
}

/** The same message due now, whenever its attempt was due: one that will not be sent is settled at once. */
export const dueNowMessage = (d: Current, nowMs: number) => currentMessage({ ...d, next_attempt_at: null }, nowMs);

/**
 * The webhook delivery queues on SQS: QUEUES.webhookDeliveries for the API's endpoints,
 * QUEUES.runWebhookDeliveries for the crew runs' own; each message goes to its endpoint's lane.
 */
export class SqsDeliveryQueue implements DeliveryQueue {
  constructor(
    private readonly sqs: Lazy<Sqs>,
    private readonly queueUrls: Readonly<Record<DeliveryLane, string | undefined>>,
  ) {}

  async send(messages: readonly { message: DeliveryMessage; delaySeconds: number }[]): Promise<void> {
    for (const lane of ['endpoints', 'runs'] as const) {
      const mine = messages.filter(({ message }) => laneOf(message.endpoint_id) === lane);
      if (mine.length > 0) await this.sendTo(lane, mine);
    }
  }

  private async sendTo(
    lane: DeliveryLane,
    messages: readonly { message: DeliveryMessage; delaySeconds: number }[],
  ): Promise<void> {
    const queueUrl = this.queueUrls[lane];
    if (!queueUrl)
      throw Object.assign(new Error(`webhook delivery queue (${lane}) is not configured`), {
        name: 'QueueDoesNotExist',
      });
    const { sdk, client } = await this.sqs();
    for (let start = 0; start < messages.length; start += 10) {
      const chunk = messages.slice(start, start + 10);
      const out = await client.send(
        new sdk.SendMessageBatchCommand({
          QueueUrl: queueUrl,
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
