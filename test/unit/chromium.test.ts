import {
  accessSync,
  constants,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it, vi } from 'vitest';
import { bundledChromiumPackage, chromiumExecutable, SYSTEM_CHROMIUM } from '../support/chromium.js';

/**
 * The browser tests' Chromium: CHROMIUM_PATH, else Debian's, else the one shipped inside the
 * @sparticuz/chromium npm package. The last is the one a fresh machine (no apt step) gets,
 * so it is resolved and launched here explicitly, whatever this machine has installed.
 */
describe('chromiumExecutable', () => {
  it('takes CHROMIUM_PATH first, and refuses one that does not exist', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chromium-path-'));
    const own = join(dir, 'my-chromium');
    writeFileSync(own, '');
    try {
      const got = await chromiumExecutable({ env: { CHROMIUM_PATH: own }, systemPath: own + '-system' });
      expect(got.path).toBe(own);
      expect(got.args).toContain('--no-sandbox');
      await expect(chromiumExecutable({ env: { CHROMIUM_PATH: join(dir, 'missing') } })).rejects.toThrow(
        /CHROMIUM_PATH/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes the system Chromium when it exists, unless the bundled one is asked for', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chromium-system-'));
    const system = join(dir, 'chromium');
    writeFileSync(system, '');
    try {
      expect((await chromiumExecutable({ env: {}, systemPath: system })).path).toBe(system);
      expect((await chromiumExecutable({ env: { CHROMIUM_BUNDLED: '1' }, systemPath: system })).path).not.toBe(system);
      expect((await chromiumExecutable({ env: {}, prefer: 'bundled', systemPath: system })).path).not.toBe(system);
      expect(SYSTEM_CHROMIUM).toBe('/usr/bin/chromium');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('falls back to the npm-shipped Chromium, unpacked once, which playwright-core launches headless', async () => {
    const started = Date.now();
    const { path, args } = await chromiumExecutable({ env: {}, systemPath: join(tmpdir(), 'no-such-chromium') });
    const { version } = bundledChromiumPackage();
    expect(path).not.toBe(SYSTEM_CHROMIUM);
    expect(realpathSync(path).startsWith(realpathSync(tmpdir()))).toBe(true);
    expect(path).toContain(`dpm-chromium-${version}-`);
    accessSync(path, constants.X_OK);
    expect(args).toContain('--no-sandbox');

    // Unpacked only once: a fresh copy of the module (no in-process memo, as in another
    // test worker) finds the same complete copy on disk and does not rewrite it.
    const binary = join(path, '..', 'chromium');
    const before = statSync(binary).mtimeMs;
    vi.resetModules();
    const again = await import('../support/chromium.js');
    expect((await again.chromiumExecutable({ prefer: 'bundled', env: {} })).path).toBe(path);
    expect(statSync(binary).mtimeMs).toBe(before);
    expect(readFileSync(path, 'utf8')).toContain('LD_LIBRARY_PATH');

    const browser = await chromium.launch({ executablePath: path, args, timeout: 20_000 });
    try {
      // It is the package's Chromium (143.x for @sparticuz/chromium 143.y), not Debian's.
      expect(browser.version().split('.')[0]).toBe(version.split('.')[0]);
      const page = await browser.newPage();
      await page.goto(
        'data:text/html,<title>static</title><p id="out"></p>' +
          '<script>document.title = "rendered " + (6 * 7); document.getElementById("out").textContent = navigator.userAgent</script>',
      );
      expect(await page.title()).toBe('rendered 42');
      expect(await page.textContent('#out')).toMatch(/HeadlessChrome\//);
    } finally {
      await browser.close();
    }
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);
});
