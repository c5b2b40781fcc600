import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

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
    const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    const refused = addresses.find(isForbiddenAddress);
    if (refused) throw new Error(`host ${url.host} resolves to ${refused}, a link-local or metadata address`);
    const res = await fetch(url, {
      method: req.method,
      headers: req.headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : req.body,
      redirect: 'manual',
      signal,
    });
    const text = await res.text();
    let body: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json')) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    return { status: res.status, body };
  }
}

/** Link-local (IPv4 169.254/16, IPv6 fe80::/10) and well-known metadata endpoints. */
export function isForbiddenAddress(address: string): boolean {
  const a = unmapIpv4(address.toLowerCase());
  if (isIP(a) === 4) {
    return a.startsWith('169.254.') || a === '100.100.100.200' || a === '0.0.0.0';
  }
  return /^fe[89ab][0-9a-f]:/.test(a) || a === 'fd00:ec2::254' || a === '::';
}

/** `::ffff:169.254.169.254` and its hex form `::ffff:a9fe:a9fe` are IPv4 addresses. */
function unmapIpv4(address: string): string {
  const hex = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address);
  if (hex) {
    const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return address.replace(/^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(?=\d+\.)/, '');
}
