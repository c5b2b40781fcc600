import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuiltinWorkflow } from '../../shared/adapters/builtin-workflow.js';
import { probeConnection } from '../../shared/adapters/probes.js';
import type { WorkflowConnection } from '../../shared/ports/workflow.js';

const SECRET = 'pr0be-S3cret-never-shown';
const servers: (Server | HttpServer)[] = [];
const sockets = new Set<Socket>();

async function listen<T extends Server | HttpServer>(server: T): Promise<number> {
  servers.push(server);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A TCP server that runs `onConnection` for each client. */
const tcp = (onConnection: (socket: Socket) => void) => listen(createServer(onConnection));

/** A port nothing listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const conn = (over: Partial<WorkflowConnection>): WorkflowConnection => ({
  conn_id: 'probe_test',
  conn_type: 'generic',
  host: '127.0.0.1',
  password: SECRET,
  ...over,
});

/** A minimal SMTP server (RFC 5321): greeting, multi-line EHLO answer, QUIT. Records the commands. */
function smtpServer(greeting: string, ehloReply = ['250-mail.test Hello', '250-SIZE 10240000', '250 HELP']) {
  const commands: string[] = [];
  const start = tcp((socket) => {
    socket.write(`${greeting}\r\n`);
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      let newline: number;
      while ((newline = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 2);
        commands.push(line);
        if (/^EHLO /i.test(line)) socket.write(ehloReply.map((l) => `${l}\r\n`).join(''));
        else if (/^QUIT$/i.test(line)) socket.end('221 2.0.0 Bye\r\n');
        else socket.write('502 5.5.2 Command not recognized\r\n');
      }
    });
    socket.on('error', () => {});
  });
  return { commands, start };
}

let fauxqs: FauxqsServer;
let fakeS3Port: number;
let fakeS3Code = 'InvalidAccessKeyId';

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  const s3 = new S3Client({
    region: 'us-east-1',
    endpoint: fauxqs.address,
    forcePathStyle: true,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await s3.send(new CreateBucketCommand({ Bucket: 'migration-landing' }));
  s3.destroy();
  // S3's documented error response (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).
  fakeS3Port = await listen(
    createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(403, { 'content-type': 'application/xml', 'x-amz-request-id': 'R1' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${fakeS3Code}</Code>` +
            `<Message>refused</Message><RequestId>R1</RequestId><HostId>H1</HostId></Error>`,
        );
      });
    }),
  );
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await fauxqs.stop();
});

describe('generic probe', () => {
  it('is ok when the port accepts a TCP connection', async () => {
    const port = await tcp((socket) => socket.end());
    expect(await probeConnection(conn({ port }), 'generic')).toEqual({
      ok: true,
      message: `connected to 127.0.0.1:${port}`,
    });
  });

  it('says the connection was refused on a closed port', async () => {
    const port = await closedPort();
    expect(await probeConnection(conn({ port }), 'generic')).toEqual({
      ok: false,
      message: `connection refused by 127.0.0.1:${port}`,
    });
  });

  it('says a host name does not resolve', async () => {
    const result = await probeConnection(conn({ host: 'nonexistent.invalid', port: 22 }), 'generic');
    expect(result).toEqual({ ok: false, message: "cannot resolve host 'nonexistent.invalid'" });
  });

  it('needs a host and a port', async () => {
    expect(await probeConnection(conn({ host: '' }), 'generic')).toEqual({
      ok: false,
      message: 'the connection has no host',
    });
    expect((await probeConnection(conn({ port: null }), 'generic')).message).toMatch(/has no port/);
    expect((await probeConnection(conn({ port: 70_000 }), 'generic')).message).toMatch(/not a TCP port/);
  });
});

describe('ssh probe', () => {
  it('is ok with an SSH banner and names it', async () => {
    const port = await tcp((socket) => socket.write('SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n'));
    expect(await probeConnection(conn({ conn_type: 'ssh', port }), 'ssh')).toEqual({
      ok: true,
      message: `SSH server at 127.0.0.1:${port}: SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13`,
    });
  });

  it('names the banner it got from something that is not SSH', async () => {
    const port = await tcp((socket) => socket.write('220 mail.test ESMTP Postfix\r\n'));
    expect(await probeConnection(conn({ port }), 'ssh')).toEqual({
      ok: false,
      message: `unexpected banner '220 mail.test ESMTP Postfix' from 127.0.0.1:${port} (expected SSH-…)`,
    });
  });

  it('says so when the server closes without a banner', async () => {
    const port = await tcp((socket) => socket.end());
    expect((await probeConnection(conn({ port }), 'ssh')).message).toBe(
      `127.0.0.1:${port} closed the connection without an SSH banner`,
    );
  });

  it('times out on a listener that never answers', async () => {
    const port = await tcp(() => {});
    const started = Date.now();
    const result = await probeConnection(conn({ port }), 'ssh', { timeoutMs: 300 });
    expect(result).toEqual({
      ok: false,
      message: `timed out after 0.3 s waiting for the SSH banner from 127.0.0.1:${port}`,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('uses port 22 when the connection has none', async () => {
    // Whatever runs on this machine's port 22, the message names it.
    const result = await probeConnection(conn({ port: null }), 'ssh', { timeoutMs: 300 });
    expect(result.message).toContain('127.0.0.1:22');
  });

  it('never shows the password, even when the peer echoes it', async () => {
    const port = await tcp((socket) => socket.write(`hello ${SECRET}\r\n`));
    const result = await probeConnection(conn({ port }), 'ssh');
    expect(result).toEqual({
      ok: false,
      message: `unexpected banner 'hello ***' from 127.0.0.1:${port} (expected SSH-…)`,
    });
  });
});

describe('smtp probe', () => {
  it('is ok after 220, EHLO dpm.local and 250, and says QUIT', async () => {
    const smtp = smtpServer('220 mail.test ESMTP Postfix');
    const port = await smtp.start;
    expect(await probeConnection(conn({ conn_type: 'smtp', port }), 'smtp')).toEqual({
      ok: true,
      message: `SMTP server at 127.0.0.1:${port}: 220 mail.test ESMTP Postfix`,
    });
    await expect.poll(() => smtp.commands).toEqual(['EHLO dpm.local', 'QUIT']);
  });

  it('reads a multi-line greeting', async () => {
    const port = await smtpServer('220-mail.test ESMTP\r\n220-no UCE\r\n220 ready').start;
    const result = await probeConnection(conn({ port }), 'smtp');
    expect(result).toEqual({ ok: true, message: `SMTP server at 127.0.0.1:${port}: 220-mail.test ESMTP` });
  });

  it('names a greeting other than 220', async () => {
    const smtp = smtpServer('554 5.3.2 mail.test not accepting connections');
    const port = await smtp.start;
    expect(await probeConnection(conn({ port }), 'smtp')).toEqual({
      ok: false,
      message: `SMTP greeting from 127.0.0.1:${port} was '554 5.3.2 mail.test not accepting connections' (expected 220)`,
    });
    expect(smtp.commands).toEqual([]);
  });

  it('names an EHLO answer other than 250', async () => {
    const port = await smtpServer('220 mail.test', ['502 5.5.1 EHLO not implemented']).start;
    expect((await probeConnection(conn({ port }), 'smtp')).message).toBe(
      `SMTP server at 127.0.0.1:${port} answered EHLO with '502 5.5.1 EHLO not implemented' (expected 250)`,
    );
  });

  it('times out waiting for the greeting', async () => {
    const port = await tcp(() => {});
    expect(await probeConnection(conn({ port }), 'smtp', { timeoutMs: 300 })).toEqual({
      ok: false,
      message: `timed out after 0.3 s waiting for the SMTP greeting from 127.0.0.1:${port}`,
    });
  });
});

describe('http probe', () => {
  const httpServer = (status: number) =>
    listen(
      createHttpServer((req, res) => {
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end('body');
      }),
    );

  it('is ok for a status below 500', async () => {
    const port = await httpServer(200);
    expect(await probeConnection(conn({ conn_type: 'http', port }), 'http')).toEqual({
      ok: true,
      message: `HTTP 200 from http://127.0.0.1:${port}/`,
    });
    const notFound = await httpServer(404);
    expect(await probeConnection(conn({ port: notFound }), 'http')).toEqual({
      ok: true,
      message: `HTTP 404 from http://127.0.0.1:${notFound}/`,
    });
  });

  it('fails on 5xx', async () => {
    const port = await httpServer(503);
    expect(await probeConnection(conn({ port }), 'http')).toEqual({
      ok: false,
      message: `HTTP 503 from http://127.0.0.1:${port}/`,
    });
  });

  it('takes the scheme and port from a host given as a URL', async () => {
    const port = await httpServer(204);
    expect(await probeConnection(conn({ host: `http://127.0.0.1:${port}/health`, port: null }), 'http')).toEqual({
      ok: true,
      message: `HTTP 204 from http://127.0.0.1:${port}/health`,
    });
  });

  it('speaks TLS when extra.scheme is https', async () => {
    const port = await httpServer(200);
    const result = await probeConnection(conn({ port, extra: { scheme: 'https' } }), 'http');
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(new RegExp(`^TLS handshake with 127\\.0\\.0\\.1:${port} failed`));
  });

  it('says the connection was refused and times out on a silent server', async () => {
    const port = await closedPort();
    expect((await probeConnection(conn({ port }), 'http')).message).toBe(`connection refused by 127.0.0.1:${port}`);
    const silent = await tcp(() => {});
    expect((await probeConnection(conn({ port: silent }), 'http', { timeoutMs: 300 })).message).toBe(
      `timed out after 0.3 s waiting for an HTTP answer from http://127.0.0.1:${silent}/`,
    );
  });

  it('says a host name does not resolve', async () => {
    expect(await probeConnection(conn({ host: 'nonexistent.invalid', port: null }), 'http')).toEqual({
      ok: false,
      message: "cannot resolve host 'nonexistent.invalid'",
    });
  });
});

describe('s3 probe', () => {
  const s3conn = (over: Partial<WorkflowConnection> = {}) =>
    conn({
      conn_type: 'aws',
      host: '',
      schema: 'migration-landing',
      login: 'AKIDLOCAL',
      password: SECRET,
      extra: { endpoint_url: fauxqs.address },
      ...over,
    });

  it('lists an existing bucket', async () => {
    expect(await probeConnection(s3conn(), 's3')).toEqual({
      ok: true,
      message: `listed bucket 'migration-landing' at ${fauxqs.address}`,
    });
  });

  it('says a bucket does not exist', async () => {
    expect(await probeConnection(s3conn({ schema: 'no-such-bucket' }), 's3')).toEqual({
      ok: false,
      message: `bucket 'no-such-bucket' does not exist at ${fauxqs.address}`,
    });
  });

  it('takes the bucket from extra.bucket and the endpoint from the host', async () => {
    const port = Number(new URL(fauxqs.address).port);
    const result = await probeConnection(
      s3conn({ schema: null, host: '127.0.0.1', port, extra: { bucket: 'migration-landing' } }),
      's3',
    );
    expect(result).toEqual({ ok: true, message: `listed bucket 'migration-landing' at http://127.0.0.1:${port}` });
  });

  it('uses the service default endpoint when the connection names none', async () => {
    const result = await probeConnection(s3conn({ extra: null }), 's3', { s3Endpoint: fauxqs.address });
    expect(result.ok).toBe(true);
  });

  it.each([
    ['InvalidAccessKeyId', "does not know the access key 'AKIDLOCAL' (InvalidAccessKeyId)"],
    ['SignatureDoesNotMatch', "rejected the secret key of access key 'AKIDLOCAL' (SignatureDoesNotMatch)"],
    ['AccessDenied', "access key 'AKIDLOCAL' may not list bucket 'migration-landing'"],
  ])('reports %s distinctly', async (code, expected) => {
    fakeS3Code = code;
    const result = await probeConnection(s3conn({ extra: { endpoint_url: `http://127.0.0.1:${fakeS3Port}` } }), 's3');
    expect(result.ok).toBe(false);
    expect(result.message).toContain(expected);
    expect(result.message).not.toContain(SECRET);
  });

  it('says an endpoint refuses the connection', async () => {
    const port = await closedPort();
    const result = await probeConnection(s3conn({ extra: { endpoint_url: `http://127.0.0.1:${port}` } }), 's3');
    expect(result).toEqual({ ok: false, message: `connection refused by 127.0.0.1:${port}` });
  });

  it('needs a bucket and credentials', async () => {
    expect((await probeConnection(s3conn({ schema: null }), 's3')).message).toMatch(/names no bucket/);
    expect((await probeConnection(s3conn({ password: null }), 's3')).message).toMatch(/has no credentials/);
  });
});

describe('the built-in workflow engine', () => {
  it('publishes nothing, holds no connection, and probes from here', async () => {
    const engine = new BuiltinWorkflow({ s3Endpoint: fauxqs.address });
    await expect(engine.publishConfig({ copy_mappers: 4 })).resolves.toBeUndefined();
    expect(await engine.getConnection('anything')).toBeUndefined();
    const s3 = conn({ conn_type: 'aws', host: '', schema: 'migration-landing', login: 'AKID', extra: null });
    expect(await engine.testConnection(s3, 's3')).toEqual({
      ok: true,
      message: `listed bucket 'migration-landing' at ${fauxqs.address}`,
    });
    const port = await closedPort();
    expect(await engine.testConnection(conn({ port }), 'generic')).toEqual({
      ok: false,
      message: `connection refused by 127.0.0.1:${port}`,
    });
  });
});

describe('refused addresses (link-local, cloud metadata, unspecified)', () => {
  /** A listener on every local address that counts connections and sends a banner at once. */
  async function bannerEverywhere() {
    const seen = { count: 0 };
    const server = createServer((socket) => {
      seen.count++;
      socket.on('error', () => {});
      socket.end('SSH-2.0-MustNotBeEchoed\r\n');
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '::', resolve));
    return { port: (server.address() as AddressInfo).port, seen };
  }

  it.each(['0.0.0.0', '::', '::ffff:0.0.0.0', '0:0:0:0:0:0:0:0'])(
    'does not connect to the unspecified address %s (which reaches this host) and echoes no banner',
    async (host) => {
      const { port, seen } = await bannerEverywhere();
      for (const probe of ['generic', 'ssh', 'smtp', 'http'] as const) {
        const result = await probeConnection(conn({ host, port }), probe);
        expect(result, probe).toEqual({
          ok: false,
          message: `refused: ${host} is a link-local, metadata or unspecified address; not probed`,
        });
      }
      expect(seen.count).toBe(0);
    },
  );

  it.each([
    '169.254.169.254',
    '169.254.170.2',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '100.100.100.200',
  ])('refuses %s for every probe type without connecting', async (host) => {
    for (const probe of ['generic', 'ssh', 'smtp', 'http'] as const) {
      const result = await probeConnection(conn({ host, port: 80 }), probe, { timeoutMs: 300 });
      expect(result, probe).toEqual({ ok: false, message: expect.stringMatching(/^refused: .*; not probed$/) });
    }
    const name = host.includes(':') ? `[${host}]` : host;
    expect(
      (await probeConnection(conn({ host: `http://${name}/latest/meta-data/`, port: null }), 'http')).message,
    ).toMatch(/^refused: /);
    const s3 = conn({ host: '', schema: 'bucket', login: 'AKIA', extra: { endpoint_url: `http://${name}` } });
    expect((await probeConnection(s3, 's3')).message).toMatch(/^refused: /);
  });

  it('refuses a cloud metadata service by name', async () => {
    expect(await probeConnection(conn({ host: 'metadata.google.internal', port: 80 }), 'http')).toEqual({
      ok: false,
      message: 'refused: metadata.google.internal is a cloud metadata service; not probed',
    });
  });

  it('still probes loopback and private addresses: migration hosts live there', async () => {
    const port = await tcp((socket) => socket.end('SSH-2.0-Private\r\n'));
    expect((await probeConnection(conn({ host: '127.0.0.1', port }), 'ssh')).ok).toBe(true);
    expect((await probeConnection(conn({ host: 'localhost', port }), 'generic')).ok).toBe(true);
  });
});
