import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Runnable documentation (test/README.md, "Docs that run"): the `sh runnable` blocks of a
 * markdown document, run in order in one bash session, each checked loosely against the
 * `output` block that follows it.
 */

/** The info string that marks a block as runnable, and the one of its shown output. */
export const RUNNABLE_INFO = 'sh runnable';
export const OUTPUT_INFO = 'output';

export interface RunnableBlock {
  /** 1, 2, … in document order. */
  readonly index: number;
  /** The line of its opening fence (1-based). */
  readonly line: number;
  readonly code: string;
  /** The text of the `output` block right after it, if there is one. */
  readonly shown: string | undefined;
}

interface Fence {
  readonly info: string;
  readonly line: number;
  readonly text: string;
}

/** The fenced blocks of a markdown text, in order (``` or ~~~, three or more, closed by the same or longer). */
function fences(markdown: string): Fence[] {
  const lines = markdown.split('\n');
  const found: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, marker, info] = open as unknown as [string, string, string];
    let end = i + 1;
    while (end < lines.length) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[end]!);
      if (close && close[1]![0] === marker[0] && close[1]!.length >= marker.length) break;
      end++;
    }
    found.push({ info: info.trim(), line: i + 1, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return found;
}

/** The runnable blocks of a document, each with the `output` block that follows it (the next fenced block). */
export function runnableBlocks(markdown: string): RunnableBlock[] {
  const all = fences(markdown);
  const blocks: RunnableBlock[] = [];
  all.forEach((fence, i) => {
    if (fence.info !== RUNNABLE_INFO) return;
    const next = all[i + 1];
    blocks.push({
      index: blocks.length + 1,
      line: fence.line,
      code: fence.text,
      shown: next?.info === OUTPUT_INFO ? next.text : undefined,
    });
  });
  return blocks;
}

/** Where the platform a document runs against really is, for the addresses the documents write. */
export interface Addresses {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  /** `https://127.0.0.1:<port>` */
  readonly httpsBaseUrl: string;
  /** The platform's DPM_DATA_DIR, for the `.data/` the documents name. */
  readonly dataDir: string;
}

/**
 * A block's code as it runs: `127.0.0.1:3000` and `localhost:3000` (the documented HTTP
 * address) become the platform's, `:3443` (its HTTPS port) likewise, and a path in `.data/`
 * (the default DPM_DATA_DIR) one in the platform's data directory.
 */
export function substituted(code: string, to: Addresses): string {
  const http = new URL(to.baseUrl).host;
  const https = new URL(to.httpsBaseUrl).host;
  return code
    .replace(/\b(?:127\.0\.0\.1|localhost):3000\b/g, http)
    .replace(/\b(?:127\.0\.0\.1|localhost):3443\b/g, https)
    .replace(/(^|[\s'"=(:])\.data\//gm, (_, before: string) => `${before}${to.dataDir.replace(/\/$/, '')}/`);
}

/**
 * The JSON values of a text, in order: a line starting with `{` or `[` begins one, which may
 * go on over the following lines (pretty-printed). A shown output may elide with `...` or
 * `…` (a value, an element, the rest of an object or array): `tolerant` reads those as
 * null or as nothing. Lines that are no JSON (`[local stand-in model] …`) are skipped.
 */
export function jsonValues(text: string, tolerant = false): unknown[] {
  const lines = text.split('\n');
  const values: unknown[] = [];
  const parse = (candidate: string): { value: unknown } | undefined => {
    try {
      return { value: JSON.parse(tolerant ? withoutElisions(candidate) : candidate) };
    } catch {
      return undefined;
    }
  };
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*[{[]/.test(lines[i]!)) continue;
    for (let end = i; end < Math.min(lines.length, i + 500); end++) {
      const parsed = parse(lines.slice(i, end + 1).join('\n'));
      if (parsed) {
        values.push(parsed.value);
        i = end;
        break;
      }
    }
  }
  return values;
}

const ELISION = String.raw`(?:\.\.\.|…)`;

function withoutElisions(text: string): string {
  return text
    .replace(new RegExp(String.raw`,\s*${ELISION}\s*(?=[}\]])`, 'g'), '')
    .replace(new RegExp(String.raw`([[{])\s*${ELISION}\s*,?\s*`, 'g'), '$1')
    .replace(new RegExp(String.raw`(:\s*)${ELISION}(?=\s*[,}\]])`, 'g'), '$1null');
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Where `real` lacks a key `shown` names (at any depth), or is not the object or array `shown` is. */
function missingKeys(shown: unknown, real: unknown, at: string): string[] {
  if (isObject(shown)) {
    if (!isObject(real)) return [`${at || 'the value'} is not an object but ${JSON.stringify(real)?.slice(0, 80)}`];
    return Object.entries(shown).flatMap(([key, value]) =>
      key in real ? missingKeys(value, real[key], `${at}.${key}`) : [`${at}.${key} is missing`],
    );
  }
  if (Array.isArray(shown)) {
    if (!Array.isArray(real)) return [`${at || 'the value'} is not an array but ${JSON.stringify(real)?.slice(0, 80)}`];
    return shown.flatMap((value, i) => (i < real.length ? missingKeys(value, real[i], `${at}[${i}]`) : []));
  }
  return [];
}

/**
 * What the real output lacks of the shown one, checked loosely: each line that is only a
 * 3-digit number (a status) must be a line of the real output, in the same order; the k-th
 * JSON value shown is matched with the k-th one printed, whose keys must include every key
 * the shown one names. Values are not compared. Empty when the output matches.
 */
export function outputMismatches(shown: string, real: string): string[] {
  const problems: string[] = [];
  const realLines = real.split('\n').map((l) => l.trim());
  let from = 0;
  for (const status of shown
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^\d{3}$/.test(l))) {
    const at = realLines.indexOf(status, from);
    if (at < 0) problems.push(`the line ${status} is missing (after what came before it)`);
    else from = at + 1;
  }
  const shownValues = jsonValues(shown, true);
  const realValues = jsonValues(real);
  shownValues.forEach((value, k) => {
    const what = `JSON value ${k + 1}`;
    if (k >= realValues.length) problems.push(`${what} is missing: only ${realValues.length} printed`);
    else problems.push(...missingKeys(value, realValues[k], '').map((p) => `${what}: ${p}`));
  });
  return problems;
}

export interface BlockResult {
  /** The exit status of its last command; undefined when the session ended or the time ran out. */
  readonly exitCode: number | undefined;
  /** stdout and stderr, interleaved as written. */
  readonly output: string;
  readonly timedOut: boolean;
  /** The shell ended during the block (an `exit`, or `set -e` and a failure). */
  readonly ended: boolean;
}

/**
 * One bash session that runs blocks one after the other, as a reader pasting them into one
 * terminal would: variables, functions and the working directory carry over. Each block is
 * written to a file and `source`d with stdin from /dev/null and its output captured to a file;
 * a marker line with its status tells when it is done.
 */
export class ShellSession {
  private readonly shell: ChildProcess;
  private stdout = '';
  private exited = false;
  private killed = false;
  private waiting: (() => void) | undefined;

  constructor(
    private readonly dir: string,
    options: { cwd: string; env: NodeJS.ProcessEnv },
  ) {
    // A process group of its own: a hang is ended with everything the block started.
    this.shell = spawn('bash', ['--noprofile', '--norc'], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.shell.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      this.waiting?.();
    });
    this.shell.stderr!.resume();
    this.shell.on('exit', () => {
      this.exited = true;
      this.waiting?.();
    });
    this.shell.stdin!.on('error', () => undefined);
  }

  get alive(): boolean {
    return !this.exited && !this.killed;
  }

  async run(code: string, n: number, timeoutMs: number): Promise<BlockResult> {
    const script = join(this.dir, `block-${n}.sh`);
    const log = join(this.dir, `block-${n}.out`);
    writeFileSync(script, `${code}\n`);
    writeFileSync(log, '');
    const output = () => readFileSync(log, 'utf8');
    if (!this.alive) return { exitCode: undefined, output: '', timedOut: false, ended: true };
    const marker = new RegExp(`^__block_done_${n}__ (\\d+)$`, 'm');
    this.stdout = '';
    this.shell.stdin!.write(`source '${script}' </dev/null >'${log}' 2>&1; echo "__block_done_${n}__ $?"\n`);
    let timer: NodeJS.Timeout | undefined;
    const outcome = await new Promise<'done' | 'ended' | 'timeout'>((resolve) => {
      const check = () => {
        if (marker.test(this.stdout)) resolve('done');
        else if (this.exited) resolve('ended');
      };
      this.waiting = check;
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
      check();
    }).finally(() => {
      clearTimeout(timer);
      this.waiting = undefined;
    });
    if (outcome === 'timeout') {
      this.kill();
      return { exitCode: undefined, output: output(), timedOut: true, ended: true };
    }
    if (outcome === 'ended') return { exitCode: undefined, output: output(), timedOut: false, ended: true };
    return { exitCode: Number(marker.exec(this.stdout)![1]), output: output(), timedOut: false, ended: false };
  }

  /** Ends the shell and whatever it started. */
  kill(): void {
    this.killed = true;
    if (this.shell.pid === undefined) return;
    try {
      process.kill(-this.shell.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  async close(): Promise<void> {
    if (this.alive) {
      this.shell.stdin!.end('exit 0\n');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5_000);
        this.shell.once('exit', () => (clearTimeout(timer), resolve()));
        if (this.exited) resolve();
      });
    }
    // Whatever a block left running in the background goes with it.
    this.kill();
  }
}
