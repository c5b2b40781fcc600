import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';

/** A DynamoDB stream consumer with partial batch failures (the events publisher and dispatcher). */
export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>` → `<name>` */
export function tableOfStream(arn: string | undefined): string | undefined {
  return arn?.match(/:table\/([^/]+)\/stream\//)?.[1];
}
