import type { Lazy } from '../../shared/aws/lazy.js';
import type { Sqs } from '../../shared/aws/sqs.js';
import { mapLimit } from '../../shared/concurrency.js';
import type { RunTimer, StepTimer } from './runner.js';
import type { RunQueue } from './service.js';

/** SendMessageBatch calls in flight at once when many runs are sent together. */
const SEND_BATCHES_AT_ONCE = 4;

/**
 * Sends runs to the crew-run queue (SQS), for the worker Lambda to execute; a delayed
 * message is the expiry timer of an `approval` step, which says which (SQS delays at most
 * 15 minutes: the worker re-arms a longer one when it arrives), or a message that found its
 * run held by another delivery coming back.
 */
export class SqsRunQueue implements RunQueue, RunTimer {
  constructor(
    private readonly sqs: Lazy<Sqs>,
    private readonly queueUrl: string | undefined,
  ) {}

  send(correlationId: string): Promise<void> {
    return this.after(correlationId, 0);
  }

  /** Ten runs a SendMessageBatch, a few batches at once (the local platform's requeue at start). */
  async sendAll(correlationIds: readonly string[]): Promise<void> {
    if (correlationIds.length === 0) return;
    const queueUrl = this.queueUrl;
    if (!queueUrl) throw Object.assign(new Error('crew-run queue is not configured'), { name: 'QueueDoesNotExist' });
    const { sdk, client } = await this.sqs();
    const batches: (readonly string[])[] = [];
    for (let start = 0; start < correlationIds.length; start += 10)
      batches.push(correlationIds.slice(start, start + 10));
    await mapLimit(batches, SEND_BATCHES_AT_ONCE, async (batch) => {
      const out = await client.send(
        new sdk.SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: batch.map((id, i) => ({ Id: String(i), MessageBody: JSON.stringify({ correlation_id: id }) })),
        }),
      );
      if (out.Failed && out.Failed.length > 0) {
        const first = out.Failed[0]!;
        throw Object.assign(new Error(`crew-run messages not queued: ${first.Code ?? 'unknown'}`), {
          name: first.SenderFault ? 'InvalidParameterValue' : 'ServiceUnavailable',
        });
      }
    });
  }

  async after(correlationId: string, delaySeconds: number, timer?: StepTimer): Promise<void> {
    if (!this.queueUrl)
      throw Object.assign(new Error('crew-run queue is not configured'), { name: 'QueueDoesNotExist' });
    const { sdk, client } = await this.sqs();
    await client.send(
      new sdk.SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify({ correlation_id: correlationId, ...(timer ? { timer } : {}) }),
        ...(delaySeconds > 0 ? { DelaySeconds: Math.min(900, Math.ceil(delaySeconds)) } : {}),
      }),
    );
  }
}
