import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXCHANGES_DIR, type RecordLine } from '../support/exchange-log.js';

/**
 * Where the last integration run says where it kept its records (git-ignored, like the
 * rest of `.vitest/`), for a hygiene check started on its own afterwards.
 */
export const RUN_RECORD_FILE = join(dirname(fileURLToPath(import.meta.url)), '../../.vitest/integration-run.json');

/** A secret the run itself configured (not learned from the exchanges). */
export interface ConfiguredSecret {
  readonly kind: string;
  readonly value: string;
  readonly source: string;
}

export interface IntegrationRun {
  readonly runId: string;
  readonly startedAt: string;
  /** Set by the global setup's teardown; absent while the run goes on (or when it was killed). */
  readonly finishedAt?: string;
  readonly dataDir: string;
  /** The service's captured structured log. */
  readonly logFile: string;
  readonly secrets: readonly ConfiguredSecret[];
}

export function writeRunRecord(run: IntegrationRun): void {
  mkdirSync(dirname(RUN_RECORD_FILE), { recursive: true });
  writeFileSync(RUN_RECORD_FILE, `${JSON.stringify(run, null, 2)}\n`);
}

export function readRunRecord(file = RUN_RECORD_FILE): IntegrationRun | undefined {
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as IntegrationRun;
}

/**
 * The run to check: the one of this invocation when the integration project ran in it,
 * else the last one recorded, which must have finished. Throws a message saying what to
 * run when there is none.
 */
export function loadRun(
  provided: IntegrationRun | undefined,
  file = RUN_RECORD_FILE,
): { run: IntegrationRun; which: string } {
  if (provided) return { run: provided, which: `this invocation's integration run (${provided.startedAt})` };
  const rerun =
    'run the integration tests first (npx vitest run --project integration, or one integration file), ' +
    'then npx vitest run --project hygiene';
  const run = readRunRecord(file);
  if (!run) throw new Error(`no integration run record at ${file}: ${rerun}`);
  if (!run.finishedAt) {
    throw new Error(
      `the integration run recorded in ${file} (started ${run.startedAt}) has not finished ` +
        `(still running, or killed before its teardown): ${rerun}`,
    );
  }
  if (!existsSync(run.dataDir))
    throw new Error(`the integration run's data directory ${run.dataDir} is gone: ${rerun}`);
  return { run, which: `the last integration run (${run.startedAt} – ${run.finishedAt})` };
}

/** Marks the run finished, unless a later run has taken the record over meanwhile. */
export function finishRunRecord(runId: string): void {
  const current = readRunRecord();
  if (current?.runId === runId) writeRunRecord({ ...current, finishedAt: new Date().toISOString() });
}

/** Every line the run's test workers recorded, each with the worker file it came from. */
export function readRecordLines(run: IntegrationRun): { source: string; line: RecordLine }[] {
  const dir = join(run.dataDir, EXCHANGES_DIR);
  if (!existsSync(dir)) return [];
  const lines: { source: string; line: RecordLine }[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith('.jsonl')) continue;
    for (const text of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (text.trim() !== '') lines.push({ source: name, line: JSON.parse(text) as RecordLine });
    }
  }
  return lines;
}
