import type { LookupAddress } from 'node:dns';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';

/**
 * Names under `.guard.test` resolve to what RESOLVES says (as a DNS server that answers
 * each query differently could); every other name resolves for real.
 */
const RESOLVES = new Map<string, string[]>();
const lookups: string[] = [];

vi.mock('node:dns', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:dns')>();
  const lookup = (hostname: string, options: unknown, callback: (...args: unknown[]) => void) => {
    const addresses = RESOLVES.get(hostname);
    if (!addresses) return (real.lookup as (...args: unknown[]) => void)(hostname, options, callback);
    lookups.push(hostname);
    const all: LookupAddress[] = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    queueMicrotask(() => {
      if ((options as { all?: boolean }).all) callback(null, all);
      else callback(null, all[0]!.address, all[0]!.family);
    });
  };
  return { ...real, default: { ...real, lookup }, lookup };
});

const { canonicalHost, guardedLookup, isForbiddenAddress, isInternalAddress, lookupGuard, refusedHost } =
  await import('../../shared/adapters/address-guard.js');
const { OutboundHttp, RUN_WEBHOOK_RULES, WEBHOOK_RULES } = await import('../../shared/adapters/outbound-http.js');
const { probeConnection } = await import('../../shared/adapters/probes.js');

const servers: Server[] = [];
const sockets = new Set<Socket>();

/** A listener on 127.0.0.1 that counts its connections and greets each one. */
async function listener(greeting: string) {
  const connections = { count: 0 };
  const server = createServer((socket) => {
    connections.count++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.write(greeting);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, connections };
}

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('isForbiddenAddress()', () => {
  it.each([
    '169.254.169.254',
    '169.254.0.1',
    '0.0.0.0',
    '0.1.2.3',
    '100.100.100.200',
    '::',
    '::0',
    '0:0:0:0:0:0:0:0',
    '[::]',
    'fe80::1',
    'fe80::1%eth0',
    'FEBF::1',
    'fd00:ec2::254',
    'FD00:EC2:0:0:0:0:0:254',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::FFFF:A9FE:A9FE',
    '0:0:0:0:0:ffff:169.254.169.254',
    '::ffff:0.0.0.0',
    '::ffff:0:0',
    '::ffff:0:169.254.169.254',
    '::169.254.169.254',
    '64:ff9b::169.254.169.254',
    '64:ff9b::a9fe:a9fe',
  ])('refuses %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '100.64.0.1',
    '169.255.0.1',
    '8.8.8.8',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    'fd12:3456::1',
    'fec0::1',
    '2001:db8::1',
    'example.com',
  ])('allows %s (private ranges and loopback stay reachable)', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});

describe('refusedHost()', () => {
  it.each([
    '169.254.169.254',
    '[::]',
    '::ffff:169.254.169.254',
    'metadata.google.internal',
    'METADATA.GOOGLE.INTERNAL.',
    'metadata',
    'metadata.goog',
    'instance-data.ec2.internal',
  ])('refuses %s before anything is resolved', (host) => {
    expect(refusedHost(host)).toMatch(/link-local, metadata or unspecified address|cloud metadata service/);
  });

  it.each(['127.0.0.1', '::1', 'localhost', 'db.internal.example', 'metadata-db.example.com'])('allows %s', (host) => {
    expect(refusedHost(host)).toBeUndefined();
  });
});

/**
 * Loopback, private, carrier-grade NAT, link-local, multicast and unspecified addresses in
 * every spelling a URL or a resolver may carry (docs/events-and-webhooks.md, per-run webhooks).
 */
const INTERNAL_SPELLINGS = [
  // loopback
  '127.0.0.1',
  '127.0.0.2',
  '127.1',
  '127.000.000.001',
  '2130706433',
  '017700000001',
  '0177.0.0.1',
  '0x7f.0.0.1',
  '0x7F.1',
  '0x7f000001',
  '127.0.0.1.',
  '::1',
  '[::1]',
  '0:0:0:0:0:0:0:1',
  '::ffff:127.0.0.1',
  '[::ffff:7f00:1]',
  '::FFFF:7F00:1',
  '::127.0.0.1',
  '64:ff9b::7f00:1',
  'localhost',
  'LOCALHOST.',
  'hooks.localhost',
  // private (RFC 1918, RFC 4193)
  '10.0.0.1',
  '012.0.0.1',
  '0xa.0.0.1',
  '167772161',
  '10.1',
  '172.16.0.1',
  '172.31.255.255',
  '0xac.0x10.0.1',
  '192.168.1.1',
  '3232235777',
  '::ffff:10.0.0.1',
  '::ffff:a00:1',
  '[::ffff:c0a8:101]',
  'fc00::1',
  'fd12:3456::1',
  '[FD00::1]',
  'fec0::1',
  // carrier-grade NAT
  '100.64.0.1',
  '100.127.255.254',
  '0x64.0x40.0.1',
  '::ffff:100.64.0.1',
  // link-local, metadata
  '169.254.169.254',
  '0xa9fea9fe',
  '169.254.0.1',
  'fe80::1',
  'fe80::1%eth0',
  // multicast
  '224.0.0.1',
  '239.255.255.250',
  '0xe0.0.0.1',
  'ff02::1',
  '[FF05::2]',
  '::ffff:224.0.0.1',
  // unspecified
  '0.0.0.0',
  '0',
  '0x0',
  '::',
  '[::]',
  '::ffff:0.0.0.0',
];

describe('the internal policy (per-run webhooks)', () => {
  it.each(INTERNAL_SPELLINGS)('refuses %s before anything is resolved', (host) => {
    expect(refusedHost(host, 'internal')).toMatch(
      /is a (loopback, private, carrier-grade NAT, link-local, multicast or unspecified address|link-local, metadata or unspecified address|loopback name)$/,
    );
  });

  it.each([
    '8.8.8.8',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.169.0.1',
    '11.0.0.1',
    '223.255.255.255',
    '2001:db8::1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    'hooks.example.com',
    'localhost.example.com',
    'mylocalhost',
  ])('allows %s', (host) => {
    expect(refusedHost(host, 'internal')).toBeUndefined();
  });

  it('leaves loopback and private addresses to the metadata policy', () => {
    for (const host of ['127.0.0.1', '10.0.0.1', '::1', 'fd12::1', 'localhost', '100.64.0.1'])
      expect(refusedHost(host), host).toBeUndefined();
  });

  it('reads a host in any spelling as the URL parser does', () => {
    expect(canonicalHost('0x7f.1')).toBe('127.0.0.1');
    expect(canonicalHost('2130706433')).toBe('127.0.0.1');
    expect(canonicalHost('0177.0.0.1')).toBe('127.0.0.1');
    expect(canonicalHost('127.0.0.1.')).toBe('127.0.0.1');
    expect(canonicalHost('[::FFFF:127.0.0.1]')).toBe('::ffff:7f00:1');
    expect(canonicalHost('FE80::1%eth0')).toBe('fe80::1');
    expect(canonicalHost('Hooks.Example.COM')).toBe('hooks.example.com');
    for (const url of ['http://0x7f.1/', 'http://2130706433/', 'http://[::ffff:127.0.0.1]/'])
      expect(refusedHost(new URL(url).hostname, 'internal'), url).toBeDefined();
  });

  it('knows the addresses themselves, IPv4 embedded in IPv6 included', () => {
    for (const address of ['127.0.0.1', '10.9.8.7', '::1', '::ffff:192.168.0.1', '64:ff9b::a00:1', 'ff02::1'])
      expect(isInternalAddress(address), address).toBe(true);
    for (const address of ['1.1.1.1', '2001:4860:4860::8888', '::ffff:1.1.1.1', 'localhost'])
      expect(isInternalAddress(address), address).toBe(false);
  });
});

describe('the per-run webhook URL rules', () => {
  const listed = ['127.0.0.1', 'localhost'];
  const runs = new OutboundHttp(listed, RUN_WEBHOOK_RULES);
  const endpoints = new OutboundHttp(listed, WEBHOOK_RULES);

  /** Each spelling as a URL's host (IPv6 in brackets; a zone id is no part of a URL). */
  const asUrlHost = (host: string) => (host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);

  /** Only loopback spellings become URLs here (the other ranges are checked host by host above). */
  const isLoopbackSpelling = (host: string) => {
    const canonical = canonicalHost(host);
    return (
      canonical.startsWith('127.') ||
      canonical === '::1' ||
      canonical.startsWith('::ffff:7f') ||
      /(^|\.)localhost\.?$/.test(canonical)
    );
  };

  it.each(INTERNAL_SPELLINGS.filter((h) => !h.includes('%') && isLoopbackSpelling(h)).map(asUrlHost))(
    'refuses https://%s/ unless its host, as the URL parser reads it, is listed',
    (host) => {
      const url = `https://${host}:8443/hook`;
      const listedHere = listed.includes(new URL(url).hostname);
      expect(runs.refusal(url), url).toEqual(listedHere ? undefined : expect.stringMatching(/^host .* is a /));
    },
  );

  it('allows a listed host in any spelling the URL parser reads as it, and keeps the endpoints’ rules', () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://0x7f.1:9/x', 'http://2130706433:9/x', 'http://localhost:9/x'])
      expect(runs.refusal(url), url).toBeUndefined();
    expect(runs.refusal('https://hooks.example.com/x')).toBeUndefined();
    // The API's endpoints (admins) may still name loopback and private hosts over https.
    for (const url of ['https://[::1]/x', 'https://127.0.0.2/x']) expect(endpoints.refusal(url), url).toBeUndefined();
    expect(runs.refusal('https://127.0.0.2/x')).toMatch(/not allowed unless listed in WEBHOOK_ALLOWED_HOSTS/);
  });

  it('refuses, when connecting, a name that resolves to an internal address, before any connection', async () => {
    const { port, connections } = await listener('');
    RESOLVES.set('loopback.guard.test', ['127.0.0.1']);
    await expect(
      runs.request(
        { method: 'POST', url: `https://loopback.guard.test:${port}/`, body: '{}' },
        AbortSignal.timeout(5000),
      ),
    ).rejects.toMatchObject({
      code: 'EREFUSEDADDRESS',
      message: expect.stringMatching(/resolves to 127\.0\.0\.1, a loopback, private/),
    });
    expect(connections.count).toBe(0);
  });

  it('connects to a listed name whatever it resolves to, and refuses the same name unlisted', async () => {
    const hits: string[] = [];
    const server = createHttpServer((req, res) => {
      hits.push(req.url ?? '');
      res.end();
    });
    servers.push(server as unknown as Server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    RESOLVES.set('listed.guard.test', ['127.0.0.1']);
    const post = (http: InstanceType<typeof OutboundHttp>, scheme: string) =>
      http.request(
        { method: 'POST', url: `${scheme}://listed.guard.test:${port}/hook`, body: '{}' },
        AbortSignal.timeout(5000),
      );
    const listing = new OutboundHttp(['listed.guard.test'], RUN_WEBHOOK_RULES);
    expect(await post(listing, 'http')).toMatchObject({ status: 200 });
    expect(hits).toEqual(['/hook']);
    await expect(post(runs, 'https')).rejects.toMatchObject({
      code: 'EREFUSEDADDRESS',
      message: expect.stringMatching(/^listed\.guard\.test resolves to 127\.0\.0\.1, a loopback, private/),
    });
    expect(hits).toEqual(['/hook']);
  });
});

const internalLookupOf = (hostname: string) =>
  new Promise<NodeJS.ErrnoException | null>((resolve) =>
    lookupGuard('internal')(hostname, { all: true }, (err) => resolve(err)),
  );

describe("lookupGuard('internal')", () => {
  it('refuses a name when any address it resolves to is internal', async () => {
    RESOLVES.set('private.internal.guard.test', ['93.184.216.34', '10.0.0.5']);
    RESOLVES.set('mapped.internal.guard.test', ['::ffff:192.168.0.1']);
    RESOLVES.set('ula.internal.guard.test', ['fd00::5']);
    RESOLVES.set('cgnat.internal.guard.test', ['100.64.1.2']);
    for (const name of ['private', 'mapped', 'ula', 'cgnat'])
      expect(await internalLookupOf(`${name}.internal.guard.test`), name).toMatchObject({ code: 'EREFUSEDADDRESS' });
  });

  it('refuses a loopback name without asking DNS, and lets a public one through', async () => {
    const before = lookups.length;
    expect(await internalLookupOf('localhost')).toMatchObject({ code: 'EREFUSEDADDRESS' });
    expect(lookups.length).toBe(before);
    RESOLVES.set('public.internal.guard.test', ['93.184.216.34']);
    expect(await internalLookupOf('public.internal.guard.test')).toBeNull();
  });
});

const lookupOf = (hostname: string, all: boolean) =>
  new Promise<{ err: NodeJS.ErrnoException | null; result: unknown }>((resolve) =>
    guardedLookup(hostname, { all }, (err, address, family) =>
      resolve({ err, result: all ? address : { address, family } }),
    ),
  );

describe('guardedLookup()', () => {
  it('refuses a name when any address it resolves to is refused', async () => {
    RESOLVES.set('mixed.guard.test', ['10.0.0.5', '169.254.169.254']);
    for (const all of [true, false]) {
      const { err } = await lookupOf('mixed.guard.test', all);
      expect(err).toMatchObject({
        code: 'EREFUSEDADDRESS',
        message: 'mixed.guard.test resolves to 169.254.169.254, a link-local, metadata or unspecified address',
      });
    }
  });

  it('refuses names that resolve to an IPv4-mapped or unspecified address', async () => {
    RESOLVES.set('mapped.guard.test', ['::ffff:169.254.169.254']);
    RESOLVES.set('zero.guard.test', ['0.0.0.0']);
    expect((await lookupOf('mapped.guard.test', true)).err?.code).toBe('EREFUSEDADDRESS');
    expect((await lookupOf('zero.guard.test', false)).err?.code).toBe('EREFUSEDADDRESS');
  });

  it('refuses a metadata service by name without asking DNS', async () => {
    const before = lookups.length;
    expect((await lookupOf('metadata.google.internal', true)).err?.code).toBe('EREFUSEDADDRESS');
    expect(lookups.length).toBe(before);
  });

  it('hands back exactly the addresses it checked', async () => {
    RESOLVES.set('private.guard.test', ['10.0.0.5', '192.168.0.7']);
    expect(await lookupOf('private.guard.test', true)).toEqual({
      err: null,
      result: [
        { address: '10.0.0.5', family: 4 },
        { address: '192.168.0.7', family: 4 },
      ],
    });
    expect(await lookupOf('private.guard.test', false)).toEqual({
      err: null,
      result: { address: '10.0.0.5', family: 4 },
    });
  });
});

describe('E4 probes and the address guard', () => {
  const conn = (host: string, port: number | null, extra: Record<string, unknown> | null = null) => ({
    conn_id: 'guarded',
    conn_type: 'generic',
    host,
    port,
    password: 'guard-pw',
    extra,
  });

  it('connects to the address the name was checked as (the one resolution the probe makes)', async () => {
    const { port, connections } = await listener('SSH-2.0-Guarded\r\n');
    RESOLVES.set('edge.guard.test', ['127.0.0.1']);
    const before = lookups.filter((n) => n === 'edge.guard.test').length;
    expect(await probeConnection(conn('edge.guard.test', port), 'ssh')).toEqual({
      ok: true,
      message: `SSH server at edge.guard.test:${port}: SSH-2.0-Guarded`,
    });
    expect(connections.count).toBe(1);
    expect(lookups.filter((n) => n === 'edge.guard.test').length).toBe(before + 1);
  });

  it.each(['generic', 'ssh', 'smtp'] as const)(
    'a %s probe to a name resolving to a metadata address fails without connecting or echoing a banner',
    async (probe) => {
      const { port, connections } = await listener('SSH-2.0-MetadataBanner\r\n220 metadata ESMTP\r\n');
      RESOLVES.set('rebind.guard.test', ['127.0.0.1', '169.254.169.254']);
      const result = await probeConnection(conn('rebind.guard.test', port), probe);
      expect(result).toEqual({
        ok: false,
        message:
          'refused: rebind.guard.test resolves to 169.254.169.254, a link-local, metadata or unspecified address; not probed',
      });
      expect(connections.count).toBe(0);
    },
  );

  it('an http probe to such a name fails the same way', async () => {
    const hits: string[] = [];
    const server = createHttpServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('metadata');
    });
    servers.push(server as unknown as Server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    RESOLVES.set('http-rebind.guard.test', ['::ffff:169.254.169.254']);
    expect(await probeConnection(conn('http-rebind.guard.test', port), 'http')).toEqual({
      ok: false,
      message: expect.stringMatching(/^refused: http-rebind\.guard\.test resolves to ::ffff:169\.254\.169\.254/),
    });
    expect(
      await probeConnection(conn(`http://http-rebind.guard.test:${port}/latest/meta-data/`, null), 'http'),
    ).toEqual({
      ok: false,
      message: expect.stringMatching(/^refused: /),
    });
    expect(hits).toEqual([]);
  });

  it('an s3 probe to an endpoint whose name resolves to a metadata address fails the same way', async () => {
    const hits: string[] = [];
    const server = createHttpServer((req, res) => {
      hits.push(req.url ?? '');
      res.end();
    });
    servers.push(server as unknown as Server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    RESOLVES.set('s3-rebind.guard.test', ['169.254.170.2']);
    const s3 = {
      ...conn('', null, { endpoint_url: `http://s3-rebind.guard.test:${port}` }),
      schema: 'bucket',
      login: 'AKIA',
    };
    expect(await probeConnection(s3, 's3')).toEqual({
      ok: false,
      message: expect.stringMatching(/^refused: s3-rebind\.guard\.test resolves to 169\.254\.170\.2/),
    });
    expect(hits).toEqual([]);
  });
});
