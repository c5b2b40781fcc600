import { sha256Hex } from '../crypto.js';
import { Unauthenticated } from '../errors.js';
import { BOOTSTRAP_PRINCIPAL, type Caller, legacyKeyPrincipal } from './caller.js';
import { type Clock, systemClock } from '../clock.js';
import { adminKeyRecord, BOOTSTRAP_ADMIN_PSK_ID } from './bootstrap.js';
import { DEFAULT_DATAPRODUCT_ID, type KeyLookup, type KeyRecord } from './key-store.js';

/** How long a looked-up key, or a data product found not deleted, is trusted before the table is read again. */
const CACHE_MS = 3_000;
/** Entries a cache holds before it starts over. */
const CACHE_ENTRIES = 10_000;

/** What verifying reads of the data products: a key stops with its product (docs/sdk.md). */
export interface DataProductLookup {
  /** True for a product that was deleted; false for a live one and for an id never stored. */
  isDeleted(dataproductId: string): Promise<boolean>;
}

/** Checks `Authorization-PSK` secrets against the keys table by their SHA-256 hash. */
export class PskVerifier {
  private readonly cache = new Map<string, { record: KeyRecord | undefined; at: number }>();
  private readonly products = new Map<string, { deleted: boolean; at: number }>();
  private adminHash: Promise<string | undefined> | undefined;

  /**
   * `adminSecret` is the configured bootstrap admin key (DPM_ADMIN_PSK), or how to read it
   * (from Secrets Manager on AWS); it is read only when an unknown key is presented.
   */
  constructor(
    private readonly store: KeyLookup,
    private readonly adminSecret: string | (() => Promise<string>) | undefined,
    private readonly dataProducts: DataProductLookup,
    /** What a key's validity and the caches' age are measured on: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  async verify(secret: string): Promise<Caller> {
    const hash = sha256Hex(secret);
    const record = await this.lookup(hash);
    if (!record) throw new Unauthenticated('Invalid pre-shared key');
    const now = this.clock.now();
    refuseDead(record, now, 'Pre-shared key');
    // A key never outlives the keys it was made or extended through (docs/identity-and-keys.md, key lineage).
    const lineage = record.lineage ?? [];
    const ancestors = await Promise.all(lineage.map((h) => this.lookup(h)));
    for (const ancestor of ancestors) {
      if (!ancestor) throw new Unauthenticated('Pre-shared key was made through a key that no longer exists');
      refuseDead(ancestor, now, 'Pre-shared key was made through a key that');
    }
    // A key stops with its data product, and so with that of any key it came through.
    const products = new Set([record, ...ancestors].map((r) => r!.dataproduct_id));
    const deleted = await Promise.all([...products].map((id) => this.productDeleted(id)));
    if (deleted.some(Boolean)) throw new Unauthenticated("Pre-shared key's data product has been deleted");
    return {
      principal: principalOf(record),
      name: record.created_by,
      roles: new Set(record.roles),
      via: 'psk',
      key: { pskId: record.psk, hash: record.key_hash, validUntilMs: record.valid_until_ms, lineage },
    };
  }

  /** Forgets a key at once in this process (after a delete or an extension). */
  forget(keyHash: string): void {
    this.cache.delete(keyHash);
  }

  /** Forgets a data product at once in this process (after its deletion): its keys are refused from the next request. */
  forgetProduct(dataproductId: string): void {
    this.products.delete(dataproductId);
  }

  /**
   * Whether the key's data product was deleted. `default` (and the bootstrap key's none) is
   * never read. A deletion is final (ids are never used again), so it is kept; a product
   * found live is read again after CACHE_MS: another process's deletion stops its keys here
   * within that bound.
   */
  private async productDeleted(id: string | null): Promise<boolean> {
    if (id === null || id === DEFAULT_DATAPRODUCT_ID) return false;
    const hit = this.products.get(id);
    if (hit && (hit.deleted || this.clock.now() - hit.at < CACHE_MS)) return hit.deleted;
    const deleted = await this.dataProducts.isDeleted(id);
    if (this.products.size >= CACHE_ENTRIES) this.products.clear();
    this.products.set(id, { deleted, at: this.clock.now() });
    return deleted;
  }

  private async lookup(hash: string): Promise<KeyRecord | undefined> {
    const hit = this.cache.get(hash);
    if (hit && this.clock.now() - hit.at < CACHE_MS) return hit.record;
    let record = await this.store.getByHash(hash);
    if (!record && hash === (await this.configuredAdminHash())) {
      // The configured admin key exists from start-up, even where no start-up step stored it
      // (a Lambda with read-only access to the keys table): until stored, it is known by hash.
      record = adminKeyRecord(hash, this.clock.iso());
    }
    this.cache.set(hash, { record, at: this.clock.now() });
    if (this.cache.size > CACHE_ENTRIES) this.cache.clear();
    return record;
  }

  private configuredAdminHash(): Promise<string | undefined> {
    const secret = this.adminSecret;
    if (!secret) return Promise.resolve(undefined);
    this.adminHash ??= (typeof secret === 'string' ? Promise.resolve(secret) : secret()).then(sha256Hex, (err) => {
      this.adminHash = undefined;
      throw err;
    });
    return this.adminHash;
  }
}

function refuseDead(record: KeyRecord, now: number, subject: string): void {
  if (record.deleted_at) throw new Unauthenticated(`${subject} has been deleted`);
  if (record.valid_until_ms <= now) throw new Unauthenticated(`${subject} has expired`);
}

/** The key's creator's principal; the bootstrap key's is reserved, whenever it was stored. */
function principalOf(record: KeyRecord): string {
  if (record.psk === BOOTSTRAP_ADMIN_PSK_ID) return BOOTSTRAP_PRINCIPAL;
  return record.created_by_principal ?? legacyKeyPrincipal(record.psk);
}
