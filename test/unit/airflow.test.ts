import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AirflowWorkflow, airflowVariableName, type AirflowSettings } from '../../shared/adapters/airflow.js';
import { Unavailable } from '../../shared/errors.js';
import { statusOf } from '../../shared/http/errors.js';
import type { WorkflowConnection } from '../../shared/ports/workflow.js';
import { type FakeAirflow, startFakeAirflow, tcpTester } from '../support/airflow-server.js';
import { rejection } from '../support/rejection.js';

const CONN_SECRET = 'c0nn-S3cret-never-shown';

let airflow: FakeAirflow;
let listener: Server;
let openPort: number;
const sockets = new Set<Socket>();

beforeAll(async () => {
  airflow = await startFakeAirflow();
  listener = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.end();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  openPort = (listener.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  await airflow.stop();
});

beforeEach(() => {
  airflow.variables.clear();
  airflow.connections.clear();
  airflow.requests.length = 0;
});

afterEach(() => {
  airflow.mode = 'up';
  airflow.testConnectionEnabled = true;
  airflow.tester = tcpTester;
  airflow.failWhen = undefined;
});

const settings = (over: Partial<AirflowSettings> = {}): AirflowSettings => ({
  baseUrl: `${airflow.url}/`,
  username: airflow.username,
  password: airflow.password,
  ...over,
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An Unavailable (503) whose message holds neither Airflow's password nor the connection's. */
function expectUnavailable(err: Error, pattern: RegExp) {
  expect(err).toBeInstanceOf(Unavailable);
  expect(statusOf(err)).toBe(503);
  expect(err.message).toMatch(pattern);
  for (const secret of [airflow.password, CONN_SECRET]) {
    expect(err.message).not.toContain(secret);
    expect(JSON.stringify(err)).not.toContain(secret);
  }
}

const sshConnection = (over: Partial<WorkflowConnection> = {}): WorkflowConnection => ({
  conn_id: 'mapr_edge',
  conn_type: 'ssh',
  host: '127.0.0.1',
  port: openPort,
  schema: null,
  login: 'mapr',
  password: CONN_SECRET,
  extra: { key_file: '/keys/edge', no_host_key_check: true },
  ...over,
});

describe('airflowVariableName', () => {
  it.each([
    ['copy_mappers', 'nx1_migration_distcp_mappers'],
    ['copy_bandwidth', 'nx1_migration_distcp_bandwidth'],
    ['default_objstore_bucket', 'nx1_migration_default_s3_bucket'],
    ['email_recipients', 'nx1_migration_email_recipients'],
    ['report_output_location', 'nx1_migration_report_location'],
    ['tracking_database', 'nx1_migration_tracking_database'],
    ['tracking_location', 'nx1_migration_tracking_location'],
    ['migration_smtp_conn_id', 'nx1_migration_smtp_conn_id'],
    ['migration_compute_conn_id', 'nx1_migration_spark_conn_id'],
    ['fs_ticketfile_location', 'nx1_mapr_ticketfile_location'],
    ['fs_user', 'nx1_mapr_user'],
    ['objstore_source_endpoint', 'nx1_objstore_source_endpoint'],
    ['hive_metastore_uri', 'nx1_hive_metastore_uri'],
    ['toString', 'nx1_toString'],
  ])('%s → %s', (field, name) => {
    expect(airflowVariableName(field)).toBe(name);
  });
});

describe('publishing the configuration as Airflow Variables', () => {
  it('PATCHes existing variables with string values, with Basic auth', async () => {
    airflow.variables.set('nx1_migration_distcp_mappers', { value: '2', description: 'mappers' });
    airflow.variables.set('nx1_migration_distcp_bandwidth', { value: '10', description: null });
    airflow.variables.set('nx1_mapr_user', { value: 'old', description: null });
    await new AirflowWorkflow(settings()).publishConfig({ copy_mappers: 8, copy_bandwidth: 100, fs_user: 'mapr' });

    expect(Object.fromEntries([...airflow.variables].map(([k, v]) => [k, v.value]))).toEqual({
      nx1_migration_distcp_mappers: '8',
      nx1_migration_distcp_bandwidth: '100',
      nx1_mapr_user: 'mapr',
    });
    expect(airflow.variables.get('nx1_migration_distcp_mappers')!.description).toBe('mappers');
    expect(airflow.requests.map((r) => [r.method, r.path, r.body])).toEqual([
      ['PATCH', '/api/v1/variables/nx1_migration_distcp_mappers', { key: 'nx1_migration_distcp_mappers', value: '8' }],
      [
        'PATCH',
        '/api/v1/variables/nx1_migration_distcp_bandwidth',
        { key: 'nx1_migration_distcp_bandwidth', value: '100' },
      ],
      ['PATCH', '/api/v1/variables/nx1_mapr_user', { key: 'nx1_mapr_user', value: 'mapr' }],
    ]);
    expect(airflow.requests.every((r) => r.authorized && r.user === airflow.username)).toBe(true);
  });

  it('POSTs a variable Airflow does not have yet', async () => {
    await new AirflowWorkflow(settings()).publishConfig({ migration_compute_conn_id: 'spark_default' });
    expect(airflow.variables.get('nx1_migration_spark_conn_id')?.value).toBe('spark_default');
    expect(airflow.requests.map((r) => [r.method, r.path])).toEqual([
      ['PATCH', '/api/v1/variables/nx1_migration_spark_conn_id'],
      ['POST', '/api/v1/variables'],
    ]);
    expect(airflow.requests[1]!.body).toEqual({ key: 'nx1_migration_spark_conn_id', value: 'spark_default' });
  });

  it('writes a cleared field as an empty string', async () => {
    airflow.variables.set('nx1_migration_email_recipients', { value: 'ops@example.com', description: null });
    await new AirflowWorkflow(settings()).publishConfig({ email_recipients: null, tracking_location: '' });
    expect(airflow.variables.get('nx1_migration_email_recipients')?.value).toBe('');
    expect(airflow.variables.get('nx1_migration_tracking_location')?.value).toBe('');
  });

  it('accepts a base URL that already ends in /api/v1', async () => {
    await new AirflowWorkflow(settings({ baseUrl: `${airflow.url}/api/v1/` })).publishConfig({ fs_user: 'u' });
    expect(airflow.variables.get('nx1_mapr_user')?.value).toBe('u');
  });

  it('says how far it got when Airflow fails midway', async () => {
    airflow.variables.set('nx1_migration_distcp_mappers', { value: '2', description: null });
    airflow.failWhen = (method, path) => method === 'PATCH' && path.endsWith('/nx1_mapr_user');
    const err = await rejection(new AirflowWorkflow(settings()).publishConfig({ copy_mappers: 3, fs_user: 'x' }));
    expectUnavailable(err, /HTTP 500.*nx1_mapr_user; 1 of 2 variables were written/);
    expect(airflow.variables.get('nx1_migration_distcp_mappers')?.value).toBe('3');
  });
});

describe('reading a connection', () => {
  it('maps Airflow’s connection; Airflow never returns the password', async () => {
    airflow.connections.set('mapr_edge', {
      connection_id: 'mapr_edge',
      conn_type: 'ssh',
      host: 'edge.example.com',
      port: 2222,
      login: 'mapr',
      password: CONN_SECRET,
      schema: null,
      extra: JSON.stringify({ key_file: '/keys/edge' }),
    });
    const found = await new AirflowWorkflow(settings()).getConnection('mapr_edge');
    expect(found).toEqual({
      conn_id: 'mapr_edge',
      conn_type: 'ssh',
      host: 'edge.example.com',
      port: 2222,
      schema: null,
      login: 'mapr',
      extra: { key_file: '/keys/edge' },
    });
    expect(airflow.requests.map((r) => [r.method, r.path])).toEqual([['GET', '/api/v1/connections/mapr_edge']]);
  });

  it('is undefined when Airflow does not have it', async () => {
    expect(await new AirflowWorkflow(settings()).getConnection('no_such_conn')).toBeUndefined();
  });
});

describe('testing a connection through Airflow', () => {
  it('relays a successful test, sending Airflow’s connection fields', async () => {
    const result = await new AirflowWorkflow(settings()).testConnection(sshConnection(), 'ssh');
    expect(result).toEqual({ ok: true, message: 'Connection successfully tested' });
    const sent = airflow.requests.find((r) => r.path === '/api/v1/connections/test')!;
    expect(sent.method).toBe('POST');
    expect(sent.body).toEqual({
      connection_id: 'mapr_edge',
      conn_type: 'ssh',
      host: '127.0.0.1',
      port: openPort,
      login: 'mapr',
      password: CONN_SECRET,
      extra: JSON.stringify({ key_file: '/keys/edge', no_host_key_check: true }),
    });
  });

  it('relays a failed test with Airflow’s message', async () => {
    const port = await closedPort();
    const result = await new AirflowWorkflow(settings()).testConnection(sshConnection({ port }), 'ssh');
    expect(result).toEqual({ ok: false, message: '[Errno 111] Connection refused' });
  });

  it('hides the password should the hook echo it', async () => {
    airflow.tester = async (c) => ({ status: false, message: `auth failed for ${c.login}:${c.password}` });
    const result = await new AirflowWorkflow(settings()).testConnection(sshConnection(), 'ssh');
    expect(result).toEqual({ ok: false, message: 'auth failed for mapr:***' });
  });

  it('sends no null fields (the schema’s password is not nullable)', async () => {
    const bare: WorkflowConnection = { conn_id: 'bare', conn_type: 'http', host: '127.0.0.1', port: openPort };
    const result = await new AirflowWorkflow(settings()).testConnection(
      { ...bare, schema: null, login: null, password: null, extra: null },
      'http',
    );
    expect(result.ok).toBe(true);
    expect(airflow.requests.at(-1)!.body).toEqual({
      connection_id: 'bare',
      conn_type: 'http',
      host: '127.0.0.1',
      port: openPort,
    });
  });

  it('is a failed test when Airflow’s schema refuses the connection', async () => {
    const result = await new AirflowWorkflow(settings()).testConnection(sshConnection({ conn_type: '' }), 'ssh');
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(/^Airflow rejected the connection: .*conn_type/);
  });

  it('says so when Airflow has connection testing disabled', async () => {
    airflow.testConnectionEnabled = false;
    const err = await rejection(new AirflowWorkflow(settings()).testConnection(sshConnection(), 'ssh'));
    expectUnavailable(err, /connection testing disabled.*test_connection/);
  });
});

describe('when Airflow is not usable', () => {
  it('wrong credentials are Unavailable saying the credentials were refused', async () => {
    const engine = new AirflowWorkflow(settings({ password: 'wrong-password' }));
    for (const call of [
      () => engine.publishConfig({ fs_user: 'x' }),
      () => engine.getConnection('mapr_edge'),
      () => engine.testConnection(sshConnection(), 'ssh'),
    ]) {
      const err = await rejection(call());
      expectUnavailable(err, /Airflow refused the configured credentials .*HTTP 401/);
      expect(err.message).not.toContain('wrong-password');
    }
    expect(airflow.requests.every((r) => !r.authorized)).toBe(true);
    expect(airflow.variables.size).toBe(0);
  });

  it('a user without permission is Unavailable (403)', async () => {
    const engine = new AirflowWorkflow(
      settings({ username: airflow.viewerUsername, password: airflow.viewerPassword }),
    );
    const err = await rejection(engine.publishConfig({ fs_user: 'x' }));
    expectUnavailable(err, /refused the configured credentials of user 'viewer' .*HTTP 403/);
    expect(err.message).not.toContain(airflow.viewerPassword);
  });

  it('a 500 is Unavailable', async () => {
    airflow.mode = 'error';
    const engine = new AirflowWorkflow(settings());
    expectUnavailable(await rejection(engine.getConnection('mapr_edge')), /Airflow failed \(HTTP 500\)/);
    expectUnavailable(await rejection(engine.publishConfig({ fs_user: 'x' })), /Airflow failed \(HTTP 500\)/);
    expectUnavailable(
      await rejection(engine.testConnection(sshConnection(), 'ssh')),
      /Airflow failed \(HTTP 500\) on POST \/connections\/test/,
    );
  });

  it('dropped connections and a stopped Airflow are Unavailable', async () => {
    airflow.mode = 'unreachable';
    expectUnavailable(
      await rejection(new AirflowWorkflow(settings()).testConnection(sshConnection(), 'ssh')),
      /Airflow is not reachable/,
    );
    const port = await closedPort();
    const gone = new AirflowWorkflow(settings({ baseUrl: `http://127.0.0.1:${port}` }));
    expectUnavailable(await rejection(gone.getConnection('x')), /^Airflow is not reachable$/);
    expectUnavailable(await rejection(gone.publishConfig({ copy_mappers: 1 })), /not reachable/);
  });

  it('an Airflow that does not answer in time is Unavailable', async () => {
    airflow.mode = 'hang';
    const started = Date.now();
    const err = await rejection(new AirflowWorkflow(settings(), { timeoutMs: 300 }).getConnection('x'));
    expectUnavailable(err, /did not answer within 0\.3 s/);
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
