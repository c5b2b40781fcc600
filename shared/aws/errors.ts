/** Classification of AWS SDK failures, so the HTTP layer can answer 503 for outages. */
const THROTTLING = new Set([
  'ThrottlingException',
  'Throttling',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'LimitExceededException',
]);

const UNAVAILABLE = new Set([
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'InternalServerError',
  'InternalFailure',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  // A table or queue that does not exist is a broken dependency, not a caller error.
  'ResourceNotFoundException',
  'AWS.SimpleQueueService.NonExistentQueue',
  'QueueDoesNotExist',
  'NoSuchBucket',
]);

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

interface SdkLikeError {
  name?: string;
  code?: string;
  $fault?: string;
  $retryable?: unknown;
  cause?: unknown;
  errors?: unknown[];
}

/** True when the error means a dependency did not answer (network, throttling, server fault). */
export function isDependencyFailure(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const e = err as SdkLikeError;
  if (e.name && (THROTTLING.has(e.name) || UNAVAILABLE.has(e.name))) return true;
  if (e.code && NETWORK_CODES.has(e.code)) return true;
  if (e.$fault === 'server' || e.$retryable) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isDependencyFailure(x, depth + 1))) return true;
  return isDependencyFailure(e.cause, depth + 1);
}

export function isConditionFailed(err: unknown): boolean {
  return (err as SdkLikeError | undefined)?.name === 'ConditionalCheckFailedException';
}

/**
 * A transaction refused because one of its conditions did not hold, or because another
 * transaction was writing the same item at that moment: either way, what was read has changed.
 */
export function isTransactionRefused(err: unknown): boolean {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | undefined;
  return (
    e?.name === 'TransactionCanceledException' &&
    (e.CancellationReasons ?? []).some((r) => r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict')
  );
}

/** Runs a conditional write: true when written, false when its condition did not hold. */
export async function conditionally(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (err) {
    if (isConditionFailed(err) || isTransactionRefused(err)) return false;
    throw err;
  }
}

const UNSTORABLE = [
  /item size/i,
  /maximum allowed size/i,
  /nesting levels/i,
  /empty attribute name/i,
  /key attribute cannot contain an empty string/i,
  /MAX_SAFE_INTEGER|MIN_SAFE_INTEGER|precision/i,
  // A number of magnitude below 1e-130 or above 9.99e125.
  /number underflow|number overflow/i,
];

/**
 * DynamoDB refused to store what the caller sent (an item over 400 KB, too deep, a number
 * it cannot represent): the request's fault, answered 422, never a 500.
 */
export function isUnstorableInput(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const { name, message } = err as { name?: string; message?: string };
  if (name !== 'ValidationException' && name !== 'Error') return false;
  return UNSTORABLE.some((pattern) => pattern.test(message ?? ''));
}
