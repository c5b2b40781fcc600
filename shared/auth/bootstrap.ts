import { randomSecret, sha256Hex } from '../crypto.js';
import { type Clock, systemClock } from '../clock.js';
import { BOOTSTRAP_PRINCIPAL } from './caller.js';
import { type KeyRecord, type KeyStore, MAX_VALID_UNTIL_MS } from './key-store.js';

/** The bootstrap admin key's public id: fixed, so it is found again and never duplicated. */
export const BOOTSTRAP_ADMIN_PSK_ID = '00000000-0000-4000-8000-000000000000';

/** The bootstrap admin key's record, for the secret with this SHA-256 hash, made at `createdAt`. */
export function adminKeyRecord(keyHash: string, createdAt: string): KeyRecord {
  return {
    key_hash: keyHash,
    psk: BOOTSTRAP_ADMIN_PSK_ID,
    dataproduct_id: null,
    description: 'bootstrap admin key',
    roles: ['admin'],
    created_by: 'admin',
    created_by_principal: BOOTSTRAP_PRINCIPAL,
    created_at: createdAt,
    valid_until_ms: MAX_VALID_UNTIL_MS,
  };
}

/**
 * Makes `secret` the bootstrap admin key: created when missing, and a previous bootstrap
 * key with another secret is retired so there is only ever one.
 */
export async function ensureConfiguredAdminKey(
  store: KeyStore,
  secret: string,
  clock: Clock = systemClock,
): Promise<void> {
  const record = adminKeyRecord(sha256Hex(secret), clock.iso());
  if (!(await store.createIfAbsent(record))) {
    // The configured key is the admin key while it is configured: deleted or expired, it comes back.
    const stored = await store.getByHash(record.key_hash);
    if (
      stored &&
      (stored.deleted_at || stored.valid_until_ms < MAX_VALID_UNTIL_MS || !stored.roles.includes('admin'))
    ) {
      await store.restore(record.key_hash, record.roles, record.valid_until_ms);
    }
  }
  for (const old of await store.findByPskId(BOOTSTRAP_ADMIN_PSK_ID)) {
    if (old.key_hash !== record.key_hash && !old.deleted_at) await store.markDeleted(old.key_hash, clock.iso());
  }
}

/**
 * Local mode without DPM_ADMIN_PSK: generates an admin key the first time only.
 * Returns the secret when it was generated now (to be printed once), else undefined.
 */
export async function ensureGeneratedAdminKey(
  store: KeyStore,
  clock: Clock = systemClock,
): Promise<string | undefined> {
  const existing = await store.findByPskId(BOOTSTRAP_ADMIN_PSK_ID);
  if (existing.some((k) => !k.deleted_at)) return undefined;
  const secret = `dpm_${randomSecret()}`;
  await store.createIfAbsent(adminKeyRecord(sha256Hex(secret), clock.iso()));
  return secret;
}
