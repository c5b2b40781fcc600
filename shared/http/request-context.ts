import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { logger } from '../logger.js';
import type { AppEnv } from './app-env.js';
import { drainBody } from './request-input.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Every request's id (`X-Request-Id`, the client's when it is sane) and its one log line; on
 * Lambda, every log line of the invocation names the function and its request id (Powertools'
 * `addContext`, as its examples do at the start of a handler).
 */
export function requestContext(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const lambdaContext = c.env?.lambdaContext;
    if (lambdaContext) logger.addContext(lambdaContext);
    const sent = c.req.header('x-request-id');
    const requestId = sent && REQUEST_ID.test(sent) ? sent : randomUUID();
    c.set('requestId', requestId);
    const started = performance.now();
    await next();
    if (await drainBody(c)) answerHeader(c, 'Connection', 'close');
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
