import { CreateQueueCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startSqs } from '../../../infra/local/emulators.js';
import { startQueuePoller } from '../../../infra/local/queue-poller.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { eventually } from '../../support/eventually.js';

/**
 * The local platform's SQS consumer (infra/local/queue-poller.ts) as a stop uses it (ARCHITECTURE.md,
 * the local platform, stopping): it stops receiving and waits for the messages under way at most the drain
 * time; a message whose handler had not finished is not deleted, so the queue hands it again.
 */

let sqs: RunningEmulator;
let client: SQSClient;

// A fauxqs of its own, as a start has.
beforeAll(async () => {
  sqs = await startSqs();
  client = new SQSClient(emulatorOptions({ region: 'us-east-1', endpoint: sqs.endpoint }));
});

afterAll(async () => {
  client?.destroy();
  await sqs?.stop();
});

const never = new Promise<never>(() => undefined);

describe('the local queue poller', () => {
  it('stops within the drain time while a handler runs on; that message is handed again, not lost', async () => {
    const queueUrl = (
      await client.send(new CreateQueueCommand({ QueueName: 'poller-drain', Attributes: { VisibilityTimeout: '1' } }))
    ).QueueUrl!;
    const poller = (handler: (event: SQSEvent) => Promise<{ batchItemFailures: [] }>) =>
      startQueuePoller({
        sqs: client,
        queueUrl,
        queueArn: 'arn:aws:sqs:us-east-1:000000000000:poller-drain',
        handler,
        concurrency: 4,
        retryDelaySeconds: 1,
      });

    // A handler that never finishes (a step or a delivery still under way at the stop).
    const taken: string[] = [];
    const stuck = poller(async (event) => {
      taken.push(...event.Records.map((r) => r.body));
      return never;
    });
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'under way at the stop' }));
    await eventually(() => (taken.length > 0 ? true : undefined), 15_000, 'the message taken');
    // Answers although the handler has not finished (before the drain time, it waited for it).
    await stuck.stop(200);
    expect(taken).toEqual(['under way at the stop']);

    // Another consumer (the next start) gets it once its visibility timeout has passed.
    const handed: string[] = [];
    const next = poller(async (event) => {
      handed.push(...event.Records.map((r) => r.body));
      return { batchItemFailures: [] };
    });
    try {
      await eventually(() => (handed.length > 0 ? true : undefined), 15_000, 'the message handed again');
      expect(handed).toEqual(['under way at the stop']);
    } finally {
      await next.stop();
    }
    // The stopped poller took nothing more.
    expect(taken).toEqual(['under way at the stop']);
  }, 60_000);
});
