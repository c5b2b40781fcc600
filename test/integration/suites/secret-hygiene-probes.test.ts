import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, slug, token } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * Walks the risky paths of every secret-bearing resource (docs/data-and-catalog.md, docs/identity-and-keys.md): validation
 * errors on bodies that carry secrets (a 422 `input` echoes the body), conflicts, missing
 * resources, lists and reads. These tests only check that each path was taken; whether a
 * secret leaked is decided afterwards by the suite-wide check in
 * test/hygiene/secret-hygiene.test.ts, which reads every recorded exchange and the log.
 */

let admin: string;
let alice: string;
let bob: string;

beforeAll(async () => {
  admin = await adminToken('hygiene-admin');
  alice = await token('hygiene-alice');
  bob = await token('hygiene-bob');
});

/** A distinct secret value per use, so a leak names the call that sent it. */
const secretValue = (label: string) => `${label}-${randomUUID().slice(0, 13)}`;

describe('pre-shared keys', () => {
  it('shows the key once: not in lists, extensions, errors or later calls made with it', async () => {
    const dp = 'default';
    const created = await api(`/api/dataproduct/${dp}/psk`, {
      method: 'POST',
      token: alice,
      body: { description: 'hygiene probe', validity_days: 7 },
    });
    expect(created.status).toBe(201);
    const { psk, key } = created.body as { psk: string; key: string };
    expect(key.length).toBeGreaterThanOrEqual(8);

    // Used as a credential, listed by its owner and by an admin, with and without deleted keys.
    expect((await api('/api/dataproduct/psk', { psk: key })).status).toBe(200);
    expect((await api('/api/dataproduct/psk?include_deleted=true', { token: alice })).status).toBe(200);
    expect((await api('/api/dataproduct/psk?limit=1000', { token: admin })).status).toBe(200);

    const extend = (body: unknown, t = alice) =>
      api(`/api/dataproduct/psk/${psk}/extend`, { method: 'POST', token: t, body });
    expect((await extend({ validity_days: 1 })).status).toBe(200);
    expect((await extend({ validity_days: 0 })).status).toBe(422);
    expect((await extend({ validity_days: 1 }, bob)).status).toBeOneOf([403, 404]);
    expect(
      (
        await api(`/api/dataproduct/psk/${psk}/extend`, {
          method: 'POST',
          psk: key,
          rawBody: '{"validity_days": ',
        })
      ).status,
    ).toBe(422);
    const invalid = await api(`/api/dataproduct/${dp}/psk`, {
      method: 'POST',
      psk: key,
      body: { description: 'x', validity_days: 99_999 },
    });
    expect(invalid.status).toBe(422);

    expect((await api(`/api/dataproduct/psk/${psk}`, { method: 'DELETE', token: bob })).status).toBeOneOf([403, 404]);
    expect((await api(`/api/dataproduct/psk/${psk}`, { method: 'DELETE', psk: key })).status).toBe(204);
    // Deleted: the key no longer works, and the errors about it must not show it.
    expect((await api('/api/dataproduct/psk', { psk: key })).status).toBe(401);
    expect((await extend({ validity_days: 1 })).status).toBe(404);
    expect((await api(`/api/dataproduct/psk/${psk}`, { method: 'DELETE', token: alice })).status).toBe(404);
    expect((await api('/api/dataproduct/psk?include_deleted=true', { token: alice })).status).toBe(200);
  });

  it('never echoes a key that is refused', async () => {
    const wrong = secretValue('not-a-key');
    const res = await api('/api/dataproduct/psk', { psk: wrong });
    expect(res.status).toBe(401);
    expect((await api('/api/dataproduct/psk', { psk: wrong, token: alice })).status).toBeOneOf([200, 401]);
  });
});

describe('data shares', () => {
  it("shows a share's secret only in its create, read and rotate answers", async () => {
    const name = slug('hyg-share');
    const created = await api(`/api/data_shares`, { method: 'POST', token: alice, body: { name, tables: ['t1'] } });
    expect(created.status).toBe(201);
    expect(created.body.secret).toEqual(expect.any(String));

    const taken = await api(`/api/data_shares`, { method: 'POST', token: alice, body: { name } });
    expect(taken.status).toBe(409);
    const takenByOther = await api(`/api/data_shares`, { method: 'POST', token: bob, body: { name } });
    expect(takenByOther.status).toBe(409);
    const invalid = await api(`/api/data_shares`, {
      method: 'POST',
      token: alice,
      body: { name: 'Not A Slug!', description: 'x', colour: 'red' },
    });
    expect(invalid.status).toBe(422);

    const ownList = await api(`/api/data_shares`, { token: alice });
    expect(ownList.status).toBe(200);
    expect((await api(`/api/data_shares?limit=1000`, { token: admin })).status).toBe(200);
    expect((await api(`/api/data_shares/${name}`, { token: alice })).status).toBe(200);
    expect((await api(`/api/data_shares/${name}`, { token: admin })).status).toBe(200);
    expect((await api(`/api/data_shares/${name}`, { token: bob })).status).toBeOneOf([403, 404]);
    expect((await api(`/api/data_shares/${name}/rotate-secret`, { method: 'POST', token: bob })).status).toBeOneOf([
      403, 404,
    ]);

    const rotated = await api(`/api/data_shares/${name}/rotate-secret`, { method: 'POST', token: alice });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    expect((await api(`/api/data_shares/${name}`, { token: alice })).status).toBe(200);
    expect((await api(`/api/data_shares`, { token: alice })).status).toBe(200);

    expect((await api(`/api/data_shares/${name}`, { method: 'DELETE', token: bob })).status).toBeOneOf([403, 404]);
    expect((await api(`/api/data_shares/${name}`, { method: 'DELETE', token: alice })).status).toBe(204);
    expect((await api(`/api/data_shares/${name}`, { token: alice })).status).toBe(404);
    expect((await api(`/api/data_shares/${name}/rotate-secret`, { method: 'POST', token: alice })).status).toBe(404);
    expect((await api(`/api/data_shares/${name}`, { method: 'DELETE', token: alice })).status).toBe(404);
  });
});

describe('migration write-only fields', () => {
  const CONFIG = '/api/migration/infrastructure-config';
  const CONNECTIONS = '/api/migration/connections';

  it('never echoes the object-store secret keys, in answers or in validation errors', async () => {
    // Only the write-only fields are set, so other files reading the configuration see no change.
    const saved = await api(CONFIG, {
      method: 'PUT',
      token: admin,
      body: {
        objstore_source_secret_key: secretValue('src-secret'),
        objstore_dest_secret_key: secretValue('dest-secret'),
      },
    });
    expect(saved.status).toBe(200);
    expect((await api(CONFIG, { token: admin })).status).toBe(200);

    const failures: [string, unknown][] = [
      // value_error across fields: pydantic's `input` is the whole body.
      // Both given and disagreeing: broken whatever other files have stored meanwhile.
      ['pair', { copy_mappers: 2, copy_bandwidth: null, objstore_source_secret_key: secretValue('pair-secret') }],
      ['extra', { objstore_dest_secret_key: secretValue('extra-secret'), colour: 'red' }],
      ['type', { objstore_source_secret_key: secretValue('type-secret'), copy_bandwidth: 'fast' }],
      ['long', { objstore_dest_secret_key: `${secretValue('long-secret')}${'x'.repeat(4_000)}` }],
      ['not an object', [{ objstore_source_secret_key: secretValue('array-secret') }]],
    ];
    for (const [what, body] of failures) {
      expect((await api(CONFIG, { method: 'PUT', token: admin, body })).status, what).toBe(422);
    }
    // A malformed body: the service cannot parse it, but its error must not quote the value.
    const unquoted = await api(CONFIG, {
      method: 'PUT',
      token: admin,
      rawBody: `{"objstore_source_secret_key": Unq${randomUUID().slice(0, 7)}}`,
    });
    expect(unquoted.status).toBe(422);
    const cut = await api(CONFIG, {
      method: 'PUT',
      token: admin,
      rawBody: `{"objstore_dest_secret_key": "${secretValue('cut-secret')}"`,
    });
    expect(cut.status).toBe(422);

    // Refused callers: 401 and 403 answers to a body with a secret.
    const body = { objstore_source_secret_key: secretValue('denied-secret') };
    expect((await api(CONFIG, { method: 'PUT', token: alice, body })).status).toBe(403);
    expect((await api(CONFIG, { method: 'PUT', body })).status).toBe(401);
  });

  it('never echoes a connection password: reads, lists, errors and probes', async () => {
    const connId = slug('hyg-conn');
    const url = `${CONNECTIONS}/${connId}`;
    const put = (body: unknown, t = admin, path = url) => api(path, { method: 'PUT', token: t, body });
    const connection = {
      conn_type: 'generic',
      host: '127.0.0.1',
      port: 1,
      login: 'probe-user',
      password: secretValue('conn-password'),
      extra: { note: 'hygiene probe' },
    };
    expect((await put(connection)).status).toBe(200);
    expect((await api(url, { token: admin })).status).toBe(200);
    expect((await api(`${CONNECTIONS}?limit=1000`, { token: admin })).status).toBe(200);

    const failures: [string, unknown][] = [
      // `missing`: pydantic's `input` is the object lacking the field, password and all.
      ['missing', { host: 'h', password: secretValue('missing-password') }],
      ['extra', { ...connection, password: secretValue('extra-password'), colour: 'red' }],
      ['port', { ...connection, password: secretValue('port-password'), port: 0 }],
      ['type', { ...connection, password: 12_345_678 }],
      ['long', { ...connection, password: `${secretValue('long-password')}${'p'.repeat(4_000)}` }],
      ['extra type', { ...connection, password: secretValue('extra-type-password'), extra: 'not an object' }],
    ];
    for (const [what, body] of failures) {
      expect((await put(body)).status, what).toBe(422);
    }
    const badId = await put(
      { ...connection, password: secretValue('bad-id-password') },
      admin,
      `${CONNECTIONS}/bad%20id`,
    );
    expect(badId.status).toBe(422);
    const unquoted = await api(url, {
      method: 'PUT',
      token: admin,
      rawBody: `{"conn_type": "generic", "host": "h", "password": Unq${randomUUID().slice(0, 7)}}`,
    });
    expect(unquoted.status).toBe(422);
    expect((await put({ ...connection, password: secretValue('denied-password') }, alice)).status).toBe(403);

    // E4 with the stored password: a refused TCP connection and an S3 listing.
    const TEST = '/api/migration/infrastructure-config/test-connection';
    const tcp = await api(TEST, { method: 'POST', token: admin, body: { conn_id: connId, conn_type: 'generic' } });
    expect(tcp.status).toBe(200);
    expect(tcp.body.ok).toBe(false);
    const s3Id = slug('hyg-s3');
    const s3 = {
      conn_type: 's3',
      host: provided('s3Endpoint'),
      schema: slug('no-such-bucket'),
      login: 'probe-access-key',
      password: secretValue('s3-secret-key'),
    };
    expect((await put(s3, admin, `${CONNECTIONS}/${s3Id}`)).status).toBe(200);
    const listing = await api(TEST, { method: 'POST', token: admin, body: { conn_id: s3Id, conn_type: 's3' } });
    expect(listing.status).toBe(200);
    expect(listing.body).toEqual({ ok: expect.any(Boolean), message: expect.any(String) });
    expect((await api(`${CONNECTIONS}/${s3Id}`, { method: 'DELETE', token: admin })).status).toBe(204);

    expect((await api(url, { method: 'DELETE', token: admin })).status).toBe(204);
    expect((await api(url, { token: admin })).status).toBe(404);
    expect((await api(url, { method: 'DELETE', token: admin })).status).toBe(404);
    const unknown = await api(TEST, { method: 'POST', token: admin, body: { conn_id: connId, conn_type: 'generic' } });
    expect(unknown.status).toBe(404);
  });
});
