import { spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';

/**
 * The Chromium the browser tests drive with playwright-core (which downloads nothing), in
 * this order:
 *
 * 1. `CHROMIUM_PATH`, when set (it must exist: a wrong path is an error, not a fallback);
 * 2. Debian's `/usr/bin/chromium`, when installed;
 * 3. the Chromium shipped inside the `@sparticuz/chromium` npm package (a devDependency, so
 *    `npm ci` alone brings it: nothing is downloaded at install or run time). Its files are
 *    brotli-compressed; they are unpacked once per package version into
 *    `<tmpdir>/dpm-chromium-<version>-<uid>/` (atomically: a half-unpacked copy is never
 *    used, and concurrent test workers unpack it at most once each and keep the first).
 *    The package is built for Amazon Linux and carries the few shared libraries it needs
 *    beyond glibc (NSS, NSPR, expat) and a font; a small launcher script puts those on
 *    `LD_LIBRARY_PATH`/`FONTCONFIG_PATH`, so it needs nothing from apt. x86-64 Linux only
 *    (the package ships no other binary).
 *
 * `CHROMIUM_BUNDLED=1` (or `{ prefer: 'bundled' }`) skips step 2.
 */
export interface ChromiumExecutable {
  /** What to pass as playwright's `executablePath`. */
  readonly path: string;
  /** The launch arguments this Chromium needs. */
  readonly args: string[];
}

export interface ChromiumOptions {
  /** 'bundled' skips /usr/bin/chromium (CHROMIUM_PATH still wins). Default: 'auto'. */
  readonly prefer?: 'auto' | 'bundled';
  /** Where CHROMIUM_PATH and CHROMIUM_BUNDLED are read. Default: process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Debian's Chromium. Default: /usr/bin/chromium. */
  readonly systemPath?: string;
}

export const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/**
 * `--no-sandbox`: tests run as root in containers, where Chromium's sandbox cannot start.
 * `--disable-dev-shm-usage`: a container's /dev/shm is often 64 MiB, too small for a renderer.
 */
const COMMON_ARGS = ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'];

/**
 * @sparticuz/chromium's own recommended `args` are for AWS Lambda: they also switch off web
 * security (`--disable-web-security`, `--allow-running-insecure-content`, site isolation)
 * and force `--single-process`. A browser test must see what a real browser does, so only
 * what this binary needs to start is used: it has no setuid sandbox helper and no zygote.
 */
const BUNDLED_ARGS = [...COMMON_ARGS, '--no-zygote'];

export async function chromiumExecutable(options: ChromiumOptions = {}): Promise<ChromiumExecutable> {
  const env = options.env ?? process.env;
  const configured = env.CHROMIUM_PATH?.trim();
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH is ${configured}, which does not exist`);
    return { path: configured, args: [...COMMON_ARGS] };
  }
  const prefer = options.prefer ?? (env.CHROMIUM_BUNDLED === '1' ? 'bundled' : 'auto');
  const systemPath = options.systemPath ?? SYSTEM_CHROMIUM;
  if (prefer === 'auto' && existsSync(systemPath)) return { path: systemPath, args: [...COMMON_ARGS] };
  return { path: await bundledChromium(), args: [...BUNDLED_ARGS] };
}

/** The npm package that ships the fallback Chromium: its directory and version. */
export function bundledChromiumPackage(): { dir: string; version: string } {
  // The package's "exports" hide package.json: the nearest one above its entry is its own.
  const entry = createRequire(import.meta.url).resolve('@sparticuz/chromium');
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    if (!existsSync(join(dir, 'package.json'))) continue;
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
    if (pkg.name !== '@sparticuz/chromium' || !pkg.version) throw new Error(`${dir} is not @sparticuz/chromium`);
    return { dir, version: pkg.version };
  }
  throw new Error(`no package.json above ${entry}`);
}

const LAUNCHER = 'chromium-launcher';
let unpacking: Promise<string> | undefined;

/** The launcher of the unpacked npm-shipped Chromium (unpacked on first use). */
function bundledChromium(): Promise<string> {
  unpacking ??= unpackOnce().catch((err: unknown) => {
    unpacking = undefined;
    throw err;
  });
  return unpacking;
}

async function unpackOnce(): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(
      `no Chromium: @sparticuz/chromium ships an x86-64 Linux binary only (this is ${process.platform}/${process.arch}); ` +
        `install one (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  const { dir, version } = bundledChromiumPackage();
  const uid = process.getuid?.() ?? 0;
  const cache = join(tmpdir(), `dpm-chromium-${version}-${uid}`);
  const launcher = join(cache, LAUNCHER);
  if (usable(cache, uid)) return launcher;

  const staging = mkdtempSync(`${cache}.unpacking-`);
  try {
    const bin = join(dir, 'bin');
    await Promise.all([
      unbrotli(join(bin, 'chromium.br'), join(staging, 'chromium')),
      untar(join(bin, 'al2023.tar.br'), staging), // lib/: libnss3, libnspr4, libexpat...
      untar(join(bin, 'swiftshader.tar.br'), staging), // software GL, next to the binary
      untar(join(bin, 'fonts.tar.br'), staging), // fonts/Open_Sans
    ]);
    // The package's fonts.conf names Lambda's directories; this one names the unpacked fonts.
    writeFileSync(
      join(staging, 'fonts.conf'),
      [
        '<?xml version="1.0"?>',
        '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">',
        '<fontconfig>',
        `  <dir>${xml(join(cache, 'fonts'))}</dir>`,
        '  <dir>/usr/share/fonts</dir>',
        `  <cachedir>${xml(join(cache, 'fonts-cache'))}</cachedir>`,
        '</fontconfig>',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(staging, LAUNCHER),
      [
        '#!/bin/sh',
        '# Written by test/support/chromium.ts: the Chromium of @sparticuz/chromium with its own libraries.',
        `dir=${sh(cache)}`,
        'LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FONTCONFIG_PATH="$dir" exec "$dir/chromium" "$@"',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    try {
      renameSync(staging, cache);
    } catch (err) {
      // Another worker finished first (the target exists and is not empty): keep its copy.
      if (!usable(cache, uid)) throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return launcher;
}

/** A complete copy made by this user (the rename makes it appear complete or not at all). */
function usable(cache: string, uid: number): boolean {
  try {
    const stat = statSync(cache);
    return (
      stat.isDirectory() &&
      stat.uid === uid &&
      statSync(join(cache, LAUNCHER)).isFile() &&
      statSync(join(cache, 'chromium')).isFile()
    );
  } catch {
    return false;
  }
}

async function unbrotli(source: string, target: string): Promise<void> {
  await pipeline(createReadStream(source), createBrotliDecompress(), createWriteStream(target, { mode: 0o755 }));
}

/**
 * Unpacks a brotli-compressed tarball with the system's tar (always there on Debian). The
 * tarball is decompressed to a file first: tar stops reading at the end-of-archive marker,
 * so a pipe into its stdin can be closed before the padding after it is written.
 */
async function untar(source: string, into: string): Promise<void> {
  const tarball = join(into, `.${basename(source, '.br')}`);
  await pipeline(createReadStream(source), createBrotliDecompress(), createWriteStream(tarball));
  const tar = spawn('tar', ['-x', '--no-same-owner', '-f', tarball, '-C', into], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  tar.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    tar.on('error', reject);
    tar.on('close', resolve);
  });
  rmSync(tarball, { force: true });
  if (code !== 0) throw new Error(`tar -x of ${source} failed (${code}): ${stderr.trim()}`);
}

function sh(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function xml(value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
