import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST a receiver got: its headers and its body exactly as sent. */
export interface ReceivedHook {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The envelope, parsed. */
  readonly event: {
    id: string;
    type: string;
    subject: string;
    sequence: number;
    data: Record<string, unknown>;
  } & Record<string, unknown>;
  readonly at: number;
}

/** Reads a request whole and hands it on as a ReceivedHook (its body parsed, when it is JSON). */
function receive(req: IncomingMessage, then: (hook: ReceivedHook) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    let event: ReceivedHook['event'];
    try {
      event = JSON.parse(body) as ReceivedHook['event'];
    } catch {
      event = {} as ReceivedHook['event'];
    }
    then({ path: req.url ?? '/', headers: req.headers, body, event, at: Date.now() });
  });
}

/**
 * A webhook receiver on loopback (node:http): records every request and answers what
 * `answer` says for its path (204 by default). It can go down and come back on the same port.
 */
export class WebhookReceiver {
  readonly received: ReceivedHook[] = [];
  answer: (path: string) => number = () => 204;
  private server: Server | undefined;
  private port = 0;

  /** `onReceive` sees every request as it arrives (the integration tests record them). */
  constructor(private readonly onReceive?: (hook: ReceivedHook) => void) {}

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      receive(req, (hook) => {
        this.received.push(hook);
        this.onReceive?.(hook);
        res.writeHead(this.answer(hook.path)).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Stops listening (connections are refused) until `start` again, on the same port. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** What arrived at `path`. */
  at(path: string): ReceivedHook[] {
    return this.received.filter((r) => r.path === path);
  }
}

/**
 * A webhook receiver on loopback that stalls: it takes each request and, when `hangs` says
 * so, never answers (until `release`), as a receiver that accepts and hangs does; others get
 * 204. It counts the requests open at once, per path, and the most there ever were (per path
 * and at all paths together).
 */
export class HangingReceiver {
  readonly received: ReceivedHook[] = [];
  hangs: (hook: ReceivedHook) => boolean = () => true;
  private readonly open = new Map<string, Set<ServerResponse>>();
  private readonly most = new Map<string, number>();
  private mostAtOnce = 0;
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      const path = req.url ?? '/';
      const mine = this.open.get(path) ?? new Set<ServerResponse>();
      this.open.set(path, mine);
      mine.add(res);
      this.most.set(path, Math.max(this.most.get(path) ?? 0, mine.size));
      this.mostAtOnce = Math.max(this.mostAtOnce, this.openAt());
      res.on('close', () => mine.delete(res));
      receive(req, (hook) => {
        this.received.push(hook);
        if (!this.hangs(hook)) res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Requests at `path` (every path when left out) open now: received and not answered. */
  openAt(path?: string): number {
    if (path !== undefined) return this.open.get(path)?.size ?? 0;
    return [...this.open.values()].reduce((n, s) => n + s.size, 0);
  }

  /** The most requests ever open at once at `path`; with no path, at all paths together. */
  mostOpenAt(path?: string): number {
    return path === undefined ? this.mostAtOnce : (this.most.get(path) ?? 0);
  }

  /** Drops every request it holds (the sender sees the connection reset). */
  release(): void {
    for (const set of this.open.values()) for (const res of set) res.destroy();
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    this.release();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
