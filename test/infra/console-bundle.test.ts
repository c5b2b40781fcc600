import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { GROUPS, type GroupDefinition } from '../../infra/groups.js';
import { afterBundlingCommands, REPOSITORY_ROOT, ServiceFunction } from '../../infra/aws/service-function.js';
import { stageNamed } from '../../infra/aws/stages.js';
import { BUNDLED_CONSOLE_DIR, CONSOLE_ASSETS } from '../../functions/platform/console.js';

/**
 * /console on AWS (docs/reviewing.md): the platform Lambda's bundling runs the console's build
 * (infra/console-build.ts, the same build the local platform runs in memory) into a
 * `console` folder beside its code, where functions/platform/console.ts reads it. No other
 * function carries the console.
 */
const BUILD = `node --import tsx "infra/console-build.ts"`;
const outdirs: string[] = [];

afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

describe('the console in the platform function’s bundle', () => {
  it('is built by the platform group’s bundling, and by no other group’s', () => {
    const builds = Object.fromEntries(
      (GROUPS as readonly GroupDefinition[]).map((g) => [
        g.name,
        afterBundlingCommands(g, '/in', '/out').filter((c) => c.includes('console-build')),
      ]),
    );
    expect(builds.platform).toEqual([`cd "/in" && ${BUILD} "/out/${BUNDLED_CONSOLE_DIR}"`]);
    for (const [name, commands] of Object.entries(builds)) if (name !== 'platform') expect(commands, name).toEqual([]);
  });

  it('lands beside the bundled platform handler when CDK synthesizes it (real bundling)', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'dpm-console-synth-'));
    outdirs.push(outdir);
    const app = new App({ outdir });
    const stack = new Stack(app, 'ConsoleBundle', { env: { account: '123456789012', region: 'eu-west-1' } });
    const platform = GROUPS.find((g) => g.name === 'platform') as GroupDefinition;
    new ServiceFunction(stack, 'Platform', {
      stage: stageNamed('dev'),
      name: 'platform',
      entry: platform.entry,
      projectRoot: REPOSITORY_ROOT,
      bundledFiles: platform.bundledFiles,
      builtFiles: platform.builtFiles,
    });
    app.synth();

    const assets = readdirSync(outdir).filter(
      (d) => d.startsWith('asset.') && existsSync(join(outdir, d, 'index.mjs')),
    );
    expect(assets).toHaveLength(1);
    const bundle = join(outdir, assets[0]!);
    const sizes = Object.fromEntries(
      Object.keys(CONSOLE_ASSETS).map((name) => [name, statSync(join(bundle, BUNDLED_CONSOLE_DIR, name)).size]),
    );
    // Small next to the handler itself (Lambda bundles stay small): the script stays under 100 KB.
    expect(sizes['main.js']).toBeGreaterThan(10_000);
    expect(sizes['main.js']).toBeLessThan(100_000);
    expect(sizes['main.css']).toBeGreaterThan(500);
    expect(readdirSync(join(bundle, BUNDLED_CONSOLE_DIR)).sort()).toEqual(Object.keys(CONSOLE_ASSETS).sort());
    // The handler's own bundle does not carry esbuild's API (only the synth ran it).
    expect(readFileSync(join(bundle, 'index.mjs'), 'utf8')).not.toContain('ESBUILD_BINARY_PATH');
    expect(readdirSync(bundle)).not.toContain('node_modules');
  }, 120_000);
});
