import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { FetchImplementation } from 'jose';

/**
 * GET over node:http(s), for the issuer's discovery document and JWKS. Not the global fetch:
 * its first call in a process sets up undici's connection pool and HTTP parser, which the
 * first Bearer request of every cold Lambda would wait for; node:http is loaded already (the
 * AWS SDK's handler uses it). Failures are what fetch's are, for the callers' mapping: a
 * connection or protocol failure rejects with a TypeError, an abort with the signal's reason
 * (`TimeoutError` for AbortSignal.timeout).
 */

/** fetch's `redirect: 'follow'` bound. */
export const FETCH_REDIRECTS = 20;
/** Discovery documents and key sets are a few KB; nothing an issuer sends is read past this. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface HttpGetOptions {
  /** Bounds the whole exchange, the body included. */
  readonly signal: AbortSignal;
  readonly headers?: Readonly<Record<string, string>>;
  /** Redirects followed, as fetch does (301/302/303/307/308); 0: a redirect is the answer. */
  readonly redirects: number;
}

/** An answer, known from its status line on; its body is read at once, up to MAX_ANSWER_BYTES. */
export interface HttpAnswer {
  readonly status: number;
  /** 2xx, as fetch's `ok`. */
  readonly ok: boolean;
  /** The body; rejects when it fails, is larger than MAX_ANSWER_BYTES, or the signal aborts first. */
  text(): Promise<string>;
  json(): Promise<unknown>;
}

export async function httpGet(url: string, options: HttpGetOptions): Promise<HttpAnswer> {
  let target = new URL(url);
  for (let followed = 0; ; followed++) {
    const res = await send(target, options);
    const location = res.headers.location;
    if (!REDIRECTS.has(res.statusCode ?? 0) || location === undefined || options.redirects === 0) {
      return answer(res, options.signal);
    }
    res.resume();
    if (followed >= options.redirects) throw new TypeError('redirect count exceeded');
    target = new URL(location, target);
  }
}

function send(url: URL, { signal, headers }: HttpGetOptions): Promise<IncomingMessage> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.reject(new TypeError(`not an http(s) URL: ${url.protocol}`));
  }
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'application/json', ...headers }, signal }, resolve);
    req.on('error', (err) => reject(failure(err, signal)));
    req.end();
  });
}

function answer(res: IncomingMessage, signal: AbortSignal): HttpAnswer {
  const status = res.statusCode ?? 0;
  const body = read(res, signal);
  // read even when nobody asks (a non-2xx), so that the connection is freed; failures surface in text()
  body.catch(() => undefined);
  return {
    status,
    ok: status >= 200 && status < 300,
    text: () => body,
    json: async () => JSON.parse(await body) as unknown,
  };
}

async function read(res: IncomingMessage, signal: AbortSignal): Promise<string> {
  const encoding = res.headers['content-encoding']?.trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    // pipeline: a failure or early end of `res` fails the decoder too, instead of leaving it waiting
    for await (const chunk of decoder ? pipeline(res, decoder, () => undefined) : res) {
      size += (chunk as Buffer).length;
      if (size > MAX_ANSWER_BYTES) throw new TypeError(`answer larger than ${MAX_ANSWER_BYTES} bytes`);
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    res.destroy();
    decoder?.destroy();
    throw failure(err, signal);
  }
  // a connection cut mid-body ends the stream without an error
  if (!res.complete) throw failure(new Error('connection closed before the answer ended'), signal);
  // UTF-8 with a leading BOM dropped, as fetch's text() and json() decode
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** fetch's rejections: the abort's reason, else a TypeError with the cause. */
function failure(err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  if (err instanceof TypeError) return err;
  return new TypeError('request failed', { cause: err });
}

/**
 * The fetch jose's createRemoteJWKSet is given (its `customFetch` option): the same request
 * (jose's headers and signal; `redirect: 'manual'`, so a redirect is the answer), the same
 * failures. jose reads the body of a 200 only.
 */
export const jwksFetch: FetchImplementation = async (url, init) => {
  const answer = await httpGet(url, { signal: init.signal, headers: Object.fromEntries(init.headers), redirects: 0 });
  return new Response(answer.status === 200 ? await answer.text() : null, { status: answer.status });
};
