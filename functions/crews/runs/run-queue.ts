import type { Lazy } from '../../../shared/aws/lazy.js';
import type { ScheduleFire } from '../../../shared/ports/scheduler.js';
import { sendBatches, type Sqs } from '../../../shared/aws/sqs.js';
import type { RunTimer, RunWake } from '../worker/runner.js';
import type { RunQueue } from './run-service.js';
import type { RunItem } from './run-store.js';

/**
 * The largest run a message carries (JSON bytes): with the rest of the body it stays within
 * one 64 KB chunk, which SQS bills as one request; a larger run is read by the worker.
 */
export const CARRIED_RUN_BYTES = 60_000;

/** SendMessageBatch calls in flight at once when many runs are sent together. */
const SEND_BATCHES_AT_ONCE = 4;

/**
 * Sends runs to the crew-run queue (SQS), for the worker Lambda to execute; a delayed
 * message is the expiry timer of an `approval` step, which says which (SQS delays at most
 * 15 minutes: the worker re-arms a longer one when it arrives), a run waiting for a slot of
 * its concurrency limit (`slot`), or a message that found its run held by another delivery
 * coming back.
 */
export class SqsRunQueue implements RunQueue, RunTimer {
  constructor(
    private readonly sqs: Lazy<Sqs>,
    private readonly queueUrl: string | undefined,
  ) {}

  /** A run's message; with `run` (a new run as stored) it carries the run when it fits in CARRIED_RUN_BYTES. */
  async send(correlationId: string, run?: RunItem): Promise<void> {
    const carried = run === undefined ? undefined : JSON.stringify(run);
    if (carried === undefined || Buffer.byteLength(carried) > CARRIED_RUN_BYTES) return this.after(correlationId, 0);
    const { sdk, client } = await this.sqs();
    await client.send(
      new sdk.SendMessageCommand({
        QueueUrl: this.url(),
        MessageBody: `{"correlation_id":${JSON.stringify(correlationId)},"run":${carried}}`,
      }),
    );
  }

  /** Ten runs a SendMessageBatch, a few batches at once (the local platform's requeue at start). */
  async sendAll(correlationIds: readonly string[]): Promise<void> {
    if (correlationIds.length === 0) return;
    const messages = correlationIds.map((id) => ({ body: JSON.stringify({ correlation_id: id }) }));
    await sendBatches(this.sqs, this.url(), messages, 'crew-run messages', SEND_BATCHES_AT_ONCE);
  }

  async after(correlationId: string, delaySeconds: number, timer?: RunWake): Promise<void> {
    const queueUrl = this.url();
    const { sdk, client } = await this.sqs();
    const wake = timer === undefined ? {} : 'slot' in timer ? { slot: timer.slot } : { timer };
    await client.send(
      new sdk.SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify({ correlation_id: correlationId, ...wake }),
        ...(delaySeconds > 0 ? { DelaySeconds: Math.min(900, Math.ceil(delaySeconds)) } : {}),
      }),
    );
  }

  /** A schedule's fire (the local scheduler's; on AWS EventBridge Scheduler sends the same body). */
  async sendFire(fire: ScheduleFire): Promise<void> {
    const queueUrl = this.url();
    const { sdk, client } = await this.sqs();
    await client.send(new sdk.SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(fire) }));
  }

  /** The queue's URL; a deployment without one is missing a dependency (503). */
  private url(): string {
    if (!this.queueUrl)
      throw Object.assign(new Error('crew-run queue is not configured'), { name: 'QueueDoesNotExist' });
    return this.queueUrl;
  }
}
