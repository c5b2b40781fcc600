import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type RunningPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';
import { randomSecret } from '../../../shared/crypto.js';
import { adminToken, api, slug, token } from '../helpers.js';
import { type Envelope, eventsBefore, eventsOf as feedEvents } from '../event-feed.js';
import { provided } from '../provided.js';

// docs/events-and-webhooks.md for the migration infrastructure (docs/data-and-catalog.md): `migration.config.updated` about
// `migration/config` (data: the configuration as its GET answers it, plus `changed_fields`),
// `migration.connection.updated` / `.deleted` / `.tested` about
// `migration/connections/{conn_id}` (data: the connection as its GET answers it, or answered
// before a deletion; a test adds the probe and its result). Never a secret key or password;
// no event for a refused change; a connection id used again goes on counting.

let admin: string;
let alice: string;
/** Makes the change that marks the end of what a test checks (event-feed.ts eventsBefore). */
let marker: string;
const MARKER = 'mig-events-marker';
const byMarker = (e: Envelope) => e.actor === MARKER;

beforeAll(async () => {
  admin = await adminToken('mig-events-admin');
  marker = await adminToken(MARKER);
  alice = await token('alice');
});

type Call = (
  path: string,
  options?: { method?: string; token?: string; body?: unknown },
) => Promise<{
  status: number;
  body: any;
  text: string;
}>;

const eventsOf = (call: Call, subject: string, count: number) => feedEvents(subject, count, admin, { call });

/** Every value written as a secret here; none may be in an event. */
const secrets: string[] = [];
const secret = (label: string) => {
  const value = `${label}-${randomUUID()}`;
  secrets.push(value);
  return value;
};
const expectNoSecrets = (events: Envelope[]) => {
  const text = JSON.stringify(events);
  for (const s of secrets) expect(text).not.toContain(s);
  expect(text).not.toMatch(/password|secret_key|ev_|list_pk|created_key/);
};

const expectEnvelopes = (events: Envelope[], subject: string) => {
  for (const e of events) {
    expect(e).toMatchObject({
      specversion: '1.0',
      source: expect.stringMatching(/^dpm\/[a-z0-9-]+$/),
      subject,
      datacontenttype: 'application/json',
    });
    expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
  }
};

const shared: Call = (path, options = {}) => api(path, options);

describe('connection events', () => {
  const CONNECTIONS = '/api/migration/connections';
  const TEST = '/api/migration/infrastructure-config/test-connection';
  const servers: Server[] = [];
  const sockets = new Set<Socket>();

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  });

  /** A TCP listener on loopback that accepts and closes: a generic probe succeeds. */
  const listener = async (): Promise<number> => {
    const server = createServer((s) => s.end());
    servers.push(server);
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };

  const put = (connId: string, body: unknown, t = admin) =>
    api(`${CONNECTIONS}/${connId}`, { method: 'PUT', token: t, body });
  const read = async (connId: string) => {
    const res = await api(`${CONNECTIONS}/${connId}`, { token: admin });
    expect(res.status).toBe(200);
    expect(res.text).not.toMatch(/ev_|password/);
    return res.body as Record<string, unknown>;
  };

  it('updated, tested and deleted, in order, with the GET answer as data; an id used again goes on counting', async () => {
    const connId = `${slug('ev-conn')}.edge`;
    const subject = `migration/connections/${connId}`;
    const port = await listener();

    const created = await put(connId, {
      conn_type: 'generic',
      host: '127.0.0.1',
      port,
      login: 'ops',
      password: secret('conn-pw'),
      extra: { timeout: 5 },
    });
    expect(created.status).toBe(200);
    const afterCreate = await read(connId);
    expect(afterCreate).toEqual(created.body);

    await new Promise((r) => setTimeout(r, 5));
    const replaced = await put(connId, { conn_type: 'generic', host: '127.0.0.1', port, schema: 'db' });
    expect(replaced.status).toBe(200);
    const afterReplace = await read(connId);

    // refused: the host changes without the password (422), a bad body (422), not an admin (403)
    expect((await put(connId, { conn_type: 'generic', host: 'elsewhere.example.com', port })).status).toBe(422);
    expect((await put(connId, { conn_type: 'generic', host: '127.0.0.1', port: 0 })).status).toBe(422);
    expect((await put(connId, { conn_type: 'generic', host: 'h', password: secret('pw') }, alice)).status).toBe(403);
    expect((await api(`${CONNECTIONS}/${connId}`, { method: 'DELETE', token: alice })).status).toBe(403);
    expect((await api(TEST, { method: 'POST', token: alice, body: { conn_id: connId } })).status).toBe(403);

    const tested = await api(TEST, { method: 'POST', token: admin, body: { conn_id: connId, conn_type: 'generic' } });
    expect(tested.status).toBe(200);
    expect(tested.body.ok).toBe(true);

    expect((await api(`${CONNECTIONS}/${connId}`, { method: 'DELETE', token: admin })).status).toBe(204);
    // refused: gone (404 for the delete and the probe)
    expect((await api(`${CONNECTIONS}/${connId}`, { method: 'DELETE', token: admin })).status).toBe(404);
    expect((await api(TEST, { method: 'POST', token: admin, body: { conn_id: connId } })).status).toBe(404);

    // The refused changes after the deletion are marked by the id's next use, below: their
    // events would come before its own (fifth and sixth).
    const first = await eventsOf(shared, subject, 4);
    expect(first.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.migration.connection.updated', 1, 'mig-events-admin'],
      ['dpm.migration.connection.updated', 2, 'mig-events-admin'],
      ['dpm.migration.connection.tested', 3, 'mig-events-admin'],
      ['dpm.migration.connection.deleted', 4, 'mig-events-admin'],
    ]);
    expect(first[0]!.data).toEqual(afterCreate);
    expect(first[1]!.data).toEqual(afterReplace);
    expect(first[2]!.data).toEqual({ ...afterReplace, probe: 'generic', ...tested.body });
    expect(first[3]!.data).toEqual(afterReplace);
    expect(first[0]!.time).toBe(afterCreate.updated_at);
    expect(first[1]!.time).toBe(afterReplace.updated_at);

    // The id used again: a new connection, whose events go on from the deletion's.
    const again = await put(connId, { conn_type: 'http', host: 'web.example.com', password: secret('again-pw') });
    expect(again.status).toBe(200);
    const afterAgain = await read(connId);
    expect(afterAgain.created_at).not.toBe(afterCreate.created_at);
    const probed = await api(TEST, { method: 'POST', token: admin, body: { conn_id: connId, conn_type: 'generic' } });
    expect(probed.status).toBe(200);
    const all = await eventsOf(shared, subject, 6);
    expect(all.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(all.slice(0, 4)).toEqual(first);
    expect(all.slice(4).map((e) => [e.type, e.sequence])).toEqual([
      ['dpm.migration.connection.updated', 5],
      ['dpm.migration.connection.tested', 6],
    ]);
    expect(all[4]!.data).toEqual(afterAgain);
    expect(all[5]!.data).toEqual({ ...afterAgain, probe: 'generic', ...probed.body });
    expectEnvelopes(all, subject);
    expectNoSecrets(all);
  });

  it('keeps one gap-free sequence when writes and a deletion race, and an id is created by racing writes', async () => {
    const connId = slug('ev-race');
    const subject = `migration/connections/${connId}`;
    // Created by five writes at once: one creates, the others replace.
    const racing = await Promise.all(
      Array.from({ length: 5 }, (_, i) => put(connId, { conn_type: 'http', host: `h${i}.example.com` })),
    );
    expect(racing.map((r) => r.status)).toEqual(Array(5).fill(200));
    // A deletion and replacements at once, in whatever order they land.
    const mixed = await Promise.all([
      api(`${CONNECTIONS}/${connId}`, { method: 'DELETE', token: admin }),
      put(connId, { conn_type: 'http', host: 'x.example.com' }),
      put(connId, { conn_type: 'http', host: 'y.example.com' }),
    ]);
    expect(mixed.map((r) => r.status)).toEqual([204, 200, 200]);
    // The marker: one more write, after every write of the race answered.
    expect((await put(connId, { conn_type: 'http', host: 'marker.example.com' }, marker)).status).toBe(200);
    const { before: events, marker: marked } = await eventsBefore(subject, byMarker, admin, { call: shared });
    expect(marked.type).toBe('dpm.migration.connection.updated');
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(events.filter((e) => e.type === 'dpm.migration.connection.deleted')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'dpm.migration.connection.updated')).toHaveLength(7);
  });

  it('an extra DynamoDB cannot hold as such (1e300, an empty key) is in the events as GET answers it', async () => {
    const connId = slug('ev-extra');
    const subject = `migration/connections/${connId}`;
    const extra = { nested: { big: 1e300, tiny: 1e-300 }, '': 'empty key', precise: 12345678901234567890 };
    expect((await put(connId, { conn_type: 'http', host: 'web.example.com', extra })).status).toBe(200);
    const before = await read(connId);
    expect(before.extra).toEqual(extra);
    expect((await api(`${CONNECTIONS}/${connId}`, { method: 'DELETE', token: admin })).status).toBe(204);
    const events = await eventsOf(shared, subject, 2);
    expect(events.map((e) => [e.type, e.sequence])).toEqual([
      ['dpm.migration.connection.updated', 1],
      ['dpm.migration.connection.deleted', 2],
    ]);
    expect(events.map((e) => e.data)).toEqual([before, before]);
  });

  it('a probe of a connection only the workflow engine knows is no event', async () => {
    const connId = slug('ev-unknown');
    expect((await api(TEST, { method: 'POST', token: admin, body: { conn_id: connId } })).status).toBe(404);
    // The marker: the connection made, its subject's first event unless the refused probe made one.
    expect((await put(connId, { conn_type: 'http', host: 'web.example.com' }, marker)).status).toBe(200);
    const { before, marker: marked } = await eventsBefore(`migration/connections/${connId}`, byMarker, admin, {
      call: shared,
    });
    expect(before).toEqual([]);
    expect(marked.type).toBe('dpm.migration.connection.updated');
  });
});

/**
 * The configuration is one record that migration.test.ts checks from a clean start (and
 * other files never write): its events are checked on a platform of this file's own,
 * under a stage of its own, on the suite's emulators.
 */
describe('configuration events', () => {
  let platform: RunningPlatform;
  let dataDir: string;
  let own: Call;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'dpm-events-migration-'));
    const config = loadConfig({
      STAGE: 'events-migration',
      PORT: '0',
      HOST: '127.0.0.1',
      DPM_DATA_DIR: dataDir,
      DPM_ADMIN_PSK: `events-migration-admin-${randomSecret()}`,
      AUTH_ISSUER: provided('issuer'),
      AUTH_AUDIENCE: provided('audience'),
      DYNAMODB_ENDPOINT: provided('dynamodbEndpoint'),
      SQS_ENDPOINT: provided('sqsEndpoint'),
      S3_ENDPOINT: provided('s3Endpoint'),
    });
    platform = await startPlatform(config, { inMemory: true, retryDelaySeconds: 1 });
    own = async (path, options = {}) => {
      const headers: Record<string, string> = {};
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body: string | undefined;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] = 'application/json';
      }
      const res = await fetch(`${platform.baseUrl}${path}`, { method: options.method ?? 'GET', headers, body });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
    };
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const CONFIG = '/api/migration/infrastructure-config';
  const putConfig = (body: unknown, t = admin) => own(CONFIG, { method: 'PUT', token: t, body });
  const getConfig = async () => {
    const res = await own(CONFIG, { token: admin });
    expect(res.status).toBe(200);
    expect(res.text).not.toMatch(/ev_|secret_key/);
    return res.body as Record<string, unknown>;
  };

  it('updated, in order, with the GET answer and the given fields as data; none for a refused update', async () => {
    const subject = 'migration/config';
    const first = await putConfig({
      fs_user: 'mapr',
      objstore_source_secret_key: secret('source-secret'),
      copy_mappers: 4,
      copy_bandwidth: 10,
    });
    expect(first.status).toBe(200);
    const afterFirst = await getConfig();
    expect(afterFirst).toEqual(first.body);

    // refused: the pair rule (422), a bad value (422), not an admin (403)
    expect((await putConfig({ copy_mappers: null })).status).toBe(422);
    expect((await putConfig({ copy_mappers: 0, copy_bandwidth: 0 })).status).toBe(422);
    expect((await putConfig({ fs_user: 'x', objstore_dest_secret_key: secret('refused') }, alice)).status).toBe(403);

    const cleared = await putConfig({ fs_user: '', objstore_dest_secret_key: secret('dest-secret') });
    expect(cleared.status).toBe(200);
    const afterCleared = await getConfig();
    const empty = await putConfig({});
    expect(empty.status).toBe(200);
    const afterEmpty = await getConfig();

    // The marker: one more update; a refused update's event would come before it.
    expect((await putConfig({}, marker)).status).toBe(200);
    const { before: events, marker: marked } = await eventsBefore(subject, byMarker, admin, { call: own });
    expect(marked.type).toBe('dpm.migration.config.updated');
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.migration.config.updated', 1, 'mig-events-admin'],
      ['dpm.migration.config.updated', 2, 'mig-events-admin'],
      ['dpm.migration.config.updated', 3, 'mig-events-admin'],
    ]);
    expect(events[0]!.data).toEqual({
      ...afterFirst,
      changed_fields: ['objstore_source_secret_key', 'copy_mappers', 'copy_bandwidth', 'fs_user'],
    });
    expect(events[1]!.data).toEqual({ ...afterCleared, changed_fields: ['objstore_dest_secret_key', 'fs_user'] });
    expect(events[2]!.data).toEqual({ ...afterEmpty, changed_fields: [] });
    expect(events.map((e) => e.time)).toEqual([afterFirst.updated_at, afterCleared.updated_at, afterEmpty.updated_at]);
    expectEnvelopes(events, subject);
    const text = JSON.stringify(events);
    for (const s of secrets) expect(text).not.toContain(s);
    // the data: the GET answer's fields (no write-only value, no key, no stamp) and changed_fields
    for (const e of events) expect(JSON.stringify(e.data)).not.toMatch(/ev_|"id"|"v":1/);
  });
});
