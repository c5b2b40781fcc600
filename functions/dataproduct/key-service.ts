import { randomUUID } from 'node:crypto';
import { BOOTSTRAP_ADMIN_PSK_ID } from '../../shared/auth/bootstrap.js';
import type { PskVerifier } from '../../shared/auth/psk.js';
import { type Caller, isAdmin, isPrincipal } from '../../shared/auth/caller.js';
import {
  DEFAULT_DATAPRODUCT_ID,
  type KeyRecord,
  type KeyRepository,
  MAX_VALID_UNTIL_MS,
} from '../../shared/auth/key-store.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import type { Change } from '../../shared/events/types.js';
import { randomSecret, sha256Hex } from '../../shared/crypto.js';
import { Conflict, Forbidden, NotFound } from '../../shared/errors.js';
import { AGAIN, retry } from '../../shared/retry.js';
import type { CreateKeyRequest, CreatedKey, ExtendedKey, KeyInfo } from './schemas.js';
import { type DataProductStore, toKeyInfo } from './store.js';

const DAY_MS = 86_400_000;
/** Compare-and-set rounds for extending an expired key before giving up. */
const MAX_ATTEMPTS = 50;

const iso = (ms: number) => new Date(ms).toISOString();

/** Pre-shared keys (docs/identity-and-keys.md): made for a data product, listed, deleted, extended (E7). */
export class KeyService {
  constructor(
    private readonly keys: KeyRepository,
    private readonly verifier: Pick<PskVerifier, 'forget'>,
    private readonly products: Pick<DataProductStore, 'get'>,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * A new key acting as its creator, with the creator's roles; the secret is returned once.
   * Made through a key, it never outlives that key and stops with it (key lineage). The data
   * product must exist (`default` always does); one deleted meanwhile stops the key anyway.
   */
  async create(dataproductId: string, req: CreateKeyRequest, caller: Caller): Promise<CreatedKey> {
    if (dataproductId !== DEFAULT_DATAPRODUCT_ID) {
      const product = await this.products.get(dataproductId);
      if (!product || product.deleted_at) throw new NotFound(`No data product ${dataproductId}`);
    }
    const secret = `dpm_${randomSecret()}`;
    // One clock reading: valid_until is exactly created_at + validity_days.
    const now = this.clock.now();
    const wanted = now + req.validity_days * DAY_MS;
    const record: KeyRecord = {
      key_hash: sha256Hex(secret),
      psk: randomUUID(),
      dataproduct_id: dataproductId,
      description: req.description,
      roles: [...caller.roles].sort(),
      created_by: caller.name,
      created_by_principal: caller.principal,
      created_at: iso(now),
      valid_until_ms: caller.key ? Math.min(wanted, caller.key.validUntilMs) : wanted,
      ...(caller.key ? { lineage: lineageThrough(caller) } : {}),
    };
    await this.keys.createIfAbsent(record, { type: 'psk.created', actor: caller.name, at: record.created_at });
    const { deleted_at: _none, ...info } = toKeyInfo(record);
    return { ...info, key: secret };
  }

  /** The caller's own keys (an admin's: everyone's); deleted ones only when asked. */
  async list(
    caller: Caller,
    includeDeleted: boolean,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<KeyInfo>> {
    const page = await this.keys.list(isAdmin(caller) ? undefined : caller.principal, includeDeleted, limit, cursor);
    return { items: page.items.map(toKeyInfo), nextCursor: page.nextCursor };
  }

  /** Deletes a key; it stops authenticating at once here, and within seconds everywhere. */
  async delete(pskId: string, caller: Caller): Promise<void> {
    const record = await this.live(pskId, caller);
    const at = this.clock.iso();
    const change: Change = { type: 'psk.deleted', actor: caller.name, at };
    if (!(await this.keys.markDeleted(record.key_hash, at, change))) throw new NotFound(`No pre-shared key ${pskId}`);
    this.verifier.forget(record.key_hash);
  }

  /**
   * E7: new valid_until = max(old valid_until, now) + days. A live key is extended with
   * one atomic ADD (concurrent extensions all count); an expired one by compare-and-set
   * from now, retried if another extension got there first. Extended through another key,
   * the result ends no later than that key, and the key joins its lineage.
   */
  async extend(pskId: string, days: number, caller: Caller): Promise<ExtendedKey> {
    let record = await this.live(pskId, caller);
    if (caller.key?.pskId === record.psk) throw new Forbidden('A pre-shared key cannot extend itself');
    const bound = Math.min(MAX_VALID_UNTIL_MS, caller.key?.validUntilMs ?? MAX_VALID_UNTIL_MS);
    const lineage = caller.key ? lineageThrough(caller) : [];
    const written = await retry<ExtendedKey>(
      async () => {
        const now = this.clock.now();
        const wanted = Math.max(record.valid_until_ms, now) + days * DAY_MS;
        if (wanted > MAX_VALID_UNTIL_MS) throw new Conflict(`Pre-shared key ${pskId} cannot be valid past 9999-12-31`);
        const until = Math.min(wanted, bound);
        if (until <= record.valid_until_ms && until < wanted) {
          throw new Forbidden(
            `Pre-shared key ${pskId} is already valid until ${iso(record.valid_until_ms)}; a key cannot extend it past the key you authenticate with (${iso(bound)})`,
          );
        }
        const change: Change = { type: 'psk.extended', actor: caller.name, at: iso(now) };
        const extended =
          record.valid_until_ms >= now && until === wanted
            ? await this.keys.addToExpiry(record.key_hash, days * DAY_MS, now, bound, lineage, change)
            : await this.keys.replaceExpiry(record.key_hash, record.valid_until_ms, until, lineage, change);
        if (extended) {
          this.verifier.forget(record.key_hash);
          return { psk: extended.psk, description: extended.description, valid_until: iso(extended.valid_until_ms) };
        }
        const current = await this.keys.getByHash(record.key_hash);
        if (!current || current.deleted_at) throw new NotFound(`No pre-shared key ${pskId}`);
        record = current;
        return AGAIN;
      },
      { attempts: MAX_ATTEMPTS },
    );
    if (written.done) return written.value;
    throw new Error(`extending pre-shared key ${pskId}: too many concurrent changes`);
  }

  /** The key, if it exists and is not deleted (404), and the caller made it or is an admin (403). */
  private async live(pskId: string, caller: Caller): Promise<KeyRecord> {
    const record = (await this.keys.findByPskId(pskId)).find((k) => !k.deleted_at);
    if (!record) throw new NotFound(`No pre-shared key ${pskId}`);
    // The bootstrap admin key is the platform's, not a person's: only admins may change it.
    const owner = record.psk !== BOOTSTRAP_ADMIN_PSK_ID && isPrincipal(record.created_by_principal, caller);
    if (!owner && !isAdmin(caller)) {
      throw new Forbidden("Only the key's creator or an admin may change it");
    }
    return record;
  }
}

/** The lineage of a key made or extended by a PSK caller: that key and everything it came through. */
function lineageThrough(caller: Caller): string[] {
  const key = caller.key!;
  return [...new Set([...key.lineage, key.hash])];
}
