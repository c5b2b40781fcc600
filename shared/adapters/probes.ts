import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { guardedLookup, refusedHost } from './address-guard.js';
import type { ProbeResult, ProbeType, WorkflowConnection } from '../ports/workflow.js';
import { redactSecret, redactUrl } from '../redact.js';

export interface ProbeOptions {
  /** For the whole probe (connect and conversation); default 5 s (docs/data-and-catalog.md). */
  readonly timeoutMs?: number;
  /**
   * The S3 endpoint for an `s3` connection that names none itself (no `extra.endpoint_url`,
   * no host), e.g. the local object store; without it such a connection goes to AWS.
   */
  readonly s3Endpoint?: string;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_PORTS: Partial<Record<ProbeType, number>> = { ssh: 22, smtp: 25, http: 80 };
/** RFC 4253 caps the SSH identification line at 255 characters; SMTP lines at 512. */
const MAX_LINE = 1_024;

/**
 * Probes a connection from this service, as E4 does with the built-in workflow engine
 * (docs/data-and-catalog.md). A failed probe is `ok: false` with a reason a person can act on; this
 * never throws, and the connection's password never appears in a message.
 *
 * Link-local, cloud metadata and unspecified addresses are refused before connecting
 * (like a failed probe): a literal host at once, a name after resolution, every address
 * it resolves to, and the connection goes to the address checked (no DNS rebinding).
 * Private ranges and loopback are probed: migration hosts live there.
 */
export async function probeConnection(
  connection: WorkflowConnection,
  probe: ProbeType,
  options: ProbeOptions = {},
): Promise<ProbeResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let result: ProbeResult;
  try {
    result = await run(connection, probe, timeoutMs, options.s3Endpoint);
  } catch (err) {
    result = { ok: false, message: `probe failed: ${(err as Error)?.message ?? String(err)}` };
  }
  return { ok: result.ok, message: redactSecret(result.message, connection.password) };
}

async function run(
  connection: WorkflowConnection,
  probe: ProbeType,
  timeoutMs: number,
  s3Endpoint: string | undefined,
): Promise<ProbeResult> {
  if (probe === 's3') return probeS3(connection, timeoutMs, s3Endpoint);
  if (probe === 'http') return probeHttp(connection, timeoutMs);
  if (probe !== 'generic' && probe !== 'ssh' && probe !== 'smtp') return failed(`unknown probe type '${probe}'`);

  const host = connection.host?.trim();
  if (!host) return failed('the connection has no host');
  const port = connection.port ?? DEFAULT_PORTS[probe];
  if (port === undefined) return failed(`the connection has no port (a ${probe} probe needs host and port)`);
  if (!validPort(port)) return failed(`port ${port} is not a TCP port (1-65535)`);
  const refused = refusedHost(host);
  if (refused) return refusal(refused);
  const target = { host, port };
  if (probe === 'generic') return converse(target, timeoutMs, false, async () => `connected to ${where(target)}`);
  if (probe === 'ssh') return converse(target, timeoutMs, false, (io) => sshBanner(io, target));
  // Port 465 is SMTP over implicit TLS (RFC 8314); every other port starts in plain text.
  return converse(target, timeoutMs, port === 465, (io) => smtpHello(io, target));
}

interface Target {
  readonly host: string;
  readonly port: number;
}

/** A message from the peer that a probe reports as its reason. */
class ProbeFailure extends Error {}

class TimedOut extends Error {}

const failed = (message: string): ProbeResult => ({ ok: false, message });

/** A probe this service will not make: answered like a failed one, without connecting. */
const refusal = (reason: string): ProbeResult => failed(`refused: ${printable(reason)}; not probed`);

async function sshBanner(io: LineReader, target: Target): Promise<string> {
  io.phase = `waiting for the SSH banner from ${where(target)}`;
  const line = await io.line();
  if (line === undefined) throw new ProbeFailure(`${where(target)} closed the connection without an SSH banner`);
  // RFC 4253 allows lines before the version line, but SSH servers send it first in practice;
  // failing at once beats waiting out the timeout on a server that is not SSH at all.
  if (!line.startsWith('SSH-'))
    throw new ProbeFailure(`unexpected banner '${printable(line)}' from ${where(target)} (expected SSH-…)`);
  return `SSH server at ${where(target)}: ${printable(line)}`;
}

async function smtpHello(io: LineReader, target: Target): Promise<string> {
  io.phase = `waiting for the SMTP greeting from ${where(target)}`;
  const greeting = await smtpReply(io, `${where(target)} closed the connection without an SMTP greeting`);
  if (greeting.code !== '220')
    throw new ProbeFailure(`SMTP greeting from ${where(target)} was '${printable(greeting.text)}' (expected 220)`);
  io.write('EHLO dpm.local\r\n');
  io.phase = `waiting for the answer to EHLO from ${where(target)}`;
  const hello = await smtpReply(io, `${where(target)} closed the connection after EHLO`);
  if (hello.code !== '250')
    throw new ProbeFailure(
      `SMTP server at ${where(target)} answered EHLO with '${printable(hello.text)}' (expected 250)`,
    );
  io.write('QUIT\r\n');
  return `SMTP server at ${where(target)}: ${printable(greeting.text)}`;
}

/** One SMTP reply: `ddd-text` lines continue it, `ddd text` ends it (RFC 5321 section 4.2). */
async function smtpReply(io: LineReader, closedMessage: string): Promise<{ code: string; text: string }> {
  let first: string | undefined;
  for (;;) {
    const line = await io.line();
    if (line === undefined) throw new ProbeFailure(closedMessage);
    first ??= line;
    if (!/^\d{3}-/.test(line)) return { code: line.slice(0, 3), text: first };
  }
}

/** Lines read from a socket, with the probe's current phase for timeout and error messages. */
class LineReader {
  phase: string;
  private buffer = '';
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly socket: Socket,
    target: Target,
  ) {
    this.phase = `connecting to ${where(target)}`;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      this.notify();
    });
    socket.on('end', () => {
      this.ended = true;
      this.notify();
    });
    socket.on('error', (err) => {
      this.failure ??= err;
      this.notify();
    });
    socket.on('close', () => {
      this.ended = true;
      this.notify();
    });
  }

  /** The next line without its CR LF; undefined when the peer closed the connection first. */
  async line(): Promise<string | undefined> {
    for (;;) {
      const newline = this.buffer.indexOf('\n');
      if (newline >= 0 || this.buffer.length >= MAX_LINE) {
        const end = newline >= 0 ? newline : MAX_LINE;
        const line = this.buffer.slice(0, end).replace(/\r$/, '');
        this.buffer = this.buffer.slice(end + (newline >= 0 ? 1 : 0));
        return line;
      }
      if (this.failure) throw this.failure;
      if (this.ended) {
        if (this.buffer === '') return undefined;
        const rest = this.buffer;
        this.buffer = '';
        return rest;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  write(text: string): void {
    this.socket.write(text, 'latin1');
  }

  private notify() {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** Opens a TCP (or TLS) connection and runs a conversation on it within the deadline. */
async function converse(
  target: Target,
  timeoutMs: number,
  tls: boolean,
  talk: (io: LineReader) => Promise<string>,
): Promise<ProbeResult> {
  const socket = tls
    ? tlsConnect({
        host: target.host,
        port: target.port,
        lookup: guardedLookup,
        ...(isIP(target.host) ? {} : { servername: target.host }),
      })
    : netConnect({ host: target.host, port: target.port, lookup: guardedLookup });
  const io = new LineReader(socket, target);
  const timer = setTimeout(() => socket.destroy(new TimedOut()), timeoutMs);
  let ok = false;
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once(tls ? 'secureConnect' : 'connect', () => resolve());
      socket.once('error', reject);
    });
    const message = await talk(io);
    ok = true;
    return { ok: true, message };
  } catch (err) {
    if (err instanceof ProbeFailure) return failed(err.message);
    return failed(networkFailure(err, target, io.phase, timeoutMs));
  } finally {
    clearTimeout(timer);
    if (ok) {
      // Let a final QUIT reach the peer; the socket goes either way.
      socket.end();
      setTimeout(() => socket.destroy(), 1_000).unref();
    } else {
      socket.destroy();
    }
  }
}

async function probeHttp(connection: WorkflowConnection, timeoutMs: number): Promise<ProbeResult> {
  const raw = connection.host?.trim();
  if (!raw) return failed('the connection has no host');
  const extraScheme = stringField(connection.extra, 'scheme')?.toLowerCase();
  let scheme: string;
  let host: string;
  let port: number;
  let path = '/';
  if (/^https?:\/\//i.test(raw)) {
    // Airflow HTTP connections often carry the scheme in the host.
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return failed(`host '${printable(redactUrl(raw))}' is not a valid URL`);
    }
    scheme = url.protocol.slice(0, -1);
    host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    port = url.port ? Number(url.port) : (connection.port ?? (scheme === 'https' ? 443 : 80));
    path = url.pathname || '/';
  } else {
    host = raw;
    scheme = extraScheme ?? (connection.port === 443 ? 'https' : 'http');
    port = connection.port ?? (scheme === 'https' ? 443 : DEFAULT_PORTS.http!);
  }
  if (scheme !== 'http' && scheme !== 'https') return failed(`scheme '${printable(scheme)}' is not http or https`);
  if (!validPort(port)) return failed(`port ${port} is not a TCP port (1-65535)`);
  const refused = refusedHost(host);
  if (refused) return refusal(refused);
  const target = { host, port };
  const url = `${scheme}://${where(target)}${path}`;

  let phase = `connecting to ${where(target)}`;
  let req: ClientRequest | undefined;
  const timer = setTimeout(() => req?.destroy(new TimedOut()), timeoutMs);
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const send = scheme === 'https' ? httpsRequest : httpRequest;
      req = send({
        host,
        port,
        path,
        method: 'GET',
        agent: false,
        lookup: guardedLookup,
        headers: { 'user-agent': 'dpm-connection-probe', accept: '*/*', connection: 'close' },
      });
      req.on('socket', (socket) => {
        socket.once(scheme === 'https' ? 'secureConnect' : 'connect', () => {
          phase = `waiting for an HTTP answer from ${url}`;
        });
      });
      req.on('response', (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      });
      req.on('error', reject);
      req.end();
    });
    return status < 500 ? { ok: true, message: `HTTP ${status} from ${url}` } : failed(`HTTP ${status} from ${url}`);
  } catch (err) {
    return failed(networkFailure(err, target, phase, timeoutMs));
  } finally {
    clearTimeout(timer);
    req?.destroy();
  }
}

async function probeS3(
  connection: WorkflowConnection,
  timeoutMs: number,
  defaultEndpoint: string | undefined,
): Promise<ProbeResult> {
  const bucket = connection.schema?.trim() || stringField(connection.extra, 'bucket');
  if (!bucket) return failed('the connection names no bucket: set its schema or extra.bucket');
  const accessKey = connection.login?.trim();
  if (!accessKey || !connection.password)
    return failed('the connection has no credentials: set login (access key) and password (secret key)');
  let endpoint: string | undefined;
  try {
    endpoint = s3EndpointOf(connection, defaultEndpoint);
  } catch {
    return failed(`the S3 endpoint '${printable(redactUrl(connection.host ?? ''))}' is not a valid URL`);
  }
  const region = stringField(connection.extra, 'region_name') ?? stringField(connection.extra, 'region') ?? 'us-east-1';
  const at = endpoint ? redactUrl(endpoint) : `AWS S3 (${region})`;
  const refused = endpoint === undefined ? undefined : refusedHost(endpointTarget(endpoint, region).host);
  if (refused) return refusal(refused);
  // Agents of its own, whose connections resolve through the address guard.
  const httpAgent = new HttpAgent({ lookup: guardedLookup });
  const httpsAgent = new HttpsAgent({ lookup: guardedLookup });
  // loaded on the first S3 probe: in a Lambda the module comes from the runtime
  const { S3Client, ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    region,
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: true,
    credentials: { accessKeyId: accessKey, secretAccessKey: connection.password },
    // One attempt: a retry would only stretch the probe past its timeout.
    maxAttempts: 1,
    requestHandler: { connectionTimeout: timeoutMs, requestTimeout: timeoutMs, httpAgent, httpsAgent },
  });
  try {
    await client.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1 }), {
      abortSignal: AbortSignal.timeout(timeoutMs),
    });
    return { ok: true, message: `listed bucket '${bucket}' at ${at}` };
  } catch (err) {
    const e = err as { name?: string; Code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    // S3 error codes: https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
    const code = e.Code ?? e.name ?? '';
    const status = e.$metadata?.httpStatusCode;
    if (code === 'NoSuchBucket') return failed(`bucket '${bucket}' does not exist at ${at}`);
    if (code === 'InvalidAccessKeyId')
      return failed(`S3 at ${at} does not know the access key '${accessKey}' (InvalidAccessKeyId)`);
    if (code === 'SignatureDoesNotMatch')
      return failed(`S3 at ${at} rejected the secret key of access key '${accessKey}' (SignatureDoesNotMatch)`);
    if (code === 'AccessDenied')
      return failed(`access key '${accessKey}' may not list bucket '${bucket}' at ${at} (AccessDenied)`);
    if (status !== undefined) {
      if (status === 403) return failed(`S3 at ${at} refused access to bucket '${bucket}' (HTTP 403)`);
      if (status === 404) return failed(`bucket '${bucket}' does not exist at ${at} (HTTP 404)`);
      const known = code && !/^\d+$/.test(code) && code !== 'Unknown' ? ` ${code}` : '';
      return failed(`S3 at ${at} answered HTTP ${status}${known} listing bucket '${bucket}'`);
    }
    if (e.name === 'AbortError' || e.name === 'TimeoutError' || (err as { code?: string }).code === 'ETIMEDOUT')
      return failed(`timed out after ${seconds(timeoutMs)} s listing bucket '${bucket}' at ${at}`);
    const target = endpointTarget(endpoint, region);
    return failed(networkFailure(err, target, `listing bucket '${bucket}' at ${at}`, timeoutMs));
  } finally {
    client.destroy();
    httpAgent.destroy();
    httpsAgent.destroy();
  }
}

/**
 * Where an `s3` connection points: `extra.endpoint_url`, else its host (a URL, or a host
 * name with the scheme from `extra.scheme` or the port), else the service's default
 * endpoint, else AWS (undefined).
 */
function s3EndpointOf(connection: WorkflowConnection, defaultEndpoint: string | undefined): string | undefined {
  const explicit = stringField(connection.extra, 'endpoint_url');
  if (explicit) return new URL(explicit).toString().replace(/\/$/, '');
  const host = connection.host?.trim();
  if (host) {
    if (host.includes('://')) {
      const url = new URL(host);
      if (!url.port && connection.port) url.port = String(connection.port);
      return url.toString().replace(/\/$/, '');
    }
    const port = connection.port ?? undefined;
    const scheme = stringField(connection.extra, 'scheme') ?? (port === undefined || port === 443 ? 'https' : 'http');
    const name = isIP(host) === 6 ? `[${host}]` : host;
    return new URL(`${scheme}://${name}${port !== undefined ? `:${port}` : ''}`).toString().replace(/\/$/, '');
  }
  return defaultEndpoint || undefined;
}

function endpointTarget(endpoint: string | undefined, region: string): Target {
  if (!endpoint) return { host: `s3.${region}.amazonaws.com`, port: 443 };
  const url = new URL(endpoint);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
  };
}

/** A socket-level failure as a person reads it: refused, unresolvable, timed out, reset... */
function networkFailure(err: unknown, target: Target, phase: string, timeoutMs: number): string {
  if (err instanceof TimedOut) return `timed out after ${seconds(timeoutMs)} s ${phase}`;
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code ?? '';
  const detail = e.message ?? e.cause?.message ?? String(err);
  switch (code) {
    case 'EREFUSEDADDRESS':
      return `refused: ${printable(detail)}; not probed`;
    case 'ECONNREFUSED':
      return `connection refused by ${where(target)}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EAI_FAIL':
    case 'EAI_NODATA':
      return `cannot resolve host '${target.host}'`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
      return `no route to ${where(target)} (${code})`;
    case 'ETIMEDOUT':
      return `timed out ${phase} (${code})`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `connection reset by ${where(target)} while ${phase}`;
  }
  if (/^(ERR_SSL_|ERR_TLS_|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_)/.test(code) || code === 'EPROTO')
    return `TLS handshake with ${where(target)} failed: ${printable(detail)}`;
  return `${printable(detail)} (${phase})`;
}

const where = (target: Target) => `${isIP(target.host) === 6 ? `[${target.host}]` : target.host}:${target.port}`;

const validPort = (port: number) => Number.isInteger(port) && port >= 1 && port <= 65_535;

const seconds = (ms: number) => String(Number((ms / 1000).toFixed(2)));

function stringField(extra: Record<string, unknown> | null | undefined, name: string): string | undefined {
  const value = extra?.[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Peer text made safe to show: control characters escaped, at most 120 characters. */
function printable(text: string): string {
  const escaped = text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return escaped.length > 120 ? `${escaped.slice(0, 117)}...` : escaped;
}
