import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumExecutable } from './chromium.js';

/**
 * What the review console's real-browser tests share: headless Chromium, and a browser
 * profile that may reach the service only, recording what else a page tried to reach and
 * the errors it met.
 */

/** Headless Chromium (Debian's, else the one inside @sparticuz/chromium), with no background traffic. */
export async function launchChromium(): Promise<Browser> {
  const { path, args } = await chromiumExecutable();
  return chromium.launch({
    executablePath: path,
    args: [...args, '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
}

export interface Session {
  context: BrowserContext;
  page: Page;
  /** Requests to any other origin (aborted), page errors and Content-Security-Policy violations. */
  outside: string[];
  errors: string[];
}

/** A browser profile of `browser` that may reach `base` only. */
export async function browserSession(browser: Browser, base: string): Promise<Session> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const outside: string[] = [];
  const errors: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(base) || url.startsWith('data:')) return route.continue();
    outside.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) errors.push(msg.text());
  });
  return { context, page, outside, errors };
}
