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

const { guardedLookup, isForbiddenAddress, refusedHost } = await import('../../shared/adapters/address-guard.js');
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
