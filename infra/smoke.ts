/**
 * `npm run smoke -- <base-url> [--psk-stdin]`: a read-only check of a deployed stage (or of
 * `npm start`) for operators after a deploy. It changes nothing: only GETs, an OPTIONS-free
 * wrong method on the health route, and reads with the key when one is given. One line per
 * check; exit code 0 when every check passed, 1 otherwise, 2 for a bad command line.
 *
 * The key comes from DPM_SMOKE_PSK, or from stdin with `--psk-stdin`, never from the
 * command line: npm prints a script's arguments (`> tsx infra/smoke.ts <url> --psk <key>`)
 * and any user's `ps` shows them, so `--psk` is refused.
 */

export interface SmokeCheck {
  readonly name: string;
  readonly ok: boolean;
  /** What was wrong (never a credential). */
  readonly detail?: string;
}

type Answer = { status: number; headers: Headers; text: string; json: unknown };

const TIMEOUT_MS = 10_000;

async function get(base: string, path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'manual' });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** The contract's ErrorResponse (the API reference: `{"error", "code"}`) with this code, nothing more. */
function isErrorResponse(json: unknown, code: number): boolean {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false;
  const keys = Object.keys(json).sort();
  const body = json as Record<string, unknown>;
  return keys.join(',') === 'code,error' && body.code === code && typeof body.error === 'string';
}

/** Runs every check against `base` (no trailing slash needed); `psk` adds the authenticated ones. */
export async function smoke(baseUrl: string, psk?: string): Promise<SmokeCheck[]> {
  const base = baseUrl.replace(/\/+$/, '');
  const checks: [string, () => Promise<string | undefined>][] = [
    [
      'GET /api/health/ping answers 200',
      async () => {
        const res = await get(base, '/api/health/ping');
        return res.status === 200 ? undefined : `status ${res.status}`;
      },
    ],
    [
      'GET /openapi.json is an OpenAPI 3 document with paths',
      async () => {
        const res = await get(base, '/openapi.json');
        const doc = res.json as { openapi?: unknown; paths?: unknown } | undefined;
        if (res.status !== 200) return `status ${res.status}`;
        return typeof doc?.openapi === 'string' && doc.openapi.startsWith('3.') && typeof doc.paths === 'object'
          ? undefined
          : 'not an OpenAPI 3 document';
      },
    ],
    [
      'GET /docs answers an HTML page',
      async () => {
        const res = await get(base, '/docs');
        if (res.status !== 200) return `status ${res.status}`;
        return (res.headers.get('content-type') ?? '').includes('text/html') ? undefined : 'not HTML';
      },
    ],
    [
      'a call without credentials is 401 with WWW-Authenticate and an ErrorResponse',
      async () => {
        const res = await get(base, '/api/crew-templates');
        if (res.status !== 401) return `status ${res.status}`;
        if (!res.headers.get('www-authenticate')) return 'no WWW-Authenticate';
        return isErrorResponse(res.json, 401) ? undefined : `body ${res.text.slice(0, 200)}`;
      },
    ],
    [
      'an unknown route is 404 with an ErrorResponse',
      async () => {
        const res = await get(base, '/api/no-such-route-smoke');
        if (res.status !== 404) return `status ${res.status}`;
        return isErrorResponse(res.json, 404) ? undefined : `body ${res.text.slice(0, 200)}`;
      },
    ],
    [
      'a wrong method is 405 with Allow and an ErrorResponse',
      async () => {
        const res = await get(base, '/api/health/ping', { method: 'DELETE' });
        if (res.status !== 405) return `status ${res.status}`;
        if (!res.headers.get('allow')) return 'no Allow header';
        return isErrorResponse(res.json, 405) ? undefined : `body ${res.text.slice(0, 200)}`;
      },
    ],
  ];
  if (psk !== undefined) {
    const auth = { headers: { 'authorization-psk': psk } };
    checks.push(
      [
        'with the key: an authenticated list answers 200 with an array',
        async () => {
          const res = await get(base, '/api/crew-templates?limit=1', auth);
          if (res.status !== 200) return `status ${res.status}`;
          return Array.isArray(res.json) ? undefined : 'not an array';
        },
      ],
      [
        'with the key: a bad query is 422 with a validation error at its loc',
        async () => {
          const res = await get(base, '/api/crew-templates?limit=0', auth);
          if (res.status !== 422) return `status ${res.status}`;
          const detail = (res.json as { detail?: { loc?: unknown[] }[] } | undefined)?.detail;
          return Array.isArray(detail) && JSON.stringify(detail[0]?.loc) === '["query","limit"]'
            ? undefined
            : `body ${res.text.slice(0, 200)}`;
        },
      ],
    );
  }
  const results: SmokeCheck[] = [];
  for (const [name, check] of checks) {
    try {
      const problem = await check();
      results.push(problem === undefined ? { name, ok: true } : { name, ok: false, detail: problem });
    } catch (err) {
      const why =
        err instanceof Error ? (err.name === 'TimeoutError' ? 'no answer within 10 s' : err.message) : String(err);
      results.push({ name, ok: false, detail: why });
    }
  }
  return results;
}

export const USAGE =
  'usage: npm run smoke -- <base-url> [--psk-stdin]   (the key from DPM_SMOKE_PSK, or from stdin with --psk-stdin)';

/** The first line of stdin, without its line end (empty when there is none). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]!.trim();
}

/** The command line: `argv` after the script, `envPsk` the key DPM_SMOKE_PSK gives. */
async function main(argv: string[], envPsk: string | undefined): Promise<number> {
  // Refused before anything else, and without repeating what follows it (the key).
  if (argv.some((a) => a === '--psk' || a.startsWith('--psk='))) {
    console.error(
      'dpm smoke: --psk would show the key (npm prints the command line, ps lists it): set DPM_SMOKE_PSK, or pipe it in with --psk-stdin',
    );
    return 2;
  }
  const fromStdin = argv.includes('--psk-stdin');
  const args = argv.filter((a) => a !== '--psk-stdin');
  const [base] = args;
  if (!base || args.length !== 1 || !/^https?:\/\/[^\s]+$/.test(base)) {
    console.error(USAGE);
    return 2;
  }
  const psk = fromStdin ? await readStdin() : envPsk || undefined;
  if (fromStdin && !psk) {
    console.error('dpm smoke: --psk-stdin read no key from stdin');
    return 2;
  }
  const results = await smoke(base, psk);
  for (const r of results) console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.detail ? ` (${r.detail})` : ''}`);
  const failed = results.filter((r) => !r.ok).length;
  console.log(`${results.length - failed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.slice(2), process.env.DPM_SMOKE_PSK);
}
