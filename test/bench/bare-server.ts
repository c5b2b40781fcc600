import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDecisionStore } from '../../functions/decisions/store.js';

/**
 * The yardstick of the endpoint rows: `node:http` and a DynamoDB document client making
 * the same calls as the service's GET version, E1 and GET of an MCP server, and nothing else (no framework, no
 * authentication, no validation, no log line). What the service costs beyond it is what
 * its framework, authentication, validation and logging cost.
 */
export interface BareServer {
  readonly baseUrl: string;
  stop(): Promise<void>;
}

const MCP = /^\/mcps\/([^/]+)$/;
const VERSION = /^\/decisions\/([^/]+)\/([^/]+)\/versions\/(\d+)(\/approve)?$/;

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startBareServer(
  db: DynamoDBDocumentClient,
  tables: { decisions: string; mcpServers: string },
): Promise<BareServer> {
  const table = tables.decisions;
  const store = new DynamoDecisionStore(db, table);
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    try {
      const mcp = MCP.exec(req.url ?? '');
      if (mcp && req.method === 'GET') {
        const out = await db.send(new GetCommand({ TableName: tables.mcpServers, Key: { id: mcp[1] } }));
        return out.Item ? send(200, out.Item) : send(404, { error: 'Not Found', code: 404 });
      }
      const m = VERSION.exec(req.url ?? '');
      if (!m) return send(404, { error: 'Not Found', code: 404 });
      const [, workspace, key, v, approve] = m as unknown as [string, string, string, string, string | undefined];
      const version = Number(v);
      if (req.method === 'GET' && !approve) {
        const out = await db.send(
          new GetCommand({ TableName: table, Key: { pk: `D#${workspace}#${key}`, sk: `V#${v.padStart(10, '0')}` } }),
        );
        return out.Item ? send(200, out.Item) : send(404, { error: 'Not Found', code: 404 });
      }
      if (req.method === 'POST' && approve) {
        const { notes } = JSON.parse((await bodyOf(req)) || '{}') as { notes?: string };
        const approver = 'bench-approver';
        const principal = '["https://bench.test","bench-approver"]';
        const at = new Date().toISOString();
        const result = await store.transition(workspace, key, version, {
          from: 'submitted',
          to: 'approved',
          set: { approved_by: approver, approved_by_principal: principal, approved_at: at, notes: notes ?? null },
          remove: [],
          history: { from: 'submitted', to: 'approved', action: 'approve', by: approver, at, notes: notes ?? null },
          differentFrom: { created_by_principal: principal, submitted_by_principal: principal },
          published: true,
          change: { type: 'decision.version.approved', actor: approver, at },
        });
        return result.ok ? send(200, result.item) : send(409, { error: 'Conflict', code: 409 });
      }
      return send(405, { error: 'Method Not Allowed', code: 405 });
    } catch (err) {
      send(500, { error: String(err), code: 500 });
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
