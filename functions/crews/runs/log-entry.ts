import { capText, MAX_MESSAGE_BYTES } from '../limits.js';
import type { RunLogEntry } from './run-schemas.js';

/** What an entry says: its type, its message, and the step and data it has. */
export type LogEntryFields = Omit<RunLogEntry, 'index' | 'correlation_id' | 'timestamp'>;

/**
 * Entry `index` of run `correlationId`'s log (E13), written at `at`: the one way every writer
 * of the log (E2, cancel, retry, a decision, the runner's decide) makes one, its message
 * bounded as the contract says.
 */
export const logEntry = (correlationId: string, index: number, at: string, fields: LogEntryFields): RunLogEntry => ({
  index,
  correlation_id: correlationId,
  timestamp: at,
  ...fields,
  message: capText(fields.message, MAX_MESSAGE_BYTES),
});
