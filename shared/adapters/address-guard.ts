import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/**
 * Where this service never connects on a caller's say-so (crew `http` steps, E4 probes,
 * webhooks): link-local addresses, cloud metadata endpoints and unspecified addresses,
 * however they are written (policy `metadata`). Private ranges and loopback are not refused
 * by that policy: the callers that need it add their own allow-list (crew `http` steps);
 * migration hosts live there. Per-run webhooks, whose URL any user gives, refuse every
 * address that is not public (policy `internal`, docs/events-and-webhooks.md) unless the host is listed.
 */

/** `metadata`: link-local, metadata and unspecified; `internal`: also loopback, private, CGNAT and multicast. */
export type AddressPolicy = 'metadata' | 'internal';

/** Cloud metadata services reached by name (they resolve to link-local addresses in the cloud). */
const METADATA_HOST_NAMES = new Set([
  'metadata', // GCP's short name
  'metadata.google.internal',
  'metadata.goog',
  'instance-data', // AWS
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
]);

/** Metadata endpoints outside 169.254.0.0/16 (Alibaba Cloud, Oracle Cloud Classic). */
const METADATA_IPV4 = new Set(['100.100.100.200', '192.0.0.192']);

/** The 16 bytes of an IPv6 address (zone id dropped), or undefined when it is not one. */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '');
  if (isIP(text) !== 6) return undefined;
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    tail.push(...v4[1]!.split('.').map(Number));
    text = text.slice(0, -v4[1]!.length) + '0:0';
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':').filter((g) => g !== '') : []);
  const left = groups(head);
  const right = groups(rest);
  const all = rest === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  if (all.length !== 8) return undefined;
  const bytes = all.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 255];
  });
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

const startsWith = (bytes: readonly number[], prefix: readonly number[]) => prefix.every((b, i) => bytes[i] === b);

/**
 * The IPv4 address an IPv6 address reaches, when it embeds one: IPv4-mapped
 * (`::ffff:a.b.c.d`, also written `::ffff:a9fe:a9fe`), IPv4-translated (`::ffff:0:a.b.c.d`),
 * IPv4-compatible (`::a.b.c.d`) and NAT64 (`64:ff9b::a.b.c.d`, `64:ff9b:1::/48`).
 */
function embeddedIpv4(bytes: readonly number[]): string | undefined {
  const zeros = (n: number) => Array<number>(n).fill(0);
  const last4 = bytes.slice(12).join('.');
  if (startsWith(bytes, [...zeros(10), 255, 255])) return last4;
  if (startsWith(bytes, [...zeros(8), 255, 255, 0, 0])) return last4;
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, ...zeros(8)])) return last4;
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, 0, 1])) return last4;
  // IPv4-compatible, but not `::` and `::1` themselves (nor the rest of ::/96 below 1.0.0.0).
  if (startsWith(bytes, zeros(12)) && bytes[12]! > 0) return last4;
  return undefined;
}

function isForbiddenIpv4(address: string): boolean {
  const [a, b] = address.split('.').map(Number);
  return (
    (a === 169 && b === 254) || // link-local, with the metadata endpoint 169.254.169.254
    a === 0 || // unspecified and "this network" (0.0.0.0 reaches the local host)
    METADATA_IPV4.has(address)
  );
}

/**
 * Loopback (127.0.0.0/8), private (RFC 1918), carrier-grade NAT (100.64.0.0/10), multicast
 * (224.0.0.0/4), besides what isForbiddenIpv4 refuses.
 */
function isInternalIpv4(address: string): boolean {
  const [a, b] = address.split('.').map(Number) as [number, number];
  return (
    isForbiddenIpv4(address) ||
    a === 127 ||
    a === 10 ||
    (a === 172 && (b & 0xf0) === 16) ||
    (a === 192 && b === 168) ||
    (a === 100 && (b & 0xc0) === 64) ||
    (a >= 224 && a <= 239)
  );
}

/**
 * Link-local (169.254.0.0/16, fe80::/10), cloud metadata (169.254.169.254,
 * fd00:ec2::254, 100.100.100.200, ...) and unspecified (0.0.0.0/8, `::`) addresses, also
 * when an IPv6 address embeds one of the IPv4 ones. Anything that is not an IP address
 * is not refused here (see `refusedHost` for names).
 */
export function isForbiddenAddress(address: string): boolean {
  const text = address.trim().replace(/^\[(.*)\]$/, '$1');
  if (isIP(text) === 4) return isForbiddenIpv4(text);
  const bytes = ipv6Bytes(text);
  if (!bytes) return false;
  const v4 = embeddedIpv4(bytes);
  if (v4 !== undefined) return isForbiddenIpv4(v4);
  if (bytes.every((b) => b === 0)) return true; // ::
  if (bytes[0] === 0xfe && (bytes[1]! & 0xc0) === 0x80) return true; // fe80::/10
  // fd00:ec2::254, AWS's IPv6 metadata endpoint
  return startsWith(bytes, [0xfd, 0, 0x0e, 0xc2, ...Array<number>(10).fill(0), 0x02, 0x54]);
}

/**
 * Every address that is not public: what isForbiddenAddress refuses, loopback (127.0.0.0/8,
 * `::1`), private (RFC 1918, RFC 4193 `fc00::/7`, the deprecated site-local `fec0::/10`),
 * carrier-grade NAT (100.64.0.0/10), multicast (224.0.0.0/4, `ff00::/8`) and the rest of
 * `::/96`, also when an IPv6 address embeds one of the IPv4 ones.
 */
export function isInternalAddress(address: string): boolean {
  const text = address.trim().replace(/^\[(.*)\]$/, '$1');
  if (isIP(text) === 4) return isInternalIpv4(text);
  const bytes = ipv6Bytes(text);
  if (!bytes) return false;
  if (isForbiddenAddress(text)) return true;
  const v4 = embeddedIpv4(bytes);
  if (v4 !== undefined) return isInternalIpv4(v4);
  return (
    startsWith(bytes, Array<number>(12).fill(0)) || // ::, ::1 and the IPv4-compatible rest
    (bytes[0]! & 0xfe) === 0xfc || // fc00::/7
    (bytes[0] === 0xfe && (bytes[1]! & 0xc0) === 0xc0) || // fec0::/10
    bytes[0] === 0xff // ff00::/8
  );
}

/**
 * A host as the WHATWG URL parser reads it (what `new URL(...).hostname` answers, without
 * brackets): an IPv4 address in any spelling (`2130706433`, `0177.0.0.1`, `0x7f.1`,
 * `127.1`, a trailing dot) becomes dotted decimal, an IPv6 address lower-case and
 * compressed (its zone id dropped), a name lower-case.
 */
export function canonicalHost(host: string): string {
  let text = host.trim().replace(/^\[(.*)\]$/, '$1');
  if (text.includes(':')) text = `[${text.replace(/%.*$/, '')}]`;
  try {
    return new URL(`http://${text}/`).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return text.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  }
}

/** What the `internal` policy refuses beyond the `metadata` one, in words. */
const INTERNAL_ADDRESS = 'a loopback, private, carrier-grade NAT, link-local, multicast or unspecified address';

/** Names that are loopback by definition (RFC 6761): `localhost` and every name under it. */
const isLoopbackName = (name: string) => name === 'localhost' || name.endsWith('.localhost');

/**
 * Why a host as given (name or literal address, in any spelling) is refused under `policy`
 * before anything is resolved or connected, or undefined. Names are checked again after
 * resolution (`guardedLookup`, `lookupGuard`).
 */
export function refusedHost(host: string, policy: AddressPolicy = 'metadata'): string | undefined {
  const bare = canonicalHost(host);
  if (isIP(bare) !== 0) {
    if (isForbiddenAddress(bare)) return `${host} is a link-local, metadata or unspecified address`;
    if (policy === 'internal' && isInternalAddress(bare)) return `${host} is ${INTERNAL_ADDRESS}`;
    return undefined;
  }
  const name = bare.replace(/\.+$/, '');
  if (METADATA_HOST_NAMES.has(name)) return `${host} is a cloud metadata service`;
  if (policy === 'internal' && isLoopbackName(name)) return `${host} is a loopback name`;
  return undefined;
}

/** A host that is, or resolves to, a refused address (code `EREFUSEDADDRESS`). */
class RefusedAddress extends Error {
  readonly code = 'EREFUSEDADDRESS';
}

/**
 * Resolves like dns.lookup but refuses a name that `policy` refuses as such or that
 * resolves to any address it refuses. Given as `lookup` to a socket or request, the
 * connection uses exactly the addresses checked here, so a name that resolves
 * differently a moment later (DNS rebinding) cannot slip through. (Literal addresses are
 * never looked up: check them with `refusedHost` first.)
 */
export function lookupGuard(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    const named = refusedHost(hostname, policy);
    if (named) return callback(new RefusedAddress(named), '', 0);
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const metadata = addresses.find((a) => isForbiddenAddress(a.address));
      const internal = policy === 'internal' ? addresses.find((a) => isInternalAddress(a.address)) : undefined;
      const refused = metadata ?? internal;
      if (refused) {
        const what = metadata ? 'a link-local, metadata or unspecified address' : INTERNAL_ADDRESS;
        return callback(new RefusedAddress(`${hostname} resolves to ${refused.address}, ${what}`), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** The lookup of the `metadata` policy (crew `http` steps, E4 probes, admin webhook endpoints). */
export const guardedLookup: LookupFunction = lookupGuard('metadata');
