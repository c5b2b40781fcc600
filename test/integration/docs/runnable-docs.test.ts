import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningPlatform, startPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';
import {
  type Addresses,
  outputMismatches,
  type RunnableBlock,
  runnableBlocks,
  ShellSession,
  substituted,
} from '../../support/runnable-docs.js';
import { appendRecord } from '../../support/exchange-log.js';
import { provided } from '../provided.js';

/**
 * The documentation runs: every `sh runnable` block of README.md and docs/*.md, in document
 * order, in one bash session per document, against a platform of the document's own (a stage
 * of its own on the suite's emulators, `npm start`'s defaults: the local sign-in, the local
 * stand-in model, the bootstrap admin key exported as DPM_ADMIN_PSK). The documents' address
 * `http://127.0.0.1:3000` (and `:3443`, and `.data/`) become the platform's; `npm run -s token`
 * finds it through PORT and HOST. A block fails when it exits non-zero, outlives
 * BLOCK_TIMEOUT_MS, or prints less than its `output` block shows (test/support/runnable-docs.ts).
 * test/fixtures/runnable-docs.md runs first: the harness's own check.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURE = 'test/fixtures/runnable-docs.md';
/** A hang guard, not a timing: the slowest block waits for a crew run of a few seconds. */
const BLOCK_TIMEOUT_MS = 60_000;
/** The whole file's bound: blocks still to run after it fail at once. */
const FILE_BUDGET_MS = 30 * 60_000;
const ADMIN_PSK = `runnable-docs-admin-${randomUUID()}`;
/** What a block's shell inherits from this process: how to find bash, node, npm, curl and python3, nothing that configures the service. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'USER', 'PYENV_ROOT', 'PYENV_VERSION'];

const documents = [
  FIXTURE,
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const blocksOf = new Map<string, RunnableBlock[]>(
  documents.map((doc) => [doc, runnableBlocks(readFileSync(join(ROOT, doc), 'utf8'))]),
);
const fileStarted = Date.now();

it('README.md and docs/getting-started.md have runnable blocks, and so has the fixture', () => {
  for (const doc of [FIXTURE, 'README.md', 'docs/getting-started.md'])
    expect(blocksOf.get(doc)?.length ?? 0, `${doc}: runnable blocks`).toBeGreaterThan(0);
});

/**
 * No DNS while the documents run: a name other than localhost fails to resolve at once, so a
 * guide's example host (`hooks.example.com`) is never reached. The platforms run in this
 * process, so this is their resolver too.
 */
let restoreDns: (() => void) | undefined;
beforeAll(async () => {
  // A secret made outside the API, for the secret hygiene check of the run (test/hygiene).
  appendRecord(
    provided('dataDir'),
    { file: 'test/integration/docs/runnable-docs.test.ts', test: undefined },
    { type: 'secret', kind: 'admin-psk', value: ADMIN_PSK, source: 'DPM_ADMIN_PSK of the runnable-docs platforms' },
  );
  const dns = (await import('node:dns')).default;
  const { syncBuiltinESMExports } = await import('node:module');
  const realLookup = dns.lookup;
  dns.lookup = ((hostname: string, options: unknown, callback?: unknown) => {
    if (hostname === 'localhost' || hostname.endsWith('.localhost') || isIP(hostname) !== 0)
      return (realLookup as (...args: unknown[]) => void)(hostname, options, callback);
    const cb = (typeof options === 'function' ? options : callback) as (err: Error) => void;
    const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: 'ENOTFOUND',
      syscall: 'getaddrinfo',
      hostname,
    });
    process.nextTick(() => cb(err));
  }) as typeof dns.lookup;
  syncBuiltinESMExports();
  restoreDns = () => {
    dns.lookup = realLookup;
    syncBuiltinESMExports();
  };
});
afterAll(() => restoreDns?.());

/** The session the documents run in, checked on its own first. */
describe("the harness's bash session", () => {
  let dir: string;
  let shell: ShellSession;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dpm-shell-'));
    shell = new ShellSession(dir, { cwd: dir, env: { PATH: process.env.PATH, GREETING: 'hello' } });
  });
  afterAll(async () => {
    await shell?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps variables and functions between blocks and captures both streams', async () => {
    expect(await shell.run('X=41\nshout() { echo "$1!"; }\necho "$GREETING"', 1, 10_000)).toEqual({
      exitCode: 0,
      output: 'hello\n',
      timedOut: false,
      ended: false,
    });
    const second = await shell.run('shout $((X + 1)); echo oops >&2; false', 2, 10_000);
    expect(second).toMatchObject({ exitCode: 1, timedOut: false, ended: false });
    expect(second.output).toBe('42!\noops\n');
  });

  it('reads no stdin, and ends a block that hangs', async () => {
    expect(await shell.run('cat; echo read-nothing', 3, 10_000)).toMatchObject({
      exitCode: 0,
      output: 'read-nothing\n',
    });
    expect(await shell.run('sleep 30', 4, 300)).toMatchObject({ timedOut: true, ended: true });
    expect(shell.alive).toBe(false);
  });
});

documents.forEach((doc, n) => {
  const blocks = blocksOf.get(doc)!;
  if (blocks.length === 0) return;

  describe(doc, () => {
    let platform: RunningPlatform | undefined;
    let shell: ShellSession | undefined;
    let addresses: Addresses;
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'dpm-docs-'));
      const dataDir = join(dir, 'data');
      const scratch = join(dir, 'tmp');
      mkdirSync(dataDir);
      mkdirSync(scratch);
      platform = await startPlatform(
        loadConfig({
          STAGE: `docs${n}${randomUUID().slice(0, 6)}`,
          PORT: '0',
          HOST: '127.0.0.1',
          DPM_DATA_DIR: dataDir,
          DPM_ADMIN_PSK: ADMIN_PSK,
          LLM_PROVIDER: 'local',
          DYNAMODB_ENDPOINT: provided('dynamodbEndpoint'),
          SQS_ENDPOINT: provided('sqsEndpoint'),
          S3_ENDPOINT: provided('s3Endpoint'),
        }),
        { inMemory: true },
      );
      addresses = { baseUrl: platform.baseUrl, httpsBaseUrl: platform.httpsBaseUrl, dataDir };
      const env: NodeJS.ProcessEnv = {};
      for (const name of INHERITED) if (process.env[name]) env[name] = process.env[name];
      Object.assign(env, {
        // What `npm run -s token` and the guides read.
        HOST: '127.0.0.1',
        PORT: new URL(platform.baseUrl).port,
        HTTPS_PORT: new URL(platform.httpsBaseUrl).port,
        DPM_ADMIN_PSK: ADMIN_PSK,
        DPM_DATA_DIR: dataDir,
        // mktemp -d of the guides, under this document's directory.
        TMPDIR: scratch,
        // Loopback only: curl sends anything else to a port where nothing listens.
        http_proxy: 'http://127.0.0.1:9',
        https_proxy: 'http://127.0.0.1:9',
        HTTPS_PROXY: 'http://127.0.0.1:9',
        ALL_PROXY: 'http://127.0.0.1:9',
        no_proxy: '127.0.0.1,localhost,::1',
        NO_PROXY: '127.0.0.1,localhost,::1',
      });
      shell = new ShellSession(dir, { cwd: ROOT, env });
    }, 180_000);

    afterAll(async () => {
      await shell?.close();
      await platform?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    for (const block of blocks) {
      const firstLine = block.code.split('\n').find((l) => l.trim() !== '') ?? '';
      it(
        `block ${block.index} (line ${block.line}): ${firstLine.trim().slice(0, 80)}`,
        async () => {
          expect(shell, 'the platform of this document did not start').toBeDefined();
          const left = FILE_BUDGET_MS - (Date.now() - fileStarted);
          expect(left, 'the time for the whole file is spent').toBeGreaterThan(1_000);
          const result = await shell!.run(
            substituted(block.code, addresses),
            block.index,
            Math.min(BLOCK_TIMEOUT_MS, left),
          );
          const shown = `${doc}:${block.line}, block ${block.index}; it printed:\n${tail(result.output)}`;
          expect(result.timedOut, `did not finish within ${BLOCK_TIMEOUT_MS / 1000} s: ${shown}`).toBe(false);
          expect(result.ended, `the shell ended (an exit, or set -e and a failure): ${shown}`).toBe(false);
          expect(result.exitCode, `exited ${result.exitCode}: ${shown}`).toBe(0);
          if (block.shown !== undefined)
            expect(
              outputMismatches(block.shown, result.output),
              `its output differs from the shown one: ${shown}`,
            ).toEqual([]);
        },
        BLOCK_TIMEOUT_MS + 15_000,
      );
    }
  });
});

/** The end of a block's output, enough to see what went wrong. */
function tail(output: string): string {
  return output.length > 4000 ? `…${output.slice(-4000)}` : output;
}
