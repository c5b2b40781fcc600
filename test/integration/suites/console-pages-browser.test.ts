import { mkdirSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localUserToken } from '../../../infra/local/local-sign-in.js';
import { type RunningPlatform, startPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';
import { scheduleService } from '../../../functions/crews/compose.js';
import { browserSession, launchChromium, type Session } from '../../support/console-browser.js';

/**
 * The review console's schedules, decisions browser and webhooks pages (docs/reviewing.md) in a real
 * browser (headless Chromium driven by playwright-core), signed in through the local identity
 * provider: dana (admin) disables and enables a schedule and reads its runs while carol sees
 * the list only; alice browses workspaces and keys and compares two versions that are not
 * published; dana sees a webhook delivery that failed against a loopback server answering 500,
 * redelivers it, and sees its new attempt. Each page is photographed into
 * test/artifacts/console/. Waits are bounds against a hang, not assertions of speed.
 */
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/console/', import.meta.url));
const ADMIN_PSK = 'console-pages-admin-key-0123456789';
const WAIT = { timeout: 20_000 };

let browser: Browser;
let platform: RunningPlatform;
let base: string;
/** A webhook receiver on loopback that answers every delivery 500, counting them. */
let receiver: Server;
let received = 0;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'receiver down' }));
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  [browser, platform] = await Promise.all([
    launchChromium(),
    startPlatform(
      loadConfig({
        STAGE: 'consolepages',
        PORT: '0',
        HOST: '127.0.0.1',
        DPM_DATA_DIR: mkdtempSync(join(tmpdir(), 'dpm-console-pages-')),
        DPM_ADMIN_PSK: ADMIN_PSK,
        // The receiver may be reached over plain http; a delivery fails for good after one retry 1 s later.
        WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${(receiver.address() as AddressInfo).port}`,
        WEBHOOK_RETRY_SCHEDULE: '1',
      }),
      { inMemory: true },
    ),
  ]);
  base = platform.baseUrl;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

/** A browser profile that may reach the service only. */
const session = (): Promise<Session> => browserSession(browser, base);

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/** Signs in on the console through the provider's form. */
async function signIn(page: Page, user: string): Promise<void> {
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/oidc\/interaction\//, WAIT);
  await page.locator(`button[value="${user}"]`).click(WAIT);
  await page.waitForURL(`${base}/console/**`, WAIT);
  await expect.poll(() => page.locator('#signed-in').textContent(), WAIT).toContain(user);
}

async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${base}/console/`, WAIT);
  await page.getByRole('button', { name: 'Sign in' }).waitFor(WAIT);
}

/** The main navigation's link to `name`. */
const nav = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

async function call<T = any>(
  path: string,
  init: { method?: string; token?: string; psk?: string; body?: unknown } = {},
) {
  const headers: Record<string, string> = {};
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.psk) headers['authorization-psk'] = init.psk;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : undefined) as T };
}

/** A minute's start `minutesAgo` minutes ago, as a fire's scheduled time. */
const minuteAgo = (minutesAgo: number) => {
  const at = new Date(Date.now() - minutesAgo * 60_000);
  at.setUTCSeconds(0, 0);
  return at.toISOString();
};

/** The exact time (`datetime`) shown in a cell, or null when it shows none. */
const timeIn = (cell: ReturnType<Page['getByRole']>) =>
  cell.evaluate((td) => td.querySelector('time')?.getAttribute('datetime') ?? null);

/** The texts of a table's body cells, row by row, white space squeezed. */
const cellTexts = (table: ReturnType<Page['getByRole']>) =>
  table
    .locator('tbody tr')
    .evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.textContent ?? '').replace(/\s+/g, ' ').trim())),
    );

describe('the console’s schedules, decisions and webhooks pages in headless Chromium', () => {
  it('dana disables and enables a schedule and reads its runs; carol sees the schedules only', async () => {
    const template = await call<{ id: string }>('/api/crew-templates', {
      method: 'POST',
      psk: ADMIN_PSK,
      body: {
        name: `pages-report-${Date.now()}`,
        steps: [{ id: 'sign_off', kind: 'approval', prompt: 'Send the report?' }],
      },
    });
    expect(template.status, template.text).toBe(201);
    const nightly = await call<{ id: string; name: string }>('/api/crew-schedules', {
      method: 'POST',
      psk: ADMIN_PSK,
      body: { template_id: template.body.id, name: 'nightly report', expression: 'cron(0 2 * * ? *)' },
    });
    expect(nightly.status, nightly.text).toBe(201);
    const weekly = await call('/api/crew-schedules', {
      method: 'POST',
      psk: ADMIN_PSK,
      body: {
        template_id: template.body.id,
        name: 'weekly digest',
        expression: 'cron(30 7 ? * MON *)',
        timezone: 'Europe/Berlin',
        enabled: false,
      },
    });
    expect(weekly.status, weekly.text).toBe(201);
    // Two fires of the nightly schedule, as the crew-run queue hands them to the worker: the
    // first starts a run (it waits at its approval step), the second is skipped (overlap skip).
    const fires = scheduleService(platform.runtime);
    const [first, second] = [minuteAgo(2), minuteAgo(1)];
    await fires.fire(nightly.body.id, first);
    await fires.fire(nightly.body.id, second);
    const fired = await call(`/api/crew-schedules/${nightly.body.id}`, { psk: ADMIN_PSK });
    expect(fired.body).toMatchObject({ last_run_at: first, last_skipped_at: second, enabled: true });
    const runId: string = fired.body.last_correlation_id;

    const { context, page, outside, errors } = await session();
    try {
      await page.goto(`${base}/console/`);
      await signIn(page, 'dana');
      await nav(page, 'Schedules').click();
      const table = page.getByRole('table', { name: 'Crew schedules' });
      const row = table.getByRole('row', { name: /nightly report/ });
      await row.waitFor(WAIT);
      expect(await page.title()).toBe('Schedules — DPM console');
      // Status, next fire, last fire and last skipped fire, each time exact in its datetime.
      const cells = row.getByRole('cell');
      expect(await cells.nth(1).textContent()).toBe('enabled');
      expect(await timeIn(cells.nth(2))).toBe(fired.body.next_run_at);
      expect(await timeIn(cells.nth(3))).toBe(first);
      expect(await timeIn(cells.nth(4))).toBe(second);
      const weeklyCells = table.getByRole('row', { name: /weekly digest/ }).getByRole('cell');
      expect(await weeklyCells.nth(1).textContent()).toBe('disabled');
      expect(await weeklyCells.nth(3).textContent()).toBe('never');
      await shot(page, 'pages-01-dana-schedules');

      // dana disables (pauses) it: the row says so, with no next fire.
      await row.getByRole('button', { name: 'Disable nightly report' }).click();
      await expect.poll(() => cells.nth(1).textContent(), WAIT).toBe('disabled');
      expect(await cells.nth(2).textContent()).toBe('—');
      expect(await page.getByRole('status').textContent()).toContain('nightly report is disabled');
      expect((await call(`/api/crew-schedules/${nightly.body.id}`, { psk: ADMIN_PSK })).body.enabled).toBe(false);
      await shot(page, 'pages-02-dana-schedule-disabled');

      // ... and enables it again from the keyboard: the button keeps its place and focus.
      const enable = row.getByRole('button', { name: 'Enable nightly report' });
      await enable.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => cells.nth(1).textContent(), WAIT).toBe('enabled');
      const enabled = await call(`/api/crew-schedules/${nightly.body.id}`, { psk: ADMIN_PSK });
      expect(enabled.body).toMatchObject({ enabled: true, next_run_at: expect.any(String) });
      expect(await timeIn(cells.nth(2))).toBe(enabled.body.next_run_at);

      // Its runs: the one its first fire started.
      await row.getByRole('link', { name: 'Runs of nightly report' }).click();
      const runs = page.getByRole('table', { name: 'Runs of schedule nightly report, newest first' });
      await runs.waitFor(WAIT);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Schedule nightly report');
      expect(await runs.getByRole('link').allTextContents()).toEqual([runId]);
      expect(await page.title()).toBe('nightly report — Schedules — DPM console');
      await shot(page, 'pages-03-dana-schedule-runs');
      await runs.getByRole('link', { name: runId }).click();
      await page.waitForURL((url) => url.hash === `#/runs/${runId}`, WAIT);

      // carol: the same list, nothing to press; no runs of a schedule, no webhooks.
      await signOut(page);
      await signIn(page, 'carol');
      await nav(page, 'Schedules').click();
      await row.waitFor(WAIT);
      expect(await cells.nth(1).textContent()).toBe('enabled');
      expect(await table.getByRole('button').count()).toBe(0);
      expect(await table.getByRole('columnheader', { name: 'Actions' }).count()).toBe(0);
      expect(await nav(page, 'Webhooks').count()).toBe(0);
      await shot(page, 'pages-04-carol-schedules');
      await row.getByRole('link', { name: 'nightly report' }).click();
      await page.getByRole('heading', { name: 'Runs it started' }).waitFor(WAIT);
      await expect
        .poll(() => page.getByRole('region', { name: 'Runs it started' }).textContent(), WAIT)
        .toContain('Only admins see the runs a schedule started');
      expect(
        await page
          .getByRole('button')
          .filter({ hasText: /Enable|Disable/ })
          .count(),
      ).toBe(0);
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('alice browses workspaces and keys, filters by workspace, and compares two unpublished versions', async () => {
    const [dana, bob, carol] = await Promise.all([
      localUserToken(base, 'dana'),
      localUserToken(base, 'bob'),
      localUserToken(base, 'carol'),
    ]);
    const make = async (workspace: string, key: string, content: unknown, token: string) => {
      const res = await call(`/api/decisions/${workspace}/${key}/versions`, {
        method: 'POST',
        token,
        body: { content },
      });
      expect(res.status, res.text).toBe(201);
      return res.body.version as number;
    };
    const versions = '/api/decisions/browse-a/credit-limit/versions';
    await make('browse-a', 'credit-limit', { limit: 100, regions: ['eu'] }, dana);
    await make('browse-a', 'credit-limit', { limit: 150, regions: ['eu'], owner: 'risk' }, dana);
    expect((await call(`${versions}/2/submit`, { method: 'POST', token: dana })).status).toBe(200);
    expect((await call(`${versions}/2/approve`, { method: 'POST', token: bob })).status).toBe(200);
    await make('browse-a', 'credit-limit', { limit: 200, regions: ['eu', 'us'], owner: 'risk' }, carol);
    await make('browse-a', 'credit-limit', { limit: 250, regions: ['eu', 'us'], owner: 'risk' }, carol);
    expect((await call(`${versions}/4/submit`, { method: 'POST', token: carol })).status).toBe(200);
    await make('browse-a', 'fees', { card: 0.5 }, carol);
    await make('browse-b', 'regions', { allowed: ['eu'] }, carol);

    const { context, page, outside, errors } = await session();
    try {
      await page.goto(`${base}/console/`);
      await signIn(page, 'alice');
      await nav(page, 'Decisions').click();
      const workspaceA = page.getByRole('region', { name: 'browse-a' });
      await workspaceA.waitFor(WAIT);
      expect(await page.title()).toBe('Decisions — DPM console');
      const keysA = workspaceA.getByRole('table', { name: 'Decision keys of workspace browse-a' });
      expect((await cellTexts(keysA)).map((r) => r.slice(0, 3))).toEqual([
        ['credit-limit', 'version 4 submitted', 'version 2'],
        ['fees', 'version 1 draft', 'none'],
      ]);
      expect(await page.getByRole('region', { name: 'browse-b' }).count()).toBe(1);
      await shot(page, 'pages-05-alice-decisions');

      // Only workspace browse-b, from the filter field (the view's address keeps it).
      await page.getByLabel('Workspace', { exact: true }).fill('browse-b');
      await page.getByLabel('Workspace', { exact: true }).press('Enter');
      await page.waitForURL((url) => url.hash === '#/decisions/browse-b', WAIT);
      // The list read again for browse-b alone (the unfiltered one showed browse-b too).
      const workspaces = () => page.getByRole('heading', { level: 2 }).allTextContents();
      await expect.poll(workspaces, WAIT).toEqual(['browse-b']);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Decisions in browse-b');
      const keysB = page.getByRole('table', { name: 'Decision keys of workspace browse-b' });
      expect((await cellTexts(keysB)).map((r) => r[0])).toEqual(['regions']);
      await page.getByRole('link', { name: 'All workspaces' }).click();
      await workspaceA.waitFor(WAIT);

      // A key's versions with their status; the newest against the published one first.
      await keysA.getByRole('link', { name: 'credit-limit' }).click();
      const table = page.getByRole('table', { name: 'Versions of browse-a/credit-limit, oldest first' });
      await table.waitFor(WAIT);
      expect((await cellTexts(table)).map((r) => r.slice(0, 3))).toEqual([
        ['version 1', 'draft', 'dana'],
        ['version 2', 'approvedpublished', 'dana'],
        ['version 3', 'draft', 'carol'],
        ['version 4', 'submitted', 'carol'],
      ]);
      await page.getByRole('heading', { name: 'Changes from the published version (2) to version 4' }).waitFor(WAIT);

      // Any two: version 1 to version 3, neither of them published.
      await page.getByLabel('From', { exact: true }).selectOption('1');
      await page.getByLabel('To', { exact: true }).selectOption('3');
      await page.getByRole('button', { name: 'Show changes' }).click();
      const diff = page.getByRole('table', { name: 'Changes from version 1 to version 3' });
      await diff.waitFor(WAIT);
      expect(await cellTexts(diff)).toEqual(
        expect.arrayContaining([
          ['replace', '/limit', '100', '200'],
          ['add', '/regions/1', '—', '"us"'],
          ['add', '/owner', '—', '"risk"'],
        ]),
      );
      expect(await diff.locator('tbody tr').count()).toBe(3);
      expect(await page.title()).toBe('browse-a/credit-limit — Decisions — DPM console');
      await shot(page, 'pages-06-alice-compare-v1-v3');

      // A version opens in the decision view.
      await table.getByRole('link', { name: 'version 3' }).click();
      await page.waitForURL((url) => url.hash === '#/decisions/browse-a/credit-limit/3', WAIT);
      await page.getByRole('heading', { name: 'browse-a/credit-limit version 3' }).waitFor(WAIT);
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('dana sees a failed webhook delivery, redelivers it and sees its new attempt', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/dpm`;
    const endpoint = await call<{ id: string; secret: string }>('/api/webhooks', {
      method: 'POST',
      psk: ADMIN_PSK,
      // A type nothing in this file makes: the one delivery is the test event's.
      body: { url, event_types: ['crew.schedule.deleted'], description: 'catalog sync' },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const paused = await call<{ secret: string }>('/api/webhooks', {
      method: 'POST',
      psk: ADMIN_PSK,
      body: { url: `${url}/paused`, event_types: ['crew.schedule.deleted'], enabled: false },
    });
    expect(paused.status, paused.text).toBe(201);
    const test = await call(`/api/webhooks/${endpoint.body.id}/test`, { method: 'POST', psk: ADMIN_PSK });
    expect(test.status, test.text).toBe(202);
    const deliveries = `/api/webhooks/${endpoint.body.id}/deliveries`;
    // Both attempts (the first and its one retry) answered 500: failed for good.
    await expect
      .poll(async () => (await call(deliveries, { psk: ADMIN_PSK })).body[0]?.status, { timeout: 30_000 })
      .toBe('failed');
    const failed = (await call(deliveries, { psk: ADMIN_PSK })).body[0];
    expect(failed).toMatchObject({ attempts: 2, last_response_status: 500, event_type: 'dpm.webhook.test' });

    const { context, page, outside, errors } = await session();
    try {
      await page.goto(`${base}/console/`);
      await signIn(page, 'dana');
      await nav(page, 'Webhooks').click();
      const endpoints = page.getByRole('table', { name: 'Webhook endpoints' });
      const rowOf = (href: string) =>
        endpoints.getByRole('row').filter({ has: page.getByRole('link', { name: href, exact: true }) });
      const row = rowOf(url);
      await row.waitFor(WAIT);
      await expect.poll(() => row.getByRole('cell').nth(2).textContent(), WAIT).toMatch(/^failed dpm\.webhook\.test/);
      expect(await row.getByRole('cell').nth(1).textContent()).toBe('enabled');
      const pausedRow = rowOf(`${url}/paused`);
      expect(await pausedRow.getByRole('cell').nth(1).textContent()).toBe('disabled');
      await expect.poll(() => pausedRow.getByRole('cell').nth(2).textContent(), WAIT).toBe('none yet');
      expect(await page.title()).toBe('Webhooks — DPM console');
      await shot(page, 'pages-07-dana-webhooks');

      await row.getByRole('link', { name: url }).click();
      const table = page.getByRole('table', { name: `Deliveries to ${url}, newest first` });
      const delivery = table.getByRole('row', { name: new RegExp(failed.event_id) });
      await delivery.waitFor(WAIT);
      const cells = delivery.getByRole('cell');
      expect(await cells.nth(0).textContent()).toBe('failed');
      expect(await cells.nth(1).textContent()).toBe('2');
      expect(await cells.nth(2).textContent()).toContain('answered 500');
      expect(await timeIn(cells.nth(2))).toBe(failed.last_attempt_at);
      await shot(page, 'pages-08-dana-webhook-failed');

      const before = received;
      await delivery.getByRole('button', { name: `Redeliver dpm.webhook.test ${failed.event_id}` }).click();
      await expect.poll(() => page.getByRole('status').textContent(), WAIT).toContain('queued again');
      // The page follows the new series until it settles: a later attempt, answered 500 again.
      await expect
        .poll(async () => (await timeIn(cells.nth(2))) ?? failed.last_attempt_at, { timeout: 30_000 })
        .not.toBe(failed.last_attempt_at);
      await expect.poll(() => cells.nth(0).textContent(), { timeout: 30_000 }).toBe('failed');
      const again = (await call(deliveries, { psk: ADMIN_PSK })).body[0];
      expect(again.id).toBe(failed.id);
      expect(Date.parse(again.last_attempt_at)).toBeGreaterThan(Date.parse(failed.last_attempt_at));
      expect(received).toBeGreaterThan(before);
      expect(await timeIn(cells.nth(2))).toBe(again.last_attempt_at);
      expect(await cells.nth(2).textContent()).toContain('answered 500');
      await shot(page, 'pages-09-dana-webhook-redelivered');

      // The signing secrets are nowhere on the pages.
      const text = await page.locator('body').textContent();
      for (const secret of [endpoint.body.secret, paused.body.secret]) expect(text).not.toContain(secret);
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);
});
