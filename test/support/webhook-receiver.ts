import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
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
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const path = req.url ?? '/';
        let event: ReceivedHook['event'];
        try {
          event = JSON.parse(body) as ReceivedHook['event'];
        } catch {
          event = {} as ReceivedHook['event'];
        }
        const hook = { path, headers: req.headers, body, event, at: Date.now() };
        this.received.push(hook);
        this.onReceive?.(hook);
        res.writeHead(this.answer(path)).end();
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

/** Polls `probe` until it answers something other than undefined, or fails after `ms`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
