/**
 * Typed errors. Services and middleware throw these; the app factory's `onError` turns
 * them into the contract's ErrorResponse `{"error", "code"}` (or HTTPValidationError).
 */
export class AppError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 422 | 503,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class Unauthorized extends AppError {
  constructor(message = 'Not authenticated') {
    super(401, message, { 'WWW-Authenticate': 'Bearer, PSK realm="dpm" header="Authorization-PSK"' });
  }
}

export class Forbidden extends AppError {
  constructor(message = 'Forbidden') {
    super(403, message);
  }
}

export class NotFound extends AppError {
  constructor(message = 'Not Found') {
    super(404, message);
  }
}

export class MethodNotAllowed extends AppError {
  constructor(allowed: readonly string[]) {
    super(405, 'Method Not Allowed', { Allow: allowed.join(', ') });
  }
}

export class Conflict extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

export class PayloadTooLarge extends AppError {
  constructor(message = 'Request body is larger than 1 MiB') {
    // The body is answered before it is read: closing the connection after the answer lets
    // the client see the 413 (on a kept-alive socket it could see a reset mid-upload).
    super(413, message, { Connection: 'close' });
  }
}

/** A dependency (DynamoDB, SQS, identity provider, ...) did not answer. */
export class Unavailable extends AppError {
  constructor(message = 'Service Unavailable: a dependency did not answer') {
    super(503, message, { 'Retry-After': '1' });
  }
}

/** One pydantic-v2-shaped validation failure (`{"type", "loc", "msg", "input", "ctx"?}`). */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export class ValidationFailed extends AppError {
  constructor(readonly detail: ValidationIssue[]) {
    super(422, 'Unprocessable Entity');
  }
}
