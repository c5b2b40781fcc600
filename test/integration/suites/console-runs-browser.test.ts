import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localUserToken } from '../../../infra/local/local-sign-in.js';
import { type RunningPlatform, startPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';
import { DynamoRunStore } from '../../../functions/crews/runs/run-store.js';
import { browserSession, launchChromium, type Session } from '../../support/console-browser.js';

/**
 * The review console's runs (docs/reviewing.md) in a real browser (headless Chromium driven by
 * playwright-core), signed in through the local identity provider: an approver reads what a
 * waiting step lets through (the outputs before it, the next step's request with its secret
 * header masked) and decides, the page then saying what was decided, by whom and when, and
 * offering the next item of the inbox; an admin filters and pages the runs list; a person
 * who may only read a run sees no action they may not take. Each state is photographed into
 * test/artifacts/console/ (runs-*.png). Waits are hang guards only.
 */
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/console/', import.meta.url));
const ADMIN_PSK = 'console-runs-browser-admin-key-0123456789';
/** A secret the `ship` step sends in its Authorization header: never on a page. */
const SECRET = 'shop-secret-4711';

let browser: Browser;
let platform: RunningPlatform;
let base: string;
/** A shop on loopback for crew `http` steps: a path ending in /fail answers 500, any other 200. */
let shop: Server;
let shopUrl: string;
/** What the shop received. */
const received: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  shop = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const fail = req.url!.endsWith('/fail');
      res.writeHead(fail ? 500 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(fail ? { error: 'out of stock' } : { shipped: true }));
    });
  });
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  [browser, platform] = await Promise.all([
    launchChromium(),
    startPlatform(
      loadConfig({
        STAGE: 'consoleruns',
        PORT: '0',
        HOST: '127.0.0.1',
        DPM_DATA_DIR: mkdtempSync(join(tmpdir(), 'dpm-console-runs-browser-')),
        DPM_ADMIN_PSK: ADMIN_PSK,
        CREW_HTTP_ALLOWED_HOSTS: `127.0.0.1:${(shop.address() as AddressInfo).port}`,
      }),
      { inMemory: true },
    ),
  ]);
  base = platform.baseUrl;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  shop?.closeAllConnections();
  await new Promise((resolve) => shop?.close(resolve));
});

/** A browser profile that may reach the service only. */
const session = (): Promise<Session> => browserSession(browser, base);

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/** Signs in on the console as `user` of the local identity provider. */
async function signIn(page: Page, user: string): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.locator('#sign-in').click();
  await page.waitForURL(/\/oidc\/interaction\//, { timeout: 60_000 });
  await page.locator(`button[value="${user}"]`).click({ timeout: 60_000 });
  await page.waitForURL(`${base}/console/**`, { timeout: 60_000 });
  await expect.poll(() => page.locator('#signed-in').textContent(), { timeout: 60_000 }).toContain(user);
}

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

async function template(body: unknown): Promise<{ id: string; name: string }> {
  const res = await call<{ id: string; name: string }>('/api/crew-templates', {
    method: 'POST',
    psk: ADMIN_PSK,
    body,
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function start(templateId: string, token: string, values: Record<string, unknown> = {}): Promise<string> {
  const res = await call<{ correlation_id: string }>(`/api/crew-templates/${templateId}/run`, {
    method: 'POST',
    token,
    body: { values },
  });
  expect(res.status, res.text).toBe(202);
  return res.body.correlation_id;
}

/** The run once it reached one of `statuses` (a hang guard of 60 s). */
async function reached(id: string, token: string, statuses: string[]): Promise<{ status: string }> {
  let run: { status: string } | undefined;
  await expect
    .poll(
      async () => {
        run = (await call<{ status: string }>(`/api/crew-runs/${id}`, { token })).body;
        return statuses.includes(run.status);
      },
      { timeout: 60_000, interval: 200 },
    )
    .toBe(true);
  return run!;
}

/** The cells of each row of the runs table, as text. */
const rows = (page: Page) =>
  page
    .locator('#runs tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')));

/** A note long enough that the brief's output is shown cut at 2 KiB. */
const NOTE = Array.from({ length: 60 }, (_, i) => `Line ${i + 1} of the packing note: handle with care.`).join('\n');

describe('crew runs in the review console', () => {
  let shipTemplate: { id: string; name: string };
  let firstRun: string;
  let secondRun: string;

  it('shows an approver what the waiting step lets through; after Approve one outcome and the next item', async () => {
    shipTemplate = await template({
      name: `console-ship-${Date.now()}`,
      variables: [
        { name: 'order', type: 'integer', required: true },
        { name: 'note', type: 'string', default: '' },
      ],
      steps: [
        { id: 'brief', kind: 'render', template: 'Order {{order}} for the shop.\n{{note}}' },
        { id: 'sign_off', kind: 'approval', prompt: 'Ship order {{order}}?' },
        {
          id: 'ship',
          kind: 'http',
          method: 'POST',
          url: `${shopUrl}/orders/{{order}}`,
          headers: { Authorization: `Bearer ${SECRET}`, 'X-Order': '{{order}}' },
          body: '{"order": {{order}}}',
        },
      ],
    });
    const carol = await localUserToken(base, 'carol');
    firstRun = await start(shipTemplate.id, carol, { order: 4711, note: NOTE });
    secondRun = await start(shipTemplate.id, carol, { order: 4712 });
    await reached(firstRun, carol, ['waiting']);
    await reached(secondRun, carol, ['waiting']);

    const { context, page, outside, errors } = await session();
    try {
      await signIn(page, 'bob');
      const item = page.locator('#inbox-list article[data-kind="crew_step"]').first();
      await item.waitFor({ timeout: 60_000 });
      await page.goto(`${base}/console/#/runs/${firstRun}`);

      const approval = page.getByRole('region', { name: 'Step sign_off waits for a decision' });
      await approval.waitFor({ timeout: 60_000 });
      await expect.poll(() => page.locator('#run-template').textContent(), { timeout: 60_000 }).toBe(shipTemplate.name);
      // the brief's output, cut at 2 KiB with its size, all of it on request
      const brief = approval.getByLabel('output of step brief', { exact: true });
      await brief.waitFor({ timeout: 60_000 });
      expect(await brief.textContent()).toMatch(/^Order 4711 for the shop\.\nLine 1 of the packing note/);
      expect(await brief.textContent()).not.toContain('Line 60 ');
      expect(await approval.locator('.size').textContent()).toMatch(/^… \(2\.\d KiB\) Show all$/);
      // the next step's request, as the service recorded it: the secret header masked
      const next = approval.getByRole('group', { name: 'What the next step will send' });
      await next.waitFor({ timeout: 60_000 });
      const request = (await next.getByLabel('input of the next step ship').textContent()) ?? '';
      expect(request).toContain(`POST ${shopUrl}/orders/4711`);
      expect(request).toContain('Authorization: ***');
      expect(request).toContain('X-Order: 4711');
      expect(request).toContain('{"order": 4711}');
      expect(await page.content()).not.toContain(SECRET);
      // bob may decide; he may not change carol's run, and sees no action of hers
      expect(await approval.getByRole('button', { name: 'Approve step' }).isEnabled()).toBe(true);
      expect(await page.getByRole('region', { name: 'Actions' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: /Cancel run|Retry|Rerun/ }).count()).toBe(0);
      // values and steps: the run's values, each step with its status
      expect(await page.getByRole('table').filter({ hasText: 'Variable' }).textContent()).toContain('4711');
      const steps = page.locator('#steps > li');
      expect(await steps.evaluateAll((lis) => lis.map((li) => li.getAttribute('data-status')))).toEqual([
        'succeeded',
        'waiting',
        'not started',
      ]);
      await shot(page, 'runs-01-bob-approval-context');

      await approval.getByRole('button', { name: /Show all of output of step brief/ }).click();
      expect(await brief.textContent()).toContain('Line 60 of the packing note');
      await approval.getByLabel('Notes (optional)').fill('looks right');
      await approval.getByRole('button', { name: 'Approve step' }).click();

      // one outcome: what, by whom, when; then the next item of bob's inbox (carol's other run)
      const decided = page.getByRole('region', { name: 'Step sign_off is decided' });
      await decided.waitFor({ timeout: 60_000 });
      const outcome = page.getByRole('status');
      await outcome.waitFor({ timeout: 60_000 });
      expect(await outcome.count()).toBe(1);
      expect(await outcome.textContent()).toMatch(/^Approved: step sign_off of this run, by bob on .+\.$/);
      expect(await outcome.locator('time').getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(await page.locator('.error, [role="alert"]').count()).toBe(0);
      const nextItem = decided.getByRole('link', { name: /^Next in inbox: / });
      await nextItem.waitFor({ timeout: 60_000 });
      expect(await nextItem.textContent()).toBe(`Next in inbox: ${shipTemplate.name}: step sign_off`);
      expect(await nextItem.getAttribute('href')).toBe(`#/runs/${secondRun}`);
      // what bob approved stays on the page
      expect(await decided.getByLabel('input of the next step ship').textContent()).toContain('Authorization: ***');

      // the run goes on to its end: the shop got the real header, the page shows it masked
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 60_000 }).toBe('succeeded');
      const ship = page.locator('#steps > li[data-step="ship"]');
      await expect.poll(() => ship.getAttribute('data-status'), { timeout: 60_000 }).toBe('succeeded');
      await ship.locator('summary').click();
      expect(await ship.getByLabel('input of step ship', { exact: true }).textContent()).toContain(
        'Authorization: ***',
      );
      expect(await ship.getByLabel('output of step ship', { exact: true }).textContent()).toContain('"shipped": true');
      expect(await ship.locator('summary .took').textContent()).toMatch(/\d/);
      expect(received.find((r) => r.url === '/orders/4711')?.headers.authorization).toBe(`Bearer ${SECRET}`);
      expect(await page.content()).not.toContain(SECRET);
      await shot(page, 'runs-02-bob-approved');

      // the next item: bob rejects it, and nothing else waits for him
      await nextItem.click();
      const second = page.getByRole('region', { name: 'Step sign_off waits for a decision' });
      await second.waitFor({ timeout: 60_000 });
      await second.getByLabel('Notes (optional)').fill('hold it');
      await second.getByRole('button', { name: 'Reject step' }).click();
      await page.getByRole('region', { name: 'Step sign_off is decided' }).waitFor({ timeout: 60_000 });
      expect(await page.getByRole('status').textContent()).toMatch(/^Rejected: step sign_off of this run, by bob on /);
      await page.locator('#inbox-done').waitFor({ timeout: 60_000 });
      expect(await page.locator('#inbox-done').textContent()).toContain('is empty');
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 60_000 }).toBe('failed');
      await shot(page, 'runs-03-bob-rejected-inbox-empty');
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 240_000);

  it('lets a reader read a run without any action block, and its starter see only what she may do', async () => {
    const carol = await localUserToken(base, 'carol');
    const waiting = await start(shipTemplate.id, carol, { order: 4713 });
    await reached(waiting, carol, ['waiting']);

    // alice (approver) reads the run bob approved: nothing to do there, no disabled buttons
    const reader = await session();
    try {
      await signIn(reader.page, 'alice');
      await reader.page.goto(`${base}/console/#/runs/${firstRun}`);
      await expect.poll(() => reader.page.locator('#run-status').textContent(), { timeout: 60_000 }).toBe('succeeded');
      await reader.page.getByRole('region', { name: 'Steps' }).waitFor({ timeout: 60_000 });
      expect(await reader.page.getByRole('region', { name: 'Actions' }).count()).toBe(0);
      expect(await reader.page.getByRole('button', { name: /Cancel run|Retry|Rerun|Approve|Reject/ }).count()).toBe(0);
      expect(await reader.page.locator('button:disabled, textarea:disabled, select:disabled').count()).toBe(0);
      await shot(reader.page, 'runs-04-alice-reads-a-decided-run');
      expect(reader.outside).toEqual([]);
      expect(reader.errors).toEqual([]);
    } finally {
      await reader.context.close();
    }

    // carol, the starter, on her waiting run: she may cancel it, not decide it (four-eyes)
    const starter = await session();
    try {
      await signIn(starter.page, 'carol');
      await starter.page.goto(`${base}/console/#/runs/${waiting}`);
      const approval = starter.page.getByRole('region', { name: 'Step sign_off waits for a decision' });
      await approval.waitFor({ timeout: 60_000 });
      await approval.locator('#step-why').waitFor({ timeout: 60_000 });
      expect(await approval.locator('#step-why').textContent()).toContain('Four-eyes rule');
      expect(await approval.getByRole('button').count()).toBe(0);
      const actions = starter.page.getByRole('region', { name: 'Actions' });
      expect(await actions.getByRole('button', { name: 'Cancel run' }).isEnabled()).toBe(true);
      expect(await actions.getByRole('button', { name: /Retry|Rerun/ }).count()).toBe(0);
      expect(await starter.page.locator('button:disabled, textarea:disabled, select:disabled').count()).toBe(0);
      await shot(starter.page, 'runs-05-carol-own-waiting-run');
      await actions.getByRole('button', { name: 'Cancel run' }).click();
      await expect.poll(() => starter.page.locator('#run-status').textContent(), { timeout: 60_000 }).toBe('cancelled');
      expect(await actions.getByRole('status').textContent()).toBe('The run is cancelled.');
      expect(await actions.getByRole('button', { name: 'Retry' }).isEnabled()).toBe(true);
      expect(starter.outside).toEqual([]);
      expect(starter.errors).toEqual([]);
    } finally {
      await starter.context.close();
    }
  }, 240_000);

  it('lets an admin filter runs by template, status and starter, page through them, and keep it on reload', async () => {
    const packing = await template({
      name: `console-packing-${Date.now()}`,
      variables: [{ name: 'path', type: 'string', default: 'ok' }],
      steps: [
        { id: 'label', kind: 'render', template: 'label {{path}}' },
        { id: 'notify', kind: 'http', method: 'POST', url: `${shopUrl}/packing/{{path}}` },
      ],
    });
    const other = await template({
      name: `console-other-${Date.now()}`,
      steps: [{ id: 'only', kind: 'render', template: 'x' }],
    });
    const [carol, dana] = await Promise.all([localUserToken(base, 'carol'), localUserToken(base, 'dana')]);
    const ok = await start(packing.id, carol);
    const failed = await start(packing.id, carol, { path: 'fail' });
    const otherRun = await start(other.id, carol);
    const danas = await start(packing.id, dana);
    for (const id of [ok, failed, otherRun, danas]) await reached(id, dana, ['succeeded', 'failed']);
    // 55 more of dana's runs of a third template, stored as the service stores them: two pages
    const many = await template({
      name: `console-many-${Date.now()}`,
      steps: [{ id: 'only', kind: 'render', template: 'x' }],
    });
    const model = await start(many.id, dana);
    await reached(model, dana, ['succeeded']);
    await storeCopies(model, 55);

    const { context, page, outside, errors } = await session();
    try {
      await signIn(page, 'dana');
      await page.goto(`${base}/console/#/runs`);
      await page.locator('#runs').waitFor({ timeout: 60_000 });
      expect(await page.getByRole('columnheader').allTextContents()).toEqual([
        'Template',
        'Status',
        'Started by',
        'Schedule',
        'Started',
        'Duration',
      ]);
      // by template and status: the template's name in its column
      const filters = page.getByRole('search', { name: 'Filter runs' });
      await expect
        .poll(() => filters.getByLabel('Template').locator('option').allTextContents(), { timeout: 60_000 })
        .toContain(packing.name);
      await filters.getByLabel('Template').selectOption({ label: packing.name });
      await expect
        .poll(async () => (await rows(page)).map((r) => r[0]?.split(' · ')[0]), { timeout: 60_000 })
        .toEqual([packing.name, packing.name, packing.name]);
      await filters.getByLabel('Status').selectOption('succeeded');
      await expect.poll(async () => (await rows(page)).length, { timeout: 60_000 }).toBe(2);
      const table = await rows(page);
      expect(table.map((r) => [r[0]?.split(' · ')[0], r[1], r[2], r[3]])).toEqual([
        [packing.name, 'succeeded', 'dana', '—'],
        [packing.name, 'succeeded', 'carol', '—'],
      ]);
      for (const r of table) expect(r[5]).toMatch(/^\d+(\.\d)? (ms|s)$|min/);
      expect(page.url()).toContain(`#/runs?status=succeeded&template=${packing.id}`);
      await shot(page, 'runs-06-dana-filtered');

      // kept on reload; then only her own
      await page.reload();
      await page.locator('#runs').waitFor({ timeout: 60_000 });
      await expect.poll(async () => (await rows(page)).length, { timeout: 60_000 }).toBe(2);
      expect(await filters.getByLabel('Status').inputValue()).toBe('succeeded');
      expect(await filters.getByLabel('Template').inputValue()).toBe(packing.id);
      await filters.getByLabel('Started by').selectOption({ label: 'Me' });
      await expect.poll(async () => (await rows(page)).map((r) => r[2]), { timeout: 60_000 }).toEqual(['dana']);
      await filters.getByLabel('Status').selectOption('failed');
      await expect
        .poll(() => page.locator('.empty').textContent(), { timeout: 60_000 })
        .toBe('No runs match these filters.');
      await filters.getByRole('button', { name: 'Clear filters' }).click();

      // paging: 56 runs of the third template, 50 a page
      await filters.getByLabel('Template').selectOption({ label: many.name });
      await expect
        .poll(async () => (await rows(page)).map((r) => r[0]?.split(' · ')[0]), { timeout: 60_000 })
        .toEqual(Array(50).fill(many.name));
      const pager = page.getByRole('navigation', { name: 'Pages of runs' });
      expect(await pager.getByRole('button', { name: '← Previous' }).isDisabled()).toBe(true);
      const firstPage = await rows(page);
      await pager.getByRole('button', { name: 'Next →' }).click();
      await expect.poll(async () => (await rows(page)).length, { timeout: 60_000 }).toBe(6);
      expect(await pager.textContent()).toContain('Page 2');
      expect(await pager.getByRole('button', { name: 'Next →' }).isDisabled()).toBe(true);
      await shot(page, 'runs-07-dana-page-2');
      await page.reload();
      await expect.poll(async () => (await rows(page)).length, { timeout: 60_000 }).toBe(6);
      await pager.getByRole('button', { name: '← Previous' }).click();
      await expect.poll(async () => (await rows(page)).length, { timeout: 60_000 }).toBe(50);
      expect(await rows(page)).toEqual(firstPage);

      // the schedule filter (admins): a schedule's runs, none yet
      const schedule = await call<{ id: string }>('/api/crew-schedules', {
        method: 'POST',
        psk: ADMIN_PSK,
        body: { template_id: other.id, name: 'nightly other', expression: 'cron(0 3 * * ? *)', enabled: false },
      });
      expect(schedule.status, schedule.text).toBe(201);
      await page.goto(`${base}/console/#/runs?schedule=${schedule.body.id}`);
      await page.reload();
      await expect.poll(() => page.locator('.lead').textContent(), { timeout: 60_000 }).toContain('nightly other');
      await expect
        .poll(() => page.locator('.empty').textContent(), { timeout: 60_000 })
        .toBe('No runs match these filters.');
      expect(await filters.getByLabel('Schedule').inputValue()).toBe(schedule.body.id);
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 240_000);

  it('paints a finished run of 20 steps with 64 KiB outputs (measured for the benchmark)', async () => {
    // Step 1 outputs 16 KiB; each next one renders it four times, 64 KiB: its input is shown
    // whole (64 KiB), its output stored at the 16 KiB bound; the page shows each cut at 2 KiB.
    const quarter = '{{steps.s1.output}}'.repeat(4);
    const big = template({
      name: `paint-${randomUUID().slice(0, 8)}`,
      steps: Array.from({ length: 20 }, (_, i) => ({
        id: `s${i + 1}`,
        kind: 'render',
        template: i === 0 ? `${'x'.repeat(16 * 1024 - 40)} {{n}}` : `${quarter} ${i + 1}`,
      })),
      variables: [{ name: 'n', type: 'integer', required: true }],
    });
    const dana = await localUserToken(base, 'dana');
    const id = await start((await big).id, dana, { n: 7 });
    await reached(id, dana, ['succeeded']);
    const { context, page } = await session();
    try {
      await signIn(page, 'dana');
      await page.goto(`${base}/console/#/runs/${id}`);
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 60_000 }).toBe('succeeded');
      await page.reload();
      await expect
        .poll(() => page.evaluate(`performance.getEntriesByName('run-rendered').length`), { timeout: 60_000 })
        .toBe(1);
      const steps = page.getByRole('region', { name: 'Steps' });
      expect(await steps.getByText(/Show all/).count()).toBeGreaterThanOrEqual(20);
      const paint = await page.evaluate<{ runRenderedMs?: number; domContentLoadedMs?: number }>(
        `({ runRenderedMs: performance.getEntriesByName('run-rendered')[0]?.startTime,
            domContentLoadedMs: performance.getEntriesByType('navigation')[0]?.domContentLoadedEventEnd })`,
      );
      expect(paint.runRenderedMs).toBeGreaterThan(0);
      writeFileSync(
        join(ARTIFACTS, 'run-page-paint.json'),
        `${JSON.stringify(
          {
            measured_at: new Date().toISOString(),
            what: 'time from navigation start to a finished run of 20 steps (64 KiB inputs and outputs; outputs stored at the 16 KiB bound) shown whole on its console page (signed in, local platform)',
            run_rendered_ms: Math.round(paint.runRenderedMs!),
            dom_content_loaded_ms: Math.round(paint.domContentLoadedMs ?? 0),
          },
          null,
          2,
        )}\n`,
      );
      await shot(page, 'runs-09-twenty-steps');
    } finally {
      await context.close();
    }
  }, 240_000);

  it('after Approve on a decision version: one outcome, the diff approved still there, the next item offered', async () => {
    const key = `limit-${Date.now()}`;
    const [carol, bob] = await Promise.all([localUserToken(base, 'carol'), localUserToken(base, 'bob')]);
    const versions = (k: string) => `/api/decisions/console-runs/${k}/versions`;
    const created = async (k: string, content: unknown) => {
      const res = await call<{ version: number }>(versions(k), { method: 'POST', token: carol, body: { content } });
      expect(res.status, res.text).toBe(201);
      const submitted = await call(`${versions(k)}/${res.body.version}/submit`, { method: 'POST', token: carol });
      expect(submitted.status, submitted.text).toBe(200);
      return res.body.version;
    };
    // published: version 1 of `key` (approved by bob); then carol's version 2, and another key's version 1
    await created(key, { limit: 100 });
    expect((await call(`${versions(key)}/1/approve`, { method: 'POST', token: bob })).status).toBe(200);
    expect(await created(key, { limit: 250, currency: 'EUR' })).toBe(2);
    expect(await created(`${key}-b`, { limit: 5 })).toBe(1);

    const { context, page, outside, errors } = await session();
    try {
      await signIn(page, 'alice');
      await page.goto(`${base}/console/#/decisions/console-runs/${key}/2`);
      const diff = page.getByRole('table', { name: 'Changes from the published version' });
      await diff.waitFor({ timeout: 60_000 });
      await page.getByRole('button', { name: 'Approve' }).click();

      const decision = page.getByRole('region', { name: 'Decision' });
      const outcome = page.getByRole('status');
      await outcome.waitFor({ timeout: 60_000 });
      expect(await outcome.count()).toBe(1);
      expect(await outcome.textContent()).toMatch(
        new RegExp(`^Approved: console-runs/${key} version 2, by alice on .+\\.$`),
      );
      await expect.poll(() => page.locator('#version-status').textContent(), { timeout: 60_000 }).toBe('approved');
      // nothing contradicts it: no reason why alice may not decide, no error, no buttons left
      expect(await page.locator('#decide-why, .why, .error, [role="alert"]').count()).toBe(0);
      expect(await decision.getByRole('button').count()).toBe(0);
      // the changes alice approved stay on the page
      expect(await page.getByRole('heading', { name: /^Changes against/ }).textContent()).toBe(
        'Changes against version 1, published before this decision',
      );
      expect(await diff.locator('tbody tr').allTextContents()).toEqual(
        expect.arrayContaining([expect.stringContaining('/limit'), expect.stringContaining('/currency')]),
      );
      const next = decision.getByRole('link', { name: /^Next in inbox: / });
      await next.waitFor({ timeout: 60_000 });
      expect(await next.textContent()).toBe(`Next in inbox: console-runs/${key}-b version 1`);
      await shot(page, 'runs-08-alice-decision-approved');

      await next.click();
      await page.getByRole('button', { name: 'Reject' }).click();
      await page.locator('#inbox-done').waitFor({ timeout: 60_000 });
      expect(await page.getByRole('status').textContent()).toMatch(
        new RegExp(`^Rejected: console-runs/${key}-b version 1 \\(now \\w+\\), by alice on `),
      );
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 240_000);
});

/**
 * `count` copies of run `like`, stored directly as the service stores a run (finished, a
 * second apart before it): runs to page through without running each.
 */
async function storeCopies(like: string, count: number): Promise<void> {
  const runs = new DynamoRunStore(
    platform.runtime.db,
    platform.runtime.tableName('crewRuns'),
    platform.runtime.tableName('runLog'),
    platform.runtime.eventsTable,
  );
  const model = (await runs.get(like))!;
  const from = Date.parse(model.created_at) - (count + 1) * 1000;
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const at = new Date(from + i * 1000).toISOString();
    const end = new Date(from + i * 1000 + 250).toISOString();
    await runs.create(
      { ...model, correlation_id: id, created_at: at, started_at: at, finished_at: end, event_count: 1 },
      { index: 0, correlation_id: id, type: 'run.queued', timestamp: at, message: 'stored by the test' },
      { type: 'crew.run.queued', actor: model.created_by, at },
    );
  }
}
