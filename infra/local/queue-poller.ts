import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { SqsHandler } from '../../functions/crews/worker.js';
import { logger } from '../../shared/logger.js';

export interface PollerOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly handler: SqsHandler;
  /** Parallel receive loops (each takes up to 10 messages). */
  readonly loops: number;
  /** A failed message is visible again after this long (SQS would wait the visibility timeout). */
  readonly retryDelaySeconds: number;
}

function toRecord(m: Message, queueArn: string): SQSRecord {
  const attrs = m.Attributes ?? {};
  return {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attrs.ApproximateReceiveCount ?? '1',
      SentTimestamp: attrs.SentTimestamp ?? String(Date.now()),
      SenderId: attrs.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attrs.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

/**
 * What Lambda's SQS event source does, for the local platform: long-polls the queue,
 * hands batches to the same handler the Lambda runs, deletes what succeeded and makes
 * the failures visible again soon (they reach the dead-letter queue after maxReceiveCount).
 */
export function startQueuePoller(options: PollerOptions): { stop(): Promise<void> } {
  const { sqs, queueUrl, queueArn, handler } = options;
  let running = true;
  const loop = async () => {
    while (running) {
      try {
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        const messages = out.Messages ?? [];
        if (messages.length === 0) continue;
        const event: SQSEvent = { Records: messages.map((m) => toRecord(m, queueArn)) };
        let failed: Set<string>;
        try {
          const result = await handler(event);
          failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
        } catch {
          failed = new Set(messages.map((m) => m.MessageId!));
        }
        const done = messages.filter((m) => !failed.has(m.MessageId!));
        const retry = messages.filter((m) => failed.has(m.MessageId!));
        if (done.length) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          );
        }
        if (retry.length) {
          await sqs.send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: queueUrl,
              Entries: retry.map((m, i) => ({
                Id: String(i),
                ReceiptHandle: m.ReceiptHandle!,
                VisibilityTimeout: options.retryDelaySeconds,
              })),
            }),
          );
        }
      } catch (err) {
        if (!running) return;
        logger.warn('local queue poller: receive failed, retrying', { queue: queueUrl, error: err as Error });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  const loops = Array.from({ length: options.loops }, loop);
  return {
    stop: async () => {
      running = false;
      await Promise.allSettled(loops);
    },
  };
}
