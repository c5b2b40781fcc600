import { request as httpRequest, Agent } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { exportJWK, generateKeyPair } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  fillPath,
  type OpenApiDocument,
  pathParamNames,
  type Route,
  type RouteParam,
  routesFromOpenApi,
  schemaValue,
} from '../../support/openapi-routes.js';
import { DOMAIN_EVENT_TYPES } from '../../../shared/events/types.js';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import {
  HANG_GUARD_MS,
  inParallel,
  REQUEST_HANG_GUARD_MS,
  TOKEN_LIFETIME,
  TOKEN_LIFETIME_S,
} from '../../support/work-budget.js';
import { eventsOf } from '../event-feed.js';
import { adminPsk, api, baseUrl, slug, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * Fuzzes every endpoint `GET /openapi.json` lists (a new endpoint is fuzzed without
 * touching this file) with fast-check: bodies derived from the request schemas and then
 * mutated, bad path and query values, malformed JSON, over-limit bodies, wrong methods
 * and garbage credentials. Every answer must be a 2xx/4xx with the contract's body:
 * ErrorResponse `{error, code}` (code = status) or, for 422, HTTPValidationError.
 *
 * The seed is fixed so CI is repeatable; `FUZZ_SEED=<n>` explores (or replays) another.
 *
 * The budget is work, not time: each property makes exactly its `RUNS` (a run is one batch
 * of requests sent together) and asserts that it made them and that every request it
 * generated was answered and checked. Timeouts only catch a hang (test/support/work-budget.ts):
 * on a loaded machine the same requests take longer and still pass.
 */

/**
 * Names that are properties of every plain object: a service that keys a plain object by
 * a name from a request reads or writes Object.prototype instead (security review). Sent
 * in every path parameter and every body field that carries a name.
 */
const PROTO_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'] as const;

/** Body fields whose strings are names (of tags, terms, domains, columns, tables, variables, steps, ...). */
const NAME_FIELD = /(^|_)(name|tags|terms|classifications|domain|tables|id|key)$/;

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : 20_250_611;
const MIN_REQUESTS = 2000;
/**
 * Runs of each property (fast-check's numRuns), each run a batch of 1 to 10 requests (the huge
 * ones: 1 to 4) sent together: about 3,200 requests for the fixed seed, MIN_REQUESTS at least.
 */
const RUNS = { bulk: 480, auth: 50, malformed: 50, method: 30, huge: 16 } as const;
type Family = keyof typeof RUNS;
const MAX_BODY_BYTES = 1024 * 1024;

// ---------------------------------------------------------------------------
// Requests, answers and the checks every answer must pass
// ---------------------------------------------------------------------------

type AuthKind =
  | 'admin-bearer'
  | 'admin2-bearer'
  | 'admin3-bearer'
  | 'admin-psk'
  | 'user-bearer'
  | 'none'
  | 'garbage-bearer'
  | 'empty-bearer'
  | 'basic'
  | 'foreign-jwt'
  | 'alg-none-jwt'
  | 'expired-jwt'
  | 'wrong-audience-jwt'
  | 'wrong-issuer-jwt'
  | 'truncated-jwt'
  | 'garbage-psk'
  | 'empty-psk'
  | 'long-psk';

const VALID_AUTH: readonly AuthKind[] = ['admin-bearer', 'admin2-bearer', 'admin3-bearer', 'admin-psk', 'user-bearer'];
const BAD_AUTH: readonly AuthKind[] = [
  'none',
  'garbage-bearer',
  'empty-bearer',
  'basic',
  'foreign-jwt',
  'alg-none-jwt',
  'expired-jwt',
  'wrong-audience-jwt',
  'wrong-issuer-jwt',
  'truncated-jwt',
  'garbage-psk',
  'empty-psk',
  'long-psk',
];

type Body =
  | { kind: 'none' }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array; label: string }
  /** Chunked, without Content-Length: the limit must hold while streaming. */
  | { kind: 'stream'; bytes: number };

/** What a request must get beyond the checks every answer gets. */
type Expectation =
  | { kind: 'any' }
  | { kind: 'status'; status: number }
  | { kind: 'not'; status: number }
  | { kind: 'json-invalid' }
  | { kind: 'method-not-allowed'; allow: readonly string[] };

class FuzzRequest {
  constructor(
    readonly family: string,
    readonly method: string,
    readonly path: string,
    readonly route: Route | undefined,
    readonly auth: AuthKind,
    readonly body: Body,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly expectation: Expectation = { kind: 'any' },
  ) {}

  /** How fast-check prints a counterexample: short, whatever the body's size. */
  [fc.toStringMethod](): string {
    return describeRequest(this);
  }
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

const truncate = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}… (${s.length} chars)` : s);

function describeBody(body: Body): string {
  switch (body.kind) {
    case 'none':
      return '(none)';
    case 'text':
      return truncate(JSON.stringify(body.text), 300);
    case 'bytes':
      return `${body.label} (${body.bytes.length} bytes)`;
    case 'stream':
      return `chunked stream of ${body.bytes} bytes`;
  }
}

function describeRequest(r: FuzzRequest): string {
  const headers = Object.keys(r.headers).length ? ` headers=${truncate(JSON.stringify(r.headers), 200)}` : '';
  return `[${r.family}] ${r.method} ${truncate(r.path, 300)} auth=${r.auth}${headers} body=${describeBody(r.body)}`;
}

const describeAnswer = (a: Answer) =>
  `→ ${a.status} ${a.headers.get('content-type') ?? '(no content-type)'} ${truncate(a.text, 500)}`;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The contract's 422 body: `{detail: [{type, loc, msg, input, ctx?}]}`, nothing else. */
function validationErrorProblems(body: unknown): string[] {
  if (!isObject(body)) return ['422 body is not an object'];
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== 'detail') return [`422 body keys are ${JSON.stringify(keys)}, not ["detail"]`];
  const detail = body.detail;
  if (!Array.isArray(detail) || detail.length === 0) return ['422 detail is not a non-empty array'];
  const problems: string[] = [];
  detail.forEach((entry, i) => {
    if (!isObject(entry)) return void problems.push(`detail[${i}] is not an object`);
    const extra = Object.keys(entry).filter((k) => !['type', 'loc', 'msg', 'input', 'ctx'].includes(k));
    if (extra.length) problems.push(`detail[${i}] has extra keys ${JSON.stringify(extra)}`);
    if (typeof entry.type !== 'string' || entry.type === '') problems.push(`detail[${i}].type is not a string`);
    if (typeof entry.msg !== 'string') problems.push(`detail[${i}].msg is not a string`);
    if (!('input' in entry)) problems.push(`detail[${i}] has no input`);
    if (
      !Array.isArray(entry.loc) ||
      entry.loc.length === 0 ||
      !entry.loc.every((p) => typeof p === 'string' || Number.isInteger(p))
    ) {
      problems.push(`detail[${i}].loc is not a non-empty (string|int)[]`);
    }
    if ('ctx' in entry && !isObject(entry.ctx)) problems.push(`detail[${i}].ctx is not an object`);
  });
  return problems;
}

/** The contract's other error body: `{error: string, code: <status>}`, nothing else. */
function errorResponseProblems(body: unknown, status: number): string[] {
  if (!isObject(body)) return ['error body is not an object'];
  const keys = Object.keys(body).sort();
  if (keys.length !== 2 || keys[0] !== 'code' || keys[1] !== 'error') {
    return [`error body keys are ${JSON.stringify(keys)}, not ["code","error"]`];
  }
  const problems: string[] = [];
  if (typeof body.error !== 'string' || body.error === '') problems.push('error is not a non-empty string');
  if (body.code !== status) problems.push(`code ${JSON.stringify(body.code)} is not the status ${status}`);
  return problems;
}

/** Everything wrong with one answer (empty: fine). */
function answerProblems(r: FuzzRequest, a: Answer): string[] {
  const problems: string[] = [];
  if (a.status >= 500) problems.push(`server error ${a.status}`);
  if (a.status < 200 || a.status >= 600) problems.push(`unexpected status ${a.status}`);
  const contentType = a.headers.get('content-type') ?? '';
  const e = r.expectation;
  if (e.kind === 'status' && a.status !== e.status) problems.push(`expected ${e.status}`);
  if (e.kind === 'not' && a.status === e.status) problems.push(`expected anything but ${e.status}`);
  if (e.kind === 'method-not-allowed') {
    if (a.status !== 405) problems.push('expected 405');
    const allow = (a.headers.get('allow') ?? '')
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean)
      .sort();
    if (a.status === 405 && JSON.stringify(allow) !== JSON.stringify([...e.allow].sort())) {
      problems.push(`Allow is ${JSON.stringify(allow)}, expected ${JSON.stringify([...e.allow].sort())}`);
    }
  }
  if (a.status === 401 && a.headers.get('www-authenticate') !== WWW_AUTHENTICATE) {
    problems.push(`401 with WWW-Authenticate ${JSON.stringify(a.headers.get('www-authenticate'))}`);
  }
  if (r.method === 'HEAD') {
    if (a.text !== '') problems.push('HEAD answer has a body');
    return problems;
  }
  if (a.status === 204) {
    if (a.text !== '') problems.push('204 with a body');
    if (r.route && r.route.method === r.method && !r.route.statuses.includes(204)) {
      problems.push('204 is not documented for the operation');
    }
    return problems;
  }
  // A documented redirect (GET /console → /console/) has no body to judge: it needs its Location.
  if (a.status >= 300 && a.status < 400) {
    if (!a.headers.get('location')) problems.push(`${a.status} without Location`);
    if (!(r.route && r.route.method === r.method && r.route.statuses.includes(a.status))) {
      problems.push(`${a.status} is not a documented status of the operation`);
    }
    return problems;
  }
  const documented = r.route?.successTypes ?? [];
  if (a.status >= 200 && a.status < 300 && documented.length > 0 && !documented.includes('application/json')) {
    if (!documented.some((type) => contentType.startsWith(type))) {
      problems.push(`content-type ${contentType || '(none)'}, expected one of ${documented.join(', ')}`);
    }
    return problems;
  }
  if (!contentType.startsWith('application/json')) problems.push(`content-type ${contentType || '(none)'}`);
  let body: unknown;
  try {
    body = JSON.parse(a.text);
  } catch {
    problems.push('body is not JSON');
    return problems;
  }
  if (a.status >= 200 && a.status < 300) {
    if (r.route && r.route.method === r.method && !r.route.statuses.includes(a.status)) {
      problems.push(`${a.status} is not a documented success status of ${r.route.operationId}`);
    }
  } else if (a.status === 422) {
    problems.push(...validationErrorProblems(body));
    if (e.kind === 'json-invalid') {
      const entries = isObject(body) && Array.isArray(body.detail) ? body.detail : [];
      const invalid = entries.find((d: any) => d?.type === 'json_invalid');
      if (!invalid) problems.push('expected a json_invalid entry');
      else if (!(invalid.loc[0] === 'body' && Number.isInteger(invalid.loc[1]) && invalid.loc.length === 2)) {
        problems.push(`json_invalid loc ${JSON.stringify(invalid.loc)} is not ["body", <int>]`);
      }
    }
  } else {
    problems.push(...errorResponseProblems(body, a.status));
  }
  if (e.kind === 'json-invalid' && a.status !== 422) problems.push('expected 422 json_invalid');
  return problems;
}

// ---------------------------------------------------------------------------
// Sending, with counters
// ---------------------------------------------------------------------------

const stats = {
  total: 0,
  byFamily: new Map<string, number>(),
  /** `METHOD template` → status → count, for requests the bulk family aimed at a route. */
  byRoute: new Map<string, Map<number, number>>(),
};

const credentials = {} as Record<AuthKind, Record<string, string>>;

async function send(r: FuzzRequest): Promise<Answer> {
  stats.total++;
  stats.byFamily.set(r.family, (stats.byFamily.get(r.family) ?? 0) + 1);
  const headers = new Headers({ ...credentials[r.auth], ...r.headers });
  let body: RequestInit['body'];
  let duplex: 'half' | undefined;
  if (r.body.kind === 'text') body = r.body.text;
  else if (r.body.kind === 'bytes') body = r.body.bytes;
  else if (r.body.kind === 'stream') {
    const total = r.body.bytes;
    const chunk = new Uint8Array(64 * 1024).fill(0x61);
    let sent = 0;
    body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= total) return controller.close();
        const n = Math.min(chunk.length, total - sent);
        sent += n;
        controller.enqueue(chunk.subarray(0, n));
      },
    });
    duplex = 'half';
  }
  const res = await fetch(`${baseUrl()}${r.path}`, {
    method: r.method,
    headers,
    body,
    redirect: 'manual',
    signal: AbortSignal.timeout(REQUEST_HANG_GUARD_MS),
    ...(duplex ? { duplex } : {}),
  } as RequestInit);
  const text = await res.text();
  if (r.route && r.family === 'bulk') {
    const key = `${r.route.method} ${r.route.path}`;
    const counts = stats.byRoute.get(key) ?? new Map<number, number>();
    counts.set(res.status, (counts.get(res.status) ?? 0) + 1);
    stats.byRoute.set(key, counts);
  }
  return { status: res.status, headers: res.headers, text };
}

/**
 * Two turns of the event loop, so that connections the service closed while this thread was
 * busy (generating a batch takes seconds on a loaded machine, longer than the service keeps an
 * idle connection) are seen closed and left out of the pool: without them, a request could go
 * out on one and fail with "other side closed" (UND_ERR_SOCKET), which says nothing of the service.
 */
async function seeClosedConnections(): Promise<void> {
  for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Sends a batch in parallel; throws one error naming every request that failed its checks,
 * else answers how many were answered and checked (all of them).
 */
async function sendAndCheck(batch: readonly FuzzRequest[]): Promise<number> {
  await seeClosedConnections();
  const results = await Promise.all(
    batch.map(async (r) => {
      try {
        const answer = await send(r);
        const problems = answerProblems(r, answer);
        return problems.length ? `${describeRequest(r)}\n  ${describeAnswer(answer)}\n  ${problems.join('; ')}` : '';
      } catch (err) {
        const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
        // Over the limit the service answers and closes the connection without reading the
        // rest (shared/http/request-input.ts drainBody): a client still writing may see its write fail
        // (EPIPE) before it reads the answer. Only there is that an answer; the exact 413
        // and the close are checked by "answers every upload over the limit with 413" below.
        if (
          r.expectation.kind === 'status' &&
          r.expectation.status === 413 &&
          (cause?.code === 'EPIPE' || cause?.code === 'ECONNRESET')
        )
          return '';
        const detail = cause ? ` (${cause.code ?? ''} ${cause.message ?? ''})` : '';
        return `${describeRequest(r)}\n  → request failed: ${(err as Error).message}${detail}`;
      }
    }),
  );
  const failures = results.filter(Boolean);
  if (failures.length) throw new Error(`${failures.length} bad answer(s):\n${failures.join('\n')}`);
  return results.length;
}

/**
 * fc.assert with the suite's seed and the family's RUNS (saying how to replay on failure),
 * then the work it did: exactly RUNS runs, every generated request of the family sent,
 * answered and checked.
 */
async function fuzz(family: Family, arb: fc.Arbitrary<FuzzRequest[]>): Promise<void> {
  const work = { runs: 0, generated: 0, checked: 0 };
  try {
    await fc.assert(
      fc.asyncProperty(arb, async (batch) => {
        work.runs++;
        work.generated += batch.length;
        work.checked += await sendAndCheck(batch);
      }),
      { seed: SEED, numRuns: RUNS[family] },
    );
  } catch (err) {
    const e = err as Error;
    e.message =
      `fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}; explore with another FUZZ_SEED); ` +
      `${work.runs} runs and ${work.generated} ${family} requests made, shrinking included\n${e.message}`;
    throw e;
  }
  console.info(`fuzz seed ${SEED}, ${family}: ${work.runs} runs, ${work.generated} requests`);
  expect(work.runs, `${family}: runs made`).toBe(RUNS[family]);
  expect(work.generated, `${family}: requests generated (each run at least one)`).toBeGreaterThanOrEqual(work.runs);
  expect(work.checked, `${family}: requests answered and checked`).toBe(work.generated);
  expect(stats.byFamily.get(family) ?? 0, `${family}: requests sent`).toBe(work.generated);
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

/** JSON text that JSON.stringify cannot produce (kept verbatim by `toJsonText`). */
class RawJson {
  constructor(readonly text: string) {}
  [fc.toStringMethod]() {
    return `RawJson(${truncate(this.text, 60)})`;
  }
}

function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v === undefined ? null : v)}`)
      .join(',')}}`;
  }
  // JSON.stringify escapes lone surrogates as \udXXX (well-formed JSON.stringify).
  return JSON.stringify(value) ?? 'null';
}

/** An object of the generated JSON (not verbatim JSON text). */
const isJsonObject = (v: unknown): v is Record<string, unknown> => isObject(v) && !(v instanceof RawJson);

const deep = (open: string, close: string, n: number) => new RawJson(open.repeat(n) + '1' + close.repeat(n));
const deepObject = (n: number) => new RawJson('{"a":'.repeat(n) + '1' + '}'.repeat(n));

const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'nul\u0000inside',
  '\uD800',
  'lone \uDFFF low',
  '\uDBFF\uDFFF',
  '\u202Eevil\u202C.exe',
  'مرحبا بالعالم',
  'שלום',
  '😀👍🏽👨‍👩‍👧‍👦🏳️‍🌈',
  'Z̷̧̛a̵̢l̶g̸o̴',
  '\r\n\t\u000b\f',
  '\uFEFF',
  '\u2028\u2029',
  '{{ values.x }}',
  '${7*7}',
  '../../../etc/passwd',
  "'; DROP TABLE x; --",
  '<script>alert(1)</script>',
  '%00%2F',
  ...PROTO_NAMES,
  'null',
  'true',
  '1e308',
  '-0',
  'x'.repeat(65),
  'x'.repeat(257),
  'x'.repeat(1025),
  'x'.repeat(4001),
  'x'.repeat(10_001),
  'é'.repeat(100_000),
  'a'.repeat(100 * 1024),
];

const NASTY_NUMBERS: unknown[] = [
  0,
  -1,
  1.5,
  -0.5,
  1e308,
  -1e308,
  5e-324,
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
  2 ** 31,
  -(2 ** 31),
  1e21,
  65536,
  3651,
  new RawJson('-0'),
  new RawJson('-0.0'),
  new RawJson('9007199254740993'),
  new RawJson('-9007199254740993'),
  new RawJson('18446744073709551616'),
  new RawJson('1e400'),
  new RawJson('-1e400'),
  new RawJson('1E-400'),
  new RawJson('1.0'),
  new RawJson('1e2'),
  new RawJson('0.00000000000000000000000000001'),
  new RawJson('123456789012345678901234567890.5'),
];

const NASTY_STRUCTURES: unknown[] = [
  null,
  true,
  false,
  [],
  {},
  [null],
  [[]],
  { '': '' },
  [1, 'a', null, {}, []],
  deep('[', ']', 40),
  deep('[', ']', 500),
  deepObject(40),
  deepObject(500),
  new RawJson('['.repeat(5000) + ']'.repeat(5000)),
  new RawJson('{"__proto__":{"admin":true,"roles":["admin"]}}'),
  new RawJson('{"constructor":{"prototype":{"polluted":true}}}'),
  new RawJson('{"a":1,"a":2}'),
  Array.from({ length: 5000 }, (_, i) => i),
  Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, i])),
  { toString: 'x', valueOf: 1, hasOwnProperty: null },
];

const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_NUMBERS) },
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRUCTURES) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.double().filter(Number.isFinite) },
);

const extraKey = fc.oneof(
  fc.constantFrom('extra', ...PROTO_NAMES, '', ' ', 'id', 'created_by', 'owner', 'roles', '\u0000', '😀'),
  fc.string({ maxLength: 12 }),
);

type Mutation =
  | { kind: 'drop'; at: number }
  | { kind: 'extra'; at: number; key: string; value: unknown }
  | { kind: 'replace'; at: number; value: unknown }
  | { kind: 'root'; value: unknown }
  | { kind: 'wrap' };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('extra' as const), at: fc.nat(), key: extraKey, value: nastyValue }),
  },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: nastyValue }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('root' as const), value: nastyValue }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('wrap' as const) }) },
);

type Path = (string | number)[];

/** Paths of every node (root first) of a JSON-like value. */
function nodePaths(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => nodePaths(v, [...prefix, i], out));
  else if (isObject(value) && !(value instanceof RawJson)) {
    for (const [k, v] of Object.entries(value)) nodePaths(v, [...prefix, k], out);
  }
  return out;
}

function getAt(value: unknown, path: Path): unknown {
  return path.reduce<any>((v, k) => v?.[k], value);
}

/** A copy of `value` with the node at `path` replaced (or removed when `remove`). */
function setAt(value: unknown, path: Path, replacement: unknown, remove = false): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    if (rest.length === 0 && remove) copy.splice(head as number, 1);
    else copy[head as number] = setAt(copy[head as number], rest, replacement, remove);
    return copy;
  }
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (rest.length === 0 && remove) delete copy[head as string];
  else copy[head as string] = setAt(copy[head as string], rest, replacement, remove);
  return copy;
}

function mutate(value: unknown, m: Mutation): unknown {
  const paths = nodePaths(value);
  switch (m.kind) {
    case 'root':
      return m.value;
    case 'wrap':
      return [value];
    case 'replace':
      return setAt(value, paths[m.at % paths.length]!, m.value);
    case 'drop': {
      const inner = paths.filter((p) => p.length > 0);
      return inner.length ? setAt(value, inner[m.at % inner.length]!, undefined, true) : value;
    }
    case 'extra': {
      const objects = paths.filter((p) => isJsonObject(getAt(value, p)));
      if (!objects.length) return value;
      const at = objects[m.at % objects.length]!;
      const target = getAt(value, at) as Record<string, unknown>;
      // A computed key: `__proto__` becomes an own property, sent as a client would send it.
      return setAt(value, at, { ...target, [m.key]: m.value });
    }
  }
}

/** Encodes a path segment; lone surrogates (which encodeURIComponent refuses) become U+FFFD. */
function encodeSegment(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return encodeURIComponent(s.replace(/\p{Cs}/gu, '\uFFFD'));
  }
}

/** Path segments no valid id looks like, sent verbatim (already encoded, some malformed). */
const BAD_SEGMENTS = [
  '%20',
  '%00',
  '%2e%2e',
  '%2F',
  'a%2Fb',
  '%25',
  '%',
  '%E0%A4%A',
  '%ED%A0%80',
  '%FF%FE',
  '%C0%AF',
  encodeSegment('😀'),
  encodeSegment('\u202Eabc'),
  encodeSegment('مرحبا'),
  encodeSegment('\uFEFF'),
  'x'.repeat(65),
  'x'.repeat(300),
  'x'.repeat(4000),
  '-1',
  '0',
  '1.5',
  '1e308',
  '9007199254740993',
  '99999999999999999999999999',
  '-0',
  '+1',
  '%201',
  'null',
  'undefined',
  'NaN',
  ...PROTO_NAMES,
  encodeSegment("' OR '1'='1"),
  encodeSegment('{{x}}'),
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '3F2504E0-4F89-41D3-9A0C-0305E82C3301',
  '3f2504e04f8941d39a0c0305e82c3301',
  '%7B3f2504e0-4f89-41d3-9a0c-0305e82c3301%7D',
  '3f2504e0-4f89-41d3-9a0c-0305e82c3301x',
  '3f2504e0-4f89-41d3-9a0c-0305e82c330',
  'Has-Upper',
  '-leading-dash',
  'a..b',
  'a$b',
  'a:b',
  'a;b',
  'a%3Bb',
];

const badSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...BAD_SEGMENTS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(encodeSegment) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 20 }).map(encodeSegment) },
);

const BAD_QUERY_VALUES = [
  '',
  'abc',
  '-1',
  '0',
  '1001',
  '1e3',
  '1.5',
  ' 5 ',
  '9007199254740993',
  '%00',
  '%FF',
  '%',
  'true',
  'maybe',
  'x'.repeat(3000),
  'bm90LWEtY3Vyc29y',
  Buffer.from('{"id":"x"}').toString('base64url'),
  Buffer.from('{"pk":{"S":"x"},"sk":{"N":"1"}}').toString('base64url'),
  Buffer.from('[]').toString('base64url'),
  Buffer.from('"str"').toString('base64url'),
  Buffer.from('{"__proto__":{"x":1}}').toString('base64url'),
  Buffer.from('{"k":{"S":""}}').toString('base64url'),
  Buffer.from('{"id":{"B":"AAAA"}}').toString('base64url'),
  Buffer.from(`{"a":${'['.repeat(200)}${']'.repeat(200)}}`).toString('base64url'),
  Buffer.from([0xff, 0xfe, 0x00, 0x01]).toString('base64'),
  '====',
];

const badQueryValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...BAD_QUERY_VALUES).map((v) => (/%/.test(v) ? v : encodeSegment(v))) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map(encodeSegment) },
  {
    weight: 1,
    arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => Buffer.from(JSON.stringify(v)).toString('base64url')),
  },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/json; charset=utf-16',
  'application/xml',
  'application/vnd.api+json',
  '*/*',
  'garbage',
];

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
);

const requestIdHeader = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(500), 'a b', 'ok-id-1', '', '../x', 'ÿÿ') },
);

// ---------------------------------------------------------------------------
// The routes and the data they reach
// ---------------------------------------------------------------------------

let doc: OpenApiDocument;
let routes: Route[];

/** Existing resources: path values and body values that get past "not found". */
interface Pools {
  /** Readable by any route with a parameter of this name. */
  keep: Record<string, string[]>;
  /** Targets of destructive calls (DELETE, replacing a runnable template): never the kept ones. */
  scratch: Record<string, string[]>;
  body: Record<string, string[]>;
}
const pools: Pools = { keep: {}, scratch: {}, body: {} };

/** Only this singleton route is shared with another test file (migration.test.ts): bodies sent to it must fail validation. */
const SINGLETONS = new Set(['PUT /api/migration/infrastructure-config']);

/**
 * Routes that act on whatever matches their body, beyond the fuzz's own data, unless a field
 * is pinned to it: an admin's bulk cancel would cancel every other file's runs. The fields are
 * set on every object body sent to them (the other fields are still generated and mutated).
 */
const PINNED: Record<string, () => Record<string, unknown>> = {
  'POST /api/crew-runs/cancel': () => ({ template_id: pools.keep.template_id![0] }),
};

function isDestructive(route: Route, param: string): boolean {
  if (route.method === 'DELETE') return true;
  // Replacing a template or connection could make it slow to run or probe.
  if (route.method === 'PUT' && (param === 'template_id' || param === 'conn_id')) return true;
  return false;
}

/** Metastore names: a path's values must belong together, so the scratch ones are for deletes only. */
const METASTORE_NAMES = new Set(['catalog_name', 'schema_name', 'table_name']);

function existingValues(route: Route, param: string): string[] {
  // The SDK's tag and domain calls name a table `catalog.schema.table` (docs/sdk.md); E5's, by its name.
  if (param === 'table' && /^\/api\/metastore\/(tags|domains)\//.test(route.path)) param = 'table_ref';
  if (isDestructive(route, param)) return pools.scratch[param] ?? [];
  if (METASTORE_NAMES.has(param)) return pools.keep[param] ?? [];
  // Only the render-only template is ever run.
  if (route.path.endsWith('/run') && param === 'template_id') return pools.keep[param] ?? [];
  return [...(pools.keep[param] ?? []), ...(pools.scratch[param] ?? [])];
}

/** A value for a path parameter: an existing resource, a schema-valid one, or a bad one. */
function pathValue(route: Route, param: RouteParam, validOnly = false): fc.Arbitrary<string> {
  const existing = existingValues(route, param.name);
  const valid = schemaValue(doc, param.schema, {}, param.name)
    .map(String)
    // '.' and '..' (even as %2E) are dot segments: every URL parser removes them from the path.
    .filter((v) => v !== '' && v !== '.' && v !== '..')
    .map(encodeSegment);
  const good: fc.WeightedArbitrary<string>[] = [{ weight: 3, arbitrary: valid }];
  if (existing.length) good.push({ weight: 6, arbitrary: fc.constantFrom(...existing.map(encodeSegment)) });
  if (validOnly) return fc.oneof(...good);
  return fc.oneof(
    ...good,
    { weight: 2, arbitrary: fc.constantFrom(...PROTO_NAMES.map(encodeSegment)) },
    { weight: 3, arbitrary: badSegment },
  );
}

/**
 * Known-good values of query parameters whose schema admits more than the service accepts: a
 * domain-event `type` filter must name a catalogued type or a prefix of one (docs/events-and-webhooks.md), which
 * a pattern cannot say, so half of the generated filters are real ones.
 */
const QUERY_HINTS: Record<string, readonly string[]> = {
  type: [...DOMAIN_EVENT_TYPES, 'decision.*', 'crew.*', 'dpm.*'],
  // GET /api/decisions?workspace=: the fuzz's own workspace (filled in below), so a filter lists something
  get workspace() {
    return pools.keep.workspace ?? [];
  },
};

/** A query string for the route's query parameters: absent, valid, bad, repeated or unknown ones. */
function queryString(route: Route): fc.Arbitrary<string> {
  const params = route.params.filter((p) => p.in === 'query');
  const parts = params.map((p) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant<string[]>([]) },
      {
        weight: 3,
        arbitrary: schemaValue(doc, p.schema, { hints: (name) => QUERY_HINTS[name] }, p.name).map((v) => [
          `${p.name}=${encodeSegment(String(v))}`,
        ]),
      },
      { weight: 2, arbitrary: badQueryValue.map((v) => [`${p.name}=${v}`]) },
      {
        weight: 1,
        arbitrary: fc.tuple(badQueryValue, badQueryValue).map(([a, b]) => [`${p.name}=${a}`, `${p.name}=${b}`]),
      },
      { weight: 1, arbitrary: fc.constant([p.name]) },
    ),
  );
  const unknown = fc.oneof(
    { weight: 6, arbitrary: fc.constant<string[]>([]) },
    { weight: 1, arbitrary: badQueryValue.map((v) => [`unknown=${v}`]) },
    { weight: 1, arbitrary: fc.constant(['&&=&', '%=%', 'a[b]=1', '__proto__[x]=1']) },
  );
  const join = (lists: readonly (readonly string[])[]) => {
    const all = lists.flat();
    return all.length ? `?${all.join('&')}` : '';
  };
  // Each parameter drawn on its own, a route with five of them is sent a wholly valid query
  // about one time in twelve: a quarter of the queries are valid throughout, so that the
  // deep paths behind a list's filters are reached too (a cursor is opaque: left out).
  const valid = params.map((p) =>
    p.name === 'cursor'
      ? fc.constant<string[]>([])
      : fc.oneof(
          fc.constant<string[]>([]),
          schemaValue(doc, p.schema, { hints: (name) => QUERY_HINTS[name] }, p.name).map((v) => [
            `${p.name}=${encodeSegment(String(v))}`,
          ]),
        ),
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(...parts, unknown).map(join) },
    { weight: 1, arbitrary: fc.tuple(...valid).map(join) },
  );
}

function pathFor(route: Route, validOnly = false): fc.Arbitrary<string> {
  const names = pathParamNames(route.path);
  const params = names.map(
    (name) =>
      route.params.find((p) => p.name === name && p.in === 'path') ?? { name, in: 'path', required: true, schema: {} },
  );
  const fill = (values: string[]) => fillPath(route.path, Object.fromEntries(names.map((n, i) => [n, values[i]!])));
  const mixed = fc.tuple(...params.map((p) => pathValue(route, p as RouteParam, validOnly))).map(fill);
  // Every parameter naming an existing resource (e.g. workspace, key and version together).
  const existing = names.map((n) => existingValues(route, n).map(encodeSegment));
  if (names.length === 0 || existing.some((values) => values.length === 0)) return mixed;
  const allExisting = fc.tuple(...existing.map((values) => fc.constantFrom(...values))).map(fill);
  return fc.oneof({ weight: 1, arbitrary: allExisting }, { weight: 1, arbitrary: mixed });
}

/** Known-good values for a body field, and for every name field the Object.prototype names too. */
const valueOptions = () => ({
  hints: (name: string) => [...(pools.body[name] ?? []), ...(NAME_FIELD.test(name) ? PROTO_NAMES : [])],
});

/** A body for the route: a schema-valid example, a mutated one, a nasty value, or none. */
function bodyFor(route: Route): fc.Arbitrary<{ value: unknown } | undefined> {
  if (!route.body) {
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: nastyValue.map((value) => ({ value })) },
    );
  }
  const example = schemaValue(doc, route.body.schema, valueOptions());
  const singleton = SINGLETONS.has(`${route.method} ${route.path}`);
  const mutated = fc.tuple(example, mutation).map(([v, m]) => ({ value: mutate(v, m) }));
  if (singleton) {
    // Shared state with another test file: always invalid (an unknown key), but mutated deeply too.
    return fc.tuple(mutated, nastyValue).map(([b, extra]) => ({
      value: isJsonObject(b.value) ? { ...b.value, fuzz_unknown_field: extra } : b.value,
    }));
  }
  const pinned = PINNED[`${route.method} ${route.path}`];
  const pin = (body: { value: unknown } | undefined) =>
    pinned && body && isJsonObject(body.value) ? { value: { ...body.value, ...pinned() } } : body;
  return fc
    .oneof(
      { weight: 3, arbitrary: example.map((value) => ({ value })) },
      { weight: 6, arbitrary: mutated },
      { weight: 1, arbitrary: fc.constant(undefined) },
    )
    .map(pin);
}

/** One arbitrary per route, built once (building them per generated value is slow). */
function perRoute<T>(list: readonly Route[], build: (route: Route) => fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof(...list.map(build));
}

const validAuth = fc.oneof(
  { weight: 9, arbitrary: fc.constantFrom<AuthKind>('admin-bearer', 'admin2-bearer', 'admin3-bearer') },
  { weight: 5, arbitrary: fc.constant<AuthKind>('admin-psk') },
  { weight: 2, arbitrary: fc.constant<AuthKind>('user-bearer') },
  { weight: 1, arbitrary: fc.constantFrom(...BAD_AUTH) },
);

/** The bulk: every route, mostly with good credentials, schema-derived and mutated bodies. */
function bulkRequest(): fc.Arbitrary<FuzzRequest> {
  return perRoute(routes, (route) =>
    fc
      .record({
        path: pathFor(route),
        query: queryString(route),
        auth: validAuth,
        body: bodyFor(route),
        contentType,
        requestId: requestIdHeader,
      })
      .map(({ path, query, auth, body, contentType, requestId }) => {
        const canHaveBody = route.method !== 'GET' && route.method !== 'HEAD';
        const headers: Record<string, string> = {};
        if (requestId !== undefined) headers['x-request-id'] = requestId;
        let sent: Body = { kind: 'none' };
        if (body && canHaveBody) {
          sent = { kind: 'text', text: toJsonText(body.value) };
          headers['content-type'] = contentType;
        }
        return new FuzzRequest('bulk', route.method, path + query, route, auth, sent, headers);
      }),
  );
}

/** Credentials that are missing, malformed, or from another key, issuer or audience. */
function authRequest(): fc.Arbitrary<FuzzRequest> {
  return perRoute(routes, (route) =>
    fc
      .record({ path: pathFor(route, true), auth: fc.constantFrom(...BAD_AUTH), body: bodyFor(route) })
      .map(({ path, auth, body }) => {
        const canHaveBody = route.method !== 'GET' && route.method !== 'HEAD';
        const sent: Body = body && canHaveBody ? { kind: 'text', text: toJsonText(body.value) } : { kind: 'none' };
        const headers: Record<string, string> = sent.kind === 'text' ? { 'content-type': 'application/json' } : {};
        // Authentication comes before validation: a bad body never reveals anything.
        const expectation: Expectation = route.secured ? { kind: 'status', status: 401 } : { kind: 'not', status: 401 };
        return new FuzzRequest('auth', route.method, path, route, auth, sent, headers, expectation);
      }),
  );
}

/** Texts that are not JSON (each fails JSON.parse), derived from a valid body or canned. */
function malformedText(route: Route): fc.Arbitrary<string> {
  const valid = schemaValue(doc, route.body!.schema, valueOptions()).map(toJsonText);
  const derived = fc
    .tuple(valid, fc.nat(), fc.constantFrom('truncate', 'trailing-comma', 'single-quotes', 'append', 'unquote'))
    .map(([text, n, how]) => {
      switch (how) {
        case 'truncate':
          return text.slice(0, text.length > 1 ? 1 + (n % (text.length - 1)) : 1);
        case 'trailing-comma':
          return text.replace(/([}\]])$/, ',$1');
        case 'single-quotes':
          return text.replaceAll('"', "'");
        case 'append':
          return `${text}${['x', '}', ',', '{}', ' //c', '\u0000'][n % 6]}`;
        case 'unquote':
          return text.replaceAll(/"(\w+)":/g, '$1:');
      }
    });
  const canned = fc.constantFrom(
    '{',
    '}',
    '[',
    '{"a":1,}',
    '[1,2,]',
    'NaN',
    'Infinity',
    '-Infinity',
    'undefined',
    '{a:1}',
    "{'a':1}",
    '{"a":1}{"b":2}',
    '{"a" 1}',
    '{"a":01}',
    '{"a":1e}',
    '{"a":.5}',
    '{"a":+1}',
    '-',
    '"unterminated',
    '{"a":"\\x41"}',
    '{"a":"\\u12"}',
    '{"a":"tab\there"}',
    '\u0000{}',
    '{} garbage',
    '['.repeat(3000),
    '{"a":' + '['.repeat(1000),
    '<xml/>',
    'name=x&command=y',
    'true false',
    '/* c */ {}',
  );
  return fc.oneof(derived, canned).filter((text) => {
    if (text.trim() === '') return false;
    try {
      JSON.parse(text);
      return false;
    } catch {
      return true;
    }
  });
}

/** Malformed JSON and odd encodings, on every route that takes a body. */
function malformedRequest(): fc.Arbitrary<FuzzRequest> {
  const withBody = routes.filter((r) => r.body);
  return perRoute(withBody, (route) =>
    fc
      .record({
        path: pathFor(route, true),
        text: malformedText(route),
        contentType: fc.constantFrom(...CONTENT_TYPES),
        odd: fc.nat({ max: 9 }),
      })
      .map(({ path, text, contentType, odd }) => {
        const headers = { 'content-type': contentType };
        // Admins by Bearer: every route lets them past authentication and roles.
        if (odd === 0) {
          // Bytes that are not UTF-8, or UTF-16: decoded with replacement characters, maybe still JSON.
          const bytes = [
            Uint8Array.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
            Uint8Array.from([0xc0, 0xaf, 0xed, 0xa0, 0x80]),
            new Uint8Array(Buffer.from('{"name":"x"}', 'utf16le')),
            Uint8Array.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
          ][text.length % 4]!;
          return new FuzzRequest(
            'malformed',
            route.method,
            path,
            route,
            'admin-bearer',
            { kind: 'bytes', bytes, label: 'non-UTF-8 bytes' },
            headers,
          );
        }
        if (odd === 1) {
          // No Content-Type at all.
          return new FuzzRequest(
            'malformed',
            route.method,
            path,
            route,
            'admin-bearer',
            { kind: 'bytes', bytes: new TextEncoder().encode(text), label: truncate(JSON.stringify(text), 200) },
            {},
            { kind: 'json-invalid' },
          );
        }
        return new FuzzRequest(
          'malformed',
          route.method,
          path,
          route,
          'admin-bearer',
          { kind: 'text', text },
          headers,
          { kind: 'json-invalid' },
        );
      }),
  );
}

/** Templates matching a concrete path, as the router would (a segment per parameter). */
function methodsServing(path: string): string[] {
  const bare = path.split('?')[0]!;
  const methods = new Set<string>();
  for (const r of routes) {
    const pattern = r.path.replaceAll(/[.+?^$()[\]\\|]/g, '\\$&').replaceAll(/\{\w+\}/g, '[^/]+');
    // Routes match exactly: a trailing slash is another path (404), as in FastAPI.
    if (new RegExp(`^${pattern}$`).test(bare)) methods.add(r.method);
  }
  return [...methods];
}

/** Methods a path does not serve: 405 with the right Allow; and paths nothing serves: 404. */
function methodRequest(): fc.Arbitrary<FuzzRequest> {
  const wrongMethod = perRoute(routes, (route) =>
    fc
      .record({
        path: pathFor(route, true),
        method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
        auth: fc.constantFrom<AuthKind>('admin-bearer', 'none'),
      })
      .map(({ path, method, auth }) => {
        const allowed = methodsServing(path);
        const expectation: Expectation = allowed.includes(method)
          ? { kind: 'any' }
          : { kind: 'method-not-allowed', allow: allowed };
        const body: Body = method === 'GET' ? { kind: 'none' } : { kind: 'text', text: '{}' };
        return new FuzzRequest(
          'method',
          method,
          path,
          route,
          auth,
          body,
          { 'content-type': 'application/json' },
          expectation,
        );
      }),
  );
  const unknownPath = fc
    .record({
      prefix: fc.constantFrom(
        '/api/',
        '/api/nope/',
        '/',
        '/api/mcps/x/y/z/',
        '/API/mcps',
        '/openapi.json/',
        '/docs/x/',
      ),
      tail: fc.string({ maxLength: 20 }).map(encodeSegment),
      method: fc.constantFrom('GET', 'POST', 'DELETE'),
    })
    .map(({ prefix, tail, method }) => {
      const path = `${prefix}${tail}`;
      const expectation: Expectation =
        methodsServing(path).length === 0 ? { kind: 'status', status: 404 } : { kind: 'any' };
      return new FuzzRequest('method', method, path, undefined, 'admin-bearer', { kind: 'none' }, {}, expectation);
    });
  return fc.oneof({ weight: 4, arbitrary: wrongMethod }, { weight: 1, arbitrary: unknownPath });
}

/** Bodies around the 1 MiB limit, and 100 KB values inside otherwise valid bodies. */
function hugeRequest(): fc.Arbitrary<FuzzRequest> {
  const writable = routes.filter((r) => r.method !== 'GET' && r.method !== 'HEAD');
  return perRoute(writable, (route) =>
    fc
      .record({
        path: pathFor(route, true),
        size: fc.constantFrom('over-json', 'over-garbage', 'over-stream', 'under', 'big-field'),
        auth: fc.constantFrom<AuthKind>('admin-bearer', 'admin-psk', 'none'),
        example: route.body ? schemaValue(doc, route.body.schema, valueOptions()) : fc.constant({}),
        at: fc.nat(),
      })
      .map(({ path, size, auth, example, at }) => {
        const headers = { 'content-type': 'application/json' };
        // A valid-looking body padded to exactly `bytes` bytes.
        const sized = (bytes: number) => {
          const base = isObject(example) ? example : {};
          const n = bytes - Buffer.byteLength(toJsonText({ ...base, padding: '' }));
          return toJsonText({ ...base, padding: 'a'.repeat(Math.max(0, n)) });
        };
        const huge = (body: Body, expectation: Expectation) =>
          new FuzzRequest('huge', route.method, path, route, auth, body, headers, expectation);
        const over: Expectation = { kind: 'status', status: 413 };
        const notOver: Expectation = { kind: 'not', status: 413 };
        switch (size) {
          case 'over-json':
            return huge({ kind: 'text', text: sized(MAX_BODY_BYTES + 1) }, over);
          case 'over-garbage':
            return huge(
              { kind: 'bytes', bytes: new Uint8Array(MAX_BODY_BYTES + 1).fill(0x7b), label: '{{{… over the limit' },
              over,
            );
          case 'over-stream':
            return huge({ kind: 'stream', bytes: MAX_BODY_BYTES + 64 * 1024 }, over);
          case 'under':
            // Exactly at the limit: never 413.
            return huge({ kind: 'text', text: sized(MAX_BODY_BYTES) }, notOver);
          case 'big-field': {
            // A 100 KB string in place of one of the example's values.
            const paths = nodePaths(example);
            const value = setAt(example, paths[at % paths.length]!, 'b'.repeat(100 * 1024));
            return huge({ kind: 'text', text: toJsonText(value) }, notOver);
          }
        }
      }),
  );
}

// ---------------------------------------------------------------------------
// Set-up: credentials, the route list, and resources to aim at
// ---------------------------------------------------------------------------

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

async function created(path: string, body: unknown, method = 'POST'): Promise<any> {
  const res = await api(path, { method, token: await adminToken(), body });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

let adminTokenValue: string | undefined;
async function adminToken() {
  adminTokenValue ??= await token('fuzz-admin-1', { roles: ['admin', 'approver'], expiresIn: TOKEN_LIFETIME });
  return adminTokenValue;
}

beforeAll(async () => {
  const now = Math.floor(Date.now() / 1000);
  const other = await generateKeyPair('RS256', { extractable: true });
  const foreignJwk = { ...(await exportJWK(other.privateKey)), kid: provided('privateJwk').kid ?? 'test-key-1' };
  const admin = await adminToken();
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  // Valid (but for what each is made to get wrong) for as long as the file's work can take.
  const expiresIn = TOKEN_LIFETIME;
  Object.assign(credentials, {
    'admin-bearer': bearer(admin),
    'admin2-bearer': bearer(await token('fuzz-admin-2', { roles: ['admin', 'approver'], expiresIn })),
    'admin3-bearer': bearer(await token('fuzz-admin-3', { roles: ['admin', 'approver'], expiresIn })),
    'admin-psk': { 'authorization-psk': adminPsk() },
    'user-bearer': bearer(await token('fuzz-user', { expiresIn })),
    none: {},
    'garbage-bearer': { authorization: 'Bearer not.a.jwt' },
    'empty-bearer': { authorization: 'Bearer ' },
    basic: { authorization: 'Basic YWRtaW46YWRtaW4=' },
    'foreign-jwt': bearer(await token('fuzz-mallory', { roles: ['admin'], key: foreignJwk, expiresIn })),
    'alg-none-jwt': bearer(
      `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ preferred_username: 'mallory', iss: provided('issuer'), aud: provided('audience'), exp: now + TOKEN_LIFETIME_S, realm_access: { roles: ['admin'] } })}.`,
    ),
    'expired-jwt': bearer(await token('fuzz-late', { roles: ['admin'], expiresIn: now - 120 })),
    'wrong-audience-jwt': bearer(await token('fuzz-aud', { roles: ['admin'], audience: 'another-api', expiresIn })),
    'wrong-issuer-jwt': bearer(
      await token('fuzz-iss', { roles: ['admin'], issuer: 'https://issuer.invalid', expiresIn }),
    ),
    'truncated-jwt': bearer(admin.slice(0, -10)),
    'garbage-psk': { 'authorization-psk': `${adminPsk()}x` },
    'empty-psk': { 'authorization-psk': '' },
    'long-psk': { 'authorization-psk': 'k'.repeat(4000) },
  } satisfies Record<AuthKind, Record<string, string>>);

  const openapi = await api<OpenApiDocument>('/openapi.json');
  expect(openapi.status).toBe(200);
  doc = openapi.body;
  routes = routesFromOpenApi(doc);

  // Resources the path and body values aim at (kept: read and changed; scratch: deleted or
  // replaced), made a few at a time: steps that need another's resource come after it.
  const domain = slug('fuzz-domain');
  const [catalog, schema, table] = ['fuzzcat', slug('fuzzschema'), 'fuzz_table'];
  const protoTable = ['constructor', '__proto__', 'toString'] as const;
  // Scratch metastore objects the SDK's DDL deletes (docs/sdk.md): an empty catalog, an empty schema,
  // and a table in a schema of its own (so that each DELETE can succeed on its own level).
  const [scratchCatalog, ddlCatalog] = [slug('fuzz-empty'), slug('fuzz-ddl')];
  const [emptySchema, tableSchema, scratchTable] = [slug('fuzz-empty'), slug('fuzz-ddl'), 'fuzz_scratch'];
  const render = {
    name: 'fuzz render',
    variables: [{ name: 'who' }],
    steps: [{ id: 'r', kind: 'render', template: 'hello {{who}}' }],
  };
  const [workspace, key] = [slug('fuzz-ws'), slug('fuzz-key')];
  // Probing it is refused at once (nothing listens on port 1).
  const [probe, scratchConn] = [slug('fuzz_probe'), slug('fuzz_scratch')];
  const [, , , crews, docA, scratchJob, scratchShare, scratchPsk, eventId, mcps, , hooks] = await inParallel(4, [
    () => created('/api/catalog/domains', { name: domain, description: 'fuzz' }),
    async () => {
      // A table whose catalog, schema, table and column names are Object.prototype names, in a
      // domain of such a name too (tolerating a repeat: other files never use these names).
      const protoDomain = await api('/api/catalog/domains', {
        method: 'POST',
        token: await adminToken(),
        body: { name: 'valueOf' },
      });
      expect([201, 409], protoDomain.text).toContain(protoDomain.status);
      await created(
        `/api/metastore/catalogs/${protoTable[0]}/schemas/${protoTable[1]}/tables/${protoTable[2]}`,
        {
          domain: 'valueOf',
          columns: [{ name: 'id', type: 'bigint' }, ...PROTO_NAMES.map((name) => ({ name, type: 'varchar' }))],
        },
        'PUT',
      );
    },
    async () => {
      await created('/api/metastore/catalogs', { catalog: scratchCatalog, catalog_type: 'memory' });
      await created('/api/metastore/catalogs', { catalog: ddlCatalog, catalog_type: 'memory' });
      await created(`/api/metastore/catalogs/${ddlCatalog}/schemas`, { schema_name: emptySchema });
      await created(`/api/metastore/catalogs/${ddlCatalog}/schemas`, { schema_name: tableSchema });
      await created(`/api/metastore/catalogs/${ddlCatalog}/schemas/${tableSchema}/tables`, {
        table_name: scratchTable,
        columns: [{ name: 'id', type: 'bigint' }],
      });
    },
    async () => {
      const runnable = await created('/api/crew-templates', render);
      const scratchTemplate = await created('/api/crew-templates', render);
      const run = await created(`/api/crew-templates/${runnable.id}/run`, { values: { who: 'fuzz' } });
      // Schedules that never fire while the suite runs (1 January 2099).
      const schedule = { name: 'fuzz schedule', template_id: runnable.id, expression: 'cron(0 0 1 1 ? 2099)' };
      const crewSchedule = await created('/api/crew-schedules', schedule);
      const scratchSchedule = await created('/api/crew-schedules', schedule);
      return { runnable, scratchTemplate, run, crewSchedule, scratchSchedule };
    },
    () => created('/api/documents', { filename: 'a.pdf', mime_type: 'application/pdf', size_bytes: 10 }),
    () => created('/api/finetune/datasets', { name: 'fuzz scratch' }),
    () => created('/api/data_shares', { name: slug('fuzz-share') }),
    () => created('/api/dataproduct/default/psk', { description: 'fuzz scratch' }),
    async () => {
      for (let i = 0; i < 3; i++) {
        await created(`/api/decisions/${workspace}/${key}/versions`, { content: { rule: i } });
      }
      // A domain event: the decision versions' `created`, once the feed has it.
      const [event] = await eventsOf(`decisions/${workspace}/${key}/versions/1`, 1, await adminToken(), {
        deadlineMs: REQUEST_HANG_GUARD_MS,
      });
      expect(event?.id, 'the feed shows the fuzz decision version').toBeDefined();
      return event!.id;
    },
    async () => ({
      mcp: await created('/api/mcps', { name: 'fuzz', command: 'true' }),
      scratchMcp: await created('/api/mcps', { name: 'fuzz scratch', command: 'true' }),
    }),
    async () => {
      for (const conn of [probe, scratchConn]) {
        await created(
          `/api/migration/connections/${conn}`,
          { conn_type: 'generic', host: '127.0.0.1', port: 1 },
          'PUT',
        );
      }
    },
    async () => {
      // Webhooks (deliveries to a port nothing listens on fail, which is all the fuzzer needs).
      const hook = await created('/api/webhooks', { url: 'http://127.0.0.1:9/fuzz' });
      const scratchHook = await created('/api/webhooks', { url: 'http://127.0.0.1:9/fuzz-scratch' });
      const delivery = await created(`/api/webhooks/${hook.id}/test`, undefined);
      return { hook, scratchHook, delivery };
    },
  ]);
  const { runnable, scratchTemplate, run, crewSchedule, scratchSchedule } = crews;
  const { mcp, scratchMcp } = mcps;
  const { hook, scratchHook, delivery } = hooks;
  // In the domain made above.
  await created(
    `/api/metastore/catalogs/${catalog}/schemas/${schema}/tables/${table}`,
    {
      description: 'fuzz',
      domain,
      columns: [
        { name: 'id', type: 'bigint' },
        { name: 'email', type: 'varchar' },
      ],
    },
    'PUT',
  );
  // On the table and the domain.
  const query = `SELECT * FROM "${catalog}"."${schema}"."${table}"`;
  const [{ docB, job }, share, { product, psk }, scratchProduct] = await inParallel(4, [
    async () => {
      const docB = await created('/api/documents', {
        filename: 'b.pdf',
        mime_type: 'application/pdf',
        size_bytes: 10,
      });
      await created(`/api/documents/${docB.id}/status`, { status: 'extracting' });
      await created(`/api/documents/${docB.id}/status`, { status: 'indexed', page_count: 1, chunk_count: 1 });
      await created(
        `/api/documents/${docB.id}/suggestions`,
        {
          suggested_summary: 's',
          suggested_tags: ['fuzz-tag'],
          suggested_glossary_terms: ['fuzz-term'],
          suggested_domain: domain,
        },
        'PUT',
      );
      const job = await created('/api/finetune/datasets', { name: 'fuzz', source_documents: [docB.id] });
      return { docB, job };
    },
    () => created('/api/data_shares', { name: slug('fuzz-share'), tables: [`${catalog}.${schema}.${table}`] }),
    async () => {
      const product = await created('/api/dataproduct', { name: slug('fuzz-product'), role_name: 'fuzz', query });
      const psk = await created(`/api/dataproduct/${product.id}/psk`, { description: 'fuzz' });
      return { product, psk };
    },
    () => created('/api/dataproduct', { name: slug('fuzz-scratch'), role_name: 'fuzz', query }),
  ]);
  // Once everything above is there.
  const suggestions = await api(`/api/query/suggest/${domain}`, { token: await adminToken() });
  expect(suggestions.status, suggestions.text).toBe(200);

  Object.assign(pools.keep, {
    webhook_id: [hook.id],
    delivery_id: [delivery.id],
    event_id: [eventId],
    correlation_id: [run.correlation_id],
    template_id: [runnable.id],
    document_id: [docA.id, docB.id],
    job_id: [job.id],
    name: [share.name],
    // a data share by its name or its id (docs/sdk.md)
    share_id: [share.name, share.id],
    dataproduct_id: ['default', product.id],
    psk_id: [psk.psk],
    workspace: [workspace],
    key: [key],
    version: ['1', '2', '3'],
    server_id: [mcp.id],
    schedule_id: [crewSchedule.id],
    catalog_name: [catalog, protoTable[0]],
    catalog: [catalog, protoTable[0]],
    schema_name: [schema, protoTable[1]],
    schema: [schema, protoTable[1]],
    table_name: [table, protoTable[2]],
    table: [table, protoTable[2]],
    // The SDK's `catalog.schema.table` reference (docs/sdk.md), quoted or not
    table_ref: [`${catalog}.${schema}.${table}`, `"${catalog}"."${schema}".${table}`],
    tag: ['fuzz-tag'],
    conn_id: [probe],
    domain: [domain, 'valueOf'],
  });
  Object.assign(pools.scratch, {
    webhook_id: [scratchHook.id],
    template_id: [scratchTemplate.id],
    job_id: [scratchJob.id],
    name: [scratchShare.name],
    share_id: [scratchShare.name, scratchShare.id],
    psk_id: [scratchPsk.psk],
    dataproduct_id: [scratchProduct.id],
    server_id: [scratchMcp.id],
    schedule_id: [scratchSchedule.id],
    conn_id: [scratchConn],
    catalog_name: [scratchCatalog, ddlCatalog],
    schema_name: [emptySchema, tableSchema],
    table_name: [scratchTable],
    // untagging or leaving a domain: the scratch table only (a tag or domain it lacks is no change)
    table_ref: [`${ddlCatalog}.${tableSchema}.${scratchTable}`],
    tag: ['fuzz-tag'],
    domain: [domain],
  });
  Object.assign(pools.body, {
    domain: [domain],
    suggested_domain: [domain],
    domain_urn: [`urn:li:domain:${domain}`],
    // a data product's SQL or E12 suggestion (docs/sdk.md)
    query: [`SELECT * FROM "${catalog}"."${schema}"."${table}"`],
    suggestion_id: [suggestions.body[0].suggestion_id],
    source_documents: [docA.id, docB.id],
    conn_id: [probe],
    column_name: ['id', 'email', ...PROTO_NAMES],
    accepted_tags: ['fuzz-tag'],
    accepted_glossary_terms: ['fuzz-term'],
    tables: [`${catalog}.${schema}.${table}`],
    // schedule expressions that never fire while the suite runs (a rate() fires within a minute)
    expression: ['cron(0 0 1 1 ? 2099)', 'cron(30 2 ? 1 MON#1 2098)'],
    template_id: [runnable.id],
    timezone: ['UTC', 'Europe/Berlin'],
    // a crew type that names one template (a built-in), so POST /api/crews/run gets past the name
    crew_type: ['ask'],
    // the kept run's step, so a rerun of it gets past the step
    from_step: ['r'],
  });
}, HANG_GUARD_MS);

// ---------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------

const batchOf = (arb: fc.Arbitrary<FuzzRequest>, maxLength = 10) => fc.array(arb, { minLength: 1, maxLength });

describe('fuzzing every endpoint of /openapi.json', { timeout: HANG_GUARD_MS }, () => {
  it('takes the route list from the running service', () => {
    expect(routes.length).toBeGreaterThan(50);
    const keys = routes.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of ['GET /api/health/ping', 'POST /api/mcps', 'GET /openapi.json', 'GET /docs']) {
      expect(keys).toContain(key);
    }
    // Every path parameter of every template is declared (so it is filled from its schema).
    for (const r of routes) {
      for (const name of pathParamNames(r.path)) {
        expect(
          r.params.some((p) => p.in === 'path' && p.name === name),
          `${r.method} ${r.path} {${name}}`,
        ).toBe(true);
      }
    }
  });

  it('answers schema-derived and mutated requests on every route without a 5xx', async () => {
    await fuzz('bulk', batchOf(bulkRequest()));
  });

  it('answers missing and garbage credentials with 401 on every protected route', async () => {
    await fuzz('auth', batchOf(authRequest()));
  });

  it('answers malformed JSON with 422 json_invalid on every route that takes a body', async () => {
    await fuzz('malformed', batchOf(malformedRequest()));
  });

  it('answers wrong methods with 405 and Allow, unknown paths with 404', async () => {
    await fuzz('method', batchOf(methodRequest()));
  });

  it('answers bodies over 1 MiB with 413, and bodies up to 1 MiB otherwise', async () => {
    await fuzz('huge', batchOf(hugeRequest(), 4));
  });

  it(`sent at least ${MIN_REQUESTS} requests, and reached every route`, () => {
    const summary = [...stats.byRoute.entries()]
      .map(([route, counts]) => `${route}: ${[...counts.entries()].map(([s, n]) => `${s}×${n}`).join(' ')}`)
      .join('\n');
    console.info(
      `fuzz seed ${SEED}: ${stats.total} requests (${[...stats.byFamily.entries()].map(([f, n]) => `${f} ${n}`).join(', ')})`,
    );
    // Every request was one of a property's (each checked its own count above).
    expect(stats.total).toBe([...stats.byFamily.values()].reduce((a, b) => a + b, 0));
    expect([...stats.byFamily.keys()].sort()).toEqual(Object.keys(RUNS).sort());
    expect(stats.total).toBeGreaterThanOrEqual(MIN_REQUESTS);
    for (const r of routes) {
      const counts = stats.byRoute.get(`${r.method} ${r.path}`);
      const sent = [...(counts?.values() ?? [])].reduce((a, b) => a + b, 0);
      expect(sent, `${r.method} ${r.path}`).toBeGreaterThanOrEqual(5);
    }
    // Deep, not only the 4xx paths: most routes answered a generated request with success.
    const succeeded = routes.filter((r) =>
      [...(stats.byRoute.get(`${r.method} ${r.path}`)?.keys() ?? [])].some((status) => status < 300),
    );
    expect(succeeded.length / routes.length, `statuses per route:\n${summary}`).toBeGreaterThanOrEqual(0.8);
  });
});

/** One request over `agent` (node:http, so the socket's reuse is visible), the body sent in two halves. */
function uploadInHalves(
  agent: Agent,
  path: string,
  headers: Record<string, string>,
  body: string,
  pauseMs: number,
): Promise<{ status: number; reusedSocket: boolean; connection?: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${baseUrl()}${path}`,
      {
        method: body ? 'POST' : 'GET',
        agent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode!, reusedSocket: req.reusedSocket, connection: res.headers.connection }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const half = Math.floor(body.length / 2);
    req.write(body.slice(0, half));
    setTimeout(() => req.end(body.slice(half)), pauseMs);
  });
}

describe('what the fuzzer found (regressions)', { timeout: HANG_GUARD_MS }, () => {
  it('reports a missing enum field as missing, with an input (never an entry without one)', async () => {
    const [id] = pools.keep.document_id!;
    const res = await api(`/api/documents/${id}/status`, { method: 'POST', token: await adminToken(), body: {} });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ type: 'missing', loc: ['body', 'status'], msg: 'Field required', input: {} }],
    });
  });

  it('answers names that are Object.prototype properties as data, in paths and bodies', async () => {
    // Registered again here: the generated requests may have replaced the table's columns.
    const registered = await api('/api/metastore/catalogs/constructor/schemas/__proto__/tables/toString', {
      method: 'PUT',
      token: await adminToken(),
      body: {
        domain: 'valueOf',
        columns: [{ name: 'id', type: 'bigint' }, ...PROTO_NAMES.map((name) => ({ name, type: 'varchar' }))],
      },
    });
    expect(registered.status, registered.text).toBe(200);
    const suggested = await api('/api/query/suggest/valueOf', { token: await adminToken() });
    expect(suggested.status, suggested.text).toBe(200);
    expect(suggested.body.length).toBeGreaterThan(0);
    const accepted = await api('/api/metastore/classify/constructor/__proto__/toString/accept', {
      method: 'POST',
      token: await adminToken(),
      body: {
        table: { accepted_tags: [...PROTO_NAMES] },
        columns: PROTO_NAMES.map((name) => ({ column_name: name, accepted_tags: [name], description: name })),
      },
    });
    expect(accepted.status, accepted.text).toBe(200);
    expect(Object.keys(accepted.body.column_tags_applied).sort()).toEqual([...PROTO_NAMES].sort());
  });

  it('answers a body nested thousands of levels deep with 422, not a 500 from echoing it', async () => {
    const error = 'the body is nested more than 256 levels deep';
    for (const rawBody of ['['.repeat(5000) + ']'.repeat(5000), '{"name":'.repeat(300) + '1' + '}'.repeat(300)]) {
      const res = await api('/api/data_shares', { method: 'POST', token: await adminToken(), rawBody });
      expect(res.status, res.text).toBe(422);
      expect(res.body).toEqual({
        detail: [{ type: 'value_error', loc: ['body'], msg: `Value error, ${error}`, input: null, ctx: { error } }],
      });
    }
    // Nesting that content may have is still stored.
    let content: unknown = 'bottom';
    for (let i = 0; i < 200; i++) content = [content];
    const deep = await api(`/api/decisions/${slug('fuzz-ws')}/deep/versions`, {
      method: 'POST',
      token: await adminToken(),
      body: { content },
    });
    expect(deep.status, deep.text).toBe(201);
  });

  it('stores a wait step of 5e-324 seconds (below what DynamoDB stores) as 0, not a 500', async () => {
    const res = await api('/api/crew-templates', {
      method: 'POST',
      token: await adminToken(),
      rawBody: '{"name":"tiny wait","steps":[{"id":"w","kind":"wait","seconds":5e-324}]}',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.steps).toEqual([{ id: 'w', kind: 'wait', seconds: 0 }]);
  });

  it('answers every upload over the limit with 413 and closes the connection (no reset mid-upload)', async () => {
    const rawBody = JSON.stringify({ name: 'a'.repeat(MAX_BODY_BYTES) });
    for (let i = 0; i < 10; i++) {
      const res = await api('/api/mcps', { method: 'POST', token: await adminToken(), rawBody });
      expect(res.status).toBe(413);
      expect(res.headers.get('connection')).toBe('close');
    }
  });

  it('reads the rest of an over-limit upload before its 413, so the client sees the answer, not a reset', async () => {
    // A raw socket sends the head and 64 KiB of a 1.5 MiB upload, the rest 500 ms later, and
    // reads what comes back. Answered and closed before the rest arrived, the connection would
    // be reset under the client's write (EPIPE, ECONNRESET) and a client like fetch loses the 413.
    const body = Buffer.from(JSON.stringify({ name: 'a'.repeat((MAX_BODY_BYTES / 2) * 3) }));
    const url = new URL(baseUrl());
    const answer = await new Promise<string>((resolve, reject) => {
      // Half-open allowed: the service's end of the answer must not end the client's upload.
      const socket = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true });
      const received: Buffer[] = [];
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      socket.on('close', () => resolve(Buffer.concat(received).toString('latin1')));
      socket.on('connect', () => {
        const head =
          `POST /api/mcps HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n`;
        socket.write(Buffer.concat([Buffer.from(head), body.subarray(0, 65_536)]));
        setTimeout(() => socket.end(body.subarray(65_536)), 500);
      });
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.toLowerCase()).toContain('connection: close');
  });

  it('answers an over-limit upload that never ends with 413 all the same (reading the rest is bounded)', async () => {
    const url = new URL(baseUrl());
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true });
      const received: Buffer[] = [];
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      socket.on('end', () => {
        resolve(Buffer.concat(received).toString('latin1'));
        socket.destroy();
      });
      socket.on('connect', () => {
        // 100 MiB declared, 64 KiB sent, then nothing: the answer may not wait for the rest.
        const head =
          `POST /api/mcps HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${100 * MAX_BODY_BYTES}\r\n\r\n`;
        socket.write(head + 'x'.repeat(65_536));
      });
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('reads a body nobody needed before answering, so the kept-alive connection survives', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // Refused credentials: the body is never parsed; its second half comes after the answer could.
      const refused = await uploadInHalves(
        agent,
        '/api/mcps',
        { 'content-type': 'application/json' },
        JSON.stringify('x'.repeat(200_000)),
        800,
      );
      expect(refused.status).toBe(401);
      const next = await uploadInHalves(agent, '/api/health/ping', {}, '', 0);
      expect(next).toMatchObject({ status: 200, reusedSocket: true });
    } finally {
      agent.destroy();
    }
  });
});
