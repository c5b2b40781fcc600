import type { Lazy } from '../../shared/aws/lazy.js';
import type { Sqs } from '../../shared/aws/sqs.js';
import type { RunQueue } from './service.js';

/** Sends runs to the crew-run queue (SQS), for the worker Lambda to execute. */
export class SqsRunQueue implements RunQueue {
  constructor(
    private readonly sqs: Lazy<Sqs>,
    private readonly queueUrl: string | undefined,
  ) {}

  async send(correlationId: string): Promise<void> {
    if (!this.queueUrl)
      throw Object.assign(new Error('crew-run queue is not configured'), { name: 'QueueDoesNotExist' });
    const { sdk, client } = await this.sqs();
    await client.send(
      new sdk.SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify({ correlation_id: correlationId }),
      }),
    );
  }
}
