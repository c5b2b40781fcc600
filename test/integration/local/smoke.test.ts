import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/emulators.js';
import { smoke, USAGE } from '../../../infra/smoke.js';
import { adminPsk, baseUrl } from '../helpers.js';

/** `npm run smoke`: the operators' read-only check of a stage, here against the local platform. */

const run = promisify(execFile);

/** `npx tsx infra/smoke.ts ...args` with `stdin` written to it; its exit code and output. */
function runWithStdin(args: string[], stdin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', 'infra/smoke.ts', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(stdin);
  });
}

describe('npm run smoke', () => {
  it('passes every check against the local platform, the authenticated ones with a key', async () => {
    const results = await smoke(`${baseUrl()}/`, adminPsk());
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results).toHaveLength(8);
  });

  it('prints one line per check and exits 0 with the key from DPM_SMOKE_PSK, never printing the key', async () => {
    const psk = adminPsk();
    const out = await run('npx', ['tsx', 'infra/smoke.ts', baseUrl()], {
      timeout: 60_000,
      env: { ...process.env, DPM_SMOKE_PSK: psk },
    });
    const lines = out.stdout.trim().split('\n');
    expect(lines).toHaveLength(9);
    expect(lines.slice(0, 8).every((l) => l.startsWith('ok '))).toBe(true);
    expect(lines.at(-1)).toBe('8 passed, 0 failed');
    expect(out.stdout + out.stderr).not.toContain(psk);
  });

  it('takes the key from stdin with --psk-stdin', async () => {
    const psk = adminPsk();
    const out = await runWithStdin([baseUrl(), '--psk-stdin'], `${psk}\n`);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.trim().split('\n').at(-1)).toBe('8 passed, 0 failed');
    expect(out.stdout + out.stderr).not.toContain(psk);
    const empty = await runWithStdin([baseUrl(), '--psk-stdin'], '');
    expect(empty.code).toBe(2);
    expect(empty.stderr.trim()).toBe('dpm smoke: --psk-stdin read no key from stdin');
  });

  it('refuses a key on the command line (npm would print it) in one line naming DPM_SMOKE_PSK, without echoing it', async () => {
    const psk = adminPsk();
    for (const args of [
      [baseUrl(), '--psk', psk],
      [baseUrl(), `--psk=${psk}`],
      ['--psk', psk, baseUrl()],
    ]) {
      const refused = await run('npx', ['tsx', 'infra/smoke.ts', ...args], { timeout: 60_000 }).catch((e) => e);
      expect(refused.code, refused.stdout).toBe(2);
      expect(refused.stdout).toBe('');
      const lines = refused.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^dpm smoke: --psk .*DPM_SMOKE_PSK.*--psk-stdin/);
      expect(refused.stderr).not.toContain(psk);
    }
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
    expect(usage.stderr.trim()).toBe(USAGE);
    expect(USAGE).toContain('DPM_SMOKE_PSK');
  });
});
