import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { guardedLookup, refusedHost } from './address-guard.js';
import { redactUrl } from '../redact.js';

/** Responses are read up to this size; step outputs keep far less. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

/** What an http step needs: one request (tests hand the executor a fake). */
export type HttpRequester = Pick<OutboundHttp, 'request'>;

/**
 * Outbound HTTP for crew `http` steps: only to hosts on the allow-list, never to
 * link-local or cloud metadata addresses, no redirects followed, with a timeout.
 */
export class OutboundHttp {
  constructor(private readonly allowedHosts: readonly string[]) {}

  async request(
    req: { method: string; url: string; headers?: Record<string, string>; body?: string },
    signal: AbortSignal,
  ): Promise<{ status: number; body: unknown }> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      throw new Error(`not a URL: ${redactUrl(req.url)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`only http and https URLs are allowed, not ${url.protocol}`);
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (!this.allowedHosts.includes(host) && !this.allowedHosts.includes(url.host.toLowerCase())) {
      throw new Error(`host ${url.host} is not in CREW_HTTP_ALLOWED_HOSTS`);
    }
    if (refusedHost(host)) {
      throw new Error(`host ${url.host} is a link-local or metadata address`);
    }
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : req.body;
    const res = await send(url, req.method, req.headers ?? {}, body, signal);
    const text = await readCapped(res);
    let parsed: unknown = text;
    if ((res.headers['content-type'] ?? '').includes('json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: res.statusCode ?? 0, body: parsed };
  }
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, signal, lookup: guardedLookup }, resolve);
    req.on('error', (err) =>
      reject(signal.aborted ? Object.assign(new Error('timed out'), { name: 'TimeoutError' }) : err),
    );
    if (body !== undefined) req.write(body);
    req.end();
  });
}

async function readCapped(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_RESPONSE_BYTES) {
      res.destroy();
      chunks.push(buffer.subarray(0, buffer.length - (size - MAX_RESPONSE_BYTES)));
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
