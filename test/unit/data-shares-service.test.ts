import { describe, expect, it } from 'vitest';
import { DataShareService, STALE_RESERVATION_MS } from '../../functions/data-shares/service.js';
import type {
  ClientFields,
  DataShareStore,
  NewShare,
  ShareItem,
  StoredShare,
} from '../../functions/data-shares/store.js';
import type { Page } from '../../shared/page.js';
import { ManualClock } from '../../shared/clock.js';
import { Conflict, Forbidden, NotFound, Unavailable } from '../../shared/errors.js';
import type { Change } from '../../shared/events/types.js';
import type { IdentityProvider, IdpClient, NewIdpClient } from '../../shared/ports/idp.js';
import { rejection } from '../support/rejection.js';
import { adminCaller, principalOf, userCaller } from './fakes.js';

/**
 * Data shares (docs/data-and-catalog.md, E8) over an in-memory registry and identity provider: the name
 * reservation, ownership by principal, lookup by name or id, what each change records,
 * and that only E8, creation and rotation answer a secret.
 */

const NOW = Date.parse('2026-11-21T10:00:00.000Z');
const AT = new Date(NOW).toISOString();
const ID = '3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e';

/** The registry as DynamoDataShareStore keeps it: shares and reservations by name, with their sequence. */
function registry() {
  const items = new Map<string, StoredShare>();
  const calls: string[] = [];
  const changes: { name: string; change: Change; data?: Record<string, unknown> }[] = [];
  const released: { name: string; reservation: string }[] = [];
  const lists: { owner?: string; limit: number; cursor: string | undefined }[] = [];
  const reservedWith: { staleBefore: string }[] = [];
  const itemOf = ({ seq: _seq, ...item }: StoredShare): ShareItem => item;
  const page = (owner?: string): Page<ShareItem> => ({
    items: [...items.values()]
      .filter((i) => i.reservation === undefined && (owner === undefined || i.owner_principal === owner))
      .map(itemOf),
    nextCursor: 'next-page',
  });
  const store: DataShareStore = {
    reserve: async (share: NewShare, reservation, staleBefore) => {
      calls.push('reserve');
      reservedWith.push({ staleBefore });
      const current = items.get(share.name);
      if (current && !(current.reservation !== undefined && current.created_at < staleBefore)) return false;
      items.set(share.name, { ...share, reservation, seq: undefined });
      return true;
    },
    complete: async (name, reservation, client: ClientFields, change) => {
      calls.push('complete');
      const current = items.get(name);
      if (current?.reservation !== reservation) return undefined;
      const { reservation: _gone, ...rest } = current;
      const done: StoredShare = { ...rest, ...client, seq: 1 };
      items.set(name, done);
      changes.push({ name, change });
      return itemOf(done);
    },
    rotated: async (name, createdAt, client, change) => {
      calls.push('rotated');
      const current = items.get(name);
      if (!current || current.reservation !== undefined || current.created_at !== createdAt) return undefined;
      const next: StoredShare = { ...current, ...client, seq: (current.seq ?? 0) + 1 };
      items.set(name, next);
      changes.push({ name, change });
      return itemOf(next);
    },
    release: async (name, reservation) => {
      released.push({ name, reservation });
      if (items.get(name)?.reservation === reservation) items.delete(name);
    },
    get: async (name) => {
      calls.push(`get ${name}`);
      return items.get(name);
    },
    nameOfId: async (id) => {
      calls.push(`nameOfId ${id}`);
      return [...items.values()].find((i) => i.idp_id === id)?.name;
    },
    list: async (limit, cursor) => {
      lists.push({ limit, cursor });
      return page();
    },
    listOwned: async (owner, limit, cursor) => {
      lists.push({ owner, limit, cursor });
      return page(owner);
    },
    delete: async (share, change, data) => {
      calls.push('delete');
      const current = items.get(share.name);
      if (!current || current.reservation !== undefined || current.seq !== share.seq) return false;
      items.delete(share.name);
      changes.push({ name: share.name, change, data });
      return true;
    },
  };
  return { store, items, calls, changes, released, lists, reservedWith };
}

/** An identity provider holding confidential clients by client id; each secret is new. */
function identityProvider() {
  const clients = new Map<string, IdpClient>();
  const calls: string[] = [];
  let secrets = 0;
  const idp: IdentityProvider = {
    createClient: async (c: NewIdpClient) => {
      calls.push(`create ${c.clientId}`);
      if (clients.has(c.clientId)) throw new Conflict(`client ${c.clientId} exists`);
      const client: IdpClient = {
        id: ID,
        client_id: c.clientId,
        name: c.name,
        enabled: true,
        service_accounts_enabled: true,
        secret: `secret-${++secrets}`,
      };
      clients.set(c.clientId, client);
      return client;
    },
    getClient: async (clientId) => clients.get(clientId),
    regenerateSecret: async (clientId) => {
      calls.push(`regenerate ${clientId}`);
      const client = clients.get(clientId);
      if (!client) return undefined;
      const next = { ...client, secret: `secret-${++secrets}` };
      clients.set(clientId, next);
      return next;
    },
    deleteClient: async (clientId) => {
      calls.push(`delete ${clientId}`);
      return clients.delete(clientId);
    },
  };
  return { idp, clients, calls };
}

function world() {
  const reg = registry();
  const provider = identityProvider();
  return { ...reg, provider, service: new DataShareService(reg.store, provider.idp, new ManualClock(NOW)) };
}

/** A world in which carol has created the share `sales`. */
async function withShare() {
  const w = world();
  await w.service.create({ name: 'sales', description: 'for finance', tables: ['hive.s.orders'] }, userCaller('carol'));
  w.calls.length = 0;
  w.changes.length = 0;
  w.provider.calls.length = 0;
  return w;
}

describe('DataShareService.create', () => {
  it('reserves the name for the principal, creates the client, and answers its secret once', async () => {
    const w = world();
    const out = await w.service.create({ name: 'sales' }, userCaller('carol'));
    expect(out).toEqual({
      id: ID,
      client_id: 'sales',
      name: 'sales',
      enabled: true,
      service_accounts_enabled: true,
      secret: 'secret-1',
      owner: 'carol',
      description: null,
      tables: [],
      created_at: AT,
    });
    expect(w.calls).toEqual(['reserve', 'complete']);
    expect(w.provider.calls).toEqual(['create sales']);
    // A reservation older than STALE_RESERVATION_MS is one a dead creation left behind.
    expect(w.reservedWith).toEqual([{ staleBefore: new Date(NOW - STALE_RESERVATION_MS).toISOString() }]);
    const stored = w.items.get('sales')!;
    expect(stored).toMatchObject({ owner: 'carol', owner_principal: principalOf('carol'), idp_id: ID });
    expect(stored.reservation).toBeUndefined();
    expect(JSON.stringify(stored)).not.toContain('secret-1');
    expect(w.changes).toEqual([{ name: 'sales', change: { type: 'data_share.created', actor: 'carol', at: AT } }]);
  });

  it('answers 409 for a taken name without asking the identity provider', async () => {
    const w = await withShare();
    const refused = await rejection(w.service.create({ name: 'sales' }, userCaller('bob')));
    expect(refused).toBeInstanceOf(Conflict);
    expect(refused.message).toBe("The data share name 'sales' is taken");
    expect(w.provider.calls).toEqual([]);
    expect(w.items.get('sales')?.owner).toBe('carol');
  });

  it('gives the name back when the identity provider fails, so it can be tried again', async () => {
    const w = world();
    const failing = new DataShareService(
      w.store,
      {
        ...w.provider.idp,
        createClient: async () => {
          throw new Unavailable('the identity provider did not answer');
        },
      },
      new ManualClock(NOW),
    );
    expect(await rejection(failing.create({ name: 'sales' }, userCaller('carol')))).toBeInstanceOf(Unavailable);
    expect(w.released).toHaveLength(1);
    expect(w.items.has('sales')).toBe(false);
    expect(w.calls).toEqual(['reserve']);
    // Tried again, the name is free.
    expect((await w.service.create({ name: 'sales' }, userCaller('carol'))).secret).toBe('secret-1');
  });

  it('answers 409, recording nothing, when its reservation was taken over before it completed', async () => {
    const w = world();
    const service = new DataShareService(
      { ...w.store, complete: async () => undefined },
      w.provider.idp,
      new ManualClock(NOW),
    );
    const refused = await rejection(service.create({ name: 'sales' }, userCaller('carol')));
    expect(refused).toBeInstanceOf(Conflict);
    expect(refused.message).toBe("The data share name 'sales' is taken");
    expect(w.changes).toEqual([]);
  });

  it('removes the new client and gives the name back when the registry write fails', async () => {
    const w = world();
    const service = new DataShareService(
      {
        ...w.store,
        complete: async () => {
          throw new Unavailable();
        },
      },
      w.provider.idp,
      new ManualClock(NOW),
    );
    expect(await rejection(service.create({ name: 'sales' }, userCaller('carol')))).toBeInstanceOf(Unavailable);
    expect(w.provider.calls).toEqual(['create sales', 'delete sales']);
    expect(w.provider.clients.size).toBe(0);
    expect(w.items.has('sales')).toBe(false);
    expect(w.changes).toEqual([]);
  });
});

describe('DataShareService reads', () => {
  it("lists an admin's every share and a user's own by principal, never with a secret, passing the cursor on", async () => {
    const w = await withShare();
    await w.service.create({ name: 'hr' }, userCaller('bob'));
    const own = await w.service.list(userCaller('carol'), 10, 'c1');
    expect(own.items.map((s) => [s.name, s.secret])).toEqual([['sales', null]]);
    expect(own.nextCursor).toBe('next-page');
    const all = await w.service.list(adminCaller(), 5, undefined);
    expect(all.items.map((s) => [s.name, s.secret])).toEqual([
      ['sales', null],
      ['hr', null],
    ]);
    expect(w.lists).toEqual([
      { owner: principalOf('carol'), limit: 10, cursor: 'c1' },
      { limit: 5, cursor: undefined },
    ]);
  });

  it("answers E8 with the client's secret to its owner and to an admin", async () => {
    const w = await withShare();
    expect(await w.service.get('sales', userCaller('carol'))).toMatchObject({
      name: 'sales',
      secret: 'secret-1',
      owner: 'carol',
      description: 'for finance',
      tables: ['hive.s.orders'],
    });
    expect((await w.service.get('sales', adminCaller())).secret).toBe('secret-1');
  });

  it('refuses another principal showing the same name (403), and answers 404 before 403', async () => {
    const w = await withShare();
    const namesake = userCaller('carol', { subject: 'someone-else' });
    const refused = await rejection(w.service.get('sales', namesake));
    expect(refused).toBeInstanceOf(Forbidden);
    expect(refused.message).toBe("Only the data share's owner or an admin may do this");
    expect(await rejection(w.service.get('nope', namesake))).toBeInstanceOf(NotFound);
    // A share stored before principals were belongs to nobody but admins.
    w.items.set('legacy', { ...w.items.get('sales')!, name: 'legacy', owner_principal: undefined });
    expect(await rejection(w.service.get('legacy', userCaller('carol')))).toBeInstanceOf(Forbidden);
    expect((await w.service.get('legacy', adminCaller())).name).toBe('legacy');
  });

  it('treats a name whose creation is under way as no share (404, not 403)', async () => {
    const w = world();
    await w.store.reserve(
      {
        name: 'half',
        owner: 'bob',
        owner_principal: principalOf('bob'),
        description: null,
        tables: [],
        created_at: AT,
        client_id: 'half',
      },
      'r1',
      AT,
    );
    expect(await rejection(w.service.get('half', userCaller('carol')))).toBeInstanceOf(NotFound);
    expect(await rejection(w.service.get('half', userCaller('bob')))).toBeInstanceOf(NotFound);
  });

  it('finds a share by its id, checking the id on the share read by name', async () => {
    const w = await withShare();
    expect((await w.service.get(ID, userCaller('carol'))).name).toBe('sales');
    expect(w.calls).toEqual([`nameOfId ${ID}`, 'get sales']);
    // The index still names a share that no longer has this id: no share by that id.
    w.items.set('sales', { ...w.items.get('sales')!, idp_id: 'another-id' });
    w.calls.length = 0;
    w.store.nameOfId = async () => 'sales';
    expect(await rejection(w.service.get(ID, userCaller('carol')))).toBeInstanceOf(NotFound);
    expect(w.calls).toEqual([`get sales`, `get ${ID}`]);
  });

  it("answers a null secret, and the registry's state, when the identity provider has lost the client", async () => {
    const w = await withShare();
    w.provider.clients.clear();
    expect(await w.service.get('sales', userCaller('carol'))).toMatchObject({
      id: ID,
      secret: null,
      enabled: true,
      service_accounts_enabled: true,
    });
  });
});

describe('DataShareService.rotateSecret', () => {
  it('answers the new secret and stamps the rotation, whose record never holds a secret', async () => {
    const w = await withShare();
    const out = await w.service.rotateSecret('sales', userCaller('carol'));
    expect(out.secret).toBe('secret-2');
    expect(w.provider.calls).toEqual(['regenerate sales']);
    expect(w.changes).toEqual([
      { name: 'sales', change: { type: 'data_share.secret_rotated', actor: 'carol', at: AT } },
    ]);
    expect(JSON.stringify(w.items.get('sales'))).not.toMatch(/secret-\d/);
    expect((await w.service.get('sales', userCaller('carol'))).secret).toBe('secret-2');
  });

  it('refuses a non-owner before touching the client; 409 when the client is gone, 404 when the share went meanwhile', async () => {
    const w = await withShare();
    expect(await rejection(w.service.rotateSecret('sales', userCaller('bob')))).toBeInstanceOf(Forbidden);
    expect(w.provider.calls).toEqual([]);

    w.provider.clients.clear();
    const gone = await rejection(w.service.rotateSecret('sales', userCaller('carol')));
    expect(gone).toBeInstanceOf(Conflict);
    expect(w.calls).not.toContain('rotated');

    const again = await withShare();
    again.store.rotated = async () => undefined;
    expect(await rejection(again.service.rotateSecret('sales', adminCaller()))).toBeInstanceOf(NotFound);
  });
});

describe('DataShareService.delete', () => {
  it('removes the client first, then the share with its event (the share as listed, no secret)', async () => {
    const w = await withShare();
    await w.service.delete('sales', adminCaller('dana'));
    expect(w.provider.calls).toEqual(['delete sales']);
    expect(w.items.has('sales')).toBe(false);
    expect(w.changes).toEqual([
      {
        name: 'sales',
        change: { type: 'data_share.deleted', actor: 'dana', at: AT },
        data: {
          id: ID,
          client_id: 'sales',
          name: 'sales',
          enabled: true,
          service_accounts_enabled: true,
          secret: null,
          owner: 'carol',
          description: 'for finance',
          tables: ['hive.s.orders'],
          created_at: AT,
        },
      },
    ]);
  });

  it('refuses a non-owner before removing the client', async () => {
    const w = await withShare();
    expect(await rejection(w.service.delete('sales', userCaller('bob')))).toBeInstanceOf(Forbidden);
    expect(w.provider.calls).toEqual([]);
    expect(w.items.has('sales')).toBe(true);
  });

  it('reads a share changed meanwhile again; one deleted or created anew meanwhile is 404; one that keeps changing 409', async () => {
    // Rotated between the read and the delete: deleted at its new sequence.
    const changed = await withShare();
    let raced = false;
    const remove = changed.store.delete;
    changed.store.delete = async (share, change, data) => {
      if (!raced) {
        raced = true;
        changed.items.set('sales', { ...changed.items.get('sales')!, seq: 2 });
      }
      return remove(share, change, data);
    };
    await changed.service.delete('sales', userCaller('carol'));
    expect(changed.calls).toEqual(['get sales', 'delete', 'get sales', 'delete']);
    expect(changed.items.has('sales')).toBe(false);

    // Created again under its name meanwhile: another share, not the one asked about.
    const recreated = await withShare();
    recreated.store.delete = async () => {
      recreated.items.set('sales', { ...recreated.items.get('sales')!, created_at: '2026-11-22T00:00:00.000Z' });
      return false;
    };
    expect(await rejection(recreated.service.delete('sales', userCaller('carol')))).toBeInstanceOf(NotFound);

    const busy = await withShare();
    let attempts = 0;
    busy.store.delete = async () => {
      attempts++;
      return false;
    };
    const refused = await rejection(busy.service.delete('sales', userCaller('carol')));
    expect(refused).toBeInstanceOf(Conflict);
    expect(attempts).toBe(5);
  });
});
