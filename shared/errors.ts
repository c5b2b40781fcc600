/**
 * Domain errors: what services, stores, auth, adapters and the crew worker throw. They
 * say what went wrong, not how to answer it: only `shared/http` maps them to statuses,
 * headers and the contract's bodies. A leaf module: it imports nothing of the project.
 */
export abstract class DomainError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The caller's credentials are missing or not valid. */
export class Unauthenticated extends DomainError {
  constructor(message = 'Not authenticated') {
    super(message);
  }
}

/** The caller is known but lacks the right. */
export class Forbidden extends DomainError {
  constructor(message = 'Forbidden') {
    super(message);
  }
}

export class NotFound extends DomainError {
  constructor(message = 'Not Found') {
    super(message);
  }
}

/** The resource is not in a state that allows the action (taken name, wrong status...). */
export class Conflict extends DomainError {}

/**
 * The caller has as many requests of a kind under way as it may (the fair-use limits); it
 * may try again in a second.
 */
export class TooManyRequests extends DomainError {}

/** A dependency (DynamoDB, SQS, identity provider, ...) did not answer. */
export class Unavailable extends DomainError {
  constructor(message = 'Service Unavailable: a dependency did not answer') {
    super(message);
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

/** pydantic's `value_error`: a rule the value breaks (`msg` "Value error, <error>", `ctx.error`). */
export const valueError = (loc: (string | number)[], error: string, input: unknown): ValidationIssue => ({
  type: 'value_error',
  loc,
  msg: `Value error, ${error}`,
  input,
  ctx: { error },
});

/** pydantic's `missing`: a required field is absent (`input`: the object it is missing from, or null). */
export const missingField = (loc: (string | number)[], input: unknown): ValidationIssue => ({
  type: 'missing',
  loc,
  msg: 'Field required',
  input,
});

/** The input breaks a rule: every issue found, each at its `loc`. */
export class Invalid extends DomainError {
  constructor(readonly issues: ValidationIssue[]) {
    super(issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ') || 'Invalid input');
  }
}
