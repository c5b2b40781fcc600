import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KeycloakIdentityProvider, type KeycloakSettings } from '../../../shared/adapters/keycloak.js';
import { ManualClock } from '../../../shared/clock.js';
import { Conflict, Unavailable } from '../../../shared/errors.js';
import { statusOf } from '../../../shared/http/errors.js';
import { type FakeKeycloak, startFakeKeycloak } from '../../support/keycloak-server.js';
import { slug } from '../helpers.js';
import { rejection } from '../../support/rejection.js';

let keycloak: FakeKeycloak;

beforeAll(async () => {
  keycloak = await startFakeKeycloak({ realm: 'dpm' });
});

afterAll(async () => {
  await keycloak.stop();
});

afterEach(() => {
  keycloak.mode = 'up';
  keycloak.secretReadable = true;
  keycloak.failClientRead = false;
});

const settings = (over: Partial<KeycloakSettings> = {}): KeycloakSettings => ({
  url: `${keycloak.url}/`,
  realm: keycloak.realm,
  clientId: keycloak.adminClientId,
  clientSecret: keycloak.adminClientSecret,
  ...over,
});

const adminTokenRequests = () => keycloak.tokenRequests.filter((r) => r.clientId === keycloak.adminClientId).length;

describe('the Keycloak identity provider', () => {
  it('creates a confidential client with a service account and returns its secret', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    const created = await idp.createClient({ clientId: name, name, description: 'for sales' });
    const stored = keycloak.byClientId(name)!;
    expect(stored).toMatchObject({
      clientId: name,
      name,
      description: 'for sales',
      enabled: true,
      publicClient: false,
      clientAuthenticatorType: 'client-secret',
      serviceAccountsEnabled: true,
      standardFlowEnabled: false,
      directAccessGrantsEnabled: false,
    });
    expect(created).toEqual({
      id: stored.id,
      client_id: name,
      name,
      enabled: true,
      service_accounts_enabled: true,
      secret: stored.secret,
    });
    expect(created.secret).toMatch(/^[\w-]{20,}$/);
    // The secret is one Keycloak accepts for the client-credentials grant.
    expect(await keycloak.clientCredentials(name, created.secret!)).toBe(200);
  });

  it('reads a client with its secret; an unknown client is undefined', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    const created = await idp.createClient({ clientId: name, name });
    expect(await idp.getClient(name)).toEqual(created);
    expect(await idp.getClient(slug('none'))).toBeUndefined();
    // `clientId` matches exactly: a prefix finds nothing.
    expect(await idp.getClient(name.slice(0, -1))).toBeUndefined();
  });

  it('rotates a secret: the new one works, the old one no longer does', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    const created = await idp.createClient({ clientId: name, name });
    const rotated = await idp.regenerateSecret(name);
    expect(rotated).toMatchObject({ id: created.id, client_id: name, enabled: true, service_accounts_enabled: true });
    expect(rotated!.secret).toMatch(/^[\w-]{20,}$/);
    expect(rotated!.secret).not.toBe(created.secret);
    expect((await idp.getClient(name))!.secret).toBe(rotated!.secret);
    expect(await keycloak.clientCredentials(name, created.secret!)).toBe(401);
    expect(await keycloak.clientCredentials(name, rotated!.secret!)).toBe(200);
    expect(await idp.regenerateSecret(slug('none'))).toBeUndefined();
  });

  it('answers a secret it may not read as null, not as an error', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    await idp.createClient({ clientId: name, name });
    keycloak.secretReadable = false;
    const read = await idp.getClient(name);
    expect(read).toMatchObject({ client_id: name, enabled: true, secret: null });
    const other = slug('kc');
    expect(await idp.createClient({ clientId: other, name: other })).toMatchObject({ client_id: other, secret: null });
  });

  it('answers Conflict when the client id is taken, also by a client it did not create', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    await idp.createClient({ clientId: name, name });
    const again = await rejection(idp.createClient({ clientId: name, name }));
    expect(again).toBeInstanceOf(Conflict);
    expect(statusOf(again)).toBe(409);
    expect(await rejection(idp.createClient({ clientId: keycloak.adminClientId, name: 'x' }))).toBeInstanceOf(Conflict);
  });

  it('removes a client it created when reading it back fails, so no orphan holds the name', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    keycloak.failClientRead = true;
    const failed = await rejection(idp.createClient({ clientId: name, name }));
    expect(statusOf(failed)).toBe(503);
    expect(keycloak.byClientId(name)).toBeUndefined();
    keycloak.failClientRead = false;
    expect((await idp.createClient({ clientId: name, name })).client_id).toBe(name);
  });

  it('deletes a client; deleting it again is false', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    const created = await idp.createClient({ clientId: name, name });
    expect(await idp.deleteClient(name)).toBe(true);
    expect(keycloak.clients.has(created.id)).toBe(false);
    expect(await idp.getClient(name)).toBeUndefined();
    expect(await idp.deleteClient(name)).toBe(false);
  });

  it('answers Unavailable when Keycloak fails, drops connections, is not there, or is too slow', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const name = slug('kc');
    await idp.createClient({ clientId: name, name });
    for (const mode of ['error', 'unreachable'] as const) {
      keycloak.mode = mode;
      for (const call of [
        () => idp.createClient({ clientId: slug('kc'), name: 'x' }),
        () => idp.getClient(name),
        () => idp.regenerateSecret(name),
        () => idp.deleteClient(name),
      ]) {
        const err = await rejection(call());
        expect(err, mode).toBeInstanceOf(Unavailable);
        expect(statusOf(err)).toBe(503);
      }
    }
    keycloak.mode = 'up';
    expect((await idp.getClient(name))!.client_id).toBe(name);

    // A port nobody listens on.
    const closed: Server = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const nowhere = new KeycloakIdentityProvider(settings({ url: `http://127.0.0.1:${port}` }));
    expect(await rejection(nowhere.getClient(name))).toBeInstanceOf(Unavailable);

    // A server that accepts and never answers.
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const slow = new KeycloakIdentityProvider(
      settings({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` }),
      { timeoutMs: 200 },
    );
    const started = Date.now();
    expect(await rejection(slow.getClient(name))).toBeInstanceOf(Unavailable);
    expect(Date.now() - started).toBeLessThan(3_000);
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('bounds a whole operation, not each call: slow answers add up to Unavailable', async () => {
    // A proxy that answers every call after 150 ms: a creation makes four calls (token, POST,
    // GET, secret), 600 ms together, past the 400 ms the operation may take.
    const slowProxy: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        setTimeout(() => {
          void fetch(`${keycloak.url}${req.url}`, {
            method: req.method,
            headers: Object.fromEntries(
              Object.entries(req.headers).filter(([k]) => ['authorization', 'content-type', 'accept'].includes(k)),
            ) as Record<string, string>,
            ...(body ? { body } : {}),
            redirect: 'manual',
          })
            .then(async (answer) => {
              res.writeHead(answer.status, Object.fromEntries(answer.headers));
              res.end(await answer.text());
            })
            .catch(() => res.destroy());
        }, 150);
      });
    });
    await new Promise<void>((resolve) => slowProxy.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(slowProxy.address() as AddressInfo).port}`;
      const name = slug('kc-slow');
      const slow = new KeycloakIdentityProvider(settings({ url }), { timeoutMs: 400 });
      const started = Date.now();
      expect(await rejection(slow.createClient({ clientId: name, name }))).toBeInstanceOf(Unavailable);
      // The deadline, plus the clean-up's own short one at most.
      expect(Date.now() - started).toBeLessThan(400 + 2_000 + 500);
      // Given time enough, the same slow path works.
      const patient = new KeycloakIdentityProvider(settings({ url }), { timeoutMs: 5_000 });
      const other = slug('kc-slow');
      expect((await patient.createClient({ clientId: other, name: other })).client_id).toBe(other);
    } finally {
      slowProxy.closeAllConnections();
      await new Promise<void>((resolve) => slowProxy.close(() => resolve()));
    }
  });

  it('answers Unavailable when Keycloak refuses the admin credentials', async () => {
    const idp = new KeycloakIdentityProvider(settings({ clientSecret: 'wrong' }));
    expect(await rejection(idp.getClient('anything'))).toBeInstanceOf(Unavailable);
    const wrongRealm = new KeycloakIdentityProvider(settings({ realm: 'elsewhere' }));
    expect(await rejection(wrongRealm.getClient('anything'))).toBeInstanceOf(Unavailable);
  });

  it('reuses one admin token across calls, also concurrent ones', async () => {
    const idp = new KeycloakIdentityProvider(settings());
    const before = adminTokenRequests();
    const name = slug('kc');
    await idp.createClient({ clientId: name, name });
    await idp.getClient(name);
    await idp.regenerateSecret(name);
    await Promise.all(Array.from({ length: 5 }, () => idp.getClient(name)));
    await idp.deleteClient(name);
    expect(adminTokenRequests() - before).toBe(1);
    const fresh = new KeycloakIdentityProvider(settings());
    await Promise.all(Array.from({ length: 5 }, () => fresh.getClient(name)));
    expect(adminTokenRequests() - before).toBe(2);
  });

  it('renews the token shortly before it expires, and once when Keycloak refuses it', async () => {
    const shortLived = await startFakeKeycloak({ tokenLifespanSeconds: 60 });
    try {
      const clock = new ManualClock(Date.now());
      const idp = new KeycloakIdentityProvider(
        {
          url: shortLived.url,
          realm: shortLived.realm,
          clientId: shortLived.adminClientId,
          clientSecret: shortLived.adminClientSecret,
        },
        { clock },
      );
      const count = () => shortLived.tokenRequests.length;
      await idp.getClient('x');
      await clock.advance(25_000);
      await idp.getClient('x');
      expect(count()).toBe(1);
      // Renewed within the last 30 s (half the lifetime here) of the token's life.
      await clock.advance(10_000);
      await idp.getClient('x');
      expect(count()).toBe(2);
      // A token Keycloak no longer accepts is replaced once, and the call succeeds.
      shortLived.revokeTokens();
      expect(await idp.getClient('x')).toBeUndefined();
      expect(count()).toBe(3);
      expect(shortLived.tokenRequests.every((r) => r.grantType === 'client_credentials' && r.issued)).toBe(true);
    } finally {
      await shortLived.stop();
    }
  });
});
