import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from './startup-error.js';

/**
 * A running local platform owns its data directory: two of them on one file-backed
 * DynamoDB Local would each take the other's database process for an orphan. The owner
 * is named in `<dataDir>/dpm.lock` (its PID, then its start time, which tells the process
 * apart from a later one that got the same PID); the file is removed at a clean stop. A
 * lock whose process is gone (kill -9, a reboot) is stale and taken over.
 */

export const LOCK_FILE = 'dpm.lock';

export interface DataDirLock {
  readonly file: string;
  /** Removes the lock file, if it is still this process's. */
  release(): void;
}

/** A process as a lock or a pid file names it. */
export interface ProcessId {
  readonly pid: number;
  /** When it started (clock ticks since boot on Linux, `ps` lstart elsewhere); undefined if unknown. */
  readonly started: string | undefined;
}

export function currentProcess(): ProcessId {
  return { pid: process.pid, started: processStart(process.pid) };
}

/** `pid`'s start time, or undefined when there is no such (live, non-zombie) process or it cannot be told. */
export function processStart(pid: number): string | undefined {
  if (existsSync('/proc/self/stat')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return undefined;
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; starttime is field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  }
  try {
    return execFileSync('ps', ['-p', String(pid), '-o', 'lstart='], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Whether the process `id` names is still running (not merely a later process with its PID). */
export function isRunning(id: ProcessId): boolean {
  try {
    process.kill(id.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const started = processStart(id.pid);
  // On Linux undefined means gone (or a zombie); elsewhere it cannot be told, and refusing is the safe side.
  if (started === undefined) return !existsSync('/proc/self/stat');
  return id.started === undefined || started === id.started;
}

function formatProcessId(id: ProcessId): string {
  return `${id.pid}\n${id.started ?? ''}\n`;
}

/** The process a lock or pid file's text names, or undefined when the text names none. */
function parseProcessId(text: string): ProcessId | undefined {
  const [pidLine, startedLine] = text.split('\n');
  const pid = Number(pidLine?.trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, started: startedLine?.trim() || undefined };
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * Takes `dataDir` for this process, or throws a StartupError naming the running owner.
 * The lock file appears whole or not at all (written aside, then hard-linked into place,
 * which fails if it exists), so a concurrent start never reads a half-written one.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const file = join(dataDir, LOCK_FILE);
  // Refused before anything is written when the owner runs.
  refuseIfOwned(dataDir, readText(file));
  try {
    mkdirSync(dataDir, { recursive: true });
  } catch (err) {
    throw new StartupError(`cannot create the data directory ${dataDir}: ${(err as Error).message}`);
  }
  const mine = formatProcessId(currentProcess());
  const draft = `${file}.${process.pid}.new`;
  writeFileSync(draft, mine, { mode: 0o644 });
  try {
    // A few rounds: a stale lock is moved away, then the link is tried again.
    for (let round = 0; round < 5; round++) {
      try {
        linkSync(draft, file);
        return {
          file,
          release: () => {
            if (readText(file) === mine) rmSync(file, { force: true });
          },
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw lockError(file, err);
      }
      const found = readText(file);
      if (found === undefined) continue; // released meanwhile
      refuseIfOwned(dataDir, found);
      // Stale. Moved aside (atomic), and put back if another start replaced it meanwhile.
      const aside = `${file}.${process.pid}.stale`;
      try {
        renameSync(file, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw lockError(file, err);
      }
      if (readText(aside) !== found) {
        try {
          linkSync(aside, file);
        } catch {
          // a third start holds it now; the next round reads it
        }
      }
      rmSync(aside, { force: true });
    }
    throw new StartupError(`could not take the lock ${file}: other starts keep replacing it`);
  } finally {
    rmSync(draft, { force: true });
  }
}

function refuseIfOwned(dataDir: string, lockText: string | undefined): void {
  const owner = lockText === undefined ? undefined : parseProcessId(lockText);
  if (owner && isRunning(owner)) {
    throw new StartupError(
      `the data directory ${dataDir} is in use by a running instance (pid ${owner.pid}); stop it first or set DPM_DATA_DIR`,
    );
  }
}

function lockError(file: string, err: unknown): StartupError {
  return new StartupError(`cannot write the lock ${file}: ${(err as Error).message}`);
}
