import {
  Conflict,
  DomainError,
  Forbidden,
  Invalid,
  NotFound,
  TooManyRequests,
  Unauthenticated,
  Unavailable,
  valueError,
  type ValidationIssue,
} from '../errors.js';
import { isDependencyFailure, isUnstorableInput } from '../aws/errors.js';

/**
 * How errors are answered. Domain errors (shared/errors.ts) get their status, headers and
 * body here, and only here; the app factory's `onError` sends what `errorAnswer` says.
 */
export type ErrorStatus = 401 | 403 | 404 | 405 | 409 | 413 | 422 | 429 | 503;

export interface ErrorAnswer {
  readonly status: ErrorStatus;
  readonly headers: Readonly<Record<string, string>>;
  /** ErrorResponse `{"error", "code"}`, or HTTPValidationError `{"detail"}` for a 422. */
  readonly body: { error: string; code: number } | { detail: ValidationIssue[] };
}

/** An answer that exists only in HTTP (a method, a body size): no domain error means it. */
export class HttpError extends Error {
  constructor(
    readonly status: 405 | 413,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class MethodNotAllowed extends HttpError {
  constructor(allowed: readonly string[]) {
    super(405, 'Method Not Allowed', { Allow: allowed.join(', ') });
  }
}

export class PayloadTooLarge extends HttpError {
  constructor(message = 'Request body is larger than 1 MiB') {
    // The body is answered before it is read: closing the connection after the answer lets
    // the client see the 413 (on a kept-alive socket it could see a reset mid-upload).
    super(413, message, { Connection: 'close' });
  }
}

const WWW_AUTHENTICATE = 'Bearer, PSK realm="dpm" header="Authorization-PSK"';

const DOMAIN_ANSWERS: readonly [new (...args: never[]) => DomainError, ErrorStatus, Record<string, string>][] = [
  [Unauthenticated, 401, { 'WWW-Authenticate': WWW_AUTHENTICATE }],
  [Forbidden, 403, {}],
  [NotFound, 404, {}],
  [Conflict, 409, {}],
  [TooManyRequests, 429, { 'Retry-After': '1' }],
  [Unavailable, 503, { 'Retry-After': '1' }],
];

/** What a write refused by DynamoDB for its size or depth answers (the item could not be stored). */
const UNSTORABLE = 'the request is too large or too deeply nested to store';

/** An AWS SDK failure as the domain error it amounts to: an outage, or input DynamoDB cannot store. */
export function sdkFailure(err: unknown): Unavailable | Invalid | undefined {
  if (isUnstorableInput(err)) return new Invalid([valueError(['body'], UNSTORABLE, null)]);
  if (isDependencyFailure(err)) return new Unavailable();
  return undefined;
}

/** The answer to an error this service means; undefined for anything else (a 500, or the SDK's). */
export function errorAnswer(err: unknown): ErrorAnswer | undefined {
  if (err instanceof Invalid) return { status: 422, headers: {}, body: { detail: err.issues } };
  if (err instanceof HttpError) {
    return { status: err.status, headers: err.headers, body: { error: err.message, code: err.status } };
  }
  for (const [type, status, headers] of DOMAIN_ANSWERS) {
    if (err instanceof type) return { status, headers, body: { error: (err as Error).message, code: status } };
  }
  return undefined;
}

/** The status an error is answered with: ours, an SDK failure's, else 500. */
export function statusOf(err: unknown): number {
  return (errorAnswer(err) ?? errorAnswer(sdkFailure(err)))?.status ?? 500;
}
