import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchGetAll } from '../../shared/aws/batch-get.js';
import { isConditionFailed } from '../../shared/aws/errors.js';
import {
  listAll,
  listAttributes,
  listOwned,
  OWNER_PRINCIPAL_INDEX,
  withoutListAttributes,
} from '../../shared/aws/listing.js';
import { queryAll } from '../../shared/aws/pagination.js';
import { type Page } from '../../shared/page.js';
import { stampNew, stampUpdate } from '../../shared/events/stamp.js';
import type { Change } from '../../shared/events/types.js';
import type { Document, DocumentStatus } from './schemas.js';

const LIST_PK = 'document';
/**
 * A confirmation in progress (E6): the stored enrichment status while a confirmation
 * applies its catalog effects, with the claim's token and expiry. Internal: read back as
 * `awaiting_review`, the contract's status for a document not confirmed yet.
 */
const CONFIRMING = 'confirming';
const CLAIM = 'confirmation_claim';
const CLAIM_EXPIRES = 'confirmation_claim_expires_at';
const BY_PENDING_DOMAIN = 'by_pending_domain';

/** Fields a write may set; `null` is stored as null (the contract's unset value). */
export type DocumentFields = Partial<Omit<Document, 'id' | 'owner' | 'catalog_urn' | 'created_at'>>;

/** A conditional write's outcome: the new document, or why it was not written. */
export type WriteResult = { ok: true; document: Document } | { ok: false; reason: 'missing' | 'conflict' };

/**
 * What the documents group needs of its store. The conditional writes answer the new
 * document, or why it was not written (`missing`, or `conflict`: the condition failed).
 */
export interface DocumentStore {
  /** Stores a new document owned by the principal `ownerPrincipal`, its creation stamped (`change`). */
  create(doc: Document, ownerPrincipal: string, change: Change): Promise<void>;
  /** The document and its owner's principal (absent on documents stored before principals were). */
  getWithOwner(id: string): Promise<{ document: Document; ownerPrincipal: string | undefined } | undefined>;
  /** The owners' principals of the documents that exist among `ids` (empty string: none recorded). */
  ownersOf(ids: readonly string[]): Promise<Map<string, string>>;
  /** The stored item as is (with `pending_domain` when set). */
  getRaw(id: string): Promise<Record<string, unknown> | undefined>;
  /** The documents of the principal `owner`, oldest first. */
  listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<Document>>;
  /** Every document, oldest first. */
  listAll(limit: number, cursor: string | undefined): Promise<Page<Document>>;
  /** Every document waiting for `domain`, oldest first (eventually consistent). */
  listPending(domain: string): Promise<Document[]>;
  /** Moves the status in one write, if the current status is one of `from`. */
  setStatus(id: string, from: readonly DocumentStatus[], fields: DocumentFields, change: Change): Promise<WriteResult>;
  /** Stores enrichment suggestions, unless confirmed already or a live confirmation claim holds it. */
  setSuggestions(id: string, fields: DocumentFields, change: Change, nowMs: number): Promise<WriteResult>;
  /**
   * Claims the confirmation (E6) for `claim` until `expiresAtMs`, if the enrichment awaits
   * review or an earlier claim has expired.
   */
  claimConfirmation(id: string, claim: string, nowMs: number, expiresAtMs: number): Promise<WriteResult>;
  /** Gives a claim up (the enrichment awaits review again), if `claim` still holds it. */
  releaseConfirmation(id: string, claim: string): Promise<WriteResult>;
  /**
   * Writes a confirmation and drops the claim, if `claim` still holds it; sets
   * `pending_domain` when given, else removes it.
   */
  confirm(
    id: string,
    claim: string,
    fields: DocumentFields,
    pendingDomain: string | null,
    change: Change,
  ): Promise<WriteResult>;
  /** Attaches a document to its now existing domain, if it still waits for that domain. */
  attachDomain(id: string, domain: string, fields: DocumentFields, change: Change): Promise<WriteResult>;
}

/**
 * DynamoDB repository for documents (TABLES.documents). A document waiting for a domain
 * that does not exist yet carries `pending_domain` (the sparse `by_pending_domain` index);
 * that attribute is internal and never part of the public record. Every write a client
 * can see stamps its change on the item (docs/events-and-webhooks.md, shared/events/stamp.ts); a
 * confirmation's claim and its release, which readers never see, stamp nothing.
 */
export class DynamoDocumentStore implements DocumentStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Stores a new document owned by the principal `ownerPrincipal`, its creation stamped (`change`). */
  async create(doc: Document, ownerPrincipal: string, change: Change): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          ...doc,
          owner_principal: ownerPrincipal,
          ...listAttributes(LIST_PK, doc.created_at, doc.id),
          ...stampNew(change),
        },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  /** The document and its owner's principal (absent on documents stored before principals were). */
  async getWithOwner(id: string): Promise<{ document: Document; ownerPrincipal: string | undefined } | undefined> {
    const item = await this.getRaw(id);
    if (!item) return undefined;
    const owner = item.owner_principal;
    return { document: toDocument(item), ownerPrincipal: typeof owner === 'string' ? owner : undefined };
  }

  /** The owners' principals of the documents that exist among `ids` (empty string: none recorded). */
  async ownersOf(ids: readonly string[]): Promise<Map<string, string>> {
    const unique = [...new Set(ids)];
    const items = await batchGetAll(
      this.db,
      this.tableName,
      unique.map((id) => ({ id })),
      {
        projection: ['id', 'owner_principal'],
      },
    );
    return new Map(items.map((i) => [i.id as string, typeof i.owner_principal === 'string' ? i.owner_principal : '']));
  }

  /** The stored item as is (with `pending_domain` when set). */
  async getRaw(id: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    return out.Item;
  }

  /** The documents of the principal `owner`, oldest first. */
  async listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<Document>> {
    const page = await listOwned(
      { db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor },
      OWNER_PRINCIPAL_INDEX,
      owner,
    );
    return { items: page.items.map(toDocument), nextCursor: page.nextCursor };
  }

  async listAll(limit: number, cursor: string | undefined): Promise<Page<Document>> {
    const page = await listAll({ db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor }, LIST_PK);
    return { items: page.items.map(toDocument), nextCursor: page.nextCursor };
  }

  /** Every document waiting for `domain`, oldest first (the index is eventually consistent). */
  async listPending(domain: string): Promise<Document[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      IndexName: BY_PENDING_DOMAIN,
      KeyConditionExpression: 'pending_domain = :d',
      ExpressionAttributeValues: { ':d': domain },
    });
    return items.map(toDocument);
  }

  /** Moves the status in one write, conditional on the current status being one of `from`. */
  setStatus(id: string, from: readonly DocumentStatus[], fields: DocumentFields, change: Change): Promise<WriteResult> {
    const values: Record<string, unknown> = {};
    from.forEach((s, i) => (values[`:from${i}`] = s));
    const condition = from.length
      ? `#status IN (${from.map((_, i) => `:from${i}`).join(', ')})`
      : 'attribute_not_exists(id)';
    return this.update(id, fields, { condition, names: from.length ? { '#status': 'status' } : {}, values, change });
  }

  /**
   * Stores enrichment suggestions unless the document's enrichment is confirmed already or
   * a confirmation holds a live claim on it (its effects are being applied).
   */
  setSuggestions(id: string, fields: DocumentFields, change: Change, nowMs: number): Promise<WriteResult> {
    return this.update(id, fields, {
      condition: '#es <> :confirmed AND (#es <> :confirming OR #exp < :now)',
      names: { '#es': 'enrichment_status', '#claim': CLAIM, '#exp': CLAIM_EXPIRES },
      values: { ':confirmed': 'confirmed', ':confirming': CONFIRMING, ':now': nowMs },
      remove: '#claim, #exp',
      change,
    });
  }

  /**
   * Claims the confirmation of a document (E6) for `claim`: one write, conditional on the
   * enrichment awaiting review or on an earlier claim having expired (its holder crashed).
   * The claim is held until `expiresAtMs` (epoch milliseconds).
   */
  claimConfirmation(id: string, claim: string, nowMs: number, expiresAtMs: number): Promise<WriteResult> {
    return this.update(
      id,
      {},
      {
        condition: '#es = :awaiting OR (#es = :confirming AND #exp < :now)',
        names: { '#es': 'enrichment_status', '#claim': CLAIM, '#exp': CLAIM_EXPIRES },
        values: {
          ':awaiting': 'awaiting_review',
          ':confirming': CONFIRMING,
          ':now': nowMs,
          ':claim': claim,
          ':exp': expiresAtMs,
        },
        extraSet: '#es = :confirming, #claim = :claim, #exp = :exp',
      },
    );
  }

  /** Gives a claim up (the enrichment awaits review again), conditional on `claim` still holding it. */
  releaseConfirmation(id: string, claim: string): Promise<WriteResult> {
    return this.update(
      id,
      {},
      {
        condition: '#es = :confirming AND #claim = :claim',
        names: { '#es': 'enrichment_status', '#claim': CLAIM, '#exp': CLAIM_EXPIRES },
        values: { ':awaiting': 'awaiting_review', ':confirming': CONFIRMING, ':claim': claim },
        extraSet: '#es = :awaiting',
        remove: '#claim, #exp',
      },
    );
  }

  /**
   * Writes a confirmation, conditional on `claim` still holding the document's claim (see
   * claimConfirmation), and drops the claim; sets `pending_domain` when given, else removes it.
   */
  confirm(
    id: string,
    claim: string,
    fields: DocumentFields,
    pendingDomain: string | null,
    change: Change,
  ): Promise<WriteResult> {
    return this.update(id, fields, {
      change,
      condition: '#es = :confirming AND #claim = :claim',
      names: { '#es': 'enrichment_status', '#pd': 'pending_domain', '#claim': CLAIM, '#exp': CLAIM_EXPIRES },
      values: {
        ':confirming': CONFIRMING,
        ':claim': claim,
        ...(pendingDomain !== null ? { ':pd': pendingDomain } : {}),
      },
      ...(pendingDomain !== null ? { extraSet: '#pd = :pd', remove: '#claim, #exp' } : { remove: '#pd, #claim, #exp' }),
    });
  }

  /** Attaches a document to its now existing domain, conditional on it still waiting for that domain. */
  attachDomain(id: string, domain: string, fields: DocumentFields, change: Change): Promise<WriteResult> {
    return this.update(id, fields, {
      condition: '#pd = :pd',
      names: { '#pd': 'pending_domain' },
      values: { ':pd': domain },
      remove: '#pd',
      change,
    });
  }

  private async update(
    id: string,
    fields: DocumentFields,
    when: {
      condition: string;
      names: Record<string, string>;
      values: Record<string, unknown>;
      extraSet?: string;
      remove?: string;
      /** The change a client will see, stamped on the item in this write (none: an internal write). */
      change?: Change;
    },
  ): Promise<WriteResult> {
    const stamp = when.change ? stampUpdate(when.change) : undefined;
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    const sets = entries.map((_, i) => `#f${i} = :f${i}`);
    if (when.extraSet) sets.push(when.extraSet);
    if (stamp) sets.push(stamp.set);
    let expression = sets.length ? `SET ${sets.join(', ')}` : '';
    if (when.remove) expression += ` REMOVE ${when.remove}`;
    if (stamp) expression += ` ADD ${stamp.add}`;
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { id },
          UpdateExpression: expression,
          ConditionExpression: `attribute_exists(id) AND (${when.condition})`,
          ExpressionAttributeNames: {
            ...when.names,
            ...Object.fromEntries(entries.map(([name], i) => [`#f${i}`, name])),
            ...stamp?.names,
          },
          ExpressionAttributeValues: {
            ...when.values,
            ...Object.fromEntries(entries.map(([, value], i) => [`:f${i}`, value])),
            ...stamp?.values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { ok: true, document: toDocument(out.Attributes!) };
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      return { ok: false, reason: (await this.getRaw(id)) ? 'conflict' : 'missing' };
    }
  }
}

/**
 * The public record, fields in the contract's order (DynamoDB keeps no attribute order):
 * only the contract's fields, so keys, list attributes, the owner's principal, the claim
 * and the change stamp (ev_*) never show.
 */
export const toDocument = (item: Record<string, unknown>): Document => {
  const d = withoutListAttributes<Document>(item);
  return {
    id: d.id,
    filename: d.filename,
    owner: d.owner,
    mime_type: d.mime_type,
    size_bytes: d.size_bytes,
    page_count: d.page_count ?? null,
    chunk_count: d.chunk_count ?? null,
    subtype: d.subtype ?? null,
    status: d.status,
    // A claimed confirmation is not confirmed yet: to readers it still awaits review.
    enrichment_status: (d.enrichment_status as string) === CONFIRMING ? 'awaiting_review' : d.enrichment_status,
    catalog_urn: d.catalog_urn,
    extraction_warning: d.extraction_warning ?? null,
    suggested_summary: d.suggested_summary ?? null,
    error: d.error ?? null,
    objstore_key: d.objstore_key ?? null,
    suggested_tags: d.suggested_tags ?? [],
    suggested_glossary_terms: d.suggested_glossary_terms ?? [],
    suggested_domain: d.suggested_domain ?? null,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
};
