import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localUserToken } from '../../../infra/local/local-sign-in.js';
import { type RunningPlatform, startPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';
import { chromiumExecutable } from '../../support/chromium.js';
import { api, baseUrl } from '../helpers.js';

/**
 * /docs in a real browser (headless Chromium driven by playwright-core). Every request the
 * page makes must go to the service itself: the page works with no internet. Screenshots go
 * into test/artifacts/docs/.
 */
let browser: Browser;

const ARTIFACTS = fileURLToPath(new URL('../../artifacts/docs/', import.meta.url));
/** A photograph of one part of the page (a dialog), into test/artifacts/docs/. */
const shot = (part: Locator, name: string) => part.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

beforeAll(async () => {
  const { path, args } = await chromiumExecutable();
  browser = await chromium.launch({
    executablePath: path,
    args: [...args, '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
});

interface OpenApi {
  paths: Record<string, Record<string, { tags?: string[] }>>;
}

/** A page that may only reach `origin`: anything else is aborted and recorded. */
async function offlinePage(
  origin: string,
): Promise<{ page: Page; outside: string[]; errors: string[]; close: () => Promise<void> }> {
  const context = await browser.newContext();
  const outside: string[] = [];
  const errors: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
    outside.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => errors.push(err.message));
  return { page, outside, errors, close: () => context.close() };
}

describe('GET /docs in headless Chromium', () => {
  it('renders every endpoint group and every operation of /openapi.json, from the service alone', async () => {
    const doc = (await api<OpenApi>('/openapi.json')).body;
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.entries(item).filter(([method]) => ['get', 'put', 'post', 'delete', 'patch'].includes(method)),
    );
    const groups = [...new Set(operations.flatMap(([, op]) => op.tags ?? []))].sort();
    expect(groups.length).toBeGreaterThan(5);

    const { page, outside, errors, close } = await offlinePage(baseUrl());
    try {
      const res = await page.goto(`${baseUrl()}/docs`);
      expect(res?.status()).toBe(200);
      // Swagger UI renders one section per tag, then the operations inside each.
      await page.waitForSelector('.opblock-tag-section', { timeout: 60_000 });
      const tags = (await page.locator('.opblock-tag').evaluateAll((els) => els.map((e) => e.getAttribute('data-tag'))))
        .filter((t): t is string => t !== null)
        .sort();
      expect(tags).toEqual(groups);
      await expect.poll(() => page.locator('.opblock').count(), { timeout: 30_000 }).toBe(operations.length);
      expect(await page.title()).toBe('Data Platform Management Service');
      // The domain events' AsyncAPI document is one visible link away.
      const asyncApi = page.locator('a[href="/asyncapi.json"]');
      expect(await asyncApi.isVisible()).toBe(true);
      expect(await asyncApi.textContent()).toContain('AsyncAPI');
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  }, 60_000);
});

describe('/docs with the local identity provider', () => {
  let platform: RunningPlatform;

  beforeAll(async () => {
    platform = await startPlatform(
      loadConfig({
        STAGE: 'docs',
        PORT: '0',
        HOST: '127.0.0.1',
        DPM_DATA_DIR: mkdtempSync(join(tmpdir(), 'dpm-docs-')),
        DPM_ADMIN_PSK: 'docs-admin-key-0123456789',
      }),
      { inMemory: true },
    );
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('declares the issuer’s authorization-code flow and the Authorization-PSK key', async () => {
    const res = await fetch(`${platform.baseUrl}/openapi.json`);
    const doc = (await res.json()) as { components: { securitySchemes: Record<string, unknown> } };
    expect(doc.components.securitySchemes).toEqual({
      OAuth2AuthorizationCodeBearer: {
        type: 'oauth2',
        description: expect.any(String),
        flows: {
          authorizationCode: {
            authorizationUrl: `${platform.baseUrl}/oidc/auth`,
            tokenUrl: `${platform.baseUrl}/oidc/token`,
            scopes: {},
          },
        },
      },
      APIKeyHeader: { type: 'apiKey', in: 'header', name: 'Authorization-PSK', description: expect.any(String) },
    });
  });

  it('lets alice sign in on the page (PKCE) and approve the version carol created and submitted', async () => {
    const base = platform.baseUrl;
    const carol = await localUserToken(base, 'carol');
    const versions = `${base}/api/decisions/docs-walkthrough/credit-limit/versions`;
    const created = await fetch(versions, {
      method: 'POST',
      headers: { authorization: `Bearer ${carol}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: { limit: 100 } }),
    });
    expect(created.status).toBe(201);
    const { version } = (await created.json()) as { version: number };
    const submitted = await fetch(`${versions}/${version}/submit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${carol}` },
    });
    expect(submitted.status).toBe(200);

    const { page, outside, errors, close } = await offlinePage(base);
    try {
      await page.goto(`${base}/docs`);
      await page.waitForSelector('.opblock-tag-section', { timeout: 60_000 });

      // Authorize → the OAuth2 scheme's Authorize: a pop-up with the local sign-in page.
      await page.click('.auth-wrapper .authorize');
      const oauth = page.locator('.auth-container', { hasText: 'OAuth2AuthorizationCodeBearer' });
      await expect.poll(() => oauth.locator('#client_id_authorizationCode').inputValue()).toBe('dpm-docs');
      // A public client (PKCE): no client_secret to fill in, and no scopes to choose or text about them.
      const dialog = page.locator('.dialog-ux .modal-ux');
      expect(await dialog.locator('input[id^="client_secret"], label[for^="client_secret"]').count()).toBe(0);
      expect(await dialog.locator('input[type="checkbox"]').count()).toBe(0);
      const shown = await dialog.innerText();
      expect(shown).toContain('authorizationCode with PKCE');
      expect(shown).not.toMatch(/client_secret|scopes/i);
      await shot(dialog, 'authorize-dialog');
      const [popup] = await Promise.all([page.waitForEvent('popup'), oauth.locator('button.authorize').click()]);
      await popup.waitForSelector('button[value="alice"]', { timeout: 60_000 });
      await popup.click('button[value="alice"]');
      await popup.waitForEvent('close', { timeout: 60_000 });
      await expect.poll(() => oauth.innerText(), { timeout: 30_000 }).toContain('Authorized');
      await page.click('.dialog-ux .close-modal');
      // The page says who is signed in (the token Swagger UI holds, asked of /api/me).
      await expect
        .poll(() => page.locator('#dpm-who').textContent(), { timeout: 30_000 })
        .toBe('Signed in as alice (approver; sign-in session)');

      // The approve operation (E1): try it out with carol's version, execute.
      const operation = page.locator(
        '[id="operations-decisions-approve_version_api_decisions__workspace___key__versions__version__approve_post"]',
      );
      await operation.locator('.opblock-summary').click();
      await operation.locator('.try-out__btn').click();
      await operation.locator('tr[data-param-name="workspace"] input').fill('docs-walkthrough');
      await operation.locator('tr[data-param-name="key"] input').fill('credit-limit');
      await operation.locator('tr[data-param-name="version"] input').fill(String(version));
      await operation.locator('.execute').click();
      const status = operation.locator('.live-responses-table tbody .response-col_status').first();
      await expect.poll(() => status.textContent(), { timeout: 60_000 }).toContain('200');
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }

    const after = await fetch(`${versions}/${version}`, { headers: { authorization: `Bearer ${carol}` } });
    expect(await after.json()).toMatchObject({ status: 'approved', created_by: 'carol', approved_by: 'alice' });
  }, 180_000);

  it('asks who signs in after Logout, shows the new name, and sends submit without an invented body', async () => {
    const base = platform.baseUrl;
    const carol = await localUserToken(base, 'carol');
    const versions = `${base}/api/decisions/docs-walkthrough/second-person/versions`;
    const created = await fetch(versions, {
      method: 'POST',
      headers: { authorization: `Bearer ${carol}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: { limit: 5 } }),
    });
    expect(created.status).toBe(201);
    const { version } = (await created.json()) as { version: number };

    const { page, outside, errors, close } = await offlinePage(base);
    try {
      await page.goto(`${base}/docs`);
      await page.waitForSelector('.opblock-tag-section', { timeout: 60_000 });
      expect(await page.locator('#dpm-who').textContent()).toContain('Not signed in');

      const oauth = page.locator('.auth-container', { hasText: 'OAuth2AuthorizationCodeBearer' });
      /** Authorize as `user`: the provider's page must ask who signs in, every time. */
      const authorizeAs = async (user: string) => {
        await page.click('.auth-wrapper .authorize');
        const [popup] = await Promise.all([page.waitForEvent('popup'), oauth.locator('button.authorize').click()]);
        await popup.waitForSelector(`button[value="${user}"]`, { timeout: 60_000 });
        await popup.click(`button[value="${user}"]`);
        await popup.waitForEvent('close', { timeout: 60_000 });
        await expect.poll(() => oauth.innerText(), { timeout: 30_000 }).toContain('Authorized');
        await page.click('.dialog-ux .close-modal');
      };
      await authorizeAs('bob');
      await expect.poll(() => page.locator('#dpm-who').textContent(), { timeout: 30_000 }).toContain('bob');

      // Logout, then Authorize: the provider's session does not sign bob in again silently.
      await page.click('.auth-wrapper .authorize');
      await oauth.locator('button', { hasText: 'Logout' }).click();
      await page.click('.dialog-ux .close-modal');
      await expect.poll(() => page.locator('#dpm-who').textContent(), { timeout: 30_000 }).toContain('Not signed in');
      await authorizeAs('dana');
      await expect
        .poll(() => page.locator('#dpm-who').textContent(), { timeout: 30_000 })
        .toBe('Signed in as dana (admin; sign-in session)');

      // submit: its optional body starts empty (no `{"notes": "string"}`), and is sent so.
      const operation = page.locator(
        '[id="operations-decisions-submit_version_api_decisions__workspace___key__versions__version__submit_post"]',
      );
      await operation.locator('.opblock-summary').click();
      await operation.locator('.try-out__btn').click();
      const body = operation.locator('textarea.body-param__text');
      await body.waitFor({ timeout: 30_000 });
      expect(await body.inputValue()).toBe('');
      await operation.locator('tr[data-param-name="workspace"] input').fill('docs-walkthrough');
      await operation.locator('tr[data-param-name="key"] input').fill('second-person');
      await operation.locator('tr[data-param-name="version"] input').fill(String(version));
      await operation.locator('.execute').click();
      const status = operation.locator('.live-responses-table tbody .response-col_status').first();
      await expect.poll(() => status.textContent(), { timeout: 60_000 }).toContain('200');
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }

    const history = await fetch(`${versions}/${version}/history`, { headers: { authorization: `Bearer ${carol}` } });
    const transitions = (await history.json()) as { action: string; by: string; notes: string | null }[];
    expect(transitions.at(-1)).toMatchObject({ action: 'submit', by: 'dana', notes: null });
  }, 180_000);
});
