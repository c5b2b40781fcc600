/**
 * `/console`: the review console (docs/reviewing.md), a page for the people in the loop. Its
 * script and style sheet are built from `console/` by esbuild (infra/console-build.ts):
 * at synth time beside the platform Lambda's bundle, in memory when running from source.
 * Nothing comes from another host, and the page runs no inline script.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml } from './docs.js';

/** The built files the page loads, with their content types. */
export const CONSOLE_ASSETS: Readonly<Record<string, string>> = {
  'main.js': 'application/javascript; charset=utf-8',
  'main.css': 'text/css; charset=utf-8',
};

/** Where a bundled Lambda keeps the built files: a `console` folder beside its code (see infra). */
export const BUNDLED_CONSOLE_DIR = 'console';

/** The built files by name. */
export type ConsoleAssets = ReadonlyMap<string, Uint8Array>;

/** What the page needs to sign in: the issuer (discovery) and its public client. */
export interface ConsoleSettings {
  readonly issuer: string | undefined;
  readonly clientId: string;
}

/** The built files beside this module (the Lambda's bundle), or undefined when running from source. */
export function bundledConsoleAssets(): ConsoleAssets | undefined {
  const dir = join(dirname(fileURLToPath(import.meta.url)), BUNDLED_CONSOLE_DIR);
  if (!existsSync(join(dir, 'main.js'))) return undefined;
  return new Map(Object.keys(CONSOLE_ASSETS).map((name) => [name, readFileSync(join(dir, name))]));
}

/**
 * The page's Content-Security-Policy: everything from this origin only, no inline script or
 * style; the sign-in's token request may also go to the issuer's origins (discovery, token).
 */
export function consoleCsp(issuerOrigins: readonly string[]): string {
  const connect = ["'self'", ...new Set(issuerOrigins)].join(' ');
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect}`,
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
  ].join('; ');
}

/** The HTML page: the settings as JSON data (not script), the built script and style sheet. */
export function consolePage(options: { title: string; settings: ConsoleSettings }): string {
  const settings = JSON.stringify(options.settings).replaceAll('<', '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/console/main.css">
<script type="application/json" id="dpm-console-settings">${settings}</script>
<script type="module" src="/console/main.js"></script>
</head>
<body>
<div id="app"><p class="loading">Loading the review console…</p></div>
<noscript>The review console needs JavaScript. The API reference is at <a href="/docs">/docs</a>.</noscript>
</body>
</html>
`;
}
