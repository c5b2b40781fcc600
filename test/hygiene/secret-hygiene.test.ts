import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { RecordedExchange } from '../support/exchange-log.js';
import { type IntegrationRun, loadRun, readRecordLines } from './run-record.js';
import { type Exchange, formatFindings, scan, type ScanInput, sentFieldValues } from './secret-scan.js';

/**
 * Suite-wide secret hygiene: after the integration files have run (this project's
 * groupOrder puts it last), no secret value may appear in a response where the contract
 * omits it, nor anywhere in the service's log. The first part checks the checker on
 * made-up exchanges; the last test checks the real run's records.
 */

let n = 0;
function exchange(
  method: string,
  path: string,
  status: number,
  response: unknown,
  request: RecordedExchange['request'] = {},
  responseHeaders: Record<string, string> = {},
): Exchange {
  n += 1;
  return {
    type: 'exchange',
    id: `w:${n}`,
    seq: n,
    file: 'test/integration/made-up.test.ts',
    test: `case ${n}`,
    method,
    path,
    request,
    status,
    responseHeaders,
    responseText: typeof response === 'string' ? response : JSON.stringify(response),
  };
}

const input = (exchanges: Exchange[], log = '', secrets: ScanInput['secrets'] = []): ScanInput => ({
  exchanges,
  secrets,
  log,
});

const PSK = 'dpm_Zq8w3kR1xY7pLm2N';
const SHARE_SECRET = 'sh4re-s3cret-0123456789';
const PASSWORD = 'pa55word-for-the-db';

describe('the secret scan', () => {
  it('allows a pre-shared key only in the response that created it, in its `key` field', () => {
    const created = exchange('POST', '/api/dataproduct/dp-1/psk', 201, { psk: 'id-1', key: PSK });
    const clean = scan(input([created, exchange('GET', '/api/dataproduct/psk', 200, [{ psk: 'id-1' }])]));
    expect(clean.findings).toEqual([]);
    expect(clean.learned).toEqual({ 'psk-secret': 1 });

    const listed = exchange('GET', '/api/dataproduct/psk?include_deleted=true', 200, [{ psk: 'id-1', key: PSK }]);
    const { findings } = scan(input([created, listed]));
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      kind: 'psk-secret',
      where: expect.stringContaining('GET /api/dataproduct/psk?include_deleted=true → 200'),
    });
    expect(findings[0]!.origin).toContain('POST /api/dataproduct/dp-1/psk');
    expect(findings[0]!.excerpt).toContain('"key":"‹psk-secret›"');
    expect(findings[0]!.excerpt).not.toContain(PSK);
    // A second creation answer with the same key is not "the" creation: shown once.
    const again = exchange('POST', '/api/dataproduct/dp-2/psk', 201, { psk: 'id-2', key: PSK });
    expect(scan(input([created, again])).findings.length).toBeGreaterThan(0);
    // An Idempotency-Key replay (docs/identity-and-keys.md, idempotency keys) is the kept creation answer given again: allowed;
    // a "replay" of nothing that showed it is a leak.
    const replayed = exchange(
      'POST',
      '/api/dataproduct/dp-1/psk',
      201,
      { psk: 'id-1', key: PSK },
      {},
      {
        'idempotent-replayed': 'true',
      },
    );
    expect(scan(input([created, replayed])).findings).toEqual([]);
    expect(scan(input([replayed])).findings.map((f) => f.where)).toEqual([
      expect.stringContaining('a replayed answer'),
    ]);
  });

  it('flags the key elsewhere in its own creation response, and a key sent as a header anywhere', () => {
    const twice = exchange('POST', '/api/dataproduct/dp-1/psk', 201, { key: PSK, description: `copy ${PSK}` });
    expect(scan(input([twice])).findings.map((f) => f.kind)).toEqual(['psk-secret']);

    const sent = exchange('GET', '/api/mcps', 401, { error: `bad key ${PSK}`, code: 401 }, { psk: PSK });
    const header = exchange('GET', '/api/mcps', 401, { error: 'no', code: 401 }, {}, { 'www-authenticate': PSK });
    const { findings } = scan(input([sent, header]));
    expect(findings.map((f) => f.where)).toEqual([
      expect.stringMatching(/^response to GET \/api\/mcps → 401/),
      expect.stringMatching(/^response headers of GET \/api\/mcps → 401/),
    ]);
  });

  it("allows a data share's secret in its own create, read and rotate answers, not in lists or another share", () => {
    const share = { name: 'sales', secret: SHARE_SECRET };
    const allowed = [
      exchange('POST', '/api/data_shares', 201, share),
      exchange('GET', '/api/data_shares/sales', 200, share),
      exchange('POST', '/api/data_shares/sales/rotate-secret', 200, share),
    ];
    expect(scan(input(allowed)).findings).toEqual([]);

    const list = exchange('GET', '/api/data_shares?limit=10', 200, [share]);
    const conflict = exchange('POST', '/api/data_shares', 409, { error: `taken: ${SHARE_SECRET}`, code: 409 });
    const other = exchange('GET', '/api/data_shares/hr', 200, { name: 'hr', secret: SHARE_SECRET });
    const { findings } = scan(input([...allowed, list, conflict, other]));
    const where = findings.map((f) => f.where).join('\n');
    expect(where).toContain('GET /api/data_shares?limit=10 → 200');
    expect(where).toContain('POST /api/data_shares → 409');
    expect(where).toContain('disclosed for 2 different resources: sales, hr');
    expect(findings.every((f) => f.kind === 'data-share-secret')).toBe(true);
  });

  it("allows a run's webhook secret only in the E2 answer that made it: not in a delivery, the run or the feed", () => {
    const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
    const started = exchange('POST', '/api/crew-templates/t-1/run', 202, {
      correlation_id: 'c-1',
      status: 'pending',
      message: 'queued',
      webhook_secret: secret,
    });
    const clean = exchange('DELIVERY', '(webhook receiver) /runs', 200, { type: 'dpm.crew.run.event', data: {} });
    expect(scan(input([started, clean])).findings).toEqual([]);
    expect(scan(input([started])).learned).toEqual({ 'webhook-secret': 1 });
    const delivered = exchange('DELIVERY', '(webhook receiver) /runs', 200, { data: { message: secret } });
    const run = exchange('GET', '/api/crew-runs/c-1', 200, { correlation_id: 'c-1', webhook_secret: secret });
    const { findings } = scan(input([started, delivered, run]));
    expect(findings.map((f) => f.where)).toEqual([
      expect.stringContaining('DELIVERY (webhook receiver) /runs'),
      expect.stringContaining('GET /api/crew-runs/c-1'),
    ]);
  });

  it('learns write-only fields from what the tests send and allows them in no response', () => {
    const put = (status: number, response: unknown, body: unknown) =>
      exchange('PUT', '/api/migration/connections/db', status, response, { body: JSON.stringify(body) });
    const sent = { conn_type: 'generic', host: 'db', password: PASSWORD };
    const echoed = put(422, { detail: [{ type: 'missing', loc: ['body', 'port'], input: sent }] }, sent);
    const maskedEcho = put(422, { detail: [{ input: { ...sent, password: '**********' } }] }, sent);
    const ok = put(200, { conn_id: 'db', conn_type: 'generic', host: 'db' }, sent);
    const { findings, learned } = scan(input([echoed, maskedEcho, ok]));
    expect(learned).toEqual({ 'connection-password': 1 });
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ kind: 'connection-password', where: expect.stringContaining('→ 422') });
    expect(findings[0]!.excerpt).toContain('"password":"‹connection-password›"');

    const config = exchange(
      'PUT',
      '/api/migration/infrastructure-config',
      200,
      { objstore_source_access_key: 'x' },
      {
        body: JSON.stringify({ objstore_source_secret_key: 'objstore-src-secret', objstore_dest_secret_key: 'short' }),
      },
    );
    const read = exchange('GET', '/api/migration/infrastructure-config', 200, { oops: 'objstore-src-secret' });
    const result = scan(input([config, read]));
    // 'short' is under the minimum length: never learned, so never matched by chance.
    expect(result.learned).toEqual({ 'objstore-secret-key': 1 });
    expect(result.findings.map((f) => f.where)).toEqual([
      expect.stringContaining('GET /api/migration/infrastructure-config → 200'),
    ]);
  });

  it('reads write-only values from malformed bodies too, quoted or not', () => {
    expect(sentFieldValues('{"password": "a\\"b-quoted-1", oops', ['password'])).toEqual(['a"b-quoted-1']);
    expect(sentFieldValues('{"host":"h","password": unquoted-pw}', ['password'])).toEqual(['unquoted-pw']);
    expect(sentFieldValues('{"password": null}', ['password'])).toEqual([]);
    const malformed = exchange(
      'PUT',
      '/api/migration/connections/db',
      422,
      {
        detail: [
          { type: 'json_invalid', ctx: { error: `Unexpected token 'u', "password": unquoted-pw}" is not valid` } },
        ],
      },
      { body: '{"host":"h","password": unquoted-pw}' },
    );
    expect(scan(input([malformed])).findings.map((f) => f.kind)).toEqual(['connection-password']);
  });

  it('finds a secret in the service log and names the line', () => {
    const log = ['{"level":"INFO","message":"request"}', `{"level":"INFO","message":"key ${PSK}"}`].join('\n');
    const { findings } = scan(input([], log, [{ kind: 'admin-psk', value: PSK, source: 'the run' }]));
    expect(findings).toEqual([
      {
        kind: 'admin-psk',
        origin: 'from the run',
        where: 'service log line 2',
        excerpt: '…{"level":"INFO","message":"key ‹admin-psk›"}…',
      },
    ]);
  });

  it('finds any secret however JSON escapes it, and never shows it in the excerpt', () => {
    const template = { detail: [{ type: 'missing', loc: ['body', 'x'], msg: 'Field required', input: null }] };
    const templateText = JSON.stringify(template);
    fc.assert(
      fc.property(
        fc.string({
          minLength: 8,
          maxLength: 40,
          unit: fc.constantFrom('a', 'Z', '7', '"', '\\', '/', ' ', 'é', '\n'),
        }),
        (secret) => {
          for (const form of [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]) {
            fc.pre(!templateText.includes(form));
          }
          const body = JSON.stringify({ conn_type: 'x', host: 'h', password: secret });
          const leaked = { ...template, detail: [{ ...template.detail[0], input: { password: secret } }] };
          const res = scan(
            input([
              exchange('PUT', '/api/migration/connections/c', 422, leaked, { body }),
              exchange('GET', '/', 200, template),
            ]),
          );
          expect(res.findings).toHaveLength(1);
          expect(res.findings[0]!.excerpt).not.toContain(JSON.stringify(secret).slice(1, -1));
          expect(res.findings[0]!.excerpt).toContain('‹connection-password›');
        },
      ),
      { numRuns: 200 },
    );
  });

  it('fails clearly when there is no finished integration run to check', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dpm-hygiene-'));
    try {
      const file = join(dir, 'integration-run.json');
      expect(() => loadRun(undefined, file)).toThrow(/no integration run record at .*run the integration tests first/);
      const run: IntegrationRun = { runId: 'r', startedAt: 'then', dataDir: dir, logFile: 'x', secrets: [] };
      writeFileSync(file, JSON.stringify(run));
      expect(() => loadRun(undefined, file)).toThrow(/has not finished/);
      writeFileSync(file, JSON.stringify({ ...run, finishedAt: 'now', dataDir: join(dir, 'gone') }));
      expect(() => loadRun(undefined, file)).toThrow(/data directory .* is gone/);
      writeFileSync(file, JSON.stringify({ ...run, finishedAt: 'now' }));
      expect(loadRun(undefined, file).run.runId).toBe('r');
      // The run of the same invocation wins over whatever the file says.
      expect(loadRun({ ...run, runId: 'mine' }, file).run.runId).toBe('mine');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the integration run', () => {
  const summary: string[] = [];
  afterAll(() => {
    if (summary.length) console.info(summary.join('\n'));
  });

  it('shows no secret in a response where the contract omits it, nor in the service log', () => {
    const { run, which } = loadRun(inject('integrationRun'));
    const lines = readRecordLines(run);
    const exchanges: Exchange[] = [];
    const secrets: ScanInput['secrets'][number][] = [...run.secrets];
    for (const { source, line } of lines) {
      if (line.type === 'exchange') exchanges.push({ ...line, id: `${source}:${line.seq}` });
      else
        secrets.push({ kind: line.kind, value: line.value, source: `${line.source} in ${line.file} › ${line.test}` });
    }
    // A check over nothing would pass whatever the service does.
    expect(exchanges.length, `${which} recorded no exchange in ${run.dataDir}`).toBeGreaterThan(0);
    expect(existsSync(run.logFile), `${which} left no service log at ${run.logFile}`).toBe(true);
    const log = readFileSync(run.logFile, 'utf8');
    expect(log.length, `the service log of ${which} is empty`).toBeGreaterThan(0);

    const result = scan({ exchanges, secrets, log });
    const files = new Set(exchanges.map((e) => e.file));
    summary.push(
      `secret hygiene: ${which}: ${result.exchanges} exchanges from ${files.size} test files, ` +
        `${log.split('\n').length - 1} log lines; secrets learned: ${JSON.stringify(result.learned)}`,
    );
    // With the probes in the run, every kind of secret the contract protects was exercised.
    if ([...files].some((f) => f.endsWith('secret-hygiene-probes.test.ts'))) {
      for (const kind of ['psk-secret', 'data-share-secret', 'objstore-secret-key', 'connection-password']) {
        expect(result.learned[kind] ?? 0, `no ${kind} learned from the probes`).toBeGreaterThan(0);
      }
    }
    // With the webhook tests in the run, what their receivers got was read too.
    if ([...files].some((f) => f.endsWith('run-webhooks.test.ts') || f.endsWith('webhooks-delivery.test.ts'))) {
      expect(exchanges.filter((e) => e.method === 'DELIVERY').length, 'no webhook delivery read').toBeGreaterThan(0);
      expect(result.learned['webhook-secret'] ?? 0, 'no webhook secret learned').toBeGreaterThan(0);
    }
    expect(
      result.findings.length,
      `${result.findings.length} secret leak(s) in ${which}:\n${formatFindings(result.findings)}`,
    ).toBe(0);
  });
});
