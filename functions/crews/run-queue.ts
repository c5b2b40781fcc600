import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { RunQueue } from './service.js';

/** Sends runs to the crew-run queue (SQS), for the worker Lambda to execute. */
export class SqsRunQueue implements RunQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string | undefined,
  ) {}

  async send(correlationId: string): Promise<void> {
    if (!this.queueUrl)
      throw Object.assign(new Error('crew-run queue is not configured'), { name: 'QueueDoesNotExist' });
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify({ correlation_id: correlationId }),
      }),
    );
  }
}
