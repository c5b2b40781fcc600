/**
 * The one build of the review console (`console/` → `main.js` and `main.css`): run in memory
 * by the platform when running from source, and by CDK's bundling of the platform Lambda
 * into `<bundle>/console/` (`node --import tsx infra/console-build.ts <outdir>`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The entry of the console's code (its style sheet is imported from it). */
export const CONSOLE_ENTRY = join(ROOT, 'console', 'main.tsx');

/** esbuild's options: one minified module for current browsers, Preact's JSX, no source map. */
export function consoleBuildOptions(outdir: string): BuildOptions {
  return {
    entryPoints: { main: CONSOLE_ENTRY },
    outdir,
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(ROOT, 'console', 'tsconfig.json'),
    legalComments: 'none',
    logLevel: 'silent',
  };
}

/** The built files by name, in memory. */
export async function buildConsole(): Promise<ReadonlyMap<string, Uint8Array>> {
  const outdir = join(ROOT, 'console', 'dist');
  const result = await build({ ...consoleBuildOptions(outdir), write: false });
  return new Map(result.outputFiles.map((file) => [basename(file.path), file.contents]));
}

/** Writes the built files into `outdir`. */
export async function writeConsole(outdir: string): Promise<void> {
  mkdirSync(outdir, { recursive: true });
  for (const [name, contents] of await buildConsole()) writeFileSync(join(outdir, name), contents);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outdir = process.argv[2];
  if (!outdir) {
    console.error('usage: node --import tsx infra/console-build.ts <outdir>');
    process.exit(2);
  }
  await writeConsole(resolve(outdir));
}
