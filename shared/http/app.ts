import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type * as z from 'zod/mini';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { RequestAuthenticator } from '../auth/authenticator.js';
import type { Caller, Role } from '../auth/caller.js';
import type { Page } from '../aws/pagination.js';
import { logger } from '../logger.js';
import { Forbidden, Invalid, missingField, NotFound, Unavailable, type ValidationIssue } from '../errors.js';
import { errorAnswer, MethodNotAllowed, PayloadTooLarge, sdkFailure } from './errors.js';
import {
  jsonInvalid,
  jsonNestingDepth,
  MAX_JSON_DEPTH,
  tooDeeplyNested,
  validateSource,
  type Source,
} from './validation.js';

export type AppEnv = {
  Variables: { requestId: string; caller: Caller | undefined; bodyRead: boolean | undefined };
  /** On the Node adapter (the local platform), the request as Node received it. */
  Bindings: { incoming?: IncomingMessage } | undefined;
};

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Who may call an endpoint: anyone, any authenticated caller, or callers with one of the roles
 * (`anyRole`; with `session`, only over a Bearer session). `anyRole: 'resource'`: the role the
 * resource names (a crew step's), which the service checks once it has read the resource;
 * here a caller holding no role at all is refused before validation, as any role check is.
 */
export type Access = 'public' | 'user' | { readonly anyRole: readonly Role[] | 'resource'; readonly session?: boolean };

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

type Out<S, Fallback> = S extends Schema ? z.output<S> : Fallback;

export type Input<R extends RequestSpec, A extends Access> = {
  params: Out<R['params'], Record<string, never>>;
  query: Out<R['query'], Record<string, never>>;
  headers: Out<R['headers'], Record<string, never>>;
  body: R['bodyRequired'] extends true ? Out<R['body'], undefined> : Out<R['body'], undefined> | undefined;
  caller: A extends 'public' ? undefined : Caller;
};

export interface EndpointSpec<R extends RequestSpec, A extends Access> {
  /** The handler's snake_case name: with the path and method it makes the FastAPI operationId. */
  readonly name: string;
  readonly method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path, e.g. `/api/decisions/{workspace}`. */
  readonly path: string;
  readonly summary: string;
  readonly tags: readonly string[];
  readonly access: A;
  readonly request?: R;
  readonly success: { readonly status: number; readonly description: string; readonly schema?: Schema };
  /** Error statuses beyond those implied by access and validation (401, 403, 422, 503). */
  readonly errors?: readonly (403 | 404 | 409 | 413 | 429)[];
}

/**
 * An endpoint group's app: OpenAPIHono plus the shared behaviour every group has
 * (request ids, body limit, authentication, pydantic-shaped validation, error mapping).
 */
export class ServiceApp extends Hono<AppEnv> {
  /** What the OpenAPI document is made from (shared/http/openapi.ts): nothing is built from it here. */
  readonly endpoints: EndpointSpec<RequestSpec, Access>[] = [];
  /** Operations of routes registered without `endpoint` (static files), as OpenAPI operation objects. */
  readonly otherOperations: { path: string; method: string; operation: Record<string, unknown> }[] = [];

  constructor(private readonly authenticator: RequestAuthenticator | undefined) {
    super();
    this.use('*', requestContext());
    const countedLimit = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: () => Promise.reject(new PayloadTooLarge()) });
    this.use('*', (c, next) => {
      // A chunked body is counted as it arrives; a declared length is checked as declared
      // (as hono's bodyLimit does, without making the Node adapter build a Web Request).
      if (c.req.header('transfer-encoding') !== undefined) return countedLimit(c, next);
      const length = c.req.header('content-length');
      if (length !== undefined && parseInt(length, 10) > MAX_BODY_BYTES) return Promise.reject(new PayloadTooLarge());
      return next();
    });
    this.onError(errorToResponse);
    this.notFound((c) => {
      const allowed = allowedMethods(this, c.req.path);
      return errorToResponse(allowed.length > 0 ? new MethodNotAllowed(allowed) : new NotFound(), c);
    });
  }

  /** Registers one endpoint: OpenAPI entry, then authentication, authorization, validation, handler. */
  endpoint<const R extends RequestSpec, const A extends Access>(
    spec: EndpointSpec<R, A>,
    handler: (c: Context<AppEnv>, input: Input<R, A>) => Response | Promise<Response>,
  ): this {
    this.endpoints.push(spec as EndpointSpec<RequestSpec, Access>);
    const honoPath = spec.path.replaceAll(/\{(\w+)\}/g, ':$1');
    const authorize = this.authorization(spec.access);
    const request = spec.request ?? {};
    // One handler per route (no middleware chain): who, then what, then the endpoint.
    this.on(spec.method.toUpperCase(), honoPath, async (c) => {
      const caller = authorize ? await authorize(c) : undefined;
      const input = await validateRequest(c, request, caller);
      return handler(c, input as Input<R, A>);
    });
    return this;
  }

  /** Authenticates and authorizes a request for `access`; undefined for public endpoints. */
  private authorization(access: Access): ((c: Context<AppEnv>) => Promise<Caller>) | undefined {
    if (access === 'public') return undefined;
    const roles =
      access === 'user'
        ? ''
        : access.anyRole === 'resource'
          ? 'the role the resource names'
          : `role ${access.anyRole.map((r) => `'${r}'`).join(' or ')}`;
    return async (c) => {
      if (!this.authenticator) throw new Unavailable('Authentication is not configured');
      const caller = await this.authenticator.authenticate({
        authorization: c.req.header('authorization'),
        psk: c.req.header('authorization-psk'),
      });
      if (access !== 'user') {
        if (access.session && caller.via !== 'bearer') {
          throw new Forbidden(
            `Requires an identity-provider session (Authorization: Bearer <token>) with ${roles}; a pre-shared key is never a session: sign in (locally: /docs, or npm run -s token -- <user>)`,
          );
        }
        const held =
          access.anyRole === 'resource' ? caller.roles.size > 0 : access.anyRole.some((r) => caller.roles.has(r));
        if (!held) throw new Forbidden(`Requires ${roles}`);
      }
      c.set('caller', caller);
      return caller;
    };
  }
}

/** A list answer: the page's items, and the next cursor in `X-Next-Cursor` when more remain. */
export function pageJson<T>(c: Context<AppEnv>, page: Page<T>): Response {
  if (page.nextCursor) c.header('X-Next-Cursor', page.nextCursor);
  return c.json(page.items as unknown[], 200);
}

export function createServiceApp(authenticator: RequestAuthenticator | undefined): ServiceApp {
  return new ServiceApp(authenticator);
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function requestContext(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const sent = c.req.header('x-request-id');
    const requestId = sent && REQUEST_ID.test(sent) ? sent : randomUUID();
    c.set('requestId', requestId);
    const started = performance.now();
    await next();
    await drainBody(c);
    answerHeader(c, 'X-Request-Id', requestId);
    logger.info('request', {
      request_id: requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      caller: c.get('caller')?.name,
    });
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
 * after a bounded rest of the upload was read and dropped (see `lingerOver`).
 */
async function drainBody(c: Context<AppEnv>): Promise<void> {
  if (c.res.status === 413) return lingerOver(c);
  if (c.get('bodyRead') || !mayHaveBody(c)) return;
  const raw = c.req.raw;
  // bodyUsed first: after the adapter read the body directly, asking for `body` would build a Request.
  if (raw.bodyUsed || !raw.body || raw.body.locked) return;
  try {
    await raw.arrayBuffer();
  } catch {
    answerHeader(c, 'Connection', 'close');
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

/**
 * A header on the answer already made. Hono's `c.header` would first copy the answer
 * around its `body`, which turns the Node adapter's lightweight response (a string it
 * writes at once) into a Web stream it then has to read back: set on its live headers.
 */
function answerHeader(c: Context<AppEnv>, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    // immutable headers (Response.redirect, a fetched answer passed through)
    c.header(name, value);
  }
}

function errorToResponse(err: Error, c: Context<AppEnv>): Response {
  const requestId = c.get('requestId');
  if (requestId) c.header('X-Request-Id', requestId);
  let answer = errorAnswer(err);
  if (!answer) {
    const failure = sdkFailure(err);
    if (failure) {
      const what = failure instanceof Unavailable ? 'dependency failure' : 'request could not be stored';
      logger.warn(what, { request_id: requestId, error: err });
      answer = errorAnswer(failure);
    }
  }
  if (answer) {
    for (const [name, value] of Object.entries(answer.headers)) c.header(name, value);
    return c.json(answer.body, answer.status);
  }
  if (err instanceof HTTPException) {
    return c.json({ error: err.message || 'Bad Request', code: err.status }, err.status as ContentfulStatusCode);
  }
  logger.error('unhandled error', { request_id: requestId, error: err });
  return c.json({ error: 'Internal Server Error', code: 500 }, 500);
}

/**
 * Methods registered for a path that matched no route with the request's method. The path
 * must match a route exactly: `/api/mcps/` is not `/api/mcps` (Hono routes strictly), so it
 * is no route at all (404), not a wrong method.
 */
function allowedMethods(app: Hono<AppEnv>, path: string): string[] {
  const methods = new Set<string>();
  for (const route of app.routes) {
    if (route.method === 'ALL') continue;
    const pattern = route.path
      .replaceAll(/[.+?^$()[\]\\|]/g, '\\$&')
      .replaceAll(/:\w+/g, '[^/]+')
      .replaceAll('*', '.*');
    if (new RegExp(`^${pattern}$`).test(path)) methods.add(route.method);
  }
  return [...methods].sort();
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

async function validateRequest(c: Context<AppEnv>, spec: RequestSpec, caller: Caller | undefined) {
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
