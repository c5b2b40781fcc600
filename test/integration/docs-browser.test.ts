import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SWAGGER_UI_VERSION } from '../../functions/platform/app.js';
import { api, baseUrl } from './helpers.js';

/**
 * /docs in a real browser: Debian's Chromium (`apt-get install chromium`; .ci/run installs
 * it when missing), driven by playwright-core. The page loads Swagger UI from the CDN; this
 * machine has no internet, so the CDN's answers come from the swagger-ui-dist package of
 * the same version — everything else (the page, /openapi.json) is the service's own.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CDN = `https://cdn.jsdelivr.net/npm/swagger-ui-dist@${SWAGGER_UI_VERSION}/`;
const DIST = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

interface OpenApi {
  paths: Record<string, Record<string, { tags?: string[] }>>;
}

describe('GET /docs in headless Chromium', () => {
  it('renders every endpoint group and every operation of /openapi.json', async () => {
    const doc = (await api<OpenApi>('/openapi.json')).body;
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.entries(item).filter(([method]) => ['get', 'put', 'post', 'delete', 'patch'].includes(method)),
    );
    const groups = [...new Set(operations.flatMap(([, op]) => op.tags ?? []))].sort();
    expect(groups.length).toBeGreaterThan(5);

    const context = await browser.newContext();
    const page = await context.newPage();
    const fromCdn: string[] = [];
    const failed: string[] = [];
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(baseUrl())) return route.continue();
      if (url.startsWith(CDN)) {
        fromCdn.push(url.slice(CDN.length));
        const file = join(DIST, url.slice(CDN.length).split('?')[0]!);
        if (existsSync(file)) {
          const type = file.endsWith('.css') ? 'text/css' : 'application/javascript';
          return route.fulfill({ status: 200, contentType: type, body: readFileSync(file) });
        }
      }
      failed.push(url);
      return route.abort();
    });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    try {
      const res = await page.goto(`${baseUrl()}/docs`);
      expect(res?.status()).toBe(200);
      // Swagger UI renders one section per tag, then the operations inside each.
      await page.waitForSelector('.opblock-tag-section', { timeout: 20_000 });
      const tags = (await page.locator('.opblock-tag').evaluateAll((els) => els.map((e) => e.getAttribute('data-tag'))))
        .filter((t): t is string => t !== null)
        .sort();
      expect(tags).toEqual(groups);
      await expect.poll(() => page.locator('.opblock').count(), { timeout: 10_000 }).toBe(operations.length);
      expect(await page.title()).toBe('Data Platform Management Service');
      expect(fromCdn.sort()).toEqual(['swagger-ui-bundle.js', 'swagger-ui.css']);
      expect(failed).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
