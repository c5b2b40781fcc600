import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { SqsHandler } from '../../shared/aws/lambda.js';
import { settledWithin } from '../../shared/concurrency.js';
import { logger } from '../../shared/logger.js';

export interface PollerOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly handler: SqsHandler;
  /**
   * Messages handled at once (as Lambda runs several invocations of a function, up to the
   * event source's `maxConcurrency`): one slow message never holds the others back.
   */
  readonly concurrency: number;
  /** A failed message is visible again after this long (SQS would wait the visibility timeout). */
  readonly retryDelaySeconds: number;
}

export interface QueuePoller {
  /**
   * Stops receiving (a receive under way is cut short) and waits for the messages under way,
   * at most `drainMs` (default: until they are done). One left unfinished is not deleted:
   * SQS hands it again.
   */
  stop(drainMs?: number): Promise<void>;
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
 * What Lambda's SQS event source does, for the local platform: long-polls the queue (the
 * emulator answers a waiting receive as soon as a message is sent), hands each message to
 * the same handler the Lambda runs while up to `concurrency` are under way, deletes what
 * succeeded and makes the failures visible again soon (they reach the dead-letter queue
 * after maxReceiveCount).
 */
export function startQueuePoller(options: PollerOptions): QueuePoller {
  const { sqs, queueUrl, queueArn, handler, concurrency } = options;
  let running = true;
  let inFlight = 0;
  const handling = new Set<Promise<void>>();
  let slotFreed: (() => void) | undefined;
  const receiving = new AbortController();

  const settle = async (m: Message, ok: boolean) => {
    try {
      if (ok) {
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: [{ Id: '0', ReceiptHandle: m.ReceiptHandle! }],
          }),
        );
      } else {
        await sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: [{ Id: '0', ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: options.retryDelaySeconds }],
          }),
        );
      }
    } catch (err) {
      // not deleted: delivered again after the visibility timeout, as on AWS
      logger.warn('local queue poller: could not settle a message', { queue: queueUrl, error: err as Error });
    }
  };

  const handle = (m: Message) => {
    inFlight++;
    const work = (async () => {
      let ok: boolean;
      try {
        const result = await handler({ Records: [toRecord(m, queueArn)] } satisfies SQSEvent);
        ok = result.batchItemFailures.length === 0;
      } catch {
        ok = false;
      }
      await settle(m, ok);
    })().finally(() => {
      inFlight--;
      handling.delete(work);
      slotFreed?.();
    });
    handling.add(work);
  };

  const loop = (async () => {
    while (running) {
      if (inFlight >= concurrency) {
        await new Promise<void>((resolve) => (slotFreed = resolve));
        slotFreed = undefined;
        continue;
      }
      try {
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: Math.min(10, concurrency - inFlight),
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
          { abortSignal: receiving.signal },
        );
        // Received as the stop came: left alone, SQS hands them again.
        if (!running) break;
        for (const m of out.Messages ?? []) handle(m);
      } catch (err) {
        if (!running) break;
        logger.warn('local queue poller: receive failed, retrying', { queue: queueUrl, error: err as Error });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();
  return {
    stop: async (drainMs) => {
      running = false;
      receiving.abort();
      slotFreed?.();
      await loop;
      await settledWithin([...handling], drainMs);
    },
  };
}
