import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, notYet } from '../../support/eventually.js';
import { adminPsk, adminToken, api, slug, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * The real NX1 Python SDK (test/sdk/nx1-sdk, vendored unmodified; SOURCE.md names its
 * commit) against the suite's platform over HTTPS (docs/sdk.md): its own code, given only
 * `api_key` and `host`, once with `verify_ssl=False` and once trusting the platform's
 * certificate through `REQUESTS_CA_BUNDLE`; and its `nx1` command. Each call runs in python3
 * (test/sdk/sdk_call.py); without python3 and the SDK's Debian packages every test here
 * fails, naming them (.ci/run installs them).
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SDK_SRC = join(ROOT, 'test/sdk/nx1-sdk/src');
const SDK_CALL = join(ROOT, 'test/sdk/sdk_call.py');
/** What the SDK imports (`nx1_sdk` and its CLI), and the Debian packages that bring them. */
const SDK_IMPORTS = 'import requests, urllib3, yaml, websocket, tabulate';
const DEBIAN_PACKAGES = 'python3 python3-requests python3-yaml python3-websocket python3-tabulate';
/** Python calls end long before this; it only keeps a hung call from hanging the suite. */
const PYTHON_TIMEOUT_MS = 60_000;

/** The first interpreter that has the SDK's dependencies (a pyenv python3 may lack Debian's). */
let python: string;
/** An empty profiles file: the SDK must not read the user's ~/.nx1/profiles. */
let home: string;

beforeAll(() => {
  const candidates = [...new Set([process.env.NX1_SDK_PYTHON, 'python3', '/usr/bin/python3'])].filter(
    (c): c is string => !!c,
  );
  const tried: string[] = [];
  for (const candidate of candidates) {
    const probe = spawnSync(candidate, ['-c', SDK_IMPORTS], { encoding: 'utf8', timeout: PYTHON_TIMEOUT_MS });
    if (probe.status === 0) {
      python = candidate;
      break;
    }
    tried.push(`${candidate}: ${probe.error ? probe.error.message : probe.stderr.trim().split('\n').pop()}`);
  }
  if (!python) {
    throw new Error(
      `no python3 with the NX1 SDK's dependencies (${tried.join('; ')}): ` +
        `apt-get install ${DEBIAN_PACKAGES} (.ci/run does when they are missing)`,
    );
  }
  home = mkdtempSync(join(tmpdir(), 'dpm-nx1-sdk-'));
});
afterAll(() => {
  if (home) rmSync(home, { recursive: true, force: true });
});

/** The child's environment: nothing of this process's NX1_*, REQUESTS_CA_BUNDLE or proxies. */
function pythonEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'C.UTF-8',
    HOME: home,
    PYTHONPATH: SDK_SRC,
    // No __pycache__ inside the vendored tree.
    PYTHONDONTWRITEBYTECODE: '1',
    NX1_PROFILES_PATH: join(home, 'profiles'),
    NO_PROXY: '*',
  };
  return { ...env, ...extra };
}

/**
 * A child process run to its end without blocking this process's event loop (spawnSync
 * would: a kept-alive connection the platform closes meanwhile would then be reused
 * before its close is seen, and the next fetch fail with "other side closed").
 */
function run(
  command: string,
  args: readonly string[],
  options: { input?: string; env: Record<string, string> },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, timeout: PYTHON_TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

interface SdkResult {
  ok: boolean;
  result?: any;
  error?: string;
  message?: string;
}

interface SdkCall {
  readonly method: string;
  readonly args?: readonly unknown[];
  readonly kwargs?: Record<string, unknown>;
}

/**
 * Makes `calls` on one `NX1Client(api_key, host[, verify_ssl])` in python3; `caBundle` is
 * given as REQUESTS_CA_BUNDLE.
 */
async function sdk(
  client: { apiKey: string; host: string; verifySsl?: boolean; caBundle?: string },
  calls: readonly SdkCall[],
): Promise<{ baseUrl: string; results: SdkResult[] }> {
  const spec = {
    api_key: client.apiKey,
    host: client.host,
    ...(client.verifySsl === undefined ? {} : { verify_ssl: client.verifySsl }),
    calls,
  };
  const done = await run(python, [SDK_CALL], {
    input: JSON.stringify(spec),
    env: pythonEnv(client.caBundle ? { REQUESTS_CA_BUNDLE: client.caBundle } : {}),
  });
  expect(done.status, `python3 ${SDK_CALL} failed:\n${done.stderr}`).toBe(0);
  const out = JSON.parse(done.stdout) as { base_url: string; results: SdkResult[] };
  return { baseUrl: out.base_url, results: out.results };
}

/** The results of `calls`, each expected to have succeeded. */
async function sdkOk(client: Parameters<typeof sdk>[0], calls: readonly SdkCall[]): Promise<any[]> {
  const { results } = await sdk(client, calls);
  results.forEach((r, i) => expect(r, `${calls[i]!.method}: ${r.message}`).toMatchObject({ ok: true }));
  return results.map((r) => r.result);
}

/** The `nx1` command (the SDK's console script, `nx1_sdk.cli:main`), host and key from its environment variables. */
function nx1(args: readonly string[], client: { apiKey: string; host: string; caBundle?: string }) {
  return run(python, ['-c', 'import sys; from nx1_sdk.cli import main; sys.argv[0] = "nx1"; main()', ...args], {
    env: pythonEnv({
      NX1_HOST: client.host,
      NX1_API_KEY: client.apiKey,
      ...(client.caBundle ? { REQUESTS_CA_BUNDLE: client.caBundle } : {}),
    }),
  });
}

const httpsBaseUrl = () => provided('httpsBaseUrl');
/** The two ways docs/sdk.md shows: certificate checks off, or the platform's certificate trusted. */
const insecure = () => ({ apiKey: adminPsk(), host: httpsBaseUrl(), verifySsl: false });
const trusted = () => ({ apiKey: adminPsk(), host: httpsBaseUrl(), caBundle: provided('caCertFile') });

describe('the NX1 SDK over HTTPS', () => {
  it('health: ping, version and build_number, with verify_ssl=False and with REQUESTS_CA_BUNDLE', async () => {
    const expected = (await api('/api/health/ping')).body as { status: string; version: string; build_number: string };
    expect(expected.status).toBe('ok');
    for (const client of [insecure(), trusted()]) {
      const { baseUrl, results } = await sdk(client, [
        { method: 'health.ping' },
        { method: 'health.version' },
        { method: 'health.build_number' },
        { method: 'ping' },
      ]);
      expect(baseUrl).toBe(`${httpsBaseUrl()}/`);
      expect(results).toEqual([
        { ok: true, result: expected },
        { ok: true, result: expected.version },
        { ok: true, result: expected.build_number },
        { ok: true, result: expected },
      ]);
    }
  });

  it('checks the certificate by default: without REQUESTS_CA_BUNDLE the self-signed one is refused', async () => {
    const { results } = await sdk({ apiKey: adminPsk(), host: httpsBaseUrl() }, [{ method: 'health.ping' }]);
    expect(results[0]).toMatchObject({ ok: false, error: 'NX1APIError' });
    expect(results[0]!.message).toMatch(/CERTIFICATE_VERIFY_FAILED/);
  });

  it("passes Python's strict X.509 checks (VERIFY_X509_STRICT, Python 3.13's default) for 127.0.0.1 and localhost", async () => {
    const { port } = new URL(httpsBaseUrl());
    const script = [
      'import socket, ssl, sys',
      'ctx = ssl.create_default_context(cafile=sys.argv[1])',
      'ctx.verify_flags |= ssl.VERIFY_X509_STRICT',
      'for name in ("127.0.0.1", "localhost"):',
      '    with socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=10) as raw:',
      '        with ctx.wrap_socket(raw, server_hostname=name) as tls:',
      '            print(name, tls.version())',
    ].join('\n');
    const run = spawnSync(python, ['-c', script, provided('caCertFile'), port], {
      encoding: 'utf8',
      env: pythonEnv(),
      timeout: PYTHON_TIMEOUT_MS,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^127\.0\.0\.1 TLSv1\.3\nlocalhost TLSv1\.3\n$/);
  });

  it('turns an http:// host into https://: the HTTPS port works so given, the HTTP port cannot', async () => {
    const httpsPort = new URL(httpsBaseUrl()).port;
    const viaHttpsPort = await sdk({ ...insecure(), host: `http://127.0.0.1:${httpsPort}` }, [
      { method: 'health.ping' },
    ]);
    expect(viaHttpsPort.baseUrl).toBe(`https://127.0.0.1:${httpsPort}/`);
    expect(viaHttpsPort.results[0]).toMatchObject({ ok: true, result: { status: 'ok' } });

    // The report: `host="http://127.0.0.1:3000"` reaches the plain-HTTP port with TLS.
    const viaHttpPort = await sdk({ ...insecure(), host: provided('baseUrl') }, [{ method: 'health.ping' }]);
    expect(viaHttpPort.baseUrl).toBe(`${provided('baseUrl').replace('http://', 'https://')}/`);
    expect(viaHttpPort.results[0]).toMatchObject({ ok: false, error: 'NX1APIError' });
    expect(viaHttpPort.results[0]!.message).toMatch(/SSL/);
  });

  describe('data_shares, with a key a user made', () => {
    let userKey: string;
    beforeAll(async () => {
      const made = await api('/api/dataproduct/default/psk', {
        method: 'POST',
        token: await token('sdk-user'),
        body: { description: 'the NX1 SDK test', validity_days: 1 },
      });
      expect(made.status, made.text).toBe(201);
      userKey = made.body.key;
    });
    const asUser = () => ({ apiKey: userKey, host: httpsBaseUrl(), caBundle: provided('caCertFile') });

    it('create, get_all, get and delete by name', async () => {
      const name = slug('sdk-share');
      const [created, all, read, deleted, gone] = (
        await sdk(asUser(), [
          {
            method: 'data_shares.create',
            kwargs: { name, description: 'made by the SDK', tables: ['sales.core.orders'] },
          },
          { method: 'data_shares.get_all' },
          { method: 'data_shares.get', args: [name] },
          { method: 'data_shares.delete', args: [name] },
          { method: 'data_shares.get', args: [name] },
        ])
      ).results;
      expect(created).toMatchObject({
        ok: true,
        result: {
          name,
          owner: 'sdk-user',
          description: 'made by the SDK',
          tables: ['sales.core.orders'],
          secret: expect.any(String),
        },
      });
      const share = created!.result;
      expect(all).toMatchObject({ ok: true });
      expect(all!.result).toContainEqual({ ...share, secret: null });
      expect(read).toEqual({ ok: true, result: share });
      // 204: the SDK answers an empty body with {}.
      expect(deleted).toEqual({ ok: true, result: {} });
      expect(gone).toMatchObject({ ok: false, error: 'NX1APIError' });
      expect(gone!.message).toMatch(/^HTTP 404: /);
    });

    // docs/sdk.md: a share's id works wherever its name does (issue 27 item 6).
    it('get and delete by id', async () => {
      const name = slug('sdk-share');
      const [created] = await sdkOk(asUser(), [{ method: 'data_shares.create', kwargs: { name } }]);
      const [read, deleted] = (
        await sdk(asUser(), [
          { method: 'data_shares.get', args: [created.id] },
          { method: 'data_shares.delete', args: [created.id] },
        ])
      ).results;
      expect(read).toEqual({ ok: true, result: created });
      expect(deleted).toEqual({ ok: true, result: {} });
      const [gone] = (await sdk(asUser(), [{ method: 'data_shares.get', args: [name] }])).results;
      expect(gone!.message).toMatch(/^HTTP 404: /);
    });

    it('answers errors as the SDK reads them: 409 for a name taken, 404 for a share of nobody', async () => {
      const name = slug('sdk-share');
      const [first, again, missing] = (
        await sdk(asUser(), [
          { method: 'data_shares.create', kwargs: { name } },
          { method: 'data_shares.create', kwargs: { name } },
          { method: 'data_shares.get', args: [slug('no-such-share')] },
        ])
      ).results;
      expect(first).toMatchObject({ ok: true, result: { name } });
      expect(again).toMatchObject({ ok: false, error: 'NX1APIError' });
      expect(again!.message).toMatch(/^HTTP 409: /);
      expect(missing!.message).toMatch(/^HTTP 404: /);
      await sdkOk(asUser(), [{ method: 'data_shares.delete', args: [name] }]);
    });

    it('nx1 shares list, get and delete', async () => {
      const name = slug('sdk-share');
      const [share] = await sdkOk(asUser(), [{ method: 'data_shares.create', kwargs: { name } }]);
      const list = await nx1(['shares', 'list'], asUser());
      expect(list.status, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toContainEqual({ ...share, secret: null });
      const get = await nx1(['shares', 'get', name], asUser());
      expect(get.status, get.stderr).toBe(0);
      expect(JSON.parse(get.stdout)).toEqual(share);
      const removed = await nx1(['shares', 'delete', name], asUser());
      expect(removed.status, removed.stderr).toBe(0);
      expect(removed.stdout).toMatch(/Deleted/);
      const gone = await nx1(['shares', 'get', name], asUser());
      expect(gone.status).toBe(1);
      expect(gone.stderr).toMatch(/API Error: HTTP 404: /);
    });
  });

  describe('metastore: every method but the tag-role associations, on the built-in metastore', () => {
    it('engines; DDL of a catalog, schema and table; their lists and details; preview; alter; drops', async () => {
      const catalog = slug('sdkmeta');
      const columns = [
        { name: 'order_id', type: 'bigint', comment: 'the order', nullable: false },
        { name: 'amount', type: 'decimal(10,2)' },
      ];
      const [engines, createdCatalog, createdSchema, createdTable] = await sdkOk(trusted(), [
        { method: 'metastore.get_engines' },
        { method: 'metastore.create_catalog', args: [catalog, 'iceberg'] },
        { method: 'metastore.create_schema', args: [catalog, 'core', { location: 's3://lake/core' }] },
        { method: 'metastore.create_table', args: [catalog, 'core', 'orders', columns, { format: 'PARQUET' }] },
      ]);
      expect(engines).toEqual({ engines: [{ name: 'builtin', default: true }] });
      expect(createdCatalog).toEqual({ name: catalog, type: 'iceberg', schema_count: 0 });
      expect(createdSchema).toEqual({ name: 'core', table_count: 0 });
      expect(createdTable).toMatchObject({
        catalog,
        schema: 'core',
        table: 'orders',
        columns: [
          { name: 'order_id', type: 'bigint', description: 'the order' },
          { name: 'amount', type: 'decimal(10,2)', description: null },
        ],
      });

      const [catalogs, schemas, tables, catalogsDetails, schemasDetails, tablesDetails] = await sdkOk(trusted(), [
        { method: 'metastore.get_catalogs' },
        { method: 'metastore.get_schemas', args: [catalog] },
        { method: 'metastore.get_tables', args: [catalog, 'core'] },
        { method: 'metastore.get_catalogs_details' },
        { method: 'metastore.get_schemas_details', args: [catalog] },
        { method: 'metastore.get_tables_details', args: [catalog, 'core'] },
      ]);
      expect(catalogs.catalogs).toContain(catalog);
      expect(schemas).toEqual({ schemas: ['core'] });
      expect(tables).toEqual({ tables: ['orders'] });
      expect(catalogsDetails.catalogs).toContainEqual({ name: catalog, type: 'iceberg', schema_count: 1 });
      expect(schemasDetails).toEqual({ schemas: [{ name: 'core', table_count: 1 }] });
      const { columns: _columns, ...summary } = createdTable;
      expect(tablesDetails).toEqual({ tables: [summary] });

      const [details, metadata, cols, preview] = await sdkOk(trusted(), [
        { method: 'metastore.get_table_details', args: [catalog, 'core', 'orders'] },
        { method: 'metastore.get_table_metadata', args: [catalog, 'core', 'orders'] },
        { method: 'metastore.get_columns', args: [catalog, 'core', 'orders'] },
        { method: 'metastore.get_table_preview', args: [catalog, 'core', 'orders'], kwargs: { limit: 5 } },
      ]);
      expect(details).toEqual(createdTable);
      expect(metadata).toEqual(createdTable);
      expect(cols).toEqual({ columns: createdTable.columns });
      // The built-in metastore holds no rows.
      expect(preview).toEqual({ columns: ['order_id', 'amount'], rows: [] });

      const [altered] = await sdkOk(trusted(), [
        {
          method: 'metastore.alter_table',
          args: [
            catalog,
            'core',
            'orders',
            [
              { op: 'add_column', name: 'status', type: 'varchar' },
              { op: 'rename_column', name: 'amount', new_name: 'total' },
              { op: 'set_column_comment', name: 'status', comment: 'open or closed' },
              { op: 'set_comment', comment: 'orders, one row each' },
            ],
          ],
        },
      ]);
      expect(altered).toMatchObject({
        description: 'orders, one row each',
        columns: [
          { name: 'order_id', type: 'bigint' },
          { name: 'total', type: 'decimal(10,2)' },
          { name: 'status', type: 'varchar', description: 'open or closed' },
        ],
      });
      // All or none: a refused operation changes nothing.
      const [refused] = (
        await sdk(trusted(), [
          {
            method: 'metastore.alter_table',
            args: [
              catalog,
              'core',
              'orders',
              [
                { op: 'drop_column', name: 'status' },
                { op: 'drop_column', name: 'nope' },
              ],
            ],
          },
        ])
      ).results;
      expect(refused!.message).toMatch(/^HTTP 422: /);
      expect(
        (await sdkOk(trusted(), [{ method: 'metastore.get_columns', args: [catalog, 'core', 'orders'] }]))[0],
      ).toEqual({
        columns: altered.columns,
      });

      // Drops: a catalog that still has a schema is a 409; children first, then it goes.
      const [notEmpty] = (await sdk(trusted(), [{ method: 'metastore.delete_catalog', args: [catalog] }])).results;
      expect(notEmpty!.message).toMatch(/^HTTP 409: /);
      expect(
        await sdkOk(trusted(), [
          { method: 'metastore.delete_table', args: [catalog, 'core', 'orders'] },
          { method: 'metastore.delete_schema', args: [catalog, 'core'] },
          { method: 'metastore.delete_catalog', args: [catalog] },
        ]),
      ).toEqual([{}, {}, {}]);
      const [gone] = (await sdk(trusted(), [{ method: 'metastore.get_schemas', args: [catalog] }])).results;
      expect(gone!.message).toMatch(/^HTTP 404: /);
    });

    it('tags and domains: lists, and tagging and domain assignment by catalog.schema.table, dotted names quoted', async () => {
      const admin = await adminToken('sdk-admin');
      const domain = slug('sdk-dom');
      const made = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } });
      expect(made.status, made.text).toBe(201);
      const catalog = `${slug('sdk')}.eu`;
      await sdkOk(trusted(), [
        { method: 'metastore.create_catalog', args: [catalog, 'hive'] },
        { method: 'metastore.create_schema', args: [catalog, 'core'] },
        { method: 'metastore.create_table', args: [catalog, 'core', 'orders', [{ name: 'id', type: 'bigint' }]] },
      ]);
      const ref = `"${catalog}".core.orders`;
      const tag = slug('sdk-tag');
      const [tagged, domained, tags, domains] = await sdkOk(trusted(), [
        { method: 'metastore.set_table_tag', args: [tag, ref] },
        { method: 'metastore.set_table_domain', args: [domain, ref] },
        { method: 'metastore.get_tags' },
        { method: 'metastore.get_domains' },
      ]);
      expect(tagged).toMatchObject({ catalog, schema: 'core', table: 'orders', tags: [tag] });
      expect(domained).toMatchObject({ catalog, table: 'orders', tags: [tag], domain });
      expect(tags).toContain(tag);
      expect(domains.domains).toContainEqual({ name: domain, urn: `urn:li:domain:${domain}`, description: null });
      const [untagged, left] = await sdkOk(trusted(), [
        { method: 'metastore.delete_table_tag', args: [tag, ref] },
        { method: 'metastore.delete_table_domain', args: [domain, ref] },
      ]);
      expect(untagged).toMatchObject({ tags: [] });
      expect(left).toMatchObject({ tags: [], domain: null });
      // Unquoted, the dotted catalog name reads as four parts: refused.
      const [unquoted] = (
        await sdk(trusted(), [{ method: 'metastore.set_table_tag', args: [tag, `${catalog}.core.orders`] }])
      ).results;
      expect(unquoted!.message).toMatch(/^HTTP 422: /);
    });

    it('nx1 domains, nx1 create-table and nx1 tables-details', async () => {
      const admin = await adminToken('sdk-admin');
      const domain = slug('sdk-dom');
      expect((await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } })).status).toBe(
        201,
      );
      const domains = await nx1(['domains'], trusted());
      expect(domains.status, domains.stderr).toBe(0);
      expect(JSON.parse(domains.stdout).domains.map((d: { name: string }) => d.name)).toContain(domain);

      const catalog = slug('sdkcli');
      await sdkOk(trusted(), [
        { method: 'metastore.create_catalog', args: [catalog, 'hive'] },
        { method: 'metastore.create_schema', args: [catalog, 'core'] },
      ]);
      const created = await nx1(
        [
          'create-table',
          '--catalog',
          catalog,
          '--schema',
          'core',
          '--table',
          'events',
          '--columns',
          '[{"name": "id", "type": "bigint"}, {"name": "at", "type": "timestamp(3)", "comment": "when"}]',
        ],
        trusted(),
      );
      expect(created.status, created.stderr).toBe(0);
      expect(JSON.parse(created.stdout)).toMatchObject({
        catalog,
        schema: 'core',
        table: 'events',
        columns: [
          { name: 'id', type: 'bigint' },
          { name: 'at', type: 'timestamp(3)', description: 'when' },
        ],
      });
      const details = await nx1(['tables-details', '--catalog', catalog, '--schema', 'core'], trusted());
      expect(details.status, details.stderr).toBe(0);
      expect(JSON.parse(details.stdout).tables.map((t: { table: string }) => t.table)).toEqual(['events']);
    });
  });

  describe('queries: ask and suggest, over a domain with tables', () => {
    let domain: string;
    let catalog: string;
    beforeAll(async () => {
      const admin = await adminToken('sdk-admin');
      domain = slug('sdk-dom');
      catalog = slug('sdkcat');
      const made = await api('/api/catalog/domains', { method: 'POST', token: admin, body: { name: domain } });
      expect(made.status, made.text).toBe(201);
      const registered = await api(`/api/metastore/catalogs/${catalog}/schemas/sales/tables/orders`, {
        method: 'PUT',
        token: admin,
        body: {
          domain,
          columns: [
            { name: 'order_id', type: 'bigint' },
            { name: 'amount', type: 'decimal(10,2)' },
          ],
        },
      });
      expect(registered.status, registered.text).toBe(200);
    });

    it("queries.ask answers the SQL over the domain's tables; queries.suggest the E12 suggestions", async () => {
      const prompt = 'How many orders are there?';
      const [asked, suggested] = await sdkOk(trusted(), [
        { method: 'queries.ask', args: [domain, prompt] },
        { method: 'queries.suggest', args: [domain] },
      ]);
      const viaHttp = await api('/api/query/ask', {
        method: 'POST',
        psk: adminPsk(),
        body: { domain, prompt },
      });
      expect(viaHttp.status, viaHttp.text).toBe(200);
      expect(asked).toEqual(viaHttp.body);
      expect(asked).toMatchObject({
        domain,
        prompt,
        tables: [`${catalog}.sales.orders`],
        sql: expect.stringMatching(/^SELECT /),
      });
      expect((await api(`/api/query/suggest/${domain}`, { psk: adminPsk() })).body).toEqual(suggested);
      expect(suggested.length).toBeGreaterThan(0);
      expect(suggested[0]).toMatchObject({ sql: expect.stringContaining(`"${catalog}"."sales"."orders"`) });
    });

    it('an unknown domain: the HTTP 404 as the SDK reports it; nx1 ask and nx1 suggest print the answers', async () => {
      const [missing] = (await sdk(trusted(), [{ method: 'queries.ask', args: [slug('no-such-domain'), 'anything?'] }]))
        .results;
      expect(missing).toMatchObject({ ok: false, error: 'NX1APIError' });
      expect(missing!.message).toMatch(/^HTTP 404: /);
      const ask = await nx1(['ask', '--domain', domain, '--prompt', 'How many orders are there?'], trusted());
      expect(ask.status, ask.stderr).toBe(0);
      expect(JSON.parse(ask.stdout)).toMatchObject({ domain, tables: [`${catalog}.sales.orders`] });
      const suggest = await nx1(['suggest', '--domain', domain], trusted());
      expect(suggest.status, suggest.stderr).toBe(0);
      expect(JSON.parse(suggest.stdout).length).toBeGreaterThan(0);
    });

    it('saved queries: create_from_suggestion and nx1 query create get the 404 that says they are not offered', async () => {
      const [suggested] = await sdkOk(trusted(), [{ method: 'queries.suggest', args: [domain] }]);
      const id = (suggested as { suggestion_id: string }[])[0]!.suggestion_id;
      const [created] = (await sdk(trusted(), [{ method: 'queries.create_from_suggestion', args: [id] }])).results;
      expect(created).toMatchObject({ ok: false, error: 'NX1APIError' });
      expect(created!.message).toMatch(/^HTTP 404: .*Saved queries are not offered by this service: /);
      const cli = await nx1(['query', 'create', '--suggestion-id', id], trusted());
      expect(cli.status).toBe(1);
      expect(cli.stderr).toMatch(
        /API Error: HTTP 404: .*Saved queries are not offered by this service: .*POST \/api\/query\/ask/,
      );
    });
  });

  describe('crews: types, run and results over the built-in templates', () => {
    /** The SDK's get_crew_result until the run ends (each call a python3 process: 250 ms apart). */
    const finished = (id: string) =>
      eventually(
        async () => {
          const [result] = await sdkOk(trusted(), [{ method: 'crews.get_crew_result', args: [id] }]);
          return ['pending', 'running'].includes(result.status) ? notYet(result.status) : result;
        },
        25_000,
        `run ${id} ended`,
        250,
      );

    it('list_crew_types names the four built-in templates; run_crew starts one; get_crew_result reads its result', async () => {
      const [types, started] = await sdkOk(trusted(), [
        { method: 'crews.list_crew_types' },
        { method: 'crews.run_crew', args: ['data_suggestion', { domain: 'sales', count: 2 }] },
      ]);
      const names = (types as { crew_type: string }[]).map((t) => t.crew_type);
      expect(names).toEqual(expect.arrayContaining(['ask', 'data_engineering', 'data_suggestion', 'semantic_model']));
      expect(types.find((t: { crew_type: string }) => t.crew_type === 'data_suggestion')).toMatchObject({
        template_id: expect.any(String),
        description: expect.any(String),
        inputs: expect.arrayContaining(['domain', 'count']),
      });
      expect(started).toMatchObject({ correlation_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'pending' });
      const result = await finished(started.correlation_id);
      // The suite's model answers every llm step: the run succeeds with its reply as the result.
      expect(result).toMatchObject({ correlation_id: started.correlation_id, status: 'succeeded', error: null });
      expect(result.result).toEqual(expect.stringContaining('Number of suggestions: 2'));
      expect(Object.keys(result.outputs).length).toBeGreaterThanOrEqual(2);
    });

    it('nx1 crews list-types, run and result; an unknown crew type is a 404', async () => {
      const list = await nx1(['crews', 'list-types'], trusted());
      expect(list.status, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout).map((t: { crew_type: string }) => t.crew_type)).toContain('ask');
      const run = await nx1(
        ['crews', 'run', '--crew-type', 'ask', '--input', '{"question": "How many orders?"}'],
        trusted(),
      );
      expect(run.status, run.stderr).toBe(0);
      const { correlation_id } = JSON.parse(run.stdout);
      expect(await finished(correlation_id)).toMatchObject({ status: 'succeeded' });
      const result = await nx1(['crews', 'result', correlation_id], trusted());
      expect(result.status, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ correlation_id, status: 'succeeded' });
      const [unknown] = (await sdk(trusted(), [{ method: 'crews.run_crew', args: [slug('no-such-crew'), {}] }]))
        .results;
      expect(unknown!.message).toMatch(/^HTTP 404: /);
    });
  });

  describe('data_products: list, create, delete, and their keys', () => {
    it('create, get_all with roles, create_psk, get_all_psks, extend_psk, delete_psk, delete', async () => {
      const name = slug('sdk-product');
      const role = slug('sdk-role');
      const [product, listed] = await sdkOk(trusted(), [
        {
          method: 'data_products.create',
          kwargs: { name, role_name: role, query: 'SELECT * FROM sales.core.orders', is_view: true },
        },
        { method: 'data_products.get_all', kwargs: { roles: role } },
      ]);
      expect(product).toMatchObject({
        name,
        role_name: role,
        domain_urn: null,
        query: 'SELECT * FROM sales.core.orders',
        is_view: true,
      });
      expect(listed).toEqual([product]);

      const [key, spare, keys] = await sdkOk(trusted(), [
        { method: 'data_products.create_psk', args: [product.id, 'the SDK test', 1] },
        { method: 'data_products.create_psk', args: [product.id, 'the SDK test, deleted', 1] },
        { method: 'data_products.get_all_psks' },
      ]);
      expect(key).toMatchObject({ dataproduct_id: product.id, description: 'the SDK test', key: expect.any(String) });
      expect(keys.map((k: { psk: string }) => k.psk)).toEqual(expect.arrayContaining([key.psk, spare.psk]));
      const [extended, deletedKey] = await sdkOk(trusted(), [
        { method: 'data_products.extend_psk', args: [key.psk, 2] },
        { method: 'data_products.delete_psk', args: [spare.psk] },
      ]);
      expect(extended).toEqual({ psk: key.psk, description: 'the SDK test', valid_until: expect.any(String) });
      expect(deletedKey).toEqual({});

      const withKey = { apiKey: key.key as string, host: httpsBaseUrl(), caBundle: provided('caCertFile') };
      await sdkOk(withKey, [{ method: 'data_products.get_all_psks' }]);
      const [deleted, after] = await sdkOk(trusted(), [
        { method: 'data_products.delete', args: [product.id] },
        { method: 'data_products.get_all', kwargs: { roles: role } },
      ]);
      // 204: the SDK answers an empty body with {}.
      expect(deleted).toEqual({});
      expect(after).toEqual([]);
      // The product's key stops with it.
      const [refused] = (await sdk(withKey, [{ method: 'data_products.get_all_psks' }])).results;
      expect(refused).toMatchObject({ ok: false, error: 'NX1APIError' });
      expect(refused!.message).toMatch(/^HTTP 401: /);
    });

    it('the plain create(name, role_name), no query: a product without SQL, and every data-product call on it', async () => {
      // As a script or docs/sdk.md makes it: positional name and role, nothing else. The SDK
      // sends {"name", "role_name", "is_view": false}; docs/sdk.md makes `query` optional.
      const name = slug('sdk-plain');
      const role = slug('sdk-plain-role');
      const [product, byRole, all] = await sdkOk(trusted(), [
        { method: 'data_products.create', args: [name, role] },
        { method: 'data_products.get_all', kwargs: { roles: role } },
        { method: 'data_products.get_all' },
      ]);
      expect(product).toEqual({
        id: expect.any(String),
        name,
        role_name: role,
        domain_urn: null,
        query: null,
        is_view: false,
        created_by: expect.any(String),
        created_at: expect.any(String),
      });
      expect(byRole).toEqual([product]);
      expect(all).toContainEqual(product);

      // its keys: made, listed, extended, deleted, and used as the SDK's own api_key
      const [key, spare, keys] = await sdkOk(trusted(), [
        { method: 'data_products.create_psk', args: [product.id, 'plain product key'] },
        { method: 'data_products.create_psk', args: [product.id, 'plain product key, deleted', 1] },
        { method: 'data_products.get_all_psks' },
      ]);
      expect(key).toMatchObject({
        dataproduct_id: product.id,
        description: 'plain product key',
        key: expect.any(String),
      });
      expect(keys.map((k: { psk: string }) => k.psk)).toEqual(expect.arrayContaining([key.psk, spare.psk]));
      const [extended, deletedKey] = await sdkOk(trusted(), [
        { method: 'data_products.extend_psk', args: [key.psk, 2] },
        { method: 'data_products.delete_psk', args: [spare.psk] },
      ]);
      expect(extended).toEqual({ psk: key.psk, description: 'plain product key', valid_until: expect.any(String) });
      expect(deletedKey).toEqual({});
      const withKey = { apiKey: key.key as string, host: httpsBaseUrl(), caBundle: provided('caCertFile') };
      const [own] = await sdkOk(withKey, [{ method: 'data_products.get_all_psks' }]);
      expect(own.map((k: { psk: string }) => k.psk)).toContain(key.psk);

      // the CLI's form: `nx1 dataproducts list` prints it (JSON and table), `delete` removes it
      const list = await nx1(['dataproducts', 'list'], trusted());
      expect(list.status, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toContainEqual(product);
      const table = await nx1(['dataproducts', 'list', '-o', 'table'], trusted());
      expect(table.status, table.stderr).toBe(0);
      expect(table.stdout).toContain(name);
      const removed = await nx1(['dataproducts', 'delete', product.id], trusted());
      expect(removed.status, removed.stderr).toBe(0);
      expect(removed.stdout).toMatch(/Deleted/);
      const [after] = await sdkOk(trusted(), [{ method: 'data_products.get_all', kwargs: { roles: role } }]);
      expect(after).toEqual([]);
      // the product's key stops with it
      const [refused] = (await sdk(withKey, [{ method: 'data_products.get_all_psks' }])).results;
      expect(refused).toMatchObject({ ok: false, error: 'NX1APIError' });
      expect(refused!.message).toMatch(/^HTTP 401: /);
    });

    it('nx1 dataproducts list and delete', async () => {
      const [product] = await sdkOk(trusted(), [
        {
          method: 'data_products.create',
          kwargs: { name: slug('sdk-product'), role_name: 'sdk', query: 'SELECT 1 FROM sales.core.orders' },
        },
      ]);
      const list = await nx1(['dataproducts', 'list'], trusted());
      expect(list.status, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toContainEqual(product);
      const removed = await nx1(['dataproducts', 'delete', product.id], trusted());
      expect(removed.status, removed.stderr).toBe(0);
      expect(removed.stdout).toMatch(/Deleted/);
      const again = await nx1(['dataproducts', 'delete', product.id], trusted());
      expect(again.status).toBe(1);
      expect(again.stderr).toMatch(/API Error: HTTP 404: /);
    });
  });

  describe('the nx1 command', () => {
    it('nx1 ping and nx1 version, host and key from NX1_HOST and NX1_API_KEY', async () => {
      const expected = (await api('/api/health/ping')).body;
      const ping = await nx1(['ping'], trusted());
      expect(ping.status, ping.stderr).toBe(0);
      expect(JSON.parse(ping.stdout)).toEqual(expected);
      const version = await nx1(['version', '--no-verify-ssl'], { ...trusted(), caBundle: undefined });
      expect(version.status, version.stderr).toBe(0);
      expect(version.stdout.trim()).toBe(expected.version);
    });

    it("fails with the SDK's message and exit code 1 when the certificate is not trusted", async () => {
      const ping = await nx1(['ping'], { ...trusted(), caBundle: undefined });
      expect(ping.status).toBe(1);
      expect(ping.stderr).toMatch(/API Error: .*CERTIFICATE_VERIFY_FAILED/);
    });
  });
});
