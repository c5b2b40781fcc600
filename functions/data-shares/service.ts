import { randomUUID } from 'node:crypto';
import { type Caller, isAdmin, isPrincipal } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { Conflict, Forbidden, NotFound } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import type { IdentityProvider, IdpClient } from '../../shared/ports/idp.js';
import { type CreateShareRequest, type SharedClient, SHARE_ID } from './schemas.js';
import { type DataShareStore, type ShareItem, type StoredShare, toDataShare } from './store.js';
import { AGAIN, retry } from '../../shared/retry.js';

/**
 * A reservation older than this belongs to a creation that died half way; a new creation
 * of the same name may take it over. Far above any identity-provider timeout.
 */
export const STALE_RESERVATION_MS = 5 * 60_000;

/** Deletions that lose this many races in a row to concurrent changes of the share give up (409). */
const DELETE_ATTEMPTS = 5;

/**
 * Data shares (E8): each is a confidential identity-provider client with a service
 * account, whose client id is the share's name, registered with its owner.
 */
export class DataShareService {
  constructor(
    private readonly store: DataShareStore,
    private readonly idp: IdentityProvider,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Reserves the name first (one conditional put, so of concurrent creations exactly one
   * wins), then creates the client. If the identity provider fails, the reservation is
   * given back, so the name can be tried again.
   */
  async create(req: CreateShareRequest, caller: Caller): Promise<SharedClient> {
    const reservation = randomUUID();
    const share = {
      name: req.name,
      owner: caller.name,
      owner_principal: caller.principal,
      description: req.description ?? null,
      tables: req.tables ?? [],
      created_at: this.clock.iso(),
      client_id: req.name,
    };
    const staleBefore = new Date(this.clock.now() - STALE_RESERVATION_MS).toISOString();
    if (!(await this.store.reserve(share, reservation, staleBefore)))
      throw new Conflict(`The data share name '${req.name}' is taken`);

    let client: IdpClient;
    try {
      client = await this.idp.createClient({ clientId: req.name, name: req.name, description: share.description });
    } catch (err) {
      await this.giveBack(req.name, reservation);
      throw err;
    }
    let item: ShareItem | undefined;
    try {
      item = await this.store.complete(
        req.name,
        reservation,
        { idp_id: client.id, enabled: client.enabled, service_accounts_enabled: client.service_accounts_enabled },
        { type: 'data_share.created', actor: caller.name, at: share.created_at },
      );
    } catch (err) {
      // Unregistered, the client would block the name for good: remove it again.
      await this.idp.deleteClient(req.name).catch(() => undefined);
      await this.giveBack(req.name, reservation);
      throw err;
    }
    if (!item) throw new Conflict(`The data share name '${req.name}' is taken`);
    logger.info('data share created', { share: req.name, owner: caller.name, client_uuid: client.id });
    return toDataShare(item, client, client.secret);
  }

  /** Own shares, or every share for an admin; never with a secret. */
  async list(caller: Caller, limit: number, cursor: string | undefined): Promise<Page<SharedClient>> {
    const page = isAdmin(caller)
      ? await this.store.list(limit, cursor)
      : await this.store.listOwned(caller.principal, limit, cursor);
    return { items: page.items.map((item) => toDataShare(item, undefined, null)), nextCursor: page.nextCursor };
  }

  /**
   * E8: the share (by name or id, see `find`) with its client's secret (null when the
   * identity provider will not reveal it).
   */
  async get(key: string, caller: Caller): Promise<SharedClient> {
    const item = await this.load(key, caller);
    const client = await this.idp.getClient(item.client_id);
    if (!client) logger.warn('the client of a data share is missing in the identity provider', { share: item.name });
    return toDataShare(item, client, client?.secret ?? null);
  }

  /**
   * A new secret; the old one stops working. The identity provider rotates first, then the
   * share is stamped with the rotation (its event never carries the secret).
   */
  async rotateSecret(key: string, caller: Caller): Promise<SharedClient> {
    const item = await this.load(key, caller);
    const { name } = item;
    const client = await this.idp.regenerateSecret(item.client_id);
    if (!client) throw new Conflict(`The identity provider no longer has the client of data share '${name}'`);
    const rotated = await this.store.rotated(
      name,
      item.created_at,
      { idp_id: client.id, enabled: client.enabled, service_accounts_enabled: client.service_accounts_enabled },
      { type: 'data_share.secret_rotated', actor: caller.name, at: this.clock.iso() },
    );
    if (!rotated) throw new NotFound(`No data share '${name}'`);
    logger.info('data share secret rotated', { share: name, by: caller.name });
    return toDataShare(rotated, client, client.secret);
  }

  /**
   * Removes the client first: if the identity provider fails, the share stays and can be
   * deleted again. The share goes with its `data_share.deleted` event; one changed meanwhile
   * is read again, one deleted (or created again under its name) meanwhile answers 404.
   */
  async delete(key: string, caller: Caller): Promise<void> {
    let item = await this.load(key, caller);
    const { name } = item;
    await this.idp.deleteClient(item.client_id);
    const change = { type: 'data_share.deleted', actor: caller.name, at: this.clock.iso() } as const;
    const deleted = await retry(
      async () => {
        const data = toDataShare(item, undefined, null) as unknown as Record<string, unknown>;
        if (await this.store.delete(item, change, data)) return true;
        const again = await this.store.get(name);
        if (!again || again.reservation !== undefined || again.created_at !== item.created_at)
          throw new NotFound(`No data share '${name}'`);
        item = again;
        return AGAIN;
      },
      { attempts: DELETE_ATTEMPTS },
    );
    if (!deleted.done) throw new Conflict(`Data share '${name}' kept changing while being deleted`);
    logger.info('data share deleted', { share: name, by: caller.name });
  }

  /** 404 before 403: a share being created does not exist yet. */
  private async load(key: string, caller: Caller): Promise<StoredShare> {
    const item = await this.find(key);
    if (!item) throw new NotFound(`No data share '${key}'`);
    if (!isPrincipal(item.owner_principal, caller) && !isAdmin(caller))
      throw new Forbidden("Only the data share's owner or an admin may do this");
    return item;
  }

  /**
   * The share that `key` names (docs/sdk.md). A key shaped like an id (SHARE_ID) is an id:
   * new names of that shape are refused, so only a share named so before ids were accepted
   * can have one, and it is still found by its name when no share has that id. An id is
   * looked up in the `by_idp_id` index, then the share is read by name (consistently) and
   * must still carry that id. Reservations are no shares.
   */
  private async find(key: string): Promise<StoredShare | undefined> {
    if (SHARE_ID.test(key)) {
      const name = await this.store.nameOfId(key);
      const byId = name === undefined ? undefined : await this.store.get(name);
      if (byId && byId.reservation === undefined && byId.idp_id === key) return byId;
    }
    const item = await this.store.get(key);
    return item && item.reservation === undefined ? item : undefined;
  }

  private async giveBack(name: string, reservation: string): Promise<void> {
    try {
      await this.store.release(name, reservation);
    } catch (err) {
      // It turns stale and is taken over by the next creation of the name.
      logger.error('could not release a data share reservation', { share: name, error: err as Error });
    }
  }
}
