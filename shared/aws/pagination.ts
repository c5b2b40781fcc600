import { AppError } from '../http/errors.js';

/** Opaque list cursors: the DynamoDB `LastEvaluatedKey`, base64url-encoded JSON. */
export function encodeCursor(key: Record<string, unknown> | undefined): string | undefined {
  return key ? Buffer.from(JSON.stringify(key), 'utf8').toString('base64url') : undefined;
}

export class InvalidCursor extends AppError {
  constructor() {
    super(400, 'Invalid cursor');
  }
}

export function decodeCursor(cursor: string | undefined): Record<string, unknown> | undefined {
  if (cursor === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through: any undecodable cursor is the caller's mistake
  }
  throw new InvalidCursor();
}

export interface Page<T> {
  items: T[];
  nextCursor: string | undefined;
}
