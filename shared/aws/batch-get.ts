import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Unavailable } from '../errors.js';

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
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > BATCH_GET_ATTEMPTS) throw new Unavailable('DynamoDB is throttling reads; try again');
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, 25 * 2 ** attempt));
      const out = await db.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ...projection } } }),
      );
      found.push(...(out.Responses?.[tableName] ?? []));
      pending = (out.UnprocessedKeys?.[tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
    }
  }
  return found;
}
