import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';

/** Responses are read up to this size; step outputs keep far less. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * Resolves like dns.lookup but refuses link-local and metadata addresses. The connection
 * uses exactly the addresses checked here, so a name that resolves differently a moment
 * later (DNS rebinding) cannot slip through.
 */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 0);
    const refused = addresses.find((a) => isForbiddenAddress(a.address));
    if (refused) {
      const error = Object.assign(
        new Error(`host ${hostname} resolves to ${refused.address}, a link-local or metadata address`),
        { code: 'EREFUSEDADDRESS' },
      );
      return callback(error, '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
};

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
      throw new Error(`not a URL: ${req.url}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`only http and https URLs are allowed, not ${url.protocol}`);
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (!this.allowedHosts.includes(host) && !this.allowedHosts.includes(url.host.toLowerCase())) {
      throw new Error(`host ${url.host} is not in CREW_HTTP_ALLOWED_HOSTS`);
    }
    if (isIP(host) && isForbiddenAddress(host)) {
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

/** Link-local (IPv4 169.254/16, IPv6 fe80::/10) and well-known metadata endpoints. */
export function isForbiddenAddress(address: string): boolean {
  const a = unmapIpv4(address.toLowerCase());
  if (isIP(a) === 4) {
    return a.startsWith('169.254.') || a === '100.100.100.200' || a === '0.0.0.0';
  }
  return /^fe[89ab][0-9a-f]:/.test(a) || a === 'fd00:ec2::254' || a === '::';
}

/**
 * `::ffff:169.254.169.254`, its hex form `::ffff:a9fe:a9fe`, and the NAT64 form
 * `64:ff9b::a9fe:a9fe` all reach an IPv4 address.
 */
function unmapIpv4(address: string): string {
  const nat64 = /^64:ff9b::([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address);
  if (nat64) {
    const [hi, lo] = [parseInt(nat64[1]!, 16), parseInt(nat64[2]!, 16)];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  const hex = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address);
  if (hex) {
    const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return address.replace(/^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(?=\d+\.)/, '');
}
