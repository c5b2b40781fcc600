import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionally } from '../aws/errors.js';
import { queryAll } from '../aws/pagination.js';
import {
  byName,
  byUrn,
  datasetUrnOf,
  domainUrn,
  emptyAnnotations,
  glossaryTermUrn,
  tagUrn,
  type CatalogItem,
  type ColumnAnnotations,
  type Created,
  type EntityAnnotations,
  type EntityChange,
  type MetadataCatalog,
} from '../ports/catalog.js';

type Kind = 'TAG' | 'TERM' | 'DOMAIN';

/** The sparse index of entity items by their `domain` (infra/tables.ts). */
const BY_DOMAIN = 'by_domain';

const URNS: Record<Kind, (name: string) => string> = { TAG: tagUrn, TERM: glossaryTermUrn, DOMAIN: domainUrn };

/** The entity item's attribute names. Column attributes are top-level: `col:<column>:<field>`. */
const COLUMN_PREFIX = 'col:';
const FIELDS = { description: 'description', tags: 'tags', terms: 'terms' } as const;
const columnAttribute = (column: string, field: keyof typeof FIELDS) => `${COLUMN_PREFIX}${column}:${FIELDS[field]}`;

/** DynamoDB allows 4 KB of update expression; stay well below it and split larger changes. */
const MAX_EXPRESSION = 3_000;

/**
 * The built-in metadata catalog on the `catalog` table (infra/tables.ts):
 * - definitions are items `TAG` | `TERM` | `DOMAIN` / name with `{name, urn, description}`;
 *   creating one is a conditional put, so concurrent creates agree on who created it;
 * - an entity's annotations are one item `ENTITY#<urn>` / `META`. Tags and terms are
 *   DynamoDB string sets updated with `ADD` (set union done by DynamoDB), descriptions and
 *   the domain with `SET`, all in one UpdateItem: two annotate calls racing both survive
 *   with no read-modify-write. Column annotations are top-level attributes
 *   `col:<column>:tags|terms|description` so they can be ADDed without a parent map
 *   existing. A change whose update expression would pass DynamoDB's 4 KB limit (a table
 *   with very many columns) is written in several UpdateItems, each still a set union.
 */
export class BuiltinCatalog implements MetadataCatalog {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  datasetUrn(catalog: string, schema: string, table: string): string {
    return datasetUrnOf('dpm', catalog, schema, table);
  }

  listTags(): Promise<CatalogItem[]> {
    return this.list('TAG');
  }

  listGlossaryTerms(): Promise<CatalogItem[]> {
    return this.list('TERM');
  }

  listDomains(): Promise<CatalogItem[]> {
    return this.list('DOMAIN');
  }

  getTag(name: string): Promise<CatalogItem | undefined> {
    return this.get('TAG', name);
  }

  getGlossaryTerm(name: string): Promise<CatalogItem | undefined> {
    return this.get('TERM', name);
  }

  getDomain(name: string): Promise<CatalogItem | undefined> {
    return this.get('DOMAIN', name);
  }

  createTag(name: string, description?: string): Promise<Created> {
    return this.create('TAG', name, description);
  }

  createGlossaryTerm(name: string, description?: string): Promise<Created> {
    return this.create('TERM', name, description);
  }

  createDomain(name: string, description?: string): Promise<Created> {
    return this.create('DOMAIN', name, description);
  }

  async getEntity(urn: string): Promise<EntityAnnotations> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: entityKey(urn), ConsistentRead: true }),
    );
    return Item ? toAnnotations(urn, Item) : emptyAnnotations(urn);
  }

  /** One Query on the sparse `by_domain` index (eventually consistent), followed through its pages. */
  async listDomainEntities(domain: string): Promise<EntityAnnotations[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      IndexName: BY_DOMAIN,
      KeyConditionExpression: '#domain = :domain',
      ExpressionAttributeNames: { '#domain': 'domain' },
      ExpressionAttributeValues: { ':domain': domain },
    });
    return items.flatMap((item) => (typeof item.urn === 'string' ? [toAnnotations(item.urn, item)] : [])).sort(byUrn);
  }

  async annotate(urn: string, change: EntityChange): Promise<void> {
    // Each clause: SET (replace) or ADD (string-set union) of one top-level attribute.
    const clauses: { op: 'SET' | 'ADD'; attribute: string; value: unknown }[] = [];
    const add = (attribute: string, names: readonly string[] | undefined) => {
      if (names && names.length > 0) clauses.push({ op: 'ADD', attribute, value: new Set(names) });
    };
    if (change.description !== undefined)
      clauses.push({ op: 'SET', attribute: 'description', value: change.description });
    if (change.domain !== undefined) clauses.push({ op: 'SET', attribute: 'domain', value: change.domain });
    add('tags', change.tags);
    add('terms', change.glossaryTerms);
    for (const [name, col] of Object.entries(change.columns ?? {})) {
      if (col.description !== undefined)
        clauses.push({ op: 'SET', attribute: columnAttribute(name, 'description'), value: col.description });
      add(columnAttribute(name, 'tags'), col.tags);
      add(columnAttribute(name, 'terms'), col.glossaryTerms);
    }

    // Batches that keep the update expression (and its names) under DynamoDB's limit.
    const batches: (typeof clauses)[] = [[]];
    let size = 0;
    for (const clause of clauses) {
      const cost = clause.attribute.length + 16;
      if (size + cost > MAX_EXPRESSION && batches.at(-1)!.length > 0) {
        batches.push([]);
        size = 0;
      }
      batches.at(-1)!.push(clause);
      size += cost;
    }

    for (const batch of batches) {
      const names: Record<string, string> = { '#urn': 'urn' };
      const values: Record<string, unknown> = { ':urn': urn };
      const sets = ['#urn = :urn'];
      const adds: string[] = [];
      batch.forEach((clause, i) => {
        names[`#a${i}`] = clause.attribute;
        values[`:v${i}`] = clause.value;
        (clause.op === 'SET' ? sets : adds).push(clause.op === 'SET' ? `#a${i} = :v${i}` : `#a${i} :v${i}`);
      });
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: entityKey(urn),
          UpdateExpression: `SET ${sets.join(', ')}${adds.length ? ` ADD ${adds.join(', ')}` : ''}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    }
  }

  private async list(kind: Kind): Promise<CatalogItem[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': kind },
    });
    // The sort key orders by UTF-8 bytes; sort by the same comparison as the DataHub adapter.
    return items.map((item) => toItem(kind, item)).sort(byName);
  }

  private async get(kind: Kind, name: string): Promise<CatalogItem | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: kind, sk: name }, ConsistentRead: true }),
    );
    return Item ? toItem(kind, Item) : undefined;
  }

  private async create(kind: Kind, name: string, description: string | undefined): Promise<Created> {
    const item: CatalogItem = { name, urn: URNS[kind](name), description: description ?? null };
    const created = await conditionally(
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: kind, sk: name, ...item },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (created) return { item, created: true };
    return { item: (await this.get(kind, name)) ?? item, created: false };
  }
}

const entityKey = (urn: string) => ({ pk: `ENTITY#${urn}`, sk: 'META' });

/** The stored entity item as the port's annotations (columns sorted by name). */
function toAnnotations(urn: string, item: Record<string, unknown>): EntityAnnotations {
  const columns: Record<string, { description: string | null; tags: string[]; glossary_terms: string[] }> = {};
  const column = (name: string) => (columns[name] ??= { description: null, tags: [], glossary_terms: [] });
  for (const [attribute, value] of Object.entries(item)) {
    if (!attribute.startsWith(COLUMN_PREFIX)) continue;
    const colon = attribute.lastIndexOf(':');
    const name = attribute.slice(COLUMN_PREFIX.length, colon);
    const field = attribute.slice(colon + 1);
    if (field === FIELDS.description) column(name).description = typeof value === 'string' ? value : null;
    else if (field === FIELDS.tags) column(name).tags = sorted(value);
    else if (field === FIELDS.terms) column(name).glossary_terms = sorted(value);
  }
  const ordered: Record<string, ColumnAnnotations> = {};
  for (const name of Object.keys(columns).sort()) ordered[name] = columns[name]!;
  return {
    urn,
    description: typeof item.description === 'string' ? item.description : null,
    domain: typeof item.domain === 'string' ? item.domain : null,
    tags: sorted(item.tags),
    glossary_terms: sorted(item.terms),
    columns: ordered,
  };
}

function toItem(kind: Kind, item: Record<string, unknown>): CatalogItem {
  const name = String(item.sk);
  return {
    name,
    urn: typeof item.urn === 'string' ? item.urn : URNS[kind](name),
    description: typeof item.description === 'string' ? item.description : null,
  };
}

/** A string set as read back (a Set), sorted. */
function sorted(value: unknown): string[] {
  if (value instanceof Set) return [...(value as Set<string>)].sort();
  if (Array.isArray(value)) return [...(value as string[])].sort();
  return [];
}
