import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { freePort } from '../../infra/local/emulators.js';
import { smoke } from '../../infra/smoke.js';
import { baseUrl } from './helpers.js';

/** `npm run smoke`: the operators' read-only check of a stage, here against the local platform. */

const run = promisify(execFile);

describe('npm run smoke', () => {
  it('passes every check against the local platform, the authenticated ones with a key', async () => {
    const results = await smoke(`${baseUrl()}/`, inject('adminPsk'));
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results).toHaveLength(8);
  });

  it('prints one line per check and exits 0, never printing the key', async () => {
    const psk = inject('adminPsk');
    const out = await run('npx', ['tsx', 'infra/smoke.ts', baseUrl(), '--psk', psk], { timeout: 60_000 });
    const lines = out.stdout.trim().split('\n');
    expect(lines).toHaveLength(9);
    expect(lines.slice(0, 8).every((l) => l.startsWith('ok '))).toBe(true);
    expect(lines.at(-1)).toBe('8 passed, 0 failed');
    expect(out.stdout + out.stderr).not.toContain(psk);
  });

  it('fails (exit 1) where nothing answers, and refuses a bad command line (exit 2)', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const results = await smoke(dead);
    expect(results).toHaveLength(6);
    expect(results.every((r) => !r.ok && typeof r.detail === 'string')).toBe(true);
    const failed = await run('npx', ['tsx', 'infra/smoke.ts', dead], { timeout: 60_000 }).catch((e) => e);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('0 passed, 6 failed');
    const usage = await run('npx', ['tsx', 'infra/smoke.ts', 'not-a-url'], { timeout: 60_000 }).catch((e) => e);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: npm run smoke -- <base-url> [--psk KEY]');
  });
});
