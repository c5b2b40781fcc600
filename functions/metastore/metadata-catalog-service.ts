import type { Caller } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { decodeCursor, encodeCursor } from '../../shared/aws/pagination.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { Conflict, Invalid, NotFound, type ValidationIssue, valueError } from '../../shared/errors.js';
import type { EventsTable } from '../../shared/events/events-table.js';
import type {
  AnnotationEvent,
  CatalogItem,
  ColumnChange,
  EntityChange,
  MetadataCatalog,
} from '../../shared/ports/catalog.js';
import type { TableSchema } from '../../shared/ports/metastore.js';
import type {
  AcceptanceResult,
  ClassificationAcceptance,
  Domain,
  DomainRequest,
  TableClassification,
  TableMetadata,
} from './schemas.js';
import { type MetastoreService, tableMetadata, tableSubject } from './service.js';
import { tableReference } from './table-reference.js';

/** Distinct, sorted (the catalog's own order for tag and term names). */
const distinctSorted = (names: Iterable<string>): string[] => [...new Set(names)].sort();

/** The subject of a domain's events (docs/events-and-webhooks.md). */
export const domainSubject = (name: string): string => `catalog/domains/${name}`;

/** A domain as the domain list answers it. */
export const domainOf = (item: CatalogItem, pendingDocuments: string[]): Domain => ({
  name: item.name,
  urn: item.urn,
  description: item.description,
  pending_documents: pendingDocuments,
});

/** What the service asks of the metadata catalog: its definitions, and the annotations it writes on tables. */
export type AnnotationCatalog = Pick<
  MetadataCatalog,
  | 'annotate'
  | 'checkAnnotation'
  | 'createDomain'
  | 'createGlossaryTerm'
  | 'createTag'
  | 'datasetUrn'
  | 'getDomain'
  | 'getGlossaryTerm'
  | 'listDomains'
  | 'listGlossaryTerms'
  | 'listTags'
>;

/**
 * What the service reads of the metastore's tables (MetastoreService): the table it
 * annotates, and the table as GET answers it once annotated.
 */
export type MetastoreTables = Pick<MetastoreService, 'findTable' | 'getTable' | 'tableSchema'>;

/**
 * The metadata catalog behind docs/data-and-catalog.md (tags, glossary terms, domains) and the annotation
 * of the metastore's tables: E5's acceptance, tagging, a table's domain. Catalogs, schemas
 * and tables themselves are MetastoreService's (service.ts).
 */
export class MetadataCatalogService {
  constructor(
    private readonly catalog: AnnotationCatalog,
    private readonly tables: MetastoreTables,
    /** Documents that confirmed a domain before it existed wait for it (E6). */
    private readonly documents: PendingDocuments,
    /**
     * Where the events of annotations (E5 acceptances, tagging, a table's domain) are
     * written, in the catalog's own transaction (docs/events-and-webhooks.md); without it (fakes) none are.
     */
    private readonly events?: EventsTable,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  /** Every tag name of the catalog, sorted. */
  async tagNames(): Promise<string[]> {
    return (await this.catalog.listTags()).map((tag) => tag.name);
  }

  /** Every domain of the catalog, sorted. */
  async domainSummaries(): Promise<{ name: string; urn: string; description: string | null }[]> {
    return (await this.catalog.listDomains()).map(({ name, urn, description }) => ({ name, urn, description }));
  }

  /** Tags a table (`{table}`: see tableReference); a tag the catalog lacks is created first, as E5 does. */
  async tagTable(tag: string, reference: string, caller: Caller): Promise<TableMetadata> {
    const found = await this.referencedTable(reference);
    await this.catalog.createTag(tag);
    await this.annotateTable(found, { tags: [tag] }, 'catalog.table.tagged', caller, { tag });
    return this.tables.getTable(found.catalog, found.schema, found.table);
  }

  /** A tag the table does not carry is no change (200, no event). */
  async untagTable(tag: string, reference: string, caller: Caller): Promise<TableMetadata> {
    const found = await this.referencedTable(reference);
    await this.annotateTable(found, { removeTags: [tag] }, 'catalog.table.untagged', caller, { tag });
    return this.tables.getTable(found.catalog, found.schema, found.table);
  }

  /** 404 for a domain the catalog does not have (domains are created by an admin: docs/data-and-catalog.md). */
  async setTableDomain(domain: string, reference: string, caller: Caller): Promise<TableMetadata> {
    const found = await this.referencedTable(reference);
    if (!(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domain}`);
    await this.annotateTable(found, { domain }, 'catalog.table.domain_set', caller);
    return this.tables.getTable(found.catalog, found.schema, found.table);
  }

  /** Takes the table out of `domain`; a table in another domain (or none) is no change (200, no event). */
  async removeTableDomain(domain: string, reference: string, caller: Caller): Promise<TableMetadata> {
    const found = await this.referencedTable(reference);
    if (!(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domain}`);
    await this.annotateTable(found, { removeDomain: domain }, 'catalog.table.domain_removed', caller, {
      removed_domain: domain,
    });
    return this.tables.getTable(found.catalog, found.schema, found.table);
  }

  /** The table `reference` names (`catalog.schema.table`: see tableReference); NotFound naming what is missing. */
  private async referencedTable(reference: string): Promise<TableSchema> {
    return this.tables.findTable(tableReference(reference));
  }

  /** One annotate call with the change's event (the table's subject) where the catalog records one (built-in). */
  private async annotateTable(
    found: TableSchema,
    change: EntityChange,
    type:
      | 'catalog.table.tagged'
      | 'catalog.table.untagged'
      | 'catalog.table.domain_set'
      | 'catalog.table.domain_removed'
      | 'catalog.classification.accepted',
    caller: Caller,
    about?: Record<string, unknown>,
  ): Promise<void> {
    const { catalog, schema, table } = found;
    const urn = this.catalog.datasetUrn(catalog, schema, table);
    const event: AnnotationEvent | undefined = this.events && {
      events: this.events,
      subject: tableSubject(catalog, schema, table),
      change: { type, actor: caller.name, at: this.clock.iso(), ...(about ? { about } : {}) },
      // The schema as it is now: a change or a registration may have replaced it since `found` was read.
      data: async (after) =>
        tableMetadata(
          (await this.tables.tableSchema(catalog, schema, table)) ?? found,
          urn,
          after,
        ) as unknown as Record<string, unknown>,
    };
    await this.catalog.annotate(urn, change, event);
  }

  /**
   * E5. Everything is checked before anything is written (unknown table 404; unknown or
   * repeated column, missing existing glossary term, a result larger than the catalog
   * stores: 422). Then tags and terms are created where missing (idempotent), and one
   * annotate call adds them to the table and columns, all or nothing: the catalog adds set
   * members and replaces descriptions, so a repeat leaves the same state. That annotation
   * writes the acceptance's event (`catalog.classification.accepted`, the table's subject)
   * in the same transaction where the catalog can (built-in); a repeat that changes
   * nothing has none.
   */
  async accept(
    catalog: string,
    schema: string,
    table: string,
    req: ClassificationAcceptance,
    caller: Caller,
  ): Promise<AcceptanceResult> {
    const found = await this.tables.tableSchema(catalog, schema, table);
    if (!found) throw new NotFound(`No table ${catalog}.${schema}.${table}`);

    const known = new Set(found.columns.map((c) => c.name));
    const issues: ValidationIssue[] = [];
    const seen = new Set<string>();
    req.columns.forEach((column, i) => {
      const loc = ['body', 'columns', i, 'column_name'];
      if (!known.has(column.column_name)) {
        issues.push(valueError(loc, `table ${table} has no column '${column.column_name}'`, column.column_name));
      } else if (seen.has(column.column_name)) {
        issues.push(valueError(loc, `column '${column.column_name}' is listed twice`, column.column_name));
      }
      seen.add(column.column_name);
    });

    // Terms that must exist already (or be created by this body): accepted ones and entries marked is_existing.
    const parts: { loc: (string | number)[]; part: TableClassification }[] = [
      { loc: ['body', 'table'], part: req.table },
      ...req.columns.map((part, i) => ({ loc: ['body', 'columns', i], part })),
    ];
    const termExists = new Map<string, Promise<CatalogItem | undefined>>();
    const lookup = (name: string) => {
      let found = termExists.get(name);
      if (!found) termExists.set(name, (found = this.catalog.getGlossaryTerm(name)));
      return found;
    };
    const mustExist: { loc: (string | number)[]; name: string }[] = [];
    for (const { loc, part } of parts) {
      part.accepted_glossary_terms.forEach((name, j) =>
        mustExist.push({ loc: [...loc, 'accepted_glossary_terms', j], name }),
      );
      part.new_glossary_terms.forEach((entry, j) => {
        if (entry.is_existing)
          mustExist.push({ loc: [...loc, 'new_glossary_terms', j, 'term_name'], name: entry.term_name });
      });
    }
    // A term that this body creates (an entry with is_existing false) counts as existing.
    const createdHere = new Set(
      parts.flatMap(({ part }) => part.new_glossary_terms.filter((t) => !t.is_existing).map((t) => t.term_name)),
    );
    const existing = await Promise.all(mustExist.map((m) => (createdHere.has(m.name) ? true : lookup(m.name))));
    mustExist.forEach((m, i) => {
      if (!existing[i]) issues.push(valueError(m.loc, `no glossary term '${m.name}'`, m.name));
    });
    if (issues.length > 0) throw new Invalid(issues);

    // One change for the table and its columns, keyed by column name in Maps (names are data).
    const tagsOf = (part: TableClassification) =>
      distinctSorted([...part.accepted_classifications, ...part.accepted_tags]);
    const termsOf = (part: TableClassification) =>
      distinctSorted([...part.accepted_glossary_terms, ...part.new_glossary_terms.map((t) => t.term_name)]);
    let linked = 0;
    let descriptions = 0;
    const tableTags = tagsOf(req.table);
    const tableTerms = termsOf(req.table);
    linked += tableTerms.length;
    const columnsChange = new Map<string, ColumnChange>();
    const columnTagsApplied = new Map<string, string[]>();
    for (const column of req.columns) {
      const tags = tagsOf(column);
      const terms = termsOf(column);
      linked += terms.length;
      columnTagsApplied.set(column.column_name, tags);
      columnsChange.set(column.column_name, {
        tags,
        glossaryTerms: terms,
        ...(column.description ? { description: column.description } : {}),
      });
      if (column.description) descriptions++;
    }
    const change: EntityChange = {
      tags: tableTags,
      glossaryTerms: tableTerms,
      columns: columnsChange,
      ...(req.table.description ? { description: req.table.description } : {}),
    };
    if (req.table.description) descriptions++;
    const urn = this.catalog.datasetUrn(catalog, schema, table);
    // A result the catalog cannot store (AnnotationTooLarge, 422) is refused before anything is written.
    await this.catalog.checkAnnotation(urn, change);

    // Tags (classifications included) and new terms, created where the catalog lacks them.
    const allTags = distinctSorted(parts.flatMap(({ part }) => tagsOf(part)));
    await Promise.all(allTags.map((tag) => this.catalog.createTag(tag)));
    const toCreate = new Map<string, string>();
    for (const { part } of parts) {
      for (const entry of part.new_glossary_terms) {
        if (!entry.is_existing && !toCreate.has(entry.term_name)) toCreate.set(entry.term_name, entry.term_description);
      }
    }
    const creations = await Promise.all(
      [...toCreate].map(([name, description]) => this.catalog.createGlossaryTerm(name, description || undefined)),
    );
    const created = creations.filter((c) => c.created).length;

    const result: AcceptanceResult = {
      success: true,
      table_tags_applied: tableTags,
      // Object.fromEntries makes every name an own property, `__proto__` included.
      column_tags_applied: Object.fromEntries(columnTagsApplied),
      glossary_terms_linked: linked,
      glossary_terms_created: created,
      descriptions_updated: descriptions,
    };
    // What was accepted (the table alone shows only the sum of every acceptance): the answer
    // but `success`. Stored as JSON text, column names such as `__proto__` are kept as they are.
    const { success: _success, ...accepted } = result;
    await this.annotateTable(found, change, 'catalog.classification.accepted', caller, accepted);
    return result;
  }

  listTags(limit: number, cursor: string | undefined): Promise<Page<CatalogItem>> {
    return this.catalog.listTags().then((items) => pageOf(items, limit, cursor));
  }

  listGlossaryTerms(limit: number, cursor: string | undefined): Promise<Page<CatalogItem>> {
    return this.catalog.listGlossaryTerms().then((items) => pageOf(items, limit, cursor));
  }

  async listDomains(limit: number, cursor: string | undefined): Promise<Page<Domain>> {
    const page = pageOf(await this.catalog.listDomains(), limit, cursor);
    return { items: await Promise.all(page.items.map((d) => this.toDomain(d))), nextCursor: page.nextCursor };
  }

  /**
   * Creates a domain (its event `catalog.domain.created` stamped on it where the catalog
   * can: built-in) and attaches every document that confirmed it while it did not exist
   * (each one's `document.domain_attached`, by the same caller).
   */
  async createDomain(req: DomainRequest, caller: Caller): Promise<Domain> {
    const { item, created } = await this.catalog.createDomain(req.name, req.description ?? undefined, {
      type: 'catalog.domain.created',
      actor: caller.name,
      at: this.clock.iso(),
    });
    if (!created) throw new Conflict(`Domain ${req.name} exists already`);
    await this.documents.attachPendingDocuments(item.name, caller.name);
    return this.toDomain(item);
  }

  private async toDomain(item: CatalogItem): Promise<Domain> {
    return domainOf(item, await this.documents.pendingDocumentIds(item.name));
  }
}

/** What the domain endpoints need of the documents (functions/documents/service.ts). */
export interface PendingDocuments {
  pendingDocumentIds(domainName: string): Promise<string[]>;
  /** `actor`: who made the domain exist (the documents' `document.domain_attached` events name them). */
  attachPendingDocuments(domainName: string, actor?: string | null): Promise<string[]>;
}

/**
 * A page of a sorted list the catalog returns whole: the cursor is the last name handed
 * out (opaque, base64url JSON), so a page continues after it even when items were added.
 */
function pageOf(items: CatalogItem[], limit: number, cursor: string | undefined): Page<CatalogItem> {
  const after = decodeCursor(cursor, (key) => typeof key.after === 'string' && Object.keys(key).length === 1)?.after as
    string | undefined;
  const rest = after === undefined ? items : items.filter((item) => item.name > after);
  const page = rest.slice(0, limit);
  const more = rest.length > limit;
  return { items: page, nextCursor: more ? encodeCursor({ after: page.at(-1)!.name }) : undefined };
}
