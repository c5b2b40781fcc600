import { Hono, type Context } from 'hono';
import type * as z from 'zod/mini';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { RequestAuthenticator } from '../auth/authenticator.js';
import { type Caller, credentialOf, type Role } from '../auth/caller.js';
import type { Page } from '../page.js';
import { logger } from '../logger.js';
import { Forbidden, NotFound, Unavailable } from '../errors.js';
import { errorAnswer, MethodNotAllowed, sdkFailure } from './errors.js';
import { idempotencyKeyOf, type IdempotencyKeys, type IdempotentAnswer } from './idempotency.js';
import type { AppEnv } from './app-env.js';
import { requestContext } from './request-context.js';
import { limitBody, type RequestSpec, validateRequest } from './request-input.js';

/**
 * Who may call an endpoint: anyone, any authenticated caller, or callers with one of the roles
 * (`anyRole`; with `session`, only over a Bearer session). `anyRole: 'resource'`: the role the
 * resource names (a crew step's), which the service checks once it has read the resource;
 * here a caller holding no role at all is refused before validation, as any role check is.
 */
export type Access = 'public' | 'user' | { readonly anyRole: readonly Role[] | 'resource'; readonly session?: boolean };

type Schema = z.core.$ZodType;

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
  /**
   * Takes `Idempotency-Key` (docs/identity-and-keys.md, idempotency keys): every POST that creates something or starts work.
   * `'sealed'` when its answer holds a secret (kept encrypted).
   */
  readonly idempotent?: IdempotentAnswer;
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
  /** Calls of the NX1 SDK this service does not offer, and what their 404 says (`notOffered`). */
  private readonly notOfferedCalls: { method: string; path: RegExp; message: string }[] = [];

  constructor(
    private readonly authenticator: RequestAuthenticator | undefined,
    /** Where idempotency keys are kept; without it a key is accepted and not kept (unit tests' apps). */
    private readonly idempotency?: IdempotencyKeys,
  ) {
    super();
    this.use('*', requestContext());
    this.use('*', limitBody());
    this.onError(errorToResponse);
    this.notFound((c) => {
      const allowed = allowedMethods(this, c.req.path);
      if (allowed.length > 0) return errorToResponse(new MethodNotAllowed(allowed), c);
      const notOffered = this.notOfferedCalls.find((n) => n.method === c.req.method && n.path.test(c.req.path));
      return errorToResponse(new NotFound(notOffered?.message), c);
    });
  }

  /**
   * A call the NX1 SDK makes that this service does not offer: still no route (nor operation
   * in the OpenAPI document), but its 404 says so, and what to use instead, in `message`.
   * `path` as an endpoint's (`{name}` one segment).
   */
  notOffered(method: EndpointSpec<RequestSpec, Access>['method'], path: string, message: string): this {
    const pattern = path.replaceAll(/[.+?^$()[\]\\|*]/g, '\\$&').replaceAll(/\{\w+\}/g, '[^/]+');
    this.notOfferedCalls.push({ method: method.toUpperCase(), path: new RegExp(`^${pattern}$`), message });
    return this;
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
      const key = spec.idempotent ? idempotencyKeyOf(c) : undefined;
      const input = await validateRequest(c, request, caller, key && 'issue' in key ? [key.issue] : []);
      const run = () => Promise.resolve(handler(c, input as Input<R, A>));
      if (!key || !('key' in key) || !caller || !this.idempotency) return run();
      const scope = {
        credential: credentialOf(caller),
        key: key.key,
        answer: spec.idempotent!,
        body: c.get('bodyJson'),
      };
      return this.idempotency.answer(c, scope, run);
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

export function createServiceApp(
  authenticator: RequestAuthenticator | undefined,
  idempotency?: IdempotencyKeys,
): ServiceApp {
  return new ServiceApp(authenticator, idempotency);
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
