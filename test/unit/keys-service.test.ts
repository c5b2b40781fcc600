import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeyService } from '../../functions/dataproduct/key-service.js';
import type { DataProductRecord } from '../../functions/dataproduct/store.js';
import { BOOTSTRAP_ADMIN_PSK_ID } from '../../shared/auth/bootstrap.js';
import { BOOTSTRAP_PRINCIPAL, type Caller, type CallerKey } from '../../shared/auth/caller.js';
import { type KeyRecord, type KeyRepository, MAX_VALID_UNTIL_MS } from '../../shared/auth/key-store.js';
import { sha256Hex } from '../../shared/crypto.js';
import { Conflict, Forbidden, NotFound } from '../../shared/errors.js';
import type { Change } from '../../shared/events/types.js';
import { rejection } from '../support/rejection.js';
import { adminCaller, keyCaller, principalOf, unused, userCaller } from './fakes.js';

/**
 * Pre-shared keys (docs/identity-and-keys.md: E7, key lineage) over an in-memory keys
 * table: the secret shown once and stored only as its hash, ownership by principal,
 * extension arithmetic, the bounds a key used as credentials sets, and what each change
 * records.
 */

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

const key = (over: Partial<KeyRecord> & Pick<KeyRecord, 'key_hash' | 'psk'>): KeyRecord => ({
  dataproduct_id: 'default',
  description: 'nightly export',
  roles: [],
  created_by: 'carol',
  created_by_principal: principalOf('carol'),
  created_at: iso(T0 - 10 * DAY),
  valid_until_ms: T0 + 5 * DAY,
  ...over,
});

const CAROLS = key({ key_hash: 'hash-carol', psk: '11111111-1111-4111-8111-111111111111' });

/** The keys table as KeyStore keeps it, with its writes' conditions; every write is recorded. */
function keyTable(records: KeyRecord[] = []) {
  const keys = new Map(records.map((r) => [r.key_hash, { ...r }]));
  const writes: { op: string; args: unknown[]; change?: Change }[] = [];
  const lists: { creator: string | undefined; includeDeleted: boolean; limit: number; cursor: string | undefined }[] =
    [];
  const live = (r: KeyRecord | undefined): r is KeyRecord => r !== undefined && r.deleted_at === undefined;
  const joined = (r: KeyRecord, lineage: readonly string[]) =>
    lineage.length ? [...new Set([...(r.lineage ?? []), ...lineage])] : r.lineage;
  const store: KeyRepository = {
    getByHash: async (hash) => keys.get(hash),
    createIfAbsent: async (record, change) => {
      writes.push({ op: 'create', args: [record], change });
      if (keys.has(record.key_hash)) return false;
      keys.set(record.key_hash, record);
      return true;
    },
    findByPskId: async (psk) => [...keys.values()].filter((r) => r.psk === psk),
    list: async (creator, includeDeleted, limit, cursor) => {
      lists.push({ creator, includeDeleted, limit, cursor });
      const items = [...keys.values()].filter(
        (r) => (creator === undefined || r.created_by_principal === creator) && (includeDeleted || live(r)),
      );
      return { items, nextCursor: 'more' };
    },
    markDeleted: async (hash, at, change) => {
      writes.push({ op: 'markDeleted', args: [hash, at], change });
      const r = keys.get(hash);
      if (!live(r)) return false;
      r.deleted_at = at;
      return true;
    },
    restore: unused,
    addToExpiry: async (hash, addMs, nowMs, maxMs, lineage, change) => {
      writes.push({ op: 'addToExpiry', args: [hash, addMs, nowMs, maxMs, lineage], change });
      const r = keys.get(hash);
      if (!live(r) || r.valid_until_ms < nowMs || r.valid_until_ms > maxMs - addMs) return undefined;
      const next = { ...r, valid_until_ms: r.valid_until_ms + addMs, lineage: joined(r, lineage) };
      keys.set(hash, next);
      return next;
    },
    replaceExpiry: async (hash, expectedMs, newMs, lineage, change) => {
      writes.push({ op: 'replaceExpiry', args: [hash, expectedMs, newMs, lineage], change });
      const r = keys.get(hash);
      if (!live(r) || r.valid_until_ms !== expectedMs) return undefined;
      const next = { ...r, valid_until_ms: newMs, lineage: joined(r, lineage) };
      keys.set(hash, next);
      return next;
    },
  };
  return { store, keys, writes, lists };
}

function world(records: KeyRecord[] = [], products: DataProductRecord[] = []) {
  const table = keyTable(records);
  const forgotten: string[] = [];
  const productReads: string[] = [];
  const service = new KeyService(
    table.store,
    { forget: (hash) => void forgotten.push(hash) },
    {
      get: async (id) => {
        productReads.push(id);
        return products.find((p) => p.id === id);
      },
    },
  );
  return { ...table, service, forgotten, productReads };
}

const product = (id: string, deleted?: string): DataProductRecord => ({
  id,
  name: `product ${id}`,
  role_name: 'analyst',
  domain_urn: null,
  query: 'SELECT 1',
  is_view: false,
  created_by: 'dana',
  created_by_principal: principalOf('dana'),
  created_at: iso(T0 - DAY),
  ...(deleted ? { deleted_at: deleted } : {}),
});

/** Carol authenticated with her key `hash-k`, itself made through `hash-root`, valid until `validUntilMs`. */
const throughKey = (validUntilMs: number, pskId = '22222222-2222-4222-8222-222222222222'): Caller => {
  const used: CallerKey = { pskId, hash: 'hash-k', validUntilMs, lineage: ['hash-root'] };
  return keyCaller('carol', used);
};

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('KeyService.create', () => {
  it('answers the secret once and stores only its hash, acting with the creator’s roles', async () => {
    const w = world();
    const out = await w.service.create(
      'default',
      { description: 'etl', validity_days: 30 },
      userCaller('carol', { roles: ['approver', 'admin'] }),
    );
    expect(out).toEqual({
      psk: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      key: expect.stringMatching(/^dpm_[A-Za-z0-9_-]{43}$/),
      dataproduct_id: 'default',
      description: 'etl',
      valid_until: iso(T0 + 30 * DAY),
      created_by: 'carol',
      created_at: iso(T0),
    });
    const stored = w.keys.get(sha256Hex(out.key))!;
    expect(stored).toEqual({
      key_hash: sha256Hex(out.key),
      psk: out.psk,
      dataproduct_id: 'default',
      description: 'etl',
      roles: ['admin', 'approver'],
      created_by: 'carol',
      created_by_principal: principalOf('carol'),
      created_at: iso(T0),
      valid_until_ms: T0 + 30 * DAY,
    });
    expect(JSON.stringify([...w.keys.values(), w.writes])).not.toContain(out.key);
    expect(w.writes[0]!.change).toEqual({ type: 'psk.created', actor: 'carol', at: iso(T0) });
    // `default` always exists: never read.
    expect(w.productReads).toEqual([]);
  });

  it('needs a live data product (404 for an unknown or deleted one, nothing stored)', async () => {
    const w = world([], [product('p1'), product('gone', iso(T0 - 1))]);
    expect(
      (await w.service.create('p1', { description: '', validity_days: 1 }, userCaller('carol'))).dataproduct_id,
    ).toBe('p1');
    for (const id of ['nope', 'gone']) {
      const refused = await rejection(w.service.create(id, { description: '', validity_days: 1 }, userCaller('carol')));
      expect(refused).toBeInstanceOf(NotFound);
      expect(refused.message).toBe(`No data product ${id}`);
    }
    expect(w.keys.size).toBe(1);
    expect(w.productReads).toEqual(['p1', 'nope', 'gone']);
  });

  it('never lets a key made through a key outlive it, and records the lineage', async () => {
    const w = world();
    const out = await w.service.create('default', { description: '', validity_days: 30 }, throughKey(T0 + 10 * DAY));
    expect(out.valid_until).toBe(iso(T0 + 10 * DAY));
    expect(w.keys.get(sha256Hex(out.key))!.lineage).toEqual(['hash-root', 'hash-k']);
    // Shorter than the key used: as asked.
    const short = await w.service.create('default', { description: '', validity_days: 2 }, throughKey(T0 + 10 * DAY));
    expect(short.valid_until).toBe(iso(T0 + 2 * DAY));
  });
});

describe('KeyService.list', () => {
  it("answers a user's own keys by principal and an admin's all, without secret or hash, passing the cursor on", async () => {
    const bobs = key({
      key_hash: 'hash-bob',
      psk: '33333333-3333-4333-8333-333333333333',
      created_by: 'bob',
      created_by_principal: principalOf('bob'),
    });
    const deleted = key({
      key_hash: 'hash-old',
      psk: '44444444-4444-4444-8444-444444444444',
      deleted_at: iso(T0 - DAY),
    });
    const w = world([CAROLS, bobs, deleted]);
    const own = await w.service.list(userCaller('carol'), false, 10, 'c1');
    expect(own).toEqual({
      items: [
        {
          psk: CAROLS.psk,
          dataproduct_id: 'default',
          description: 'nightly export',
          valid_until: iso(T0 + 5 * DAY),
          created_by: 'carol',
          created_at: iso(T0 - 10 * DAY),
          deleted_at: null,
        },
      ],
      nextCursor: 'more',
    });
    const all = await w.service.list(adminCaller(), true, 100, undefined);
    expect(all.items.map((k) => [k.psk, k.deleted_at])).toEqual([
      [CAROLS.psk, null],
      [bobs.psk, null],
      [deleted.psk, iso(T0 - DAY)],
    ]);
    expect(w.lists).toEqual([
      { creator: principalOf('carol'), includeDeleted: false, limit: 10, cursor: 'c1' },
      { creator: undefined, includeDeleted: true, limit: 100, cursor: undefined },
    ]);
  });
});

describe('KeyService.delete', () => {
  it('marks the key deleted, records it, and stops it at once in this process', async () => {
    const w = world([CAROLS]);
    await w.service.delete(CAROLS.psk, userCaller('carol'));
    expect(w.keys.get('hash-carol')!.deleted_at).toBe(iso(T0));
    expect(w.writes).toEqual([
      {
        op: 'markDeleted',
        args: ['hash-carol', iso(T0)],
        change: { type: 'psk.deleted', actor: 'carol', at: iso(T0) },
      },
    ]);
    expect(w.forgotten).toEqual(['hash-carol']);
    // Deleted: no longer there to delete.
    expect(await rejection(w.service.delete(CAROLS.psk, userCaller('carol')))).toBeInstanceOf(NotFound);
  });

  it('lets only the creator (by principal) or an admin delete; 404 before 403', async () => {
    const w = world([CAROLS]);
    const namesake = userCaller('carol', { subject: 'another-carol' });
    const refused = await rejection(w.service.delete(CAROLS.psk, namesake));
    expect(refused).toBeInstanceOf(Forbidden);
    expect(refused.message).toBe("Only the key's creator or an admin may change it");
    expect(await rejection(w.service.delete('55555555-5555-4555-8555-555555555555', namesake))).toBeInstanceOf(
      NotFound,
    );
    expect(w.writes).toEqual([]);
    await w.service.delete(CAROLS.psk, adminCaller());
    expect(w.forgotten).toEqual(['hash-carol']);
  });

  it('answers 404 and forgets nothing when a concurrent deletion got there first', async () => {
    const w = world([CAROLS]);
    w.store.markDeleted = async () => false;
    expect(await rejection(w.service.delete(CAROLS.psk, userCaller('carol')))).toBeInstanceOf(NotFound);
    expect(w.forgotten).toEqual([]);
  });

  it('leaves the bootstrap admin key to admins, whatever principal asks', async () => {
    const bootstrap = key({
      key_hash: 'hash-admin',
      psk: BOOTSTRAP_ADMIN_PSK_ID,
      roles: ['admin'],
      created_by: 'admin',
      created_by_principal: BOOTSTRAP_PRINCIPAL,
      valid_until_ms: MAX_VALID_UNTIL_MS,
    });
    const w = world([bootstrap]);
    const sameprincipal: Caller = { principal: BOOTSTRAP_PRINCIPAL, name: 'admin', roles: new Set(), via: 'psk' };
    expect(await rejection(w.service.delete(BOOTSTRAP_ADMIN_PSK_ID, sameprincipal))).toBeInstanceOf(Forbidden);
    expect(await rejection(w.service.extend(BOOTSTRAP_ADMIN_PSK_ID, 1, sameprincipal))).toBeInstanceOf(Forbidden);
    await w.service.delete(BOOTSTRAP_ADMIN_PSK_ID, adminCaller());
    expect(w.forgotten).toEqual(['hash-admin']);
  });
});

describe('KeyService.extend (E7)', () => {
  it('adds to a live key atomically: max(old, now) + days, recorded and forgotten by the cache', async () => {
    const w = world([CAROLS]);
    expect(await w.service.extend(CAROLS.psk, 10, userCaller('carol'))).toEqual({
      psk: CAROLS.psk,
      description: 'nightly export',
      valid_until: iso(T0 + 15 * DAY),
    });
    expect(w.writes).toEqual([
      {
        op: 'addToExpiry',
        args: ['hash-carol', 10 * DAY, T0, MAX_VALID_UNTIL_MS, []],
        change: { type: 'psk.extended', actor: 'carol', at: iso(T0) },
      },
    ]);
    expect(w.forgotten).toEqual(['hash-carol']);
  });

  it('extends an expired key from now by compare-and-set, and counts an extension that got there first', async () => {
    const expired = { ...CAROLS, valid_until_ms: T0 - 5 * DAY };
    const w = world([expired]);
    const replace = w.store.replaceExpiry;
    let raced = false;
    w.store.replaceExpiry = async (...args) => {
      if (!raced) {
        // Another extension of 3 days, from now, lands first.
        raced = true;
        w.keys.set('hash-carol', { ...expired, valid_until_ms: T0 + 3 * DAY });
      }
      return replace(...args);
    };
    expect((await w.service.extend(CAROLS.psk, 10, adminCaller())).valid_until).toBe(iso(T0 + 13 * DAY));
    expect(w.writes.map((x) => [x.op, ...x.args.slice(0, 3)])).toEqual([
      ['replaceExpiry', 'hash-carol', T0 - 5 * DAY, T0 + 10 * DAY],
      ['addToExpiry', 'hash-carol', 10 * DAY, T0],
    ]);
  });

  it('refuses a key extending itself (403) without writing', async () => {
    const w = world([CAROLS]);
    const refused = await rejection(w.service.extend(CAROLS.psk, 1, throughKey(T0 + 90 * DAY, CAROLS.psk)));
    expect(refused).toBeInstanceOf(Forbidden);
    expect(refused.message).toBe('A pre-shared key cannot extend itself');
    expect(w.writes).toEqual([]);
  });

  it('extends through another key no further than that key, then refuses to go past it', async () => {
    const w = world([CAROLS]);
    const caller = throughKey(T0 + 8 * DAY);
    expect((await w.service.extend(CAROLS.psk, 10, caller)).valid_until).toBe(iso(T0 + 8 * DAY));
    expect(w.writes[0]).toMatchObject({
      op: 'replaceExpiry',
      args: ['hash-carol', T0 + 5 * DAY, T0 + 8 * DAY, ['hash-root', 'hash-k']],
    });
    expect(w.keys.get('hash-carol')!.lineage).toEqual(['hash-root', 'hash-k']);
    const refused = await rejection(w.service.extend(CAROLS.psk, 1, caller));
    expect(refused).toBeInstanceOf(Forbidden);
    expect(refused.message).toMatch(/cannot extend it past the key you authenticate with/);
    expect(w.writes).toHaveLength(1);
  });

  it('answers 409 past 9999-12-31, and 404 for a key deleted while it was being extended', async () => {
    const late = { ...CAROLS, valid_until_ms: MAX_VALID_UNTIL_MS - DAY };
    const w = world([late]);
    const refused = await rejection(w.service.extend(CAROLS.psk, 2, userCaller('carol')));
    expect(refused).toBeInstanceOf(Conflict);
    expect(w.writes).toEqual([]);

    const gone = world([CAROLS]);
    gone.store.addToExpiry = async () => {
      gone.keys.set('hash-carol', { ...CAROLS, deleted_at: iso(T0) });
      return undefined;
    };
    expect(await rejection(gone.service.extend(CAROLS.psk, 1, userCaller('carol')))).toBeInstanceOf(NotFound);
    expect(gone.forgotten).toEqual([]);
  });
});
