import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailed } from '../../shared/aws/errors.js';
import { listAll, listAttributes, listOwned, withoutListAttributes } from '../../shared/aws/listing.js';
import { queryAll, type Page } from '../../shared/aws/pagination.js';
import type { Document, DocumentStatus } from './schemas.js';

const LIST_PK = 'document';
const BY_OWNER = { name: 'by_owner', ownerAttribute: 'owner' };
const BY_PENDING_DOMAIN = 'by_pending_domain';

/** Fields a write may set; `null` is stored as null (the contract's unset value). */
export type DocumentFields = Partial<Omit<Document, 'id' | 'owner' | 'catalog_urn' | 'created_at'>>;

/** A conditional write's outcome: the new document, or why it was not written. */
export type WriteResult = { ok: true; document: Document } | { ok: false; reason: 'missing' | 'conflict' };

/**
 * DynamoDB repository for documents (TABLES.documents). A document waiting for a domain
 * that does not exist yet carries `pending_domain` (the sparse `by_pending_domain` index);
 * that attribute is internal and never part of the public record.
 */
export class DocumentStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(doc: Document): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...doc, ...listAttributes(LIST_PK, doc.created_at, doc.id) },
        ConditionExpression: 'attribute_not_exists(id)',
      }),
    );
  }

  async get(id: string): Promise<Document | undefined> {
    const item = await this.getRaw(id);
    return item ? toDocument(item) : undefined;
  }

  /** The stored item as is (with `pending_domain` when set). */
  async getRaw(id: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    return out.Item;
  }

  async listOwned(owner: string, limit: number, cursor: string | undefined): Promise<Page<Document>> {
    const page = await listOwned(
      { db: this.db, tableName: this.tableName, tableKeys: ['id'], limit, cursor },
      BY_OWNER,
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
  setStatus(id: string, from: readonly DocumentStatus[], fields: DocumentFields): Promise<WriteResult> {
    const values: Record<string, unknown> = {};
    from.forEach((s, i) => (values[`:from${i}`] = s));
    const condition = from.length
      ? `#status IN (${from.map((_, i) => `:from${i}`).join(', ')})`
      : 'attribute_not_exists(id)';
    return this.update(id, fields, { condition, names: from.length ? { '#status': 'status' } : {}, values });
  }

  /** Stores enrichment suggestions unless the document's enrichment is confirmed already. */
  setSuggestions(id: string, fields: DocumentFields): Promise<WriteResult> {
    return this.update(id, fields, {
      condition: '#es <> :confirmed',
      names: { '#es': 'enrichment_status' },
      values: { ':confirmed': 'confirmed' },
    });
  }

  /**
   * Writes a confirmation, conditional on the enrichment awaiting review; sets
   * `pending_domain` when given, else removes it.
   */
  confirm(id: string, fields: DocumentFields, pendingDomain: string | null): Promise<WriteResult> {
    return this.update(id, fields, {
      condition: '#es = :awaiting',
      names: { '#es': 'enrichment_status', '#pd': 'pending_domain' },
      values: { ':awaiting': 'awaiting_review', ...(pendingDomain !== null ? { ':pd': pendingDomain } : {}) },
      ...(pendingDomain !== null ? { extraSet: '#pd = :pd' } : { remove: '#pd' }),
    });
  }

  /** Attaches a document to its now existing domain, conditional on it still waiting for that domain. */
  attachDomain(id: string, domain: string, fields: DocumentFields): Promise<WriteResult> {
    return this.update(id, fields, {
      condition: '#pd = :pd',
      names: { '#pd': 'pending_domain' },
      values: { ':pd': domain },
      remove: '#pd',
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
    },
  ): Promise<WriteResult> {
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    const sets = entries.map((_, i) => `#f${i} = :f${i}`);
    if (when.extraSet) sets.push(when.extraSet);
    let expression = `SET ${sets.join(', ')}`;
    if (when.remove) expression += ` REMOVE ${when.remove}`;
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
          },
          ExpressionAttributeValues: {
            ...when.values,
            ...Object.fromEntries(entries.map(([, value], i) => [`:f${i}`, value])),
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

/** The public record, fields in the contract's order (DynamoDB keeps no attribute order). */
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
    enrichment_status: d.enrichment_status,
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
