import { describe, expect, it } from 'vitest';
import type { KeyLookup, KeyRecord } from '../../shared/auth/key-store.js';
import { PskVerifier } from '../../shared/auth/psk.js';
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

describe('PskVerifier', () => {
  it('knows the configured admin key by hash even before it is stored, reading a secret provider once', async () => {
    const { fake } = store();
    let reads = 0;
    const verifier = new PskVerifier(fake, async () => {
      reads++;
      return ADMIN;
    });
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
    expect(statusOf(await rejection(new PskVerifier(fake, ADMIN).verify(ADMIN)))).toBe(401);
  });

  it('caches lookups briefly, and forgets a key at once when told', async () => {
    const { fake, reads } = store();
    const verifier = new PskVerifier(fake, undefined);
    expect(statusOf(await rejection(verifier.verify('unknown-key-0123456789')))).toBe(401);
    expect(statusOf(await rejection(verifier.verify('unknown-key-0123456789')))).toBe(401);
    expect(reads).toHaveLength(1);
    verifier.forget(sha256Hex('unknown-key-0123456789'));
    expect(statusOf(await rejection(verifier.verify('unknown-key-0123456789')))).toBe(401);
    expect(reads).toHaveLength(2);
  });
});
