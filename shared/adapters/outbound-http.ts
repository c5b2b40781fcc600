import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { type AddressPolicy, canonicalHost, guardedLookup, lookupGuard, refusedHost } from './address-guard.js';
import { redactUrl } from '../redact.js';

/** What an http step needs: one request (tests hand the executor a fake). */
export type HttpRequester = Pick<OutboundHttp, 'request'>;

/** Which URLs a caller of OutboundHttp may reach, and how much of an answer it reads. */
export interface OutboundRules {
  /** The configuration variable that lists the allowed hosts, named when a host is refused. */
  readonly hostsVariable: string;
  /**
   * Any host over https, the list admitting plain http only (webhooks); otherwise only the
   * listed hosts, over either scheme (crew `http` steps).
   */
  readonly anyHostOverHttps: boolean;
  /** Answers are read up to this many bytes; the rest is dropped. */
  readonly maxResponseBytes: number;
  /**
   * Refuse loopback, private, carrier-grade NAT and multicast addresses too (in any
   * spelling, and again when connecting), unless the host is listed: URLs any user gives.
   */
  readonly internalUnlessListed?: boolean;
}

/** Crew `http` steps: listed hosts only; responses read up to 1 MiB (step outputs keep far less). */
export const CREW_STEP_RULES: OutboundRules = {
  hostsVariable: 'CREW_HTTP_ALLOWED_HOSTS',
  anyHostOverHttps: false,
  maxResponseBytes: 1024 * 1024,
};

/** Webhook deliveries (docs/events-and-webhooks.md): https anywhere, http to listed hosts; answers read up to 64 KiB. */
export const WEBHOOK_RULES: OutboundRules = {
  hostsVariable: 'WEBHOOK_ALLOWED_HOSTS',
  anyHostOverHttps: true,
  maxResponseBytes: 64 * 1024,
};

/** Per-run webhooks (docs/events-and-webhooks.md): any user gives the URL, so nothing internal unless listed. */
export const RUN_WEBHOOK_RULES: OutboundRules = { ...WEBHOOK_RULES, internalUnlessListed: true };

/** What a name's resolution is checked against, when connecting, under each policy. */
const LOOKUPS: Readonly<Record<AddressPolicy, LookupFunction>> = {
  metadata: guardedLookup,
  internal: lookupGuard('internal'),
};

/**
 * Outbound HTTP to URLs a caller chose (crew `http` steps, webhook endpoints): only where
 * the rules allow, never to link-local, cloud metadata or unspecified addresses (checked
 * again on the addresses a name resolves to, when connecting), no redirects followed, with
 * the caller's timeout.
 */
export class OutboundHttp {
  constructor(
    private readonly allowedHosts: readonly string[],
    private readonly rules: OutboundRules = CREW_STEP_RULES,
  ) {}

  /** Why `text` may not be called, or undefined when it may: nothing is resolved or connected. */
  refusal(text: string): string | undefined {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return `not a URL: ${redactUrl(text)}`;
    }
    return this.refusalOf(url);
  }

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
    const refused = this.refusalOf(url);
    if (refused) throw new Error(refused);
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : req.body;
    const res = await send(url, req.method, req.headers ?? {}, body, signal, LOOKUPS[this.policyOf(this.listed(url))]);
    const text = await readCapped(res, this.rules.maxResponseBytes);
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

  private refusalOf(url: URL): string | undefined {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return `only http and https URLs are allowed, not ${url.protocol}`;
    const listed = this.listed(url);
    if (!listed && !(this.rules.anyHostOverHttps && url.protocol === 'https:')) {
      return this.rules.anyHostOverHttps
        ? `plain http to ${url.host} is not allowed: use https, or list the host in ${this.rules.hostsVariable}`
        : `host ${url.host} is not in ${this.rules.hostsVariable}`;
    }
    const host = canonicalHost(url.hostname);
    if (refusedHost(host)) return `host ${url.host} is a link-local or metadata address`;
    if (this.policyOf(listed) === 'internal' && refusedHost(host, 'internal'))
      return `host ${url.host} is a loopback, private, carrier-grade NAT or multicast address: not allowed unless listed in ${this.rules.hostsVariable}`;
    return undefined;
  }

  /**
   * The addresses refused for a URL, at creation and again when connecting: also the
   * internal ones under rules that say so, unless its host is listed.
   */
  private policyOf(listed: boolean): AddressPolicy {
    return this.rules.internalUnlessListed && !listed ? 'internal' : 'metadata';
  }

  /** Whether the URL's host (as the URL parser normalized it) or host:port is listed. */
  private listed(url: URL): boolean {
    return (
      this.allowedHosts.includes(canonicalHost(url.hostname)) || this.allowedHosts.includes(url.host.toLowerCase())
    );
  }
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
  lookup: LookupFunction,
): Promise<IncomingMessage> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, signal, lookup }, resolve);
    req.on('error', (err) =>
      reject(signal.aborted ? Object.assign(new Error('timed out'), { name: 'TimeoutError' }) : err),
    );
    if (body !== undefined) req.write(body);
    req.end();
  });
}

async function readCapped(res: IncomingMessage, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > maxBytes) {
      res.destroy();
      chunks.push(buffer.subarray(0, buffer.length - (size - maxBytes)));
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
