import { afterEach, describe, expect, it, vi } from 'vitest';
import type { KeyLookup, KeyRecord } from '../../shared/auth/key-store.js';
import { type DataProductLookup, PskVerifier } from '../../shared/auth/psk.js';
import { sha256Hex } from '../../shared/crypto.js';
import { statusOf } from '../../shared/http/errors.js';
import { rejection } from '../support/rejection.js';

const ADMIN = 'configured-admin-key-0123456789';

function store(records: KeyRecord[] = []) {
  const reads: string[] = [];
  const fake: KeyLookup = {
    getByHash: async (hash: string) => {
      reads.push(hash);
      return records.find((r) => r.key_hash === hash);
    },
  };
  return { fake, reads };
}

/** Data products of which `deleted` were deleted; every read is counted. */
function products(deleted: Set<string> = new Set()) {
  const reads: string[] = [];
  const fake: DataProductLookup = {
    isDeleted: async (id: string) => {
      reads.push(id);
      return deleted.has(id);
    },
  };
  return { fake, reads, deleted };
}

/** A live key for `dataproduct_id`, made through `lineage`. */
function keyFor(secret: string, dataproductId: string | null, lineage?: string[]): KeyRecord {
  return {
    key_hash: sha256Hex(secret),
    psk: `00000000-0000-4000-8000-${sha256Hex(secret).slice(0, 12)}`,
    dataproduct_id: dataproductId,
    description: 'a key',
    roles: [],
    created_by: 'carol',
    created_by_principal: 'iss|carol',
    created_at: '2026-01-01T00:00:00.000Z',
    valid_until_ms: Date.now() + 1e9,
    ...(lineage ? { lineage } : {}),
  };
}

describe('PskVerifier', () => {
  it('knows the configured admin key by hash even before it is stored, reading a secret provider once', async () => {
    const { fake } = store();
    let reads = 0;
    const verifier = new PskVerifier(
      fake,
      async () => {
        reads++;
        return ADMIN;
      },
      products().fake,
    );
    const caller = await verifier.verify(ADMIN);
    expect(caller).toMatchObject({ name: 'admin', via: 'psk' });
    expect([...caller.roles]).toEqual(['admin']);
    expect(statusOf(await rejection(verifier.verify('some-other-key-0123456789')))).toBe(401);
    expect(reads).toBe(1);
  });

  it('refuses the configured key once its stored record is deleted', async () => {
    const hash = sha256Hex(ADMIN);
    const { fake } = store([
      {
        key_hash: hash,
        psk: '00000000-0000-4000-8000-000000000000',
        dataproduct_id: null,
        description: 'bootstrap admin key',
        roles: ['admin'],
        created_by: 'admin',
        created_at: '2026-01-01T00:00:00.000Z',
        valid_until_ms: Date.now() + 1e9,
        deleted_at: '2026-01-02T00:00:00.000Z',
      },
    ]);
    expect(statusOf(await rejection(new PskVerifier(fake, ADMIN, products().fake).verify(ADMIN)))).toBe(401);
  });

  it('caches lookups briefly, and forgets a key at once when told', async () => {
    const { fake, reads } = store();
    const verifier = new PskVerifier(fake, undefined, products().fake);
    expect(statusOf(await rejection(verifier.verify('unknown-key-0123456789')))).toBe(401);
    expect(statusOf(await rejection(verifier.verify('unknown-key-0123456789')))).toBe(401);
    expect(reads).toHaveLength(1);
    verifier.forget(sha256Hex('unknown-key-0123456789'));
    expect(statusOf(await rejection(verifier.verify('unknown-key-0123456789')))).toBe(401);
    expect(reads).toHaveLength(2);
  });

  describe('a key stops with its data product', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it("refuses a key once its product is deleted: at once when told, else within the cache's bound", async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const secret = 'product-key-0123456789';
      const keys = store([keyFor(secret, 'p1')]);
      const dp = products();
      const verifier = new PskVerifier(keys.fake, undefined, dp.fake);
      expect((await verifier.verify(secret)).name).toBe('carol');
      expect((await verifier.verify(secret)).name).toBe('carol');
      // one read of the product for both requests: no read per request
      expect(dp.reads).toEqual(['p1']);
      dp.deleted.add('p1');
      // another process deleted it: trusted as live for at most 3 s
      vi.setSystemTime(Date.now() + 2_900);
      expect((await verifier.verify(secret)).name).toBe('carol');
      vi.setSystemTime(Date.now() + 200);
      expect(statusOf(await rejection(verifier.verify(secret)))).toBe(401);
      expect(dp.reads).toEqual(['p1', 'p1']);
      // a deletion is final: not read again
      vi.setSystemTime(Date.now() + 60_000);
      expect(statusOf(await rejection(verifier.verify(secret)))).toBe(401);
      expect(dp.reads).toEqual(['p1', 'p1']);
    });

    it('forgets a product at once when told (its deletion in this process)', async () => {
      const secret = 'product-key-0123456789';
      const dp = products();
      const verifier = new PskVerifier(store([keyFor(secret, 'p2')]).fake, undefined, dp.fake);
      expect((await verifier.verify(secret)).name).toBe('carol');
      dp.deleted.add('p2');
      verifier.forgetProduct('p2');
      const refused = await rejection(verifier.verify(secret));
      expect(statusOf(refused)).toBe(401);
      expect((refused as Error).message).toBe("Pre-shared key's data product has been deleted");
    });

    it("never reads `default` (nor the bootstrap key's none), and stops a key made through a key of a deleted product", async () => {
      const parent = 'parent-key-0123456789';
      const child = 'child-key-0123456789';
      const dp = products(new Set(['gone']));
      const verifier = new PskVerifier(
        store([
          keyFor('default-key-0123456789', 'default'),
          keyFor('no-product-key-0123456789', null),
          keyFor(parent, 'gone'),
          keyFor(child, 'default', [sha256Hex(parent)]),
        ]).fake,
        undefined,
        dp.fake,
      );
      expect((await verifier.verify('default-key-0123456789')).name).toBe('carol');
      expect((await verifier.verify('no-product-key-0123456789')).name).toBe('carol');
      expect(dp.reads).toEqual([]);
      expect(statusOf(await rejection(verifier.verify(child)))).toBe(401);
      expect(dp.reads).toEqual(['gone']);
    });
  });
});
