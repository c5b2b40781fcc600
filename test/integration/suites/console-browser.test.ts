import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
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
import { DynamoRunStore } from '../../../functions/crews/runs/run-store.js';
import { browserSession, launchChromium, type Session } from '../../support/console-browser.js';

/**
 * The review console (docs/reviewing.md) in a real browser (headless Chromium driven by
 * playwright-core), signed in through the local identity provider: the walk of README's
 * review section, from carol's submission to alice's approval, and a crew run's approval
 * step decided by bob on the run page while its run log updates by itself. Each state is
 * photographed into test/artifacts/console/; the console's first paint is measured there too.
 */
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/console/', import.meta.url));
const ADMIN_PSK = 'console-browser-admin-key-0123456789';
const WORKSPACE = 'console-walk';

let browser: Browser;
let platform: RunningPlatform;
let base: string;
/** A shop on loopback for crew `http` steps: order 13 answers 500, any other 200. */
let shop: Server;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  shop = createServer((req, res) => {
    const unlucky = req.url!.endsWith('/13');
    res.writeHead(unlucky ? 500 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(unlucky ? { error: 'out of stock' } : { shipped: true }));
  });
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  [browser, platform] = await Promise.all([
    launchChromium(),
    startPlatform(
      loadConfig({
        STAGE: 'consolebrowser',
        PORT: '0',
        HOST: '127.0.0.1',
        DPM_DATA_DIR: mkdtempSync(join(tmpdir(), 'dpm-console-browser-')),
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

/** Signs in on the console; the provider must ask who signs in (its form, not a silent return). */
async function signIn(page: Page, user: string): Promise<void> {
  await page.locator('#sign-in').click();
  await page.waitForURL(/\/oidc\/interaction\//, { timeout: 20_000 });
  await expect.poll(() => page.locator(`button[value="${user}"]`).isVisible(), { timeout: 10_000 }).toBe(true);
  await page.locator(`button[value="${user}"]`).click();
  await page.waitForURL(`${base}/console/**`, { timeout: 20_000 });
  await expect.poll(() => page.locator('#signed-in').textContent(), { timeout: 20_000 }).toContain(user);
}

/** Signs out: the provider's session ends too, and the page is back at its sign-in. */
async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${base}/console/`, { timeout: 20_000 });
  await page.locator('#sign-in').waitFor({ timeout: 20_000 });
}

/** The access token the page holds (sessionStorage), to prepare data as that person through the API. */
const tokenOf = (page: Page) =>
  page.evaluate<string>("JSON.parse(sessionStorage.getItem('dpm-console.session') ?? '{}').accessToken");

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

describe('the review console in headless Chromium', () => {
  it('walks from carol’s submission to alice’s approval, and explains a decision alice may not make', async () => {
    const { context, page, outside, errors } = await session();
    try {
      const key = `limit-${Date.now()}`;
      const versions = `/api/decisions/${WORKSPACE}/${key}/versions`;
      // A published version to compare with: created by dana, approved by bob.
      const [dana, bob] = await Promise.all([localUserToken(base, 'dana'), localUserToken(base, 'bob')]);
      const v1 = await call(versions, {
        method: 'POST',
        token: dana,
        body: { content: { limit: 100, regions: ['eu'], owner: 'risk' } },
      });
      expect(v1.status, v1.text).toBe(201);
      expect((await call(`${versions}/1/submit`, { method: 'POST', token: dana })).status).toBe(200);
      expect((await call(`${versions}/1/approve`, { method: 'POST', token: bob })).status).toBe(200);

      // carol signs in on the console (no roles: an empty inbox), creates and submits version 2.
      await page.goto(`${base}/console/`);
      await shot(page, '01-signed-out');
      await signIn(page, 'carol');
      await expect.poll(() => page.title(), { timeout: 10_000 }).toBe('(0) Inbox — DPM console');
      await expect.poll(() => page.locator('#signed-in').textContent()).toContain('no roles');
      await shot(page, '02-carol-inbox-empty');
      const carol = await tokenOf(page);
      const v2 = await call(versions, {
        method: 'POST',
        token: carol,
        body: { content: { limit: 250, regions: ['eu', 'us'], currency: 'EUR' }, notes: 'raise the limit' },
      });
      expect(v2.status, v2.text).toBe(201);
      expect((await call(`${versions}/2/submit`, { method: 'POST', token: carol })).status).toBe(200);
      await signOut(page);
      await shot(page, '03-signed-out-again');

      // alice signs in: the provider asks who (carol's session ended), and her inbox shows carol's version.
      await signIn(page, 'alice');
      const item = page.locator('#inbox-list article[data-kind="decision_version"]', { hasText: `${key} version 2` });
      await item.waitFor({ timeout: 20_000 });
      expect(await page.title()).toMatch(/^\(\d+\) Inbox — DPM console$/);
      expect(await item.textContent()).toContain('created by carol');
      await shot(page, '04-alice-inbox');

      // The version opens on its diff against the published version 1, its content and history.
      await item.getByRole('link').click();
      await page.locator('#diff').waitFor({ timeout: 20_000 });
      const rows = await page
        .locator('#diff tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.replace(/\s+/g, '') ?? '')),
        );
      expect(rows).toEqual(
        expect.arrayContaining([
          ['replace', '/limit', '100', '250'],
          ['add', '/regions/1', '—', '"us"'],
          ['add', '/currency', '—', '"EUR"'],
          ['remove', '/owner', '"risk"', '—'],
        ]),
      );
      expect(await page.locator('#version-content').textContent()).toContain('"currency": "EUR"');
      expect(await page.locator('#history').textContent()).toContain('submit by carol');
      expect(await page.locator('#approve').isEnabled()).toBe(true);
      await shot(page, '05-alice-version-diff');

      // alice approves with a note, from the keyboard: the notes field, then Tab to Approve.
      await page.locator('#decision-notes').fill('checked against the risk model');
      await page.locator('#decision-notes').press('Tab');
      expect(await page.evaluate<string>('document.activeElement?.id')).toBe('approve');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.locator('#version-status').textContent(), { timeout: 20_000 }).toBe('approved');
      expect(await page.locator('[role="status"].done').textContent()).toContain('Approved');
      await shot(page, '06-alice-approved');
      const after = await call(`${versions}/2`, { token: carol });
      expect(after.body).toMatchObject({
        status: 'approved',
        created_by: 'carol',
        submitted_by: 'carol',
        approved_by: 'alice',
      });
      const history = await call<{ action: string; by: string; notes: string | null }[]>(`${versions}/2/history`, {
        token: carol,
      });
      expect(history.body.at(-1)).toMatchObject({
        action: 'approve',
        by: 'alice',
        notes: 'checked against the risk model',
      });

      // A decision alice may not make: her own submitted version. The buttons are disabled and say why.
      const alice = await tokenOf(page);
      const own = `/api/decisions/${WORKSPACE}/${key}-own/versions`;
      expect((await call(own, { method: 'POST', token: alice, body: { content: { limit: 1 } } })).status).toBe(201);
      expect((await call(`${own}/1/submit`, { method: 'POST', token: alice })).status).toBe(200);
      await page.goto(`${base}/console/#/decisions/${WORKSPACE}/${key}-own/1`);
      await page.locator('#decide-why').waitFor({ timeout: 20_000 });
      expect(await page.locator('#approve').isDisabled()).toBe(true);
      expect(await page.locator('#reject').isDisabled()).toBe(true);
      expect(await page.locator('#decide-why').textContent()).toMatch(/Four-eyes rule: you created this version/);
      expect(await page.locator('#approve').getAttribute('aria-describedby')).toBe('decide-why');
      await shot(page, '07-alice-own-version-disabled');

      // The console's first paint: a fresh load (signed in) until the inbox is rendered.
      await page.goto(`${base}/console/#/inbox`);
      await page.locator('#inbox-list, #inbox-empty').first().waitFor({ timeout: 20_000 });
      // Both from the navigation's start (the page's time origin).
      const firstPaint = await page.evaluate<{ inboxRenderedMs?: number; domContentLoadedMs?: number }>(
        `({ inboxRenderedMs: performance.getEntriesByName('inbox-rendered')[0]?.startTime,
            domContentLoadedMs: performance.getEntriesByType('navigation')[0]?.domContentLoadedEventEnd })`,
      );
      expect(firstPaint.inboxRenderedMs).toBeGreaterThan(0);
      writeFileSync(
        join(ARTIFACTS, 'first-paint.json'),
        `${JSON.stringify(
          {
            measured_at: new Date().toISOString(),
            what: 'time from navigation start to the console inbox rendered with its items (signed in, local platform)',
            inbox_rendered_ms: Math.round(firstPaint.inboxRenderedMs!),
            dom_content_loaded_ms: Math.round(firstPaint.domContentLoadedMs ?? 0),
          },
          null,
          2,
        )}\n`,
      );
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('shows a crew run’s log as it grows, and bob approves its waiting step from the run page', async () => {
    const template = await call<{ id: string }>('/api/crew-templates', {
      method: 'POST',
      psk: ADMIN_PSK,
      body: {
        name: `console-release-${Date.now()}`,
        steps: [
          { id: 'draft', kind: 'render', template: 'release 42' },
          { id: 'settle', kind: 'wait', seconds: 1 },
          { id: 'sign_off', kind: 'approval', prompt: 'Ship {{steps.draft.output}}?' },
          { id: 'cool_down', kind: 'wait', seconds: 2 },
          { id: 'notice', kind: 'render', template: 'shipped' },
        ],
      },
    });
    expect(template.status, template.text).toBe(201);
    const carol = await localUserToken(base, 'carol');
    const started = await call<{ correlation_id: string }>(`/api/crew-templates/${template.body.id}/run`, {
      method: 'POST',
      token: carol,
      body: { values: {} },
    });
    expect(started.status, started.text).toBe(202);
    const id = started.body.correlation_id;

    const { context, page, outside, errors } = await session();
    try {
      await page.goto(`${base}/console/`);
      await signIn(page, 'bob');
      // The waiting step reaches bob's inbox (the run waits after its 1 s step).
      const item = page.locator('#inbox-list article[data-kind="crew_step"]', { hasText: 'step sign_off' });
      await expect
        .poll(
          async () => {
            if (await item.isVisible()) return true;
            await page.locator('#inbox-kind').selectOption('crew_step');
            await page.locator('#inbox-kind').selectOption('');
            return false;
          },
          { timeout: 30_000, interval: 1_000 },
        )
        .toBe(true);
      await shot(page, '08-bob-inbox-crew-step');
      await item.getByRole('link').click();

      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 20_000 }).toBe('waiting');
      const timeline = page.locator('#timeline li');
      await expect.poll(() => timeline.last().getAttribute('data-type'), { timeout: 20_000 }).toBe('step.waiting');
      const waitingCount = await timeline.count();
      expect(await page.locator('#approve-step').isEnabled()).toBe(true);
      // bob may read carol's run and decide its step, not change it: no action of hers shows
      expect(await page.locator('.run-actions, #cancel-run, #retry-run, #rerun-run').count()).toBe(0);
      await shot(page, '09-bob-run-waiting');

      await page.locator('#step-notes').fill('go');
      await page.locator('#approve-step').click();
      // The log grows by itself (E13 long poll) while the run goes on, to its end.
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 30_000 }).toBe('succeeded');
      await expect.poll(() => timeline.last().getAttribute('data-type'), { timeout: 10_000 }).toBe('run.completed');
      const types = await timeline.evaluateAll((lis) => lis.map((li) => li.getAttribute('data-type')));
      expect(types.length).toBeGreaterThan(waitingCount);
      expect(types.slice(waitingCount)).toEqual(
        expect.arrayContaining(['step.completed', 'step.started', 'run.completed']),
      );
      expect(await page.locator('#run-progress').textContent()).toContain('5 of 5 steps');
      expect(await page.locator('#cancel-run').count()).toBe(0);
      await shot(page, '10-bob-run-succeeded');

      const run = await call(`/api/events/${id}?start=0`, { token: carol });
      const decided = (run.body as { type: string; step_id?: string; data?: { output?: unknown } }[]).find(
        (e) => e.type === 'step.completed' && e.step_id === 'sign_off',
      );
      expect(decided?.data?.output).toMatchObject({ approved: true, by: 'bob', notes: 'go' });
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('reruns a failed run from a step with a corrected value, and links the new run to the old', async () => {
    const shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
    const template = await call<{ id: string }>('/api/crew-templates', {
      method: 'POST',
      psk: ADMIN_PSK,
      body: {
        name: `console-order-${Date.now()}`,
        variables: [
          { name: 'order', type: 'integer', required: true },
          { name: 'customer', type: 'string', default: 'ada' },
        ],
        steps: [
          { id: 'brief', kind: 'render', template: 'order {{order}} for {{customer}}' },
          { id: 'ship', kind: 'http', method: 'POST', url: `${shopUrl}/orders/{{order}}` },
          { id: 'notice', kind: 'render', template: '{{steps.brief.output}}: shipped' },
        ],
      },
    });
    expect(template.status, template.text).toBe(201);
    const carol = await localUserToken(base, 'carol');
    const started = await call<{ correlation_id: string }>(`/api/crew-templates/${template.body.id}/run`, {
      method: 'POST',
      token: carol,
      body: { values: { order: 13 } },
    });
    expect(started.status, started.text).toBe(202);
    const old = started.body.correlation_id;

    const { context, page, outside, errors } = await session();
    try {
      await page.goto(`${base}/console/`);
      await signIn(page, 'carol');
      await page.goto(`${base}/console/#/runs/${old}`);
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 30_000 }).toBe('failed');
      await expect
        .poll(() => page.locator('#timeline li').last().getAttribute('data-type'), { timeout: 10_000 })
        .toBe('run.failed');
      // the run's own steps; the one after the failed step cannot be the first of a rerun
      const options = await page.locator('#rerun-step option').evaluateAll((els) =>
        els.map((el) => {
          const option = el as unknown as { value: string; disabled: boolean };
          return [option.value, option.disabled];
        }),
      );
      expect(options).toEqual([
        ['', false],
        ['brief', false],
        ['ship', false],
        ['notice', true],
      ]);
      expect(JSON.parse(await page.locator('#rerun-values').inputValue())).toEqual({ order: 13, customer: 'ada' });
      expect(await page.locator('#rerun-run').isDisabled()).toBe(true);
      await shot(page, '11-carol-run-failed');

      // from the failed step, the order corrected: only the changed value is sent
      await page.locator('#rerun-step').selectOption('ship');
      await page.locator('#rerun-values').fill('{\n  "order": 14,\n  "customer": "ada"\n}');
      await shot(page, '12-carol-rerun-form');
      const sent = page.waitForRequest((r) => r.url().endsWith(`/api/crew-runs/${old}/rerun`));
      await page.locator('#rerun-run').click();
      expect((await sent).postDataJSON()).toEqual({ from_step: 'ship', values: { order: 14 } });

      // the new run's page: linked to the old run, the first step reused, the rest run again
      await page.waitForURL((url) => /#\/runs\/[0-9a-f-]{36}$/.test(url.hash) && !url.hash.endsWith(old), {
        timeout: 20_000,
      });
      const id = decodeURIComponent(new URL(page.url()).hash.split('/').at(-1)!);
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 30_000 }).toBe('succeeded');
      await expect
        .poll(() => page.locator('#timeline li').last().getAttribute('data-type'), { timeout: 10_000 })
        .toBe('run.completed');
      expect(await page.locator('#rerun-of').textContent()).toBe(old);
      const timeline = await page.locator('#timeline li').evaluateAll((lis) => lis.map((li) => li.textContent ?? ''));
      expect(timeline[1]).toMatch(
        /step\.completed brief ?reused: Step brief completed: its output in run .* is reused/,
      );
      expect(await page.locator('#timeline li .tag').allTextContents()).toEqual(['reused']);
      expect(await page.locator('#run-progress').textContent()).toContain('3 of 3 steps');
      await shot(page, '13-carol-rerun-succeeded');
      const rerun = await call(`/api/crew-runs/${id}`, { token: carol });
      expect(rerun.body).toMatchObject({ rerun_of: old, values: { order: 14, customer: 'ada' }, created_by: 'carol' });

      // back to the old run through the link: unchanged
      await page.locator('#rerun-of').click();
      await page.waitForURL((url) => url.hash.endsWith(old), { timeout: 10_000 });
      await expect.poll(() => page.locator('#run-status').textContent(), { timeout: 10_000 }).toBe('failed');

      // a run a schedule started shows its schedule (the run stored as a fire leaves it)
      const scheduled = await storeScheduledRun('carol', old);
      await page.goto(`${base}/console/#/runs/${scheduled.id}`);
      await expect
        .poll(() => page.locator('#schedule-id').textContent(), { timeout: 10_000 })
        .toBe(scheduled.scheduleId);
      expect(await page.locator('#rerun-of').count()).toBe(0);
      await shot(page, '14-carol-scheduled-run');
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);
});

/**
 * A run of `starter`'s that schedule `<uuid>` started, stored directly as a fire leaves it
 * (queued; never taken by the worker here): the console only shows the schedule's id. Its
 * steps and values are those of run `like`.
 */
async function storeScheduledRun(starter: string, like: string): Promise<{ id: string; scheduleId: string }> {
  const runs = new DynamoRunStore(
    platform.runtime.db,
    platform.runtime.tableName('crewRuns'),
    platform.runtime.tableName('runLog'),
    platform.runtime.eventsTable,
  );
  const model = (await runs.get(like))!;
  const [id, scheduleId] = [randomUUID(), randomUUID()];
  const at = new Date().toISOString();
  await runs.create(
    {
      ...model,
      correlation_id: id,
      schedule_id: scheduleId,
      status: 'pending',
      created_at: at,
      started_at: null,
      finished_at: null,
      event_count: 1,
      error: null,
      completed_steps: 0,
      current_step: null,
    },
    { index: 0, correlation_id: id, type: 'run.queued', timestamp: at, message: `queued by schedule for ${starter}` },
    { type: 'crew.run.queued', actor: starter, at },
  );
  return { id, scheduleId };
}
