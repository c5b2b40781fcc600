import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Unavailable } from '../errors.js';
import { AGAIN, backoffMs, retry } from '../retry.js';

/** BatchGetItem's limit, and how often unprocessed keys are asked again. */
const BATCH_GET_KEYS = 100;
const BATCH_GET_ATTEMPTS = 5;

/**
 * Every item of `keys` that exists (in no particular order): BatchGetItem, 100 keys a
 * call; keys DynamoDB leaves unprocessed are asked again after a growing pause.
 */
export async function batchGetAll(
  db: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  options: { projection?: readonly string[] } = {},
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  const projection = options.projection?.length
    ? {
        ProjectionExpression: options.projection.map((_, i) => `#p${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(options.projection.map((name, i) => [`#p${i}`, name])),
      }
    : {};
  for (let i = 0; i < keys.length; i += BATCH_GET_KEYS) {
    let pending: Record<string, unknown>[] = keys.slice(i, i + BATCH_GET_KEYS);
    const read = await retry(
      async () => {
        const out = await db.send(
          new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ...projection } } }),
        );
        found.push(...(out.Responses?.[tableName] ?? []));
        pending = (out.UnprocessedKeys?.[tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
        return pending.length > 0 ? AGAIN : true;
      },
      // 100, 200, 400, 800 ms before the 2nd … 5th call.
      { attempts: BATCH_GET_ATTEMPTS, delayMs: (attempt) => backoffMs(attempt, { baseMs: 25 }) },
    );
    if (!read.done) throw new Unavailable('DynamoDB is throttling reads; try again');
  }
  return found;
}
