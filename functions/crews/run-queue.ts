import type { Lazy } from '../../shared/aws/lazy.js';
import type { Sqs } from '../../shared/aws/sqs.js';
import type { RunTimer } from './runner.js';
import type { RunQueue } from './service.js';

/**
 * Sends runs to the crew-run queue (SQS), for the worker Lambda to execute; a delayed
 * message is the expiry timer of an `approval` step (SQS delays at most 15 minutes: the
 * worker re-arms a longer one when it arrives).
 */
export class SqsRunQueue implements RunQueue, RunTimer {
  constructor(
    private readonly sqs: Lazy<Sqs>,
    private readonly queueUrl: string | undefined,
  ) {}

  send(correlationId: string): Promise<void> {
    return this.after(correlationId, 0);
  }

  async after(correlationId: string, delaySeconds: number): Promise<void> {
    if (!this.queueUrl)
      throw Object.assign(new Error('crew-run queue is not configured'), { name: 'QueueDoesNotExist' });
    const { sdk, client } = await this.sqs();
    await client.send(
      new sdk.SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify({ correlation_id: correlationId }),
        ...(delaySeconds > 0 ? { DelaySeconds: Math.min(900, Math.ceil(delaySeconds)) } : {}),
      }),
    );
  }
}
