import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import {
  BOOTSTRAP_ADMIN_PSK_ID,
  ensureConfiguredAdminKey,
  ensureGeneratedAdminKey,
} from '../../../shared/auth/bootstrap.js';
import { KeyStore } from '../../../shared/auth/key-store.js';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { documentClient } from '../../../shared/aws/clients.js';
import { ensureTables } from '../../../infra/local/provision.js';
import { sha256Hex } from '../../../shared/crypto.js';
import { adminPsk, adminToken, api, approverToken, insertKey, slug, token, serviceLog } from '../helpers.js';
import { provided } from '../provided.js';

const DAY = 86_400_000;
let alice: string;
let bob: string;
let admin: string;

beforeAll(async () => {
  alice = await token('psk-alice');
  bob = await token('psk-bob');
  admin = await adminToken('psk-admin');
});

interface Created {
  psk: string;
  key: string;
  dataproduct_id: string;
  description: string;
  valid_until: string;
  created_by: string;
  created_at: string;
}

/** A key for `product`: `default`, which always exists, unless a test made a product of its own. */
async function createKey(t = alice, body: unknown = { description: 'etl job' }, product = 'default') {
  const res = await api<Created>(`/api/dataproduct/${product}/psk`, { method: 'POST', token: t, body });
  expect(res.status).toBe(201);
  return res.body;
}

const whoAmI = async (secret: string) => {
  // Creating a decision version records the caller's name as its author.
  const res = await api(`/api/decisions/${slug('ws')}/k/versions`, {
    method: 'POST',
    psk: secret,
    body: { content: 1 },
  });
  return res.status === 201 ? (res.body.created_by as string) : res.status;
};

const keys = () =>
  new KeyStore(
    documentClient({
      region: 'us-east-1',
      endpoints: { dynamodb: provided('dynamodbEndpoint'), sqs: undefined, s3: undefined },
    }),
    physicalTableName(provided('stage'), TABLES.keys),
  );

describe('POST /api/dataproduct/{dataproduct_id}/psk', () => {
  it('creates a key that authenticates as its creator, shown once', async () => {
    const product = await api('/api/dataproduct', {
      method: 'POST',
      token: admin,
      body: { name: slug('sales-2026'), role_name: 'analyst', query: 'SELECT 1 FROM sales.core.orders' },
    });
    expect(product.status).toBe(201);
    const before = Date.now();
    const key = await createKey(alice, { description: 'nightly export', validity_days: 7 }, product.body.id);
    expect(key).toEqual({
      psk: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      key: expect.stringMatching(/^dpm_[A-Za-z0-9_-]{43}$/),
      dataproduct_id: product.body.id,
      description: 'nightly export',
      valid_until: expect.any(String),
      created_by: 'psk-alice',
      created_at: expect.any(String),
    });
    const validUntil = Date.parse(key.valid_until);
    expect(validUntil).toBeGreaterThanOrEqual(before + 7 * DAY);
    expect(validUntil).toBeLessThanOrEqual(Date.now() + 7 * DAY);
    expect(await whoAmI(key.key)).toBe('psk-alice');
  });

  it("defaults to 30 days and carries the creator's roles", async () => {
    const approver = await approverToken('psk-approver');
    const key = await createKey(approver, { description: 'retirer' });
    expect(Date.parse(key.valid_until) - Date.parse(key.created_at)).toBe(30 * DAY);
    // retire needs approver or admin, and no session: the key's role is enough
    const ws = slug('ws');
    const v = await api(`/api/decisions/${ws}/k/versions`, { method: 'POST', token: alice, body: { content: 1 } });
    await api(`/api/decisions/${ws}/k/versions/${v.body.version}/submit`, { method: 'POST', token: alice });
    const approved = await api(`/api/decisions/${ws}/k/versions/${v.body.version}/approve`, {
      method: 'POST',
      token: await approverToken('someone-else'),
    });
    expect(approved.status).toBe(200);
    const retired = await api(`/api/decisions/${ws}/k/versions/${v.body.version}/retire`, {
      method: 'POST',
      psk: key.key,
    });
    expect(retired.status).toBe(200);
  });

  it('answers 401 without credentials and 422 for bad input, all problems together', async () => {
    expect((await api('/api/dataproduct/p/psk', { method: 'POST', body: { description: 'x' } })).status).toBe(401);
    const res = await api('/api/dataproduct/bad%20id/psk', {
      method: 'POST',
      token: alice,
      body: { validity_days: 0, colour: 'red' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['path', 'dataproduct_id'], 'string_pattern_mismatch'],
      [['body', 'description'], 'missing'],
      [['body', 'validity_days'], 'greater_than_equal'],
      [['body', 'colour'], 'extra_forbidden'],
    ]);
    const tooLong = await api('/api/dataproduct/p/psk', {
      method: 'POST',
      token: alice,
      body: { description: 'x', validity_days: 3651 },
    });
    expect(tooLong.body.detail).toEqual([
      expect.objectContaining({ type: 'less_than_equal', loc: ['body', 'validity_days'], ctx: { le: 3650 } }),
    ]);
    const notInt = await api('/api/dataproduct/p/psk', {
      method: 'POST',
      token: alice,
      body: { description: 'x', validity_days: 'ten' },
    });
    expect(notInt.body.detail).toEqual([
      expect.objectContaining({ type: 'int_parsing', loc: ['body', 'validity_days'], input: 'ten' }),
    ]);
    // pydantic's lax mode: a numeric string is the number.
    const numeric = await api('/api/dataproduct/default/psk', {
      method: 'POST',
      token: alice,
      body: { description: 'x', validity_days: '3' },
    });
    expect(numeric.status).toBe(201);
    const malformed = await api('/api/dataproduct/p/psk', {
      method: 'POST',
      token: alice,
      rawBody: '{"description": ',
    });
    expect(malformed.body.detail).toEqual([expect.objectContaining({ type: 'json_invalid', loc: ['body', 16] })]);
  });
});

describe('GET /api/dataproduct/psk', () => {
  it("lists the caller's own keys without secrets; an admin sees all", async () => {
    const mine = await createKey(alice);
    const theirs = await createKey(bob);
    const list = await api<Record<string, unknown>[]>('/api/dataproduct/psk?limit=1000', { token: alice });
    expect(list.status).toBe(200);
    const ids = list.body.map((k) => k.psk);
    expect(ids).toContain(mine.psk);
    expect(ids).not.toContain(theirs.psk);
    expect(list.body.every((k) => k.created_by === 'psk-alice')).toBe(true);
    const entry = list.body.find((k) => k.psk === mine.psk)!;
    expect(Object.keys(entry).sort()).toEqual(
      ['created_at', 'created_by', 'dataproduct_id', 'deleted_at', 'description', 'psk', 'valid_until'].sort(),
    );
    expect(JSON.stringify(list.body)).not.toContain(mine.key);
    expect(JSON.stringify(list.body)).not.toContain(sha256Hex(mine.key));

    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof api<{ psk: string }[]>>> = await api(
        `/api/dataproduct/psk?limit=50${cursor ? `&cursor=${cursor}` : ''}`,
        { token: admin },
      );
      expect(page.status).toBe(200);
      all.push(...page.body.map((k) => k.psk));
      cursor = page.headers.get('x-next-cursor');
    } while (cursor);
    expect(all).toEqual(expect.arrayContaining([mine.psk, theirs.psk, BOOTSTRAP_ADMIN_PSK_ID]));
  });

  it('shows deleted keys only with include_deleted (pydantic booleans)', async () => {
    const gone = await createKey(alice);
    expect((await api(`/api/dataproduct/psk/${gone.psk}`, { method: 'DELETE', token: alice })).status).toBe(204);
    const without = await api<{ psk: string }[]>('/api/dataproduct/psk?limit=1000', { token: alice });
    expect(without.body.map((k) => k.psk)).not.toContain(gone.psk);
    for (const flag of ['true', 'True', '1', 'yes', 'on']) {
      const withDeleted = await api<{ psk: string; deleted_at: string | null }[]>(
        `/api/dataproduct/psk?limit=1000&include_deleted=${flag}`,
        { token: alice },
      );
      expect(withDeleted.body.find((k) => k.psk === gone.psk)?.deleted_at).toEqual(expect.any(String));
    }
    const bad = await api('/api/dataproduct/psk?include_deleted=maybe', { token: alice });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      expect.objectContaining({ type: 'bool_parsing', loc: ['query', 'include_deleted'] }),
    ]);
  });

  it('pages over live keys only: full pages while live keys follow, no cursor after the last', async () => {
    const owner = await token(slug('pager'));
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push(await createKey(owner));
    for (const k of [keys[0]!, keys[1]!, keys[3]!]) {
      expect((await api(`/api/dataproduct/psk/${k.psk}`, { method: 'DELETE', token: owner })).status).toBe(204);
    }
    const first = await api<{ psk: string }[]>('/api/dataproduct/psk?limit=1', { token: owner });
    expect(first.body.map((k) => k.psk)).toEqual([keys[2]!.psk]);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toBeTruthy();
    const second = await api<{ psk: string }[]>(`/api/dataproduct/psk?limit=1&cursor=${cursor}`, { token: owner });
    expect(second.body.map((k) => k.psk)).toEqual([keys[4]!.psk]);
    expect(second.headers.get('x-next-cursor')).toBeNull();
    const all = await api<{ psk: string }[]>('/api/dataproduct/psk?limit=5&include_deleted=true', { token: owner });
    expect(all.body).toHaveLength(5);
    expect(all.headers.get('x-next-cursor')).toBeNull();
  });
});

describe('DELETE /api/dataproduct/psk/{psk_id}', () => {
  it('stops the key at once', async () => {
    const key = await createKey(alice);
    expect(await whoAmI(key.key)).toBe('psk-alice');
    const res = await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE', token: alice });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await whoAmI(key.key)).toBe(401);
    expect((await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE', token: alice })).status).toBe(404);
  });

  it('lets only the creator or an admin delete; 404 unknown; 422 bad id', async () => {
    const key = await createKey(alice);
    const other = await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE', token: bob });
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ error: expect.any(String), code: 403 });
    expect((await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE', psk: adminPsk() })).status).toBe(204);
    expect(
      (await api('/api/dataproduct/psk/7c9e6679-7425-40de-944b-e07fc1f90ae7', { method: 'DELETE', token: alice }))
        .status,
    ).toBe(404);
    const bad = await api('/api/dataproduct/psk/nope', { method: 'DELETE', token: alice });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      expect.objectContaining({ type: 'uuid_parsing', loc: ['path', 'psk_id'], input: 'nope' }),
    ]);
    expect((await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE' })).status).toBe(401);
  });
});

describe('E7 POST /api/dataproduct/psk/{psk_id}/extend', () => {
  it('adds the days to a live key', async () => {
    const key = await createKey(alice, { description: 'to extend', validity_days: 5 });
    const res = await api(`/api/dataproduct/psk/${key.psk}/extend`, {
      method: 'POST',
      token: alice,
      body: { validity_days: 10 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ psk: key.psk, description: 'to extend', valid_until: expect.any(String) });
    expect(Date.parse(res.body.valid_until) - Date.parse(key.valid_until)).toBe(10 * DAY);
  });

  it('extends an expired key from now, and it works again', async () => {
    const { secret, hash } = await insertKey({
      createdBy: 'psk-alice',
      validUntil: new Date(Date.now() - 5 * DAY).toISOString(),
    });
    expect(await whoAmI(secret)).toBe(401);
    const record = await keys().getByHash(hash);
    const before = Date.now();
    const res = await api(`/api/dataproduct/psk/${record!.psk}/extend`, {
      method: 'POST',
      token: alice,
      body: { validity_days: 2 },
    });
    expect(res.status).toBe(200);
    const validUntil = Date.parse(res.body.valid_until);
    expect(validUntil).toBeGreaterThanOrEqual(before + 2 * DAY);
    expect(validUntil).toBeLessThanOrEqual(Date.now() + 2 * DAY);
    expect(await whoAmI(secret)).toBe('psk-alice');
  });

  it('counts every one of 20 concurrent extensions', async () => {
    const key = await createKey(alice, { description: 'contended', validity_days: 1 });
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        api(`/api/dataproduct/psk/${key.psk}/extend`, { method: 'POST', token: alice, body: { validity_days: 1 } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const list = await api<{ psk: string; valid_until: string }[]>('/api/dataproduct/psk?limit=1000', { token: alice });
    const final = list.body.find((k) => k.psk === key.psk)!;
    expect(Date.parse(final.valid_until) - Date.parse(key.valid_until)).toBe(20 * DAY);
  });

  it("answers 403 for someone else's key, 404 for unknown or deleted keys, 422 for bad days", async () => {
    const key = await createKey(alice);
    const other = await api(`/api/dataproduct/psk/${key.psk}/extend`, {
      method: 'POST',
      token: bob,
      body: { validity_days: 1 },
    });
    expect(other.status).toBe(403);
    expect(
      (
        await api(`/api/dataproduct/psk/${key.psk}/extend`, {
          method: 'POST',
          token: admin,
          body: { validity_days: 1 },
        })
      ).status,
    ).toBe(200);
    const unknown = await api('/api/dataproduct/psk/7c9e6679-7425-40de-944b-e07fc1f90ae7/extend', {
      method: 'POST',
      token: alice,
      body: { validity_days: 1 },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: expect.any(String), code: 404 });
    await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE', token: alice });
    expect(
      (
        await api(`/api/dataproduct/psk/${key.psk}/extend`, {
          method: 'POST',
          token: alice,
          body: { validity_days: 1 },
        })
      ).status,
    ).toBe(404);
    for (const days of [0, 3651]) {
      const bad = await api(`/api/dataproduct/psk/${key.psk}/extend`, {
        method: 'POST',
        token: alice,
        body: { validity_days: days },
      });
      expect(bad.status).toBe(422);
      expect(bad.body.detail[0].loc).toEqual(['body', 'validity_days']);
    }
    const missing = await api(`/api/dataproduct/psk/${key.psk}/extend`, { method: 'POST', token: alice, body: {} });
    expect(missing.body.detail).toEqual([expect.objectContaining({ type: 'missing', loc: ['body', 'validity_days'] })]);
  });
});

describe('the bootstrap admin key', () => {
  it('exists once, however often start-up runs, and a new DPM_ADMIN_PSK retires the old one', async () => {
    const store = keys();
    const live = async () => (await store.findByPskId(BOOTSTRAP_ADMIN_PSK_ID)).filter((k) => !k.deleted_at);
    expect(await live()).toHaveLength(1);
    await ensureConfiguredAdminKey(store, adminPsk());
    await ensureConfiguredAdminKey(store, adminPsk());
    expect(await ensureGeneratedAdminKey(store)).toBeUndefined();
    expect((await live()).map((k) => k.key_hash)).toEqual([sha256Hex(adminPsk())]);
  });
});

describe('the bootstrap admin key, guarded', () => {
  it('is not anyone\'s named "admin", and cannot be extended past 9999-12-31', async () => {
    const impostor = await token('admin');
    const del = await api(`/api/dataproduct/psk/${BOOTSTRAP_ADMIN_PSK_ID}`, { method: 'DELETE', token: impostor });
    expect(del.status).toBe(403);
    const extendByImpostor = await api(`/api/dataproduct/psk/${BOOTSTRAP_ADMIN_PSK_ID}/extend`, {
      method: 'POST',
      token: impostor,
      body: { validity_days: 1 },
    });
    expect(extendByImpostor.status).toBe(403);
    const tooFar = await api(`/api/dataproduct/psk/${BOOTSTRAP_ADMIN_PSK_ID}/extend`, {
      method: 'POST',
      token: admin,
      body: { validity_days: 1 },
    });
    expect(tooFar.status).toBe(409);
    expect(tooFar.body).toEqual({ error: expect.stringContaining('9999-12-31'), code: 409 });
  });

  it('comes back at start-up when it was deleted while still configured', async () => {
    // A stage of its own: deleting the suite's admin key would disturb the other tests.
    const stage = `revive${Date.now() % 100000}`;
    const endpoint = provided('dynamodbEndpoint');
    const admin = new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint }));
    await ensureTables(admin, stage);
    admin.destroy();
    const store = new KeyStore(
      documentClient({ region: 'us-east-1', endpoints: { dynamodb: endpoint, sqs: undefined, s3: undefined } }),
      physicalTableName(stage, TABLES.keys),
    );
    const secret = 'revive-admin-key-0123456789';
    await ensureConfiguredAdminKey(store, secret);
    const hash = sha256Hex(secret);
    expect(await store.markDeleted(hash, new Date().toISOString())).toBe(true);
    await ensureConfiguredAdminKey(store, secret);
    const record = await store.getByHash(hash);
    expect(record?.deleted_at).toBeUndefined();
    expect(record?.roles).toEqual(['admin']);
    expect((await store.findByPskId(BOOTSTRAP_ADMIN_PSK_ID)).filter((k) => !k.deleted_at)).toHaveLength(1);
    // a new configured secret retires the old one: still exactly one live admin key
    await ensureConfiguredAdminKey(store, 'revive-admin-key-rotated-9876');
    const live = (await store.findByPskId(BOOTSTRAP_ADMIN_PSK_ID)).filter((k) => !k.deleted_at);
    expect(live.map((k) => k.key_hash)).toEqual([sha256Hex('revive-admin-key-rotated-9876')]);
  });
});

describe('secrets stay secret', () => {
  it("never writes a key's secret to the keys table or the service log", async () => {
    const key = await createKey(alice);
    await whoAmI(key.key);
    await api(`/api/dataproduct/psk/${key.psk}/extend`, { method: 'POST', psk: key.key, body: { validity_days: 1 } });
    const item = await keys().getByHash(sha256Hex(key.key));
    expect(item).toBeDefined();
    expect(JSON.stringify(item)).not.toContain(key.key);
    const log = await serviceLog();
    expect(log).toContain('/api/dataproduct/');
    expect(log).not.toContain(key.key);
    expect(log).not.toContain(adminPsk());
  });
});
