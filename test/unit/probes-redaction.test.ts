import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeConnection } from '../../shared/adapters/probes.js';
import type { WorkflowConnection } from '../../shared/ports/workflow.js';

const PASSWORD = 'url-pw-never-shown';
const TOKEN = 'url-token-never-shown';

let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    res.statusCode = 500;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const connection = (over: Partial<WorkflowConnection>): WorkflowConnection => ({
  conn_id: 'redaction_test',
  conn_type: 'generic',
  host: '127.0.0.1',
  password: 'the-connection-password',
  ...over,
});

describe('connection probes name URLs without their credentials', () => {
  it('an S3 endpoint_url with userinfo and a query', async () => {
    const result = await probeConnection(
      connection({
        conn_type: 'aws',
        host: '',
        schema: 'landing',
        login: 'AKIDLOCAL',
        extra: { endpoint_url: `http://minio:${PASSWORD}@127.0.0.1:${port}/?token=${TOKEN}` },
      }),
      's3',
      { timeoutMs: 5000 },
    );
    expect(result.ok).toBe(false);
    expect(result.message).toBe(`S3 at http://***@127.0.0.1:${port}/?*** answered HTTP 500 listing bucket 'landing'`);
    expect(result.message).not.toContain(PASSWORD);
    expect(result.message).not.toContain(TOKEN);
  });

  it('an http host that is not a valid URL', async () => {
    const result = await probeConnection(
      connection({ host: `http://ada:${PASSWORD}@127.0.0.1:99999/?token=${TOKEN}` }),
      'http',
    );
    expect(result).toEqual({ ok: false, message: "host 'http://***@127.0.0.1:99999/?***' is not a valid URL" });
  });
});
