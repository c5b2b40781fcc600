import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type * as z from 'zod/mini';
import type { Caller } from '../auth/caller.js';
import { Invalid, missingField, type ValidationIssue } from '../errors.js';
import { jsonInvalid, jsonNestingDepth, MAX_JSON_DEPTH, tooDeeplyNested } from '../pydantic/json-body.js';
import type { Source } from '../pydantic/issues.js';
import { validateSource } from '../pydantic/validate.js';
import { PayloadTooLarge } from './errors.js';
import type { AppEnv } from './app-env.js';

/*
 * What an endpoint reads from a request (path, query, headers, JSON body), and how: bodies
 * within the limit (413 beyond it), each part validated with pydantic's answers (422).
 */

export const MAX_BODY_BYTES = 1024 * 1024;

type Schema = z.core.$ZodType;
type AnyObject = z.core.$ZodObject;

export interface RequestSpec {
  readonly params?: AnyObject;
  readonly query?: AnyObject;
  readonly headers?: AnyObject;
  readonly body?: Schema;
  /** Without this, an empty body is allowed and arrives as `undefined`. */
  readonly bodyRequired?: boolean;
  /** Write-only body fields: a 422 never echoes their values back (pydantic's SecretStr). */
  readonly secretFields?: readonly string[];
}

/** Refuses a body over MAX_BODY_BYTES (413) before any endpoint reads it. */
export function limitBody(): MiddlewareHandler<AppEnv> {
  const countedLimit = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: () => Promise.reject(new PayloadTooLarge()) });
  return (c, next) => {
    // A chunked body is counted as it arrives; a declared length is checked as declared
    // (as hono's bodyLimit does, without making the Node adapter build a Web Request).
    if (c.req.header('transfer-encoding') !== undefined) return countedLimit(c, next);
    const length = c.req.header('content-length');
    if (length !== undefined && parseInt(length, 10) > MAX_BODY_BYTES) return Promise.reject(new PayloadTooLarge());
    return next();
  };
}

/**
 * Whether the request says it has a body (HTTP/1.1: a Content-Length above 0, or a
 * Transfer-Encoding). Asked before touching the body: on the Node adapter, the body is
 * what makes a full Web `Request` (a stream, an AbortController) out of the incoming
 * message, which a GET never needs.
 */
function mayHaveBody(c: Context<AppEnv>): boolean {
  const length = c.req.header('content-length');
  return (length !== undefined && length !== '0') || c.req.header('transfer-encoding') !== undefined;
}

/**
 * Reads what is left of a request body nothing needed (an endpoint without a body, refused
 * credentials, no such route). Answered before its body arrived, a request would leave the
 * kept-alive connection to the Node adapter, which closes it half a second later, possibly
 * under the client's next request. Over the limit (413) the answer closes the connection,
 * after a bounded rest of the upload was read and dropped (see `lingerOver`). True when the
 * rest could not be read: the answer then closes the connection.
 */
export async function drainBody(c: Context<AppEnv>): Promise<boolean> {
  if (c.res.status === 413) {
    await lingerOver(c);
    return false;
  }
  if (c.get('bodyRead') || !mayHaveBody(c)) return false;
  const raw = c.req.raw;
  // bodyUsed first: after the adapter read the body directly, asking for `body` would build a Request.
  if (raw.bodyUsed || !raw.body || raw.body.locked) return false;
  try {
    await raw.arrayBuffer();
    return false;
  } catch {
    return true;
  }
}

/** How much of a refused upload is read (and dropped) before its 413, at most: bytes, then time. */
export const LINGER_BYTES = 8 * MAX_BODY_BYTES;
const LINGER_MS = 5_000;

/**
 * Reads and drops the rest of an upload refused as too large, up to `LINGER_BYTES` or
 * `LINGER_MS`, before its 413 is sent (a lingering close, as nginx does). Answered while the
 * client still writes, the connection would be closed with unread data, which the kernel
 * turns into a reset: the client would see EPIPE or ECONNRESET instead of the 413. Beyond
 * the bounds the answer goes out anyway; nothing is kept.
 */
async function lingerOver(c: Context<AppEnv>): Promise<void> {
  const incoming = c.env?.incoming;
  if (!incoming || incoming.readableEnded || incoming.destroyed) return;
  await new Promise<void>((resolve) => {
    let read = 0;
    const done = () => {
      clearTimeout(timer);
      incoming.off('data', count);
      incoming.off('end', done);
      incoming.off('error', done);
      incoming.off('close', done);
      incoming.pause();
      resolve();
    };
    const count = (chunk: Buffer) => {
      read += chunk.length;
      if (read > LINGER_BYTES) done();
    };
    const timer = setTimeout(done, LINGER_MS);
    incoming.on('data', count);
    incoming.once('end', done);
    incoming.once('error', done);
    incoming.once('close', done);
    incoming.resume();
  });
}

const utf8 = new TextDecoder();

/**
 * The request body as text (decoded as `Request.text()` does). On the Node adapter a body of
 * declared length is read from the incoming message itself: `c.req.text()` would first make
 * a Web Request of it (a stream, an AbortController), which costs an E1 more CPU than its
 * validation. A chunked body goes through hono's counting body limit, so through the Web Request.
 */
async function bodyText(c: Context<AppEnv>): Promise<string> {
  const incoming = c.env?.incoming;
  if (!incoming || c.req.header('transfer-encoding') !== undefined || incoming.readableEnded) return c.req.text();
  c.set('bodyRead', true);
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.once('end', resolve);
    incoming.once('error', reject);
  });
  return utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
}

/** The request's parts its spec names, validated; every issue of every part in one `Invalid` (422). */
export async function validateRequest(
  c: Context<AppEnv>,
  spec: RequestSpec,
  caller: Caller | undefined,
  /** Issues of headers the endpoint layer reads itself (`Idempotency-Key`), listed in their place. */
  headerIssues: readonly ValidationIssue[] = [],
) {
  const detail: ValidationIssue[] = [];
  const parsed: Record<string, unknown> = { params: {}, query: {}, headers: {}, body: undefined, caller };
  const check = (source: Source, target: string, schema: Schema, raw: unknown) => {
    const result = validateSource(schema, raw, source);
    if (result.success) parsed[target] = result.data;
    else detail.push(...result.issues);
  };
  if (spec.params) check('path', 'params', spec.params, c.req.param());
  if (spec.query) check('query', 'query', spec.query, c.req.query());
  if (spec.headers) check('header', 'headers', spec.headers, Object.fromEntries(c.req.raw.headers));
  detail.push(...headerIssues);
  if (spec.body) {
    const text = await bodyText(c);
    if (text.trim() === '') {
      if (spec.bodyRequired) detail.push(missingField(['body'], null));
    } else {
      let json: unknown;
      let parsedOk = false;
      try {
        json = JSON.parse(text);
        parsedOk = true;
        // As sent: what an idempotency key's request is compared by (canonical JSON).
        c.set('bodyJson', json);
      } catch (err) {
        detail.push(jsonInvalid(text, err));
      }
      // Deeper than any request needs, and deeper than the answer (which echoes the input) or
      // the storage could take: refused before it reaches either.
      if (parsedOk && jsonNestingDepth(text) > MAX_JSON_DEPTH) detail.push(tooDeeplyNested());
      else if (parsedOk) check('body', 'body', spec.body, json);
    }
  }
  if (detail.length > 0) throw new Invalid(redactSecrets(detail, spec.secretFields ?? []));
  return parsed;
}

const MASK = '**********';

function masked(value: unknown, secrets: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => masked(v, secrets));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, secrets.has(k) && v != null ? MASK : masked(v, secrets)]),
  );
}

/** Hides write-only values in the `input` (and `loc` target) of validation errors. */
function redactSecrets(detail: ValidationIssue[], secretFields: readonly string[]): ValidationIssue[] {
  if (secretFields.length === 0) return detail;
  const secrets = new Set(secretFields);
  return detail.map((issue) => {
    const field = issue.loc.at(-1);
    const input =
      typeof field === 'string' && secrets.has(field) && issue.input != null ? MASK : masked(issue.input, secrets);
    return { ...issue, input };
  });
}
