import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP proxy in front of an emulator (DynamoDB Local, fauxqs) that names each AWS
 * call passing through it: `DynamoDB UpdateItem`, `SQS SendMessage`, `S3 DeleteObjects`... The
 * cold starts (test/bench/cold-start.ts) reach the emulators through it, so each row shows the
 * calls the Lambda made and those its bare handler made, and whether they are the same.
 */
export interface RecordingProxy {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/** The calls recorded by the proxies (and the KMS stand-in) that share it. */
export class CallLog {
  private calls: string[] = [];

  note(call: string): void {
    this.calls.push(call);
  }

  /** The calls recorded since the last `take`, in order. */
  take(): string[] {
    const taken = this.calls;
    this.calls = [];
    return taken;
  }
}

/** The S3 REST operation of a request (the ones the service makes), from its method and query. */
function s3Operation(method: string, url: URL): string {
  const q = url.searchParams;
  const objectKey = url.pathname.split('/').filter(Boolean).length > 1;
  if (method === 'GET' && q.get('list-type') === '2') return 'ListObjectsV2';
  if (method === 'POST' && q.has('delete')) return 'DeleteObjects';
  if (method === 'PUT') return objectKey ? 'PutObject' : 'CreateBucket';
  if (method === 'DELETE') return objectKey ? 'DeleteObject' : 'DeleteBucket';
  if (method === 'HEAD') return objectKey ? 'HeadObject' : 'HeadBucket';
  if (method === 'GET') return objectKey ? 'GetObject' : 'ListObjects';
  return `${method} ${url.pathname}`;
}

/** `DynamoDB_20120810.UpdateItem` → `DynamoDB UpdateItem`; `AmazonSQS.SendMessage` → `SQS SendMessage`; else S3. */
export function callName(req: Pick<IncomingMessage, 'method' | 'url' | 'headers'>): string {
  const target = req.headers['x-amz-target'];
  if (typeof target === 'string') {
    const [service = '', operation = ''] = target.split('.');
    if (service.startsWith('DynamoDB')) return `DynamoDB ${operation}`;
    if (service === 'AmazonSQS') return `SQS ${operation}`;
    return `${service} ${operation}`;
  }
  // SQS's query protocol (older SDKs) names the action in the body; the SDK v3 here speaks JSON.
  return `S3 ${s3Operation(req.method ?? 'GET', new URL(req.url ?? '/', 'http://x'))}`;
}

export async function startRecordingProxy(upstream: string, log: CallLog): Promise<RecordingProxy> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true });
  const server: Server = createServer((req, res) => {
    log.note(callName(req));
    const forwarded = request(
      {
        agent,
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', (err) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`call recorder: ${err.message}`);
    });
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () =>
      new Promise((resolve) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
