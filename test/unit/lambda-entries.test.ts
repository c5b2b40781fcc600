import type { Context, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { handle } from 'hono/aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sqsBatchHandler, sqsEntry, streamEntry } from '../../shared/aws/lambda.js';
import { createServiceApp } from '../../shared/http/service-app.js';
import { logger } from '../../shared/logger.js';

/**
 * Every Lambda entry (an HTTP app served by `handle`, a queue or a stream consumer) puts the
 * invocation's context on the log lines written during the invocation (Powertools'
 * `addContext`): the function's name and the invocation's request id.
 */
function lambdaContext(functionName: string, awsRequestId: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: '2025/01/01/[$LATEST]0123456789abcdef',
    getRemainingTimeInMillis: () => 30_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** The JSON log lines written while `run` runs. */
async function logLines(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const chunks: string[] = [];
  const capture = (chunk: unknown) => {
    chunks.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    await run();
  } finally {
    vi.restoreAllMocks();
  }
  return chunks
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** An API Gateway HTTP API (payload 2.0) GET, addressed to a loopback host. */
const httpEvent = (path: string) => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: path,
  rawQueryString: '',
  headers: { host: 'localhost', accept: 'application/json' },
  body: null,
  requestContext: {
    accountId: '123456789012',
    apiId: 'local',
    authentication: null,
    authorizer: {},
    domainName: 'localhost',
    domainPrefix: 'localhost',
    http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
    requestId: 'api-request-1',
    routeKey: '$default',
    stage: '$default',
    time: '01/Jan/2025:00:00:00 +0000',
    timeEpoch: 1735689600000,
  },
  isBase64Encoded: false,
});

const sqsRecord = (messageId: string): SQSRecord => ({
  messageId,
  receiptHandle: `receipt-${messageId}`,
  body: '{}',
  attributes: {
    ApproximateReceiveCount: '1',
    SentTimestamp: '1735689600000',
    SenderId: 'local',
    ApproximateFirstReceiveTimestamp: '1735689600000',
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:queue',
  awsRegion: 'us-east-1',
});

const named = (lines: Record<string, unknown>[], message: string) => lines.filter((l) => l.message === message);

describe('Lambda entries log their invocation context', () => {
  afterEach(() => vi.restoreAllMocks());

  it('an HTTP app served by handle(): the endpoint and the request line name the function and the invocation', async () => {
    const app = createServiceApp(undefined).endpoint(
      {
        name: 'ping',
        method: 'get',
        path: '/api/ping',
        summary: 'ping',
        tags: ['test'],
        access: 'public',
        success: { status: 200, description: 'pong' },
      },
      (c) => {
        logger.info('inside the endpoint');
        return c.json({ ok: true }, 200);
      },
    );
    const handler = handle(app);
    for (const id of ['http-invocation-1', 'http-invocation-2']) {
      const lines = await logLines(async () => {
        const answer = await handler(httpEvent('/api/ping'), lambdaContext('dpm-test-decisions', id));
        expect(answer.statusCode).toBe(200);
      });
      for (const line of [...named(lines, 'inside the endpoint'), ...named(lines, 'request')]) {
        expect(line).toMatchObject({ function_name: 'dpm-test-decisions', function_request_id: id });
      }
      expect(named(lines, 'inside the endpoint')).toHaveLength(1);
      expect(named(lines, 'request')).toHaveLength(1);
    }
  });

  it('a queue entry: built once, every record line names the invocation; a failed record is a batch item failure', async () => {
    const build = vi.fn(() =>
      sqsBatchHandler(async (record) => {
        logger.info('record handled', { message_id: record.messageId });
        if (record.messageId === 'bad') throw new Error('refused');
      }),
    );
    const handler = sqsEntry(build);
    for (const id of ['sqs-invocation-1', 'sqs-invocation-2']) {
      let answer: unknown;
      const lines = await logLines(async () => {
        answer = await handler(
          { Records: [sqsRecord('good'), sqsRecord('bad')] } as SQSEvent,
          lambdaContext('dpm-test-worker', id),
        );
      });
      expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
      const handled = named(lines, 'record handled');
      expect(handled).toHaveLength(2);
      for (const line of handled) {
        expect(line).toMatchObject({ function_name: 'dpm-test-worker', function_request_id: id });
      }
    }
    expect(build).toHaveBeenCalledTimes(1);
  });

  it('a stream entry: the handler is built on the first invocation (again after a failed build), and names the invocation', async () => {
    let builds = 0;
    const handler = streamEntry(() => {
      builds++;
      if (builds === 1) throw new Error('cold start failed');
      return async (event) => {
        logger.info('stream batch', { records: event.Records.length });
        return { batchItemFailures: [] };
      };
    });
    expect(builds).toBe(0);
    const event = { Records: [] } as DynamoDBStreamEvent;
    await expect(handler(event, lambdaContext('dpm-test-publisher', 'stream-invocation-1'))).rejects.toThrow(
      'cold start failed',
    );
    const lines = await logLines(() => handler(event, lambdaContext('dpm-test-publisher', 'stream-invocation-2')));
    expect(named(lines, 'stream batch')).toEqual([
      expect.objectContaining({ function_name: 'dpm-test-publisher', function_request_id: 'stream-invocation-2' }),
    ]);
    await logLines(() => handler(event, lambdaContext('dpm-test-publisher', 'stream-invocation-3')));
    expect(builds).toBe(2);
  });
});
