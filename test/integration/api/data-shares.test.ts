import { readFileSync } from 'node:fs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDataSharesApp } from '../../../functions/data-shares/app.js';
import { DataShareService } from '../../../functions/data-shares/service.js';
import { DynamoDataShareStore } from '../../../functions/data-shares/store.js';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { KeycloakIdentityProvider } from '../../../shared/adapters/keycloak.js';
import type { RequestAuthenticator } from '../../../shared/auth/authenticator.js';
import { type FakeKeycloak, startFakeKeycloak } from '../../support/keycloak-server.js';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import { adminPsk, adminToken, api, type ApiResponse, db, slug, token, eventsTable, serviceLog } from '../helpers.js';
import { provided } from '../provided.js';

interface Share {
  id: string;
  client_id: string;
  name: string;
  enabled: boolean;
  service_accounts_enabled: boolean;
  secret: string | null;
  owner: string;
  description: string | null;
  tables: string[];
  created_at: string;
}

let admin: string;
let alice: string;
let bob: string;

beforeAll(async () => {
  admin = await adminToken('share-admin');
  alice = await token('alice');
  bob = await token('bob');
});

const table = (key: 'dataShares' | 'idpClients') => physicalTableName(provided('stage'), TABLES[key]);
const rawItem = async (key: 'dataShares' | 'idpClients', name: string) =>
  (
    await db().send(
      new GetCommand({
        TableName: table(key),
        Key: key === 'dataShares' ? { name } : { client_id: name },
        ConsistentRead: true,
      }),
    )
  ).Item;

const create = (body: unknown, t = alice) => api<Share>('/api/data_shares', { method: 'POST', token: t, body });
const read = (name: string, t = alice) => api<Share>(`/api/data_shares/${name}`, { token: t });
const rotate = (name: string, t = alice) =>
  api<Share>(`/api/data_shares/${name}/rotate-secret`, { method: 'POST', token: t });
const remove = (name: string, t = alice) => api(`/api/data_shares/${name}`, { method: 'DELETE', token: t });

async function createShare(t = alice, body: Record<string, unknown> = {}): Promise<Share> {
  const res = await create({ name: slug('share'), ...body }, t);
  expect(res.status).toBe(201);
  return res.body;
}

/** Every item of a list, following `X-Next-Cursor`. */
async function listAll(t: string, limit = 1000): Promise<{ items: Share[]; pages: ApiResponse<Share[]>[] }> {
  const items: Share[] = [];
  const pages: ApiResponse<Share[]>[] = [];
  let cursor: string | null = null;
  do {
    const page: ApiResponse<Share[]> = await api<Share[]>(
      `/api/data_shares?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token: t },
    );
    expect(page.status).toBe(200);
    pages.push(page);
    items.push(...page.body);
    cursor = page.headers.get('x-next-cursor');
  } while (cursor && pages.length < 1000);
  return { items, pages };
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('data shares (built-in identity provider)', () => {
  it('creates a share owned by the caller, with its client and secret', async () => {
    const name = slug('share');
    const res = await create({ name, description: 'sales for partners', tables: ['sales.orders', 'sales.items'] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      client_id: name,
      name,
      enabled: true,
      service_accounts_enabled: true,
      secret: expect.stringMatching(/^[\w-]{40,}$/),
      owner: 'alice',
      description: 'sales for partners',
      tables: ['sales.orders', 'sales.items'],
      created_at: expect.stringMatching(ISO),
    });
    const minimal = await create({ name: slug('share') });
    expect(minimal.status).toBe(201);
    expect(minimal.body).toMatchObject({ description: null, tables: [], owner: 'alice' });
    expect(minimal.body.secret).not.toBe(res.body.secret);
  });

  it('E8: the owner and admins read the share with its secret; others get 403', async () => {
    const share = await createShare();
    const own = await read(share.name);
    expect(own.status).toBe(200);
    expect(own.body).toEqual(share);
    expect((await read(share.name, admin)).body).toEqual(share);
    const viaPsk = await api<Share>(`/api/data_shares/${share.name}`, { psk: adminPsk() });
    expect(viaPsk.status).toBe(200);
    expect(viaPsk.body.secret).toBe(share.secret);
    const other = await read(share.name, bob);
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ error: expect.any(String), code: 403 });
    expect(other.text).not.toContain(share.secret!);
  });

  it('answers 401 without credentials, before anything else', async () => {
    const name = slug('share');
    for (const res of [
      await api('/api/data_shares', { method: 'POST', body: { name } }),
      await api('/api/data_shares', { method: 'POST', body: { name: 'Not A Slug', extra: 1 } }),
      await api('/api/data_shares'),
      await api(`/api/data_shares/${name}`),
      await api('/api/data_shares/Not_A_Slug'),
      await api(`/api/data_shares/${name}/rotate-secret`, { method: 'POST' }),
      await api(`/api/data_shares/${name}`, { method: 'DELETE' }),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 401 });
      expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    }
    expect((await read(name)).status).toBe(404);
  });

  it('answers 404 for an unknown share (before 403), and 422 for a bad name (before 404)', async () => {
    const unknown = slug('none');
    for (const res of [await read(unknown, bob), await rotate(unknown, bob), await remove(unknown, bob)]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String), code: 404 });
    }
    const bad = await api('/api/data_shares/Bad_Name', { token: alice });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      {
        type: 'string_pattern_mismatch',
        // The share's name or its id (docs/sdk.md)
        loc: ['path', 'share_id'],
        msg: "String should match pattern '^[a-z0-9][a-z0-9-]{0,63}$'",
        input: 'Bad_Name',
        ctx: { pattern: '^[a-z0-9][a-z0-9-]{0,63}$' },
      },
    ]);
    expect((await rotate('-x')).status).toBe(422);
    expect((await remove('x'.repeat(65))).status).toBe(422);
  });

  it('validates the body: each rule, all failures together', async () => {
    const detail = async (body: unknown) => {
      const res = await create(body);
      expect(res.status).toBe(422);
      return (res.body as unknown as { detail: { type: string; loc: unknown[]; ctx?: unknown }[] }).detail;
    };
    expect(await detail({ name: 'Has_Upper' })).toEqual([
      expect.objectContaining({
        type: 'string_pattern_mismatch',
        loc: ['body', 'name'],
        ctx: { pattern: '^[a-z0-9][a-z0-9-]{0,63}$' },
      }),
    ]);
    expect(await detail({ name: '-leading' })).toEqual([
      expect.objectContaining({ type: 'string_pattern_mismatch', loc: ['body', 'name'] }),
    ]);
    expect(await detail({ name: 'a'.repeat(65) })).toEqual([
      {
        type: 'string_too_long',
        loc: ['body', 'name'],
        msg: 'String should have at most 64 characters',
        input: 'a'.repeat(65),
        ctx: { max_length: 64 },
      },
    ]);
    expect(await detail({ name: slug(), tables: 'sales.orders' })).toEqual([
      expect.objectContaining({ type: 'list_type', loc: ['body', 'tables'] }),
    ]);
    expect(await detail({ name: slug(), tables: ['ok', 7] })).toEqual([
      expect.objectContaining({ type: 'string_type', loc: ['body', 'tables', 1] }),
    ]);
    expect(await detail({ name: slug(), owner: 'mallory' })).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'owner'], msg: 'Extra inputs are not permitted', input: 'mallory' },
    ]);
    expect(await detail({ description: 5, tables: {}, secret: 'x' })).toEqual([
      expect.objectContaining({ type: 'missing', loc: ['body', 'name'] }),
      expect.objectContaining({ type: 'string_type', loc: ['body', 'description'] }),
      expect.objectContaining({ type: 'list_type', loc: ['body', 'tables'] }),
      expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'secret'] }),
    ]);
    const malformed = await api('/api/data_shares', { method: 'POST', token: alice, rawBody: '{"name": "x",' });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail).toEqual([expect.objectContaining({ type: 'json_invalid', loc: ['body', 13] })]);
    const empty = await api('/api/data_shares', { method: 'POST', token: alice });
    expect(empty.body.detail).toEqual([expect.objectContaining({ type: 'missing', loc: ['body'] })]);
    expect((await create([{ name: slug() }])).status).toBe(422);
  });

  it('answers 409 when the name is taken, by anyone', async () => {
    const share = await createShare();
    const again = await create({ name: share.name });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: expect.any(String), code: 409 });
    expect((await create({ name: share.name, description: 'mine now' }, bob)).status).toBe(409);
    // The first share is untouched.
    expect((await read(share.name)).body).toEqual(share);
  });

  it('of 5 concurrent creations of one name, exactly one succeeds', async () => {
    const name = slug('race');
    const results = await Promise.all(
      ['alice', 'bob', 'carol', 'dave', 'erin'].map(async (who) => create({ name }, await token(who))),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409]);
    const winner = results.find((r) => r.status === 201)!.body;
    const stored = await read(name, admin);
    expect(stored.body).toEqual(winner);
    expect((await rawItem('idpClients', name))!.id).toBe(winner.id);
  });

  it('lists own shares without secrets, oldest first and paginated; admins see all', async () => {
    const owner = slug('owner');
    const ownerToken = await token(owner);
    const mine = [await createShare(ownerToken), await createShare(ownerToken), await createShare(ownerToken)];
    const theirs = await createShare(bob);
    const { items, pages } = await listAll(ownerToken, 2);
    expect(pages.length).toBeGreaterThanOrEqual(2);
    expect(pages[0]!.body).toHaveLength(2);
    expect(items).toEqual(mine.map((s) => ({ ...s, secret: null })));
    for (const page of pages) for (const s of mine) expect(page.text).not.toContain(s.secret!);

    const bobs = (await listAll(bob)).items;
    expect(bobs.map((s) => s.name)).toContain(theirs.name);
    expect(bobs.every((s) => s.owner === 'bob')).toBe(true);

    const all = (await listAll(admin)).items;
    const names = all.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining([...mine.map((s) => s.name), theirs.name]));
    expect(all.every((s) => s.secret === null)).toBe(true);
    expect(names.indexOf(mine[0]!.name)).toBeLessThan(names.indexOf(mine[2]!.name));

    expect((await api('/api/data_shares?limit=0', { token: alice })).status).toBe(422);
    const foreign = await api('/api/data_shares?cursor=bm90LWEtY3Vyc29y', { token: alice });
    expect(foreign.status).toBe(422);
    expect(foreign.body.detail[0]).toMatchObject({ loc: ['query', 'cursor'] });
  });

  it('rotates the secret: the new one is returned from then on; owner or admin only', async () => {
    const share = await createShare();
    const rotated = await rotate(share.name);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ ...share, secret: expect.stringMatching(/^[\w-]{40,}$/) });
    expect(rotated.body.secret).not.toBe(share.secret);
    expect((await read(share.name)).body.secret).toBe(rotated.body.secret);

    const other = await rotate(share.name, bob);
    expect(other.status).toBe(403);
    expect((await read(share.name)).body.secret).toBe(rotated.body.secret);

    const byAdmin = await rotate(share.name, admin);
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.secret).not.toBe(rotated.body.secret);
    const now = (await read(share.name)).body.secret;
    expect(now).toBe(byAdmin.body.secret);
    expect([share.secret, rotated.body.secret]).not.toContain(now);
  });

  it('deletes a share and its client; owner or admin only; the name is free again', async () => {
    const share = await createShare();
    const other = await remove(share.name, bob);
    expect(other.status).toBe(403);
    expect((await read(share.name)).status).toBe(200);

    const del = await remove(share.name);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await read(share.name)).status).toBe(404);
    expect((await remove(share.name)).status).toBe(404);
    expect(await rawItem('dataShares', share.name)).toBeUndefined();
    expect(await rawItem('idpClients', share.name)).toBeUndefined();
    expect((await listAll(alice)).items.map((s) => s.name)).not.toContain(share.name);

    const reborn = await create({ name: share.name }, bob);
    expect(reborn.status).toBe(201);
    expect(reborn.body.secret).not.toBe(share.secret);
    expect(reborn.body.id).not.toBe(share.id);
    expect((await remove(share.name, admin)).status).toBe(204);
  });

  it('keeps secrets out of the stored items: only sealed, bound to the client', async () => {
    const share = await createShare(alice, { description: 'at rest', tables: ['t1'] });
    const rotated = (await rotate(share.name)).body;
    const registry = await rawItem('dataShares', share.name);
    const client = await rawItem('idpClients', share.name);
    expect(registry).toMatchObject({ name: share.name, owner: 'alice', client_id: share.name, idp_id: share.id });
    expect(client).toMatchObject({ client_id: share.name, id: share.id });
    expect(client!.secret).toEqual({
      v: 1,
      key: expect.any(String),
      iv: expect.any(String),
      tag: expect.any(String),
      data: expect.any(String),
    });
    for (const item of [registry, client]) {
      const stored = JSON.stringify(item);
      for (const secret of [share.secret!, rotated.secret!]) {
        expect(stored).not.toContain(secret);
        expect(stored).not.toContain(Buffer.from(secret).toString('base64'));
      }
    }
  });

  it('hides a reservation in flight, and takes over one left stale by a creation that died', async () => {
    const store = new DynamoDataShareStore(db(), table('dataShares'), eventsTable());
    const fresh = slug('held');
    const reservation = {
      owner: 'alice',
      description: null,
      tables: [],
      created_at: new Date().toISOString(),
    };
    expect(
      await store.reserve({ ...reservation, name: fresh, client_id: fresh }, 'r1', '2000-01-01T00:00:00.000Z'),
    ).toBe(true);
    expect((await read(fresh)).status).toBe(404);
    expect((await create({ name: fresh })).status).toBe(409);
    expect((await listAll(alice)).items.map((s) => s.name)).not.toContain(fresh);

    const stale = slug('stale');
    const old = { ...reservation, name: stale, client_id: stale, created_at: '2020-01-01T00:00:00.000Z' };
    expect(await store.reserve(old, 'r2', '2000-01-01T00:00:00.000Z')).toBe(true);
    const taken = await create({ name: stale }, bob);
    expect(taken.status).toBe(201);
    expect(taken.body.owner).toBe('bob');
    expect((await read(stale, bob)).body.secret).toBe(taken.body.secret);
  });
});

describe('data shares backed by Keycloak', () => {
  let keycloak: FakeKeycloak;
  let app: ReturnType<typeof createDataSharesApp>;
  const users: Record<string, { principal: string; name: string; roles: Set<string>; via: 'bearer' }> = {
    alice: { principal: '["https://issuer.test","sub-alice"]', name: 'alice', roles: new Set(), via: 'bearer' },
    bob: { principal: '["https://issuer.test","sub-bob"]', name: 'bob', roles: new Set(), via: 'bearer' },
  };

  beforeAll(async () => {
    keycloak = await startFakeKeycloak();
    const idp = new KeycloakIdentityProvider(
      {
        url: keycloak.url,
        realm: keycloak.realm,
        clientId: keycloak.adminClientId,
        clientSecret: keycloak.adminClientSecret,
      },
      { timeoutMs: 1_000 },
    );
    const authenticator: RequestAuthenticator = {
      authenticate: async ({ authorization }) => users[authorization!.slice(7)]!,
    };
    app = createDataSharesApp({
      authenticator,
      service: new DataShareService(new DynamoDataShareStore(db(), table('dataShares'), eventsTable()), idp),
    });
  });

  afterAll(async () => {
    await keycloak.stop();
  });

  const call = async (path: string, method = 'GET', body?: unknown, user = 'alice') => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${user}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Share & { code?: number }) : undefined };
  };

  it('creates the client in Keycloak and hands out a secret that works there', async () => {
    const name = slug('kc-share');
    const res = await call('/api/data_shares', 'POST', { name, tables: ['a.b'] });
    expect(res.status).toBe(201);
    const client = keycloak.byClientId(name)!;
    expect(res.body).toMatchObject({
      id: client.id,
      client_id: name,
      enabled: true,
      service_accounts_enabled: true,
      secret: client.secret,
      owner: 'alice',
      tables: ['a.b'],
    });
    expect(await keycloak.clientCredentials(name, res.body!.secret!)).toBe(200);

    const rotated = await call(`/api/data_shares/${name}/rotate-secret`, 'POST');
    expect(rotated.body!.secret).toBe(keycloak.byClientId(name)!.secret);
    expect(await keycloak.clientCredentials(name, res.body!.secret!)).toBe(401);

    keycloak.secretReadable = false;
    try {
      const unreadable = await call(`/api/data_shares/${name}`);
      expect(unreadable.status).toBe(200);
      expect(unreadable.body).toMatchObject({ id: client.id, client_id: name, secret: null });
    } finally {
      keycloak.secretReadable = true;
    }

    expect((await call(`/api/data_shares/${name}`, 'DELETE')).status).toBe(204);
    expect(keycloak.byClientId(name)).toBeUndefined();
    expect(await rawItem('dataShares', name)).toBeUndefined();
  });

  it('answers 503 when Keycloak is down, and gives the reserved name back', async () => {
    const name = slug('kc-down');
    for (const mode of ['error', 'unreachable'] as const) {
      keycloak.mode = mode;
      try {
        const res = await call('/api/data_shares', 'POST', { name });
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ error: expect.any(String), code: 503 });
      } finally {
        keycloak.mode = 'up';
      }
      expect(await rawItem('dataShares', name)).toBeUndefined();
    }
    const res = await call('/api/data_shares', 'POST', { name });
    expect(res.status).toBe(201);

    keycloak.mode = 'error';
    try {
      expect((await call(`/api/data_shares/${name}`)).status).toBe(503);
      expect((await call(`/api/data_shares/${name}/rotate-secret`, 'POST')).status).toBe(503);
      expect((await call(`/api/data_shares/${name}`, 'DELETE')).status).toBe(503);
    } finally {
      keycloak.mode = 'up';
    }
    // A failed delete leaves the share, so it can be deleted again.
    expect((await call(`/api/data_shares/${name}`)).body!.secret).toBe(keycloak.byClientId(name)!.secret);
    expect((await call(`/api/data_shares/${name}`, 'DELETE')).status).toBe(204);
  });

  it('answers 409 for a client id Keycloak already has, and never adopts that client', async () => {
    const res = await call('/api/data_shares', 'POST', { name: keycloak.adminClientId });
    expect(res.status).toBe(409);
    expect(await rawItem('dataShares', keycloak.adminClientId)).toBeUndefined();
    expect((await call(`/api/data_shares/${keycloak.adminClientId}`)).status).toBe(404);
  });
});

describe('client secrets in the service log', () => {
  it("never writes a share's secret to the log, on create, read or rotation", async () => {
    const share = await createShare();
    const read1 = await read(share.name);
    const rotated = await rotate(share.name);
    expect(rotated.status).toBe(200);
    const secrets = [share.secret, read1.body.secret, rotated.body.secret].filter(
      (s): s is string => typeof s === 'string',
    );
    expect(secrets.length).toBe(3);
    const log = await serviceLog();
    expect(log).toContain('/api/data_shares');
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
