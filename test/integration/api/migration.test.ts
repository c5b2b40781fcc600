import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform } from '../../../infra/local/platform.js';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { loadConfig } from '../../../shared/config.js';
import { documentClient } from '../../../shared/aws/clients.js';
import { CONN_ID } from '../../../functions/migration/schemas.js';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import { adminPsk, adminToken, api, approverToken, insertKey, slug, token, serviceLog } from '../helpers.js';
import { provided } from '../provided.js';

let admin: string;
let alice: string;

beforeAll(async () => {
  admin = await adminToken('mig-admin');
  alice = await token('alice');
});

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CONFIG = '/api/migration/infrastructure-config';
const TEST = '/api/migration/infrastructure-config/test-connection';
const CONNECTIONS = '/api/migration/connections';

/** Every value written as a secret here; none may come back or reach the log. */
const secrets: string[] = [];
const secret = (label: string) => {
  const value = `${label}-${randomUUID()}`;
  secrets.push(value);
  return value;
};

const RESPONSE_FIELDS = [
  'cluster_ssh_conn_id',
  'cluster_edge_temp_path',
  'migration_compute_conn_id',
  'migration_smtp_conn_id',
  'objstore_source_endpoint',
  'objstore_source_access_key',
  'objstore_dest_endpoint',
  'objstore_dest_access_key',
  'default_objstore_bucket',
  'tracking_database',
  'tracking_location',
  'report_output_location',
  'email_recipients',
  'copy_mappers',
  'copy_bandwidth',
  'fs_user',
  'fs_ticketfile_location',
  'kinit_principal',
  'kinit_keytab',
  'updated_by',
  'updated_at',
];

type Config = Record<string, string | number | null>;

const db = () =>
  documentClient({
    region: 'us-east-1',
    endpoints: { dynamodb: provided('dynamodbEndpoint'), sqs: undefined, s3: undefined },
  });
const rawItem = async (table: 'migrationConfig' | 'migrationConnections', key: Record<string, string>) =>
  (
    await db().send(
      new GetCommand({
        TableName: physicalTableName(provided('stage'), TABLES[table]),
        Key: key,
        ConsistentRead: true,
      }),
    )
  ).Item;

const getConfig = async (t = admin) => {
  const res = await api<Config>(CONFIG, { token: t });
  expect(res.status).toBe(200);
  return res.body;
};
const putConfig = (body: unknown, t = admin) => api(CONFIG, { method: 'PUT', token: t, body });

/** The `[loc, type]` of each validation entry, in order. */
const locTypes = (detail: { loc: unknown[]; type: string }[]) => detail.map((d) => [d.loc, d.type]);

/** Checks a response carries none of the secrets written so far. */
const expectNoSecrets = (text: string) => {
  for (const s of secrets) expect(text).not.toContain(s);
};

describe('GET/PUT /api/migration/infrastructure-config (E3)', () => {
  it('answers all fields null before the first update', async () => {
    // A stage of its own on the suite's emulators: other files update the shared stage's
    // configuration whenever they run.
    const psk = `migration-fresh-${randomUUID()}`;
    const fresh = await startPlatform(
      loadConfig({
        STAGE: `migfresh${randomUUID().slice(0, 8)}`,
        PORT: '0',
        HOST: '127.0.0.1',
        DPM_DATA_DIR: mkdtempSync(join(tmpdir(), 'dpm-migration-fresh-')),
        DPM_ADMIN_PSK: psk,
        AUTH_ISSUER: provided('issuer'),
        AUTH_AUDIENCE: provided('audience'),
        DYNAMODB_ENDPOINT: provided('dynamodbEndpoint'),
        SQS_ENDPOINT: provided('sqsEndpoint'),
        S3_ENDPOINT: provided('s3Endpoint'),
      }),
      { inMemory: true },
    );
    try {
      const res = await fetch(`${fresh.baseUrl}/api/migration/infrastructure-config`, {
        headers: { 'authorization-psk': psk },
      });
      expect(res.status).toBe(200);
      const config = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(config)).toEqual(RESPONSE_FIELDS);
      expect(Object.values(config).every((v) => v === null)).toBe(true);
    } finally {
      await fresh.stop();
    }
  });

  it('takes every field, and answers (and reads back) all but the write-only secret keys', async () => {
    const body = {
      cluster_ssh_conn_id: 'cluster_ssh',
      cluster_edge_temp_path: '/tmp/edge',
      migration_compute_conn_id: 'spark_default',
      migration_smtp_conn_id: 'smtp_default',
      objstore_source_endpoint: 'http://source.example.com:9000',
      objstore_source_access_key: 'SOURCEACCESS',
      objstore_source_secret_key: secret('source-secret'),
      objstore_dest_endpoint: 'https://s3.us-east-1.amazonaws.com',
      objstore_dest_access_key: 'DESTACCESS',
      objstore_dest_secret_key: secret('dest-secret'),
      default_objstore_bucket: 'migration-bucket',
      tracking_database: 'migration_tracking',
      tracking_location: 's3a://migration-bucket/tracking',
      report_output_location: 's3a://migration-bucket/reports',
      email_recipients: 'ops@example.com,dba@example.com',
      copy_mappers: 20,
      copy_bandwidth: 100,
      fs_user: 'mapr',
      fs_ticketfile_location: '/tmp/maprticket_5000',
      kinit_principal: 'migration@EXAMPLE.COM',
      kinit_keytab: '/etc/security/keytabs/migration.keytab',
    };
    const res = await putConfig(body);
    expect(res.status).toBe(200);
    const { objstore_source_secret_key: _s, objstore_dest_secret_key: _d, ...visible } = body;
    expect(res.body).toEqual({ ...visible, updated_by: 'mig-admin', updated_at: expect.stringMatching(ISO_MS) });
    expect(Object.keys(res.body)).toEqual(RESPONSE_FIELDS);
    expectNoSecrets(res.text);
    const read = await api<Config>(CONFIG, { token: admin });
    expect(read.body).toEqual(res.body);
    expectNoSecrets(read.text);

    // At rest the secret keys are sealed (AES-GCM envelopes), never in plain text.
    const item = await rawItem('migrationConfig', { id: 'current' });
    expect(item?.objstore_source_secret_key).toEqual({
      v: 1,
      key: expect.any(String),
      iv: expect.any(String),
      tag: expect.any(String),
      data: expect.any(String),
    });
    expect(item?.objstore_dest_secret_key).toMatchObject({ v: 1 });
    expectNoSecrets(JSON.stringify(item));
  });

  it('changes only the given fields and records who and when', async () => {
    const before = await getConfig();
    await new Promise((r) => setTimeout(r, 5));
    const psk = adminPsk();
    const res = await api<Config>(CONFIG, {
      method: 'PUT',
      psk,
      body: { fs_user: 'svc-migration', tracking_database: 'tracking_v2' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...before,
      fs_user: 'svc-migration',
      tracking_database: 'tracking_v2',
      updated_by: expect.any(String),
      updated_at: expect.stringMatching(ISO_MS),
    });
    expect(res.body.updated_by).not.toBe(before.updated_by);
    expect(Date.parse(res.body.updated_at as string)).toBeGreaterThan(Date.parse(before.updated_at as string));
    expect(await getConfig()).toEqual(res.body);
  });

  it('keeps a stored secret key when another field changes, and replaces it when given', async () => {
    await putConfig({ objstore_source_secret_key: secret('kept') });
    const sealed = (await rawItem('migrationConfig', { id: 'current' }))?.objstore_source_secret_key;
    expect((await putConfig({ kinit_principal: 'other@EXAMPLE.COM' })).status).toBe(200);
    expect((await rawItem('migrationConfig', { id: 'current' }))?.objstore_source_secret_key).toEqual(sealed);
    expect((await putConfig({ objstore_source_secret_key: secret('replaced') })).status).toBe(200);
    const replaced = (await rawItem('migrationConfig', { id: 'current' }))?.objstore_source_secret_key;
    expect(replaced).toMatchObject({ v: 1 });
    expect(replaced).not.toEqual(sealed);
  });

  it('clears a field given an empty string or null', async () => {
    await putConfig({ kinit_keytab: '/etc/k.keytab', kinit_principal: 'p@R', objstore_dest_secret_key: secret('s') });
    const res = await putConfig({ kinit_keytab: '', kinit_principal: null, objstore_dest_secret_key: '' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kinit_keytab: null, kinit_principal: null });
    expect(await getConfig()).toEqual(res.body);
    const item = await rawItem('migrationConfig', { id: 'current' });
    expect(item).not.toHaveProperty('kinit_keytab');
    expect(item).not.toHaveProperty('kinit_principal');
    expect(item).not.toHaveProperty('objstore_dest_secret_key');
  });

  it('accepts an empty update and changes nothing but who and when', async () => {
    const before = await getConfig();
    const res = await putConfig({});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...before, updated_at: expect.stringMatching(ISO_MS) });
  });

  describe('copy_mappers and copy_bandwidth: set together or both left empty', () => {
    const pairError = (leftSet: string) => ({
      type: 'value_error',
      loc: ['body'],
      msg: `Value error, copy_mappers and copy_bandwidth are set together or both left empty; this update would leave only ${leftSet} set`,
      input: expect.any(Object),
      ctx: {
        error: `copy_mappers and copy_bandwidth are set together or both left empty; this update would leave only ${leftSet} set`,
      },
    });

    it('sets and clears both together', async () => {
      const set = await putConfig({ copy_mappers: 8, copy_bandwidth: 50 });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ copy_mappers: 8, copy_bandwidth: 50 });
      // One of the pair alone is fine while the other is stored.
      const one = await putConfig({ copy_mappers: 16 });
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ copy_mappers: 16, copy_bandwidth: 50 });
      const cleared = await putConfig({ copy_mappers: '', copy_bandwidth: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toMatchObject({ copy_mappers: null, copy_bandwidth: null });
      const item = await rawItem('migrationConfig', { id: 'current' });
      expect(item).not.toHaveProperty('copy_mappers');
      expect(item).not.toHaveProperty('copy_bandwidth');
    });

    it('refuses to set only one while the other is empty (422 value_error on the body)', async () => {
      await putConfig({ copy_mappers: null, copy_bandwidth: null });
      const before = await getConfig();
      const mappers = await putConfig({ copy_mappers: 4 });
      expect(mappers.status).toBe(422);
      expect(mappers.body.detail).toEqual([pairError('copy_mappers')]);
      const bandwidth = await putConfig({ copy_bandwidth: 4, fs_user: 'not-written' });
      expect(bandwidth.status).toBe(422);
      expect(bandwidth.body.detail).toEqual([pairError('copy_bandwidth')]);
      // Nothing of a refused update is written.
      expect(await getConfig()).toEqual(before);
    });

    it('refuses to clear only one while both are set', async () => {
      await putConfig({ copy_mappers: 10, copy_bandwidth: 200 });
      const before = await getConfig();
      const clearMappers = await putConfig({ copy_mappers: null });
      expect(clearMappers.status).toBe(422);
      expect(clearMappers.body.detail).toEqual([pairError('copy_bandwidth')]);
      const clearBandwidth = await putConfig({ copy_bandwidth: '' });
      expect(clearBandwidth.status).toBe(422);
      expect(clearBandwidth.body.detail).toEqual([pairError('copy_mappers')]);
      expect(await getConfig()).toEqual(before);
    });

    it('refuses one set and one cleared in the same update, without echoing the secret keys', async () => {
      const before = await getConfig();
      const hidden = secret('in-refused-update');
      const res = await putConfig({ copy_mappers: 3, copy_bandwidth: '', objstore_source_secret_key: hidden });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([pairError('copy_mappers')]);
      expect(res.body.detail[0].input).toEqual({ copy_mappers: 3, copy_bandwidth: '' });
      expectNoSecrets(res.text);
      const other = await putConfig({ copy_mappers: null, copy_bandwidth: 7 });
      expect(other.body.detail).toEqual([pairError('copy_bandwidth')]);
      expect(await getConfig()).toEqual(before);
    });
  });

  it('keeps both of two concurrent updates of different fields', async () => {
    for (let round = 0; round < 5; round++) {
      const a = slug('edge');
      const b = slug('report');
      const [first, second] = await Promise.all([
        putConfig({ cluster_edge_temp_path: a }),
        putConfig({ report_output_location: b }),
      ]);
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(await getConfig()).toMatchObject({ cluster_edge_temp_path: a, report_output_location: b });
    }
  });

  it('never leaves one of the pair set alone, whatever order concurrent updates land in', async () => {
    for (let round = 0; round < 5; round++) {
      await putConfig({ copy_mappers: 2, copy_bandwidth: 2 });
      // Clearing both needs nothing; setting mappers alone needs bandwidth still stored.
      const [clear, one] = await Promise.all([
        putConfig({ copy_mappers: null, copy_bandwidth: null }),
        putConfig({ copy_mappers: 9 }),
      ]);
      expect(clear.status).toBe(200);
      expect([200, 422]).toContain(one.status);
      const config = await getConfig();
      expect([config.copy_mappers, config.copy_bandwidth]).toEqual([null, null]);
    }
  });
});

describe('authentication and roles', () => {
  const calls = (auth: { token?: string; psk?: string }) => [
    api(CONFIG, auth),
    api(CONFIG, { method: 'PUT', ...auth, body: { fs_user: 'x' } }),
    api(TEST, { method: 'POST', ...auth, body: { conn_id: 'c' } }),
    api(CONNECTIONS, auth),
    api(`${CONNECTIONS}/c`, auth),
    api(`${CONNECTIONS}/c`, { method: 'PUT', ...auth, body: { conn_type: 'ssh', host: 'h' } }),
    api(`${CONNECTIONS}/c`, { method: 'DELETE', ...auth }),
  ];

  it('answers 401 without credentials, on every endpoint', async () => {
    for (const res of await Promise.all(calls({}))) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 401 });
      expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    }
    expect((await api(CONFIG, { token: 'not-a-jwt' })).status).toBe(401);
  });

  it('answers 403 to a caller without the admin role, by Bearer token or pre-shared key', async () => {
    const approver = await approverToken('mig-approver');
    const { secret: userPsk } = await insertKey({ createdBy: slug('plain'), roles: ['approver'] });
    for (const auth of [{ token: alice }, { token: approver }, { psk: userPsk }]) {
      for (const res of await Promise.all(calls(auth))) {
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: expect.stringContaining('admin'), code: 403 });
      }
    }
    // Roles are checked before the body.
    expect((await api(CONFIG, { method: 'PUT', token: alice, body: { colour: 'red' } })).status).toBe(403);
  });

  it('lets an admin in by pre-shared key', async () => {
    const { secret: adminKey } = await insertKey({ createdBy: 'key-admin', roles: ['admin'] });
    const res = await api<Config>(CONFIG, { method: 'PUT', psk: adminKey, body: { email_recipients: 'a@b.c' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ email_recipients: 'a@b.c', updated_by: 'key-admin' });
  });
});

describe('validation (422)', () => {
  it('reports every bad field of a configuration update together, in field order, pydantic-style', async () => {
    const before = await getConfig();
    const res = await putConfig({
      fs_user: 5,
      copy_mappers: 0,
      copy_bandwidth: 'fast',
      kinit_keytab: 'x'.repeat(4001),
      colour: 'red',
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['body', 'copy_mappers'],
        msg: 'Input should be greater than or equal to 1',
        input: 0,
        ctx: { ge: 1 },
      },
      {
        type: 'int_parsing',
        loc: ['body', 'copy_bandwidth'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'fast',
      },
      { type: 'string_type', loc: ['body', 'fs_user'], msg: 'Input should be a valid string', input: 5 },
      {
        type: 'string_too_long',
        loc: ['body', 'kinit_keytab'],
        msg: 'String should have at most 4000 characters',
        input: 'x'.repeat(4001),
        ctx: { max_length: 4000 },
      },
      { type: 'extra_forbidden', loc: ['body', 'colour'], msg: 'Extra inputs are not permitted', input: 'red' },
    ]);
    expect(await getConfig()).toEqual(before);
  });

  it('refuses fractional, unreadable, non-integer and negative counts', async () => {
    const res = await putConfig({ copy_mappers: 1.5, copy_bandwidth: '2.5' });
    expect(locTypes(res.body.detail)).toEqual([
      [['body', 'copy_mappers'], 'int_from_float'],
      [['body', 'copy_bandwidth'], 'int_parsing'],
    ]);
    const notNumbers = await putConfig({ copy_mappers: [1], copy_bandwidth: { n: 1 } });
    expect(locTypes(notNumbers.body.detail)).toEqual([
      [['body', 'copy_mappers'], 'int_type'],
      [['body', 'copy_bandwidth'], 'int_type'],
    ]);
    const negative = await putConfig({ copy_mappers: -1, copy_bandwidth: '-1' });
    expect(negative.body.detail).toEqual([
      expect.objectContaining({ type: 'greater_than_equal', loc: ['body', 'copy_mappers'], input: -1 }),
      expect.objectContaining({ type: 'greater_than_equal', loc: ['body', 'copy_bandwidth'], input: '-1' }),
    ]);
  });

  it('reads counts as pydantic does in lax mode: "3", " 4 ", "5.0", true (1)', async () => {
    const res = await putConfig({ copy_mappers: '3', copy_bandwidth: ' 4 ' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ copy_mappers: 3, copy_bandwidth: 4 });
    expect(await rawItem('migrationConfig', { id: 'current' })).toMatchObject({ copy_mappers: 3, copy_bandwidth: 4 });
    const again = await putConfig({ copy_mappers: '5.0', copy_bandwidth: true });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ copy_mappers: 5, copy_bandwidth: 1 });
    // a connection's port the same way
    const connId = slug('laxport');
    const conn = await putConnection(connId, { conn_type: 'ssh', host: 'edge.example.com', port: '2222' });
    expect(conn.status).toBe(200);
    expect(conn.body.port).toBe(2222);
    const bad = await api(`${CONNECTIONS}/${connId}`, {
      method: 'PUT',
      token: admin,
      body: { conn_type: 'ssh', host: 'edge.example.com', port: 'twenty-two' },
    });
    expect(bad.body.detail).toEqual([
      {
        type: 'int_parsing',
        loc: ['body', 'port'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'twenty-two',
      },
    ]);
  });

  it('answers json_invalid for malformed JSON, missing for no body, dict_type for a non-object', async () => {
    const malformed = await api(CONFIG, { method: 'PUT', token: admin, rawBody: '{"fs_user": ' });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail).toEqual([expect.objectContaining({ type: 'json_invalid', loc: ['body', 12] })]);
    const absent = await api(CONFIG, { method: 'PUT', token: admin });
    expect(absent.body.detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
    const list = await putConfig([1]);
    expect(locTypes(list.body.detail)).toEqual([[['body'], 'dict_type']]);
  });

  it('checks connection ids, connection bodies and probe types', async () => {
    const badId = await api(`${CONNECTIONS}/bad%20id`, {
      method: 'PUT',
      token: admin,
      body: { host: 7, port: 0, extra: 'x', password: 1, colour: 'red' },
    });
    expect(badId.status).toBe(422);
    expect(locTypes(badId.body.detail)).toEqual([
      [['path', 'conn_id'], 'string_pattern_mismatch'],
      [['body', 'conn_type'], 'missing'],
      [['body', 'host'], 'string_type'],
      [['body', 'port'], 'greater_than_equal'],
      [['body', 'password'], 'string_type'],
      [['body', 'extra'], 'dict_type'],
      [['body', 'colour'], 'extra_forbidden'],
    ]);
    expect(badId.body.detail[0].ctx).toEqual({ pattern: CONN_ID.source });
    const port = await api(`${CONNECTIONS}/ok`, {
      method: 'PUT',
      token: admin,
      body: { conn_type: 'http', host: 'h', port: 65536 },
    });
    expect(port.body.detail).toEqual([expect.objectContaining({ type: 'less_than_equal', ctx: { le: 65535 } })]);
    const longId = await api(`${CONNECTIONS}/${'a'.repeat(251)}`, { token: admin });
    expect(locTypes(longId.body.detail)).toEqual([[['path', 'conn_id'], 'string_pattern_mismatch']]);
    // `.` and `..` could never be reached by a URL path (parsers drop them): refused as ids.
    for (const dots of ['.', '..']) {
      const unreachable = await api(TEST, {
        method: 'POST',
        token: admin,
        body: { conn_id: dots, conn_type: 'generic' },
      });
      expect(locTypes(unreachable.body.detail), dots).toEqual([[['body', 'conn_id'], 'string_pattern_mismatch']]);
    }

    const probe = await api(TEST, { method: 'POST', token: admin, body: { conn_id: 'x y', conn_type: 'ftp' } });
    expect(probe.status).toBe(422);
    expect(probe.body.detail).toEqual([
      expect.objectContaining({ type: 'string_pattern_mismatch', loc: ['body', 'conn_id'] }),
      {
        type: 'enum',
        loc: ['body', 'conn_type'],
        msg: "Input should be 'generic', 'ssh', 'smtp', 'http' or 's3'",
        input: 'ftp',
        ctx: { expected: "'generic', 'ssh', 'smtp', 'http' or 's3'" },
      },
    ]);
    const missing = await api(TEST, { method: 'POST', token: admin, body: {} });
    expect(missing.body.detail).toEqual([
      { type: 'missing', loc: ['body', 'conn_id'], msg: 'Field required', input: {} },
    ]);
  });

  it('refuses an extra over 64 KiB as JSON', async () => {
    const res = await api(`${CONNECTIONS}/${slug('big')}`, {
      method: 'PUT',
      token: admin,
      body: { conn_type: 'http', host: 'h', extra: { blob: 'x'.repeat(70_000) } },
    });
    expect(res.status).toBe(422);
    expect(locTypes(res.body.detail)).toEqual([[['body', 'extra'], 'value_error']]);
  });
});

interface Connection {
  conn_id: string;
  conn_type: string;
  host: string;
  port: number | null;
  schema: string | null;
  login: string | null;
  extra: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}

const putConnection = (connId: string, body: unknown, t = admin) =>
  api<Connection>(`${CONNECTIONS}/${connId}`, { method: 'PUT', token: t, body });

describe('connections registry', () => {
  it('creates, reads, replaces and deletes a connection; the password never leaves', async () => {
    const connId = `${slug('ssh')}.edge_1`;
    const password = secret('conn-password');
    const created = await putConnection(connId, {
      conn_type: 'ssh',
      host: 'edge.example.com',
      port: 22,
      schema: 'default',
      login: 'migration',
      password,
      extra: { key_file: '/keys/id_rsa', nested: { timeout: 10, big: 1e300 } },
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      conn_id: connId,
      conn_type: 'ssh',
      host: 'edge.example.com',
      port: 22,
      schema: 'default',
      login: 'migration',
      extra: { key_file: '/keys/id_rsa', nested: { timeout: 10, big: 1e300 } },
      created_at: expect.stringMatching(ISO_MS),
      updated_at: expect.stringMatching(ISO_MS),
    });
    expect(Object.keys(created.body)).toEqual([
      'conn_id',
      'conn_type',
      'host',
      'port',
      'schema',
      'login',
      'extra',
      'created_at',
      'updated_at',
    ]);
    const read = await api<Connection>(`${CONNECTIONS}/${connId}`, { token: admin });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    expectNoSecrets(created.text + read.text);

    const item = await rawItem('migrationConnections', { conn_id: connId });
    expect(item?.password).toEqual({
      v: 1,
      key: expect.any(String),
      iv: expect.any(String),
      tag: expect.any(String),
      data: expect.any(String),
    });
    expectNoSecrets(JSON.stringify(item));

    // A replacement without the password keeps it (same host); optional fields left out are emptied.
    await new Promise((r) => setTimeout(r, 5));
    const replaced = await putConnection(connId, { conn_type: 'ssh', host: 'edge.example.com' });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({
      conn_id: connId,
      conn_type: 'ssh',
      host: 'edge.example.com',
      port: null,
      schema: null,
      login: null,
      extra: null,
      created_at: created.body.created_at,
      updated_at: expect.stringMatching(ISO_MS),
    });
    expect(replaced.body.updated_at > created.body.created_at).toBe(true);
    const kept = await rawItem('migrationConnections', { conn_id: connId });
    expect(kept?.password).toEqual(item?.password);
    expect(kept).not.toHaveProperty('port');

    // null (or "") removes it.
    expect((await putConnection(connId, { conn_type: 'ssh', host: 'h', password: null })).status).toBe(200);
    expect(await rawItem('migrationConnections', { conn_id: connId })).not.toHaveProperty('password');

    const deleted = await api(`${CONNECTIONS}/${connId}`, { method: 'DELETE', token: admin });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await api(`${CONNECTIONS}/${connId}`, { token: admin })).status).toBe(404);
    const again = await api(`${CONNECTIONS}/${connId}`, { method: 'DELETE', token: admin });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: expect.stringContaining(connId), code: 404 });
  });

  it('lists oldest first, paginated, without passwords', async () => {
    const ids = [slug('a'), slug('b'), slug('c')];
    for (const id of ids) {
      expect((await putConnection(id, { conn_type: 'http', host: 'h', password: secret('listed') })).status).toBe(200);
    }
    const seen: Connection[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<typeof api<Connection[]>>> = await api(
        `${CONNECTIONS}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: admin },
      );
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      expectNoSecrets(page.text);
      seen.push(...page.body);
      cursor = page.headers.get('x-next-cursor');
      pages++;
    } while (cursor && pages < 500);
    const order = seen.map((c) => c.conn_id).filter((id) => ids.includes(id));
    expect(order).toEqual(ids);
    expect(seen.every((c) => !('password' in c))).toBe(true);
    const bad = await api(`${CONNECTIONS}?cursor=not-a-cursor`, { token: admin });
    expect(locTypes(bad.body.detail)).toEqual([[['query', 'cursor'], 'value_error']]);
  });

  it('answers 404 for an unknown connection', async () => {
    const res = await api(`${CONNECTIONS}/${slug('none')}`, { token: admin });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 404 });
  });
});

describe('a stored password never follows its connection to another host', () => {
  const sealedPassword = async (connId: string) =>
    (await rawItem('migrationConnections', { conn_id: connId }))?.password as unknown;

  it('requires the password again when the host changes (422 missing at ["body", "password"])', async () => {
    const connId = slug('moved');
    const original = secret('moved-pw');
    expect(
      (await putConnection(connId, { conn_type: 'ssh', host: 'edge.example.com', login: 'ops', password: original }))
        .status,
    ).toBe(200);
    const sealed = await sealedPassword(connId);

    const moved = await putConnection(connId, { conn_type: 'ssh', host: 'attacker.example.net', login: 'ops' });
    expect(moved.status).toBe(422);
    expect(moved.body).toEqual({
      detail: [
        {
          type: 'missing',
          loc: ['body', 'password'],
          msg: 'Field required',
          input: { conn_type: 'ssh', host: 'attacker.example.net', login: 'ops' },
        },
      ],
    });
    // nothing changed
    const read = await api<Connection>(`${CONNECTIONS}/${connId}`, { token: admin });
    expect(read.body.host).toBe('edge.example.com');
    expect(await sealedPassword(connId)).toEqual(sealed);

    // The same host without the password keeps it; a new host with a password (or with
    // the password removed) is fine.
    expect((await putConnection(connId, { conn_type: 'ssh', host: 'edge.example.com', port: 2222 })).status).toBe(200);
    expect(await sealedPassword(connId)).toEqual(sealed);
    const withPassword = await putConnection(connId, {
      conn_type: 'ssh',
      host: 'edge2.example.com',
      password: secret('moved-pw-2'),
    });
    expect(withPassword.status).toBe(200);
    expect(withPassword.body.host).toBe('edge2.example.com');
    expect(await sealedPassword(connId)).not.toEqual(sealed);
    expect((await putConnection(connId, { conn_type: 'ssh', host: 'edge3.example.com', password: null })).status).toBe(
      200,
    );
    expect(await sealedPassword(connId)).toBeUndefined();
    // Without a stored password there is nothing to carry over: any host, no password.
    expect((await putConnection(connId, { conn_type: 'ssh', host: 'edge4.example.com' })).status).toBe(200);
    expectNoSecrets(moved.text + withPassword.text);
  });

  it('creates a connection without a password on any host', async () => {
    const res = await putConnection(slug('nopw'), { conn_type: 'http', host: 'web.example.com' });
    expect(res.status).toBe(200);
  });

  it('holds under concurrent writes: a password given for one host is never kept for another', async () => {
    // A replacement that keeps the password for host A races one that moves the connection
    // to host B with a new password. Whatever the order, the password stored with host A
    // is the one given for A: the keeping write is conditioned on the stored host.
    for (let round = 0; round < 8; round++) {
      const connId = slug('race');
      await putConnection(connId, { conn_type: 'ssh', host: 'a.example.com', password: secret('race-a') });
      const sealedA = await sealedPassword(connId);
      const [keep, move] = await Promise.all([
        putConnection(connId, { conn_type: 'ssh', host: 'a.example.com' }),
        putConnection(connId, { conn_type: 'ssh', host: 'b.example.com', password: secret('race-b') }),
      ]);
      expect(move.status).toBe(200);
      expect([200, 422]).toContain(keep.status);
      const item = await rawItem('migrationConnections', { conn_id: connId });
      if (item?.host === 'a.example.com') expect(item.password).toEqual(sealedA);
      else expect(item?.password).not.toEqual(sealedA);
      // A keep that failed did so because the host had moved on.
      if (keep.status === 422) expect(item?.host).toBe('b.example.com');
    }
  });
});

describe('E4 refuses link-local, cloud metadata and unspecified addresses', () => {
  let port: number;
  let connections = 0;
  const server = createServer((s) => {
    connections++;
    s.on('error', () => {});
    s.end('SSH-2.0-MetadataServiceBanner\r\n');
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '::', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const probe = (body: unknown) => api<{ ok: boolean; message: string }>(TEST, { method: 'POST', token: admin, body });

  it.each([
    ['0.0.0.0', 'generic'],
    ['::', 'ssh'],
    ['::ffff:0.0.0.0', 'smtp'],
    ['169.254.169.254', 'ssh'],
    ['::ffff:169.254.169.254', 'generic'],
    ['::ffff:a9fe:a9fe', 'http'],
    ['fe80::1', 'generic'],
    ['fd00:ec2::254', 'http'],
    ['metadata.google.internal', 'http'],
  ])('answers ok: false for host %s (%s probe), without connecting or echoing a banner', async (host, type) => {
    const connId = slug('forbidden');
    expect((await putConnection(connId, { conn_type: type, host, port })).status).toBe(200);
    const res = await probe({ conn_id: connId, conn_type: type });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: false, message: expect.stringMatching(/^refused: .*; not probed$/) });
    expect(res.text).not.toContain('MetadataServiceBanner');
    expect(connections).toBe(0);
  });

  it('refuses an http URL host and an s3 endpoint on the metadata address', async () => {
    const http = slug('forbidden-url');
    await putConnection(http, { conn_type: 'http', host: 'http://169.254.169.254/latest/meta-data/' });
    expect((await probe({ conn_id: http, conn_type: 'http' })).body).toEqual({
      ok: false,
      message: 'refused: 169.254.169.254 is a link-local, metadata or unspecified address; not probed',
    });
    const s3 = slug('forbidden-s3');
    await putConnection(s3, {
      conn_type: 'aws',
      host: '',
      schema: 'bucket',
      login: 'AKIAEXAMPLE',
      password: secret('s3-forbidden'),
      extra: { endpoint_url: 'http://[::ffff:169.254.169.254]:80' },
    });
    const res = await probe({ conn_id: s3, conn_type: 's3' });
    expect(res.body).toEqual({ ok: false, message: expect.stringMatching(/^refused: /) });
    expectNoSecrets(res.text);
  });

  it('still probes a loopback host on the same listener (private ranges and loopback stay allowed)', async () => {
    const connId = slug('loopback');
    await putConnection(connId, { conn_type: 'ssh', host: '127.0.0.1', port });
    expect((await probe({ conn_id: connId, conn_type: 'ssh' })).body).toEqual({
      ok: true,
      message: `SSH server at 127.0.0.1:${port}: SSH-2.0-MetadataServiceBanner`,
    });
    expect(connections).toBe(1);
  });
});

describe('POST /api/migration/infrastructure-config/test-connection (E4)', () => {
  const servers: Server[] = [];
  const sockets = new Set<Socket>();

  const listen = async (server: Server): Promise<number> => {
    servers.push(server);
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };

  /** A port nothing listens on: bound, then released. */
  const closedPort = async (): Promise<number> => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    return port;
  };

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  });

  const probe = (body: unknown) => api<{ ok: boolean; message: string }>(TEST, { method: 'POST', token: admin, body });

  it('reaches a TCP listener with the default generic probe', async () => {
    const port = await listen(createServer((s) => s.end()));
    const connId = slug('tcp');
    await putConnection(connId, { conn_type: 'generic', host: '127.0.0.1', port, password: secret('probe-pw') });
    const res = await probe({ conn_id: connId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, message: expect.any(String) });
    expect((await probe({ conn_id: connId, conn_type: 'generic' })).body.ok).toBe(true);
    expectNoSecrets(res.text);
  });

  it('reports a refused connection as ok: false, not as an error', async () => {
    const connId = slug('closed');
    await putConnection(connId, { conn_type: 'generic', host: '127.0.0.1', port: await closedPort() });
    const res = await probe({ conn_id: connId, conn_type: 'generic' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: false, message: expect.stringMatching(/refused/i) });
  });

  it('checks the SSH banner and the HTTP answer', async () => {
    const sshPort = await listen(createServer((s) => s.write('SSH-2.0-OpenSSH_9.6\r\n')));
    const notSshPort = await listen(createServer((s) => s.write('220 smtp.example.com ESMTP\r\n')));
    const httpServer = createHttpServer((_req, res) => res.writeHead(404).end('not here'));
    const httpPort = await listen(httpServer as unknown as Server);
    const ssh = slug('ssh');
    const notSsh = slug('notssh');
    const http = slug('http');
    await putConnection(ssh, { conn_type: 'ssh', host: '127.0.0.1', port: sshPort });
    await putConnection(notSsh, { conn_type: 'ssh', host: '127.0.0.1', port: notSshPort });
    await putConnection(http, { conn_type: 'http', host: '127.0.0.1', port: httpPort });
    expect((await probe({ conn_id: ssh, conn_type: 'ssh' })).body.ok).toBe(true);
    expect((await probe({ conn_id: notSsh, conn_type: 'ssh' })).body).toEqual({
      ok: false,
      message: expect.any(String),
    });
    expect((await probe({ conn_id: http, conn_type: 'http' })).body.ok).toBe(true);
  });

  it('probes S3 with the stored credentials: the sealed password is opened for the probe', async () => {
    const connId = slug('s3');
    const body = {
      conn_type: 'aws',
      host: '',
      schema: provided('artifactsBucket'),
      login: 'local',
      password: secret('s3-secret-key'),
    };
    await putConnection(connId, body);
    const res = await probe({ conn_id: connId, conn_type: 's3' });
    expect(res.body).toEqual({ ok: true, message: expect.stringContaining(provided('artifactsBucket')) });
    expectNoSecrets(res.text);
    // Without a password the same probe has no credentials to list with.
    await putConnection(connId, { ...body, password: null });
    expect((await probe({ conn_id: connId, conn_type: 's3' })).body).toEqual({
      ok: false,
      message: expect.stringContaining('credentials'),
    });
  });

  it('answers 404 for a connection neither the registry nor the workflow engine knows', async () => {
    const connId = slug('unknown');
    const res = await probe({ conn_id: connId });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.stringContaining(connId), code: 404 });
  });
});

describe('secrets stay secret', () => {
  it('never writes a secret key or a connection password to the service log', async () => {
    expect(secrets.length).toBeGreaterThan(5);
    const log = await serviceLog();
    expect(log).toContain('/api/migration/');
    for (const s of secrets) expect(log).not.toContain(s);
  });
});

describe('write-only values in validation errors', () => {
  it('never echoes a password or secret key back in a 422', async () => {
    const password = `pw-${slug()}-never-echoed`;
    const missingType = await api(`/api/migration/connections/${slug('conn')}`, {
      method: 'PUT',
      psk: adminPsk(),
      body: { host: '127.0.0.1', password },
    });
    expect(missingType.status).toBe(422);
    expect(missingType.body.detail).toEqual([
      expect.objectContaining({
        type: 'missing',
        loc: ['body', 'conn_type'],
        input: expect.objectContaining({ password: '**********' }),
      }),
    ]);
    expect(missingType.text).not.toContain(password);

    const longSecret = `sk-${'x'.repeat(4001)}`;
    const tooLong = await api('/api/migration/infrastructure-config', {
      method: 'PUT',
      psk: adminPsk(),
      body: { objstore_dest_secret_key: longSecret },
    });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.detail).toEqual([
      expect.objectContaining({
        type: 'string_too_long',
        loc: ['body', 'objstore_dest_secret_key'],
        input: '**********',
      }),
    ]);
    expect(tooLong.text).not.toContain('x'.repeat(100));
  });
});
