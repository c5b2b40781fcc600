import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';

/**
 * The record of one integration run's HTTP exchanges, read afterwards by the secret
 * hygiene check (test/hygiene). Each test worker appends JSON lines to its own file under
 * `<dataDir>/exchanges/`, so concurrent workers never interleave a line.
 */
export const EXCHANGES_DIR = 'exchanges';

export interface RecordedExchange {
  readonly type: 'exchange';
  /** Order of the exchange within its worker's file. */
  readonly seq: number;
  /** The test file (relative to the repository) and the test that made the call. */
  readonly file: string;
  readonly test: string | undefined;
  readonly method: string;
  /** Path and query, as requested. */
  readonly path: string;
  readonly request: {
    readonly body?: string;
    /** The credentials the call sent: learned as secrets that no response may echo. */
    readonly psk?: string;
    readonly token?: string;
  };
  readonly status: number;
  readonly responseHeaders: Record<string, string>;
  readonly responseText: string;
}

/** A secret a test made without the API (e.g. a key stored directly in the keys table). */
export interface RecordedSecret {
  readonly type: 'secret';
  readonly kind: string;
  readonly value: string;
  readonly file: string;
  readonly test: string | undefined;
  readonly source: string;
}

export type RecordLine = RecordedExchange | RecordedSecret;

/** What a caller records; the position in the suite and the order are added here. */
export type RecordInput = Omit<RecordedExchange, 'seq' | 'file' | 'test'> | Omit<RecordedSecret, 'file' | 'test'>;
export interface TestPosition {
  readonly file: string;
  readonly test: string | undefined;
}

let seq = 0;

function fileFor(dataDir: string): string {
  const dir = join(dataDir, EXCHANGES_DIR);
  mkdirSync(dir, { recursive: true });
  return join(dir, `${process.pid}-${threadId}.jsonl`);
}

/** Appends one line; without a data directory (not an integration run) nothing is recorded. */
export function appendRecord(dataDir: string | undefined, position: TestPosition, line: RecordInput): void {
  if (!dataDir) return;
  const entry: RecordLine = line.type === 'exchange' ? { ...line, ...position, seq: seq++ } : { ...line, ...position };
  appendFileSync(fileFor(dataDir), `${JSON.stringify(entry)}\n`);
}
