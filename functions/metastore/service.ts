import type { Caller } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/aws/pagination.js';
import { decodeCursor, encodeCursor } from '../../shared/aws/pagination.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { Conflict, Invalid, NotFound, type ValidationIssue, valueError } from '../../shared/errors.js';
import type { EventsTable } from '../../shared/events/events-table.js';
import type { Change } from '../../shared/events/types.js';
import type {
  AnnotationEvent,
  CatalogItem,
  ColumnChange,
  EntityAnnotations,
  EntityChange,
  MetadataCatalog,
} from '../../shared/ports/catalog.js';
import type {
  AlterOperation,
  CatalogDetail,
  Metastore,
  OutboxEvent,
  Properties,
  SchemaDetail,
  TablePreview,
  TableRef,
  TableSchema,
} from '../../shared/ports/metastore.js';
import type {
  AcceptanceResult,
  CatalogCreation,
  ClassificationAcceptance,
  ColumnMetadata,
  Domain,
  DomainRequest,
  SchemaCreation,
  TableAlteration,
  TableClassification,
  TableCreation,
  TableMetadata,
  TableRegistration,
  TableSummary,
} from './schemas.js';
import { tableReference } from './table-reference.js';

/** Distinct, sorted (the catalog's own order for tag and term names). */
const distinctSorted = (names: Iterable<string>): string[] => [...new Set(names)].sort();

/**
 * Classifications are not stored apart from tags: E5 applies both as catalog tags (API.md
 * §6), and DataHub has no facet that would tell them apart either. So the classifications
 * reported for a table or column are its tags — the only rule both adapters can keep
 * without extra state, and one that never hides an accepted classification.
 */
const classificationsOf = (tags: string[]): string[] => [...tags];

/** The subject of a table's domain events (API.md §13): registrations and E5 acceptances. */
export const tableSubject = (catalog: string, schema: string, table: string): string =>
  `metastore/${catalog}/${schema}/${table}`;

/** The subjects of a catalog's and a schema's events (API.md §13). */
export const catalogSubject = (catalog: string): string => `metastore/${catalog}`;
export const schemaSubject = (catalog: string, schema: string): string => `metastore/${catalog}/${schema}`;

/** The subject of a domain's events (API.md §13). */
export const domainSubject = (name: string): string => `catalog/domains/${name}`;

/** A table as its GET answers: the metastore's schema merged with the catalog's annotations of `urn`. */
export function tableMetadata(found: TableSchema, urn: string, entity: EntityAnnotations): TableMetadata {
  const columns = found.columns.map((column): ColumnMetadata => {
    const notes = entity.columns.get(column.name);
    const tags = notes?.tags ?? [];
    return {
      name: column.name,
      type: column.type,
      description: notes?.description || column.description,
      tags,
      classifications: classificationsOf(tags),
      glossary_terms: notes?.glossary_terms ?? [],
    };
  });
  return {
    catalog: found.catalog,
    schema: found.schema,
    table: found.table,
    urn,
    description: entity.description || found.description,
    domain: entity.domain,
    tags: entity.tags,
    classifications: classificationsOf(entity.tags),
    glossary_terms: entity.glossary_terms,
    columns,
  };
}

/** A domain as the domain list answers it. */
export const domainOf = (item: CatalogItem, pendingDocuments: string[]): Domain => ({
  name: item.name,
  urn: item.urn,
  description: item.description,
  pending_documents: pendingDocuments,
});

/** What the service asks of the metadata catalog. */
export type MetastoreCatalog = Pick<
  MetadataCatalog,
  | 'annotate'
  | 'checkAnnotation'
  | 'createDomain'
  | 'createGlossaryTerm'
  | 'createTag'
  | 'datasetUrn'
  | 'getDomain'
  | 'getEntities'
  | 'getEntity'
  | 'getGlossaryTerm'
  | 'listDomains'
  | 'listGlossaryTerms'
  | 'listTags'
>;

/** Request properties (a JSON object) as the port's Map: names are data, never looked up on an object. */
const propertiesOf = (properties: Record<string, string | number | boolean>): Properties =>
  new Map(Object.entries(properties));

/** The metastore (E10, registration) and the metadata catalog (E5, browse) behind API.md §6. */
export class MetastoreService {
  constructor(
    private readonly metastore: Metastore,
    private readonly catalog: MetastoreCatalog,
    /** Documents that confirmed a domain before it existed wait for it (E6). */
    private readonly documents: PendingDocuments,
    /**
     * Where the events of tables (registrations, E5 acceptances) are written, in the
     * metastore's or catalog's own transaction (API.md §13); without it (fakes) none are.
     */
    private readonly events?: EventsTable,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  listCatalogs(): Promise<string[]> {
    return this.metastore.listCatalogs();
  }

  async listSchemas(catalog: string): Promise<string[]> {
    const schemas = await this.metastore.listSchemas(catalog);
    if (!schemas) throw new NotFound(`No catalog ${catalog}`);
    return schemas;
  }

  /** E10. */
  async listTables(catalog: string, schema: string): Promise<string[]> {
    const tables = await this.metastore.listTables(catalog, schema);
    if (!tables) throw new NotFound(`No schema ${catalog}.${schema}`);
    return tables;
  }

  /** The metastore's schema merged with the catalog's annotations. */
  async getTable(catalog: string, schema: string, table: string): Promise<TableMetadata> {
    const found = await this.metastore.getTable(catalog, schema, table);
    if (!found) throw await this.missingTable({ catalog, schema, table });
    const urn = this.catalog.datasetUrn(catalog, schema, table);
    return tableMetadata(found, urn, await this.catalog.getEntity(urn));
  }

  /** The NotFound of a table that is not there, naming what is missing: its catalog, its schema or itself. */
  private async missingTable(ref: TableRef): Promise<NotFound> {
    if (!(await this.metastore.listSchemas(ref.catalog))) return new NotFound(`No catalog ${ref.catalog}`);
    if (!(await this.metastore.listTables(ref.catalog, ref.schema)))
      return new NotFound(`No schema ${ref.catalog}.${ref.schema}`);
    return new NotFound(`No table ${ref.catalog}.${ref.schema}.${ref.table}`);
  }

  private async missingSchema(catalog: string, schema: string): Promise<NotFound> {
    return (await this.metastore.listSchemas(catalog))
      ? new NotFound(`No schema ${catalog}.${schema}`)
      : new NotFound(`No catalog ${catalog}`);
  }

  // --- The NX1 SDK's metastore (API.md §17) ---

  /** The configured metastore, the only one and so the default. */
  engines(): { name: string; default: boolean }[] {
    return [{ name: this.metastore.engine, default: true }];
  }

  catalogDetails(): Promise<CatalogDetail[]> {
    return this.metastore.catalogDetails();
  }

  async schemaDetails(catalog: string): Promise<SchemaDetail[]> {
    const schemas = await this.metastore.schemaDetails(catalog);
    if (!schemas) throw new NotFound(`No catalog ${catalog}`);
    return schemas;
  }

  /** Every table of the schema as its GET answers it without columns; the annotations in one batch read. */
  async tableDetails(catalog: string, schema: string): Promise<TableSummary[]> {
    const tables = await this.metastore.tableDetails(catalog, schema);
    if (!tables) throw await this.missingSchema(catalog, schema);
    const urns = tables.map((t) => this.catalog.datasetUrn(t.catalog, t.schema, t.table));
    const entities = await this.catalog.getEntities(urns);
    return tables.map((found, i) => {
      const { columns: _columns, ...summary } = tableMetadata(found, urns[i]!, entities[i]!);
      return summary;
    });
  }

  async previewTable(catalog: string, schema: string, table: string, limit: number): Promise<TablePreview> {
    const ref = { catalog, schema, table };
    const preview = await this.metastore.previewTable(ref, limit);
    if (!preview) throw await this.missingTable(ref);
    return preview;
  }

  /** The new catalog as the catalog details list it. */
  async createCatalog(req: CatalogCreation, caller: Caller): Promise<CatalogDetail> {
    const created: CatalogDetail = { name: req.catalog, type: req.catalog_type, schema_count: 0 };
    await this.metastore.createCatalog(
      req.catalog,
      req.catalog_type,
      propertiesOf(req.properties),
      this.outboxEvent(catalogSubject(req.catalog), 'metastore.catalog.created', caller, async () => ({ ...created })),
    );
    return created;
  }

  /** 409 while it has schemas. The event's data: the catalog as the details listed it last (empty). */
  async dropCatalog(catalog: string, caller: Caller): Promise<void> {
    const before = (await this.metastore.catalogDetails()).find((c) => c.name === catalog);
    if (!before) throw new NotFound(`No catalog ${catalog}`);
    await this.metastore.dropCatalog(
      catalog,
      this.outboxEvent(catalogSubject(catalog), 'metastore.catalog.deleted', caller, async () => ({
        ...before,
        schema_count: 0,
      })),
    );
  }

  /** The new schema as the schema details list it (its event's data says its catalog too). */
  async createSchema(catalog: string, req: SchemaCreation, caller: Caller): Promise<SchemaDetail> {
    const created: SchemaDetail = { name: req.schema_name, table_count: 0 };
    await this.metastore.createSchema(
      catalog,
      req.schema_name,
      propertiesOf(req.properties),
      this.outboxEvent(
        schemaSubject(catalog, req.schema_name),
        'metastore.schema.created',
        caller,
        async () => ({ ...created }),
        { catalog },
      ),
    );
    return created;
  }

  /** 409 while it has tables. The event's data: the schema as it was (empty), and its catalog. */
  async dropSchema(catalog: string, schema: string, caller: Caller): Promise<void> {
    await this.metastore.dropSchema(
      catalog,
      schema,
      this.outboxEvent(
        schemaSubject(catalog, schema),
        'metastore.schema.deleted',
        caller,
        async () => ({ name: schema, table_count: 0 }),
        { catalog },
      ),
    );
  }

  /** A new table (`metastore.table.registered`, as for a registration), answered as its GET answers it. */
  async createTable(catalog: string, schema: string, req: TableCreation, caller: Caller): Promise<TableMetadata> {
    const seen = new Set<string>();
    const issues: ValidationIssue[] = [];
    req.columns.forEach((column, i) => {
      if (seen.has(column.name))
        issues.push(valueError(['body', 'columns', i, 'name'], `duplicate column name '${column.name}'`, column.name));
      seen.add(column.name);
    });
    if (issues.length > 0) throw new Invalid(issues);
    const ref = { catalog, schema, table: req.table_name };
    await this.metastore.createTable(
      ref,
      req.columns.map((c) => ({ name: c.name, type: c.type, comment: c.comment ?? null, nullable: c.nullable })),
      propertiesOf(req.properties),
      this.tableEvent(ref, 'metastore.table.registered', caller),
    );
    return this.getTable(catalog, schema, req.table_name);
  }

  /** The event's data: the table as its GET answered before the drop. */
  async dropTable(catalog: string, schema: string, table: string, caller: Caller): Promise<void> {
    const ref = { catalog, schema, table };
    const before = await this.getTable(catalog, schema, table);
    const urn = before.urn;
    await this.metastore.dropTable(
      ref,
      // Read again (a change since `before` took a sequence before this one); an engine that
      // records the event after the drop no longer has the table: then `before`.
      this.tableEvent(ref, 'metastore.table.deleted', caller, async () => {
        const now = await this.metastore.getTable(catalog, schema, table);
        return (now ? tableMetadata(now, urn, await this.catalog.getEntity(urn)) : before) as unknown as Record<
          string,
          unknown
        >;
      }),
    );
  }

  /**
   * All operations or none (the metastore refuses the whole request on the first one it
   * cannot apply). Descriptions are the metastore's; where the catalog holds one for the
   * table or a column too (E5), the comment is written there as well, so the newest write is
   * what GET shows. The event (`metastore.table.altered`) is written with the metastore's
   * change and shows the table as GET answers once both are written.
   */
  async alterTable(
    catalog: string,
    schema: string,
    table: string,
    req: TableAlteration,
    caller: Caller,
  ): Promise<TableMetadata> {
    const ref = { catalog, schema, table };
    const operations = req.operations.map((op): AlterOperation => {
      switch (op.op) {
        case 'add_column':
          return { op: op.op, name: op.name, type: op.type, comment: op.comment ?? null };
        case 'set_properties':
          return { op: op.op, properties: propertiesOf(op.properties) };
        default:
          return op;
      }
    });
    const urn = this.catalog.datasetUrn(catalog, schema, table);
    /** The catalog's descriptions this alteration replaces (an empty one leaves the metastore's showing). */
    const overrides = (entity: EntityAnnotations): EntityChange => {
      let description: string | undefined;
      const columns = new Map<string, ColumnChange>();
      for (const op of operations) {
        if (op.op === 'set_comment' && entity.description) description = op.comment ?? '';
        if (op.op === 'set_column_comment' && entity.columns.get(op.name)?.description)
          columns.set(op.name, { description: op.comment ?? '' });
      }
      return { ...(description !== undefined ? { description } : {}), ...(columns.size > 0 ? { columns } : {}) };
    };
    const overlay = (entity: EntityAnnotations): EntityAnnotations => {
      const change = overrides(entity);
      const columns = new Map(entity.columns);
      for (const [name, col] of change.columns ?? []) {
        const notes = columns.get(name);
        if (notes) columns.set(name, { ...notes, description: col.description ?? notes.description });
      }
      return { ...entity, description: change.description ?? entity.description, columns };
    };
    await this.metastore.alterTable(
      ref,
      operations,
      this.tableEvent(ref, 'metastore.table.altered', caller, async (after) => {
        const altered = after ?? (await this.metastore.getTable(catalog, schema, table));
        if (!altered) return { catalog, schema, table };
        return tableMetadata(altered, urn, overlay(await this.catalog.getEntity(urn))) as unknown as Record<
          string,
          unknown
        >;
      }),
    );
    const change = overrides(await this.catalog.getEntity(urn));
    if (change.description !== undefined || change.columns) await this.catalog.annotate(urn, change);
    return this.getTable(catalog, schema, table);
  }

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
    return this.getTable(found.catalog, found.schema, found.table);
  }

  /** A tag the table does not carry is no change (200, no event). */
  async untagTable(tag: string, reference: string, caller: Caller): Promise<TableMetadata> {
    const found = await this.referencedTable(reference);
    await this.annotateTable(found, { removeTags: [tag] }, 'catalog.table.untagged', caller, { tag });
    return this.getTable(found.catalog, found.schema, found.table);
  }

  /** 404 for a domain the catalog does not have (domains are created by an admin: API.md §6). */
  async setTableDomain(domain: string, reference: string, caller: Caller): Promise<TableMetadata> {
    const found = await this.referencedTable(reference);
    if (!(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domain}`);
    await this.annotateTable(found, { domain }, 'catalog.table.domain_set', caller);
    return this.getTable(found.catalog, found.schema, found.table);
  }

  /** Takes the table out of `domain`; a table in another domain (or none) is no change (200, no event). */
  async removeTableDomain(domain: string, reference: string, caller: Caller): Promise<TableMetadata> {
    const found = await this.referencedTable(reference);
    if (!(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domain}`);
    await this.annotateTable(found, { removeDomain: domain }, 'catalog.table.domain_removed', caller, {
      removed_domain: domain,
    });
    return this.getTable(found.catalog, found.schema, found.table);
  }

  private async referencedTable(reference: string): Promise<TableSchema> {
    const ref = tableReference(reference);
    const found = await this.metastore.getTable(ref.catalog, ref.schema, ref.table);
    if (!found) throw await this.missingTable(ref);
    return found;
  }

  /** One annotate call with the change's event (the table's subject) where the catalog records one (built-in). */
  private async annotateTable(
    found: TableSchema,
    change: EntityChange,
    type:
      'catalog.table.tagged' | 'catalog.table.untagged' | 'catalog.table.domain_set' | 'catalog.table.domain_removed',
    caller: Caller,
    about?: Record<string, unknown>,
  ): Promise<void> {
    const { catalog, schema, table } = found;
    const urn = this.catalog.datasetUrn(catalog, schema, table);
    const event: AnnotationEvent | undefined = this.events && {
      events: this.events,
      subject: tableSubject(catalog, schema, table),
      change: { type, actor: caller.name, at: this.clock.iso(), ...(about ? { about } : {}) },
      // The schema as it is now: a change may have replaced it since `found` was read.
      data: async (after) =>
        tableMetadata(
          (await this.metastore.getTable(catalog, schema, table)) ?? found,
          urn,
          after,
        ) as unknown as Record<string, unknown>,
    };
    await this.catalog.annotate(urn, change, event);
  }

  /** A change's event through the metastore's outbox; none without an events table (fakes). */
  private outboxEvent(
    subject: string,
    type: Change['type'],
    caller: Caller,
    data: OutboxEvent['data'],
    about?: Record<string, unknown>,
  ): OutboxEvent | undefined {
    return (
      this.events && {
        events: this.events,
        subject,
        change: { type, actor: caller.name, at: this.clock.iso(), ...(about ? { about } : {}) },
        data,
      }
    );
  }

  /**
   * A table's event; its data by default the table as GET answers it after the change (the
   * metastore's `after` when given, else read from it).
   */
  private tableEvent(
    ref: TableRef,
    type: Change['type'],
    caller: Caller,
    data?: OutboxEvent['data'],
  ): OutboxEvent | undefined {
    const urn = this.catalog.datasetUrn(ref.catalog, ref.schema, ref.table);
    const afterChange: OutboxEvent['data'] = async (after) => {
      const table = after ?? (await this.metastore.getTable(ref.catalog, ref.schema, ref.table));
      if (!table) return { ...ref };
      return tableMetadata(table, urn, await this.catalog.getEntity(urn)) as unknown as Record<string, unknown>;
    };
    return this.outboxEvent(tableSubject(ref.catalog, ref.schema, ref.table), type, caller, data ?? afterChange);
  }

  /**
   * Registers (replaces) a table in the built-in metastore and annotates its catalog entity.
   * The registration's event (`metastore.table.registered`) is written in the metastore's
   * transaction, with the table as GET answers once the annotation that follows is made:
   * the registered schema and the entity's annotations with the description and domain given.
   */
  async registerTable(
    catalog: string,
    schema: string,
    table: string,
    req: TableRegistration,
    caller: Caller,
  ): Promise<TableMetadata> {
    if (this.metastore.external) {
      throw new Conflict('Tables are registered in the external metastore, not through this service');
    }
    const issues: ValidationIssue[] = [];
    const seen = new Set<string>();
    req.columns.forEach((column, i) => {
      if (seen.has(column.name)) {
        issues.push(valueError(['body', 'columns', i, 'name'], `duplicate column name '${column.name}'`, column.name));
      }
      seen.add(column.name);
    });
    if (req.domain != null && !(await this.catalog.getDomain(req.domain))) {
      issues.push(valueError(['body', 'domain'], `no catalog domain '${req.domain}'`, req.domain));
    }
    if (issues.length > 0) throw new Invalid(issues);

    const registered: TableSchema = {
      catalog,
      schema,
      table,
      description: req.description ?? null,
      columns: req.columns.map((c) => ({ name: c.name, type: c.type, description: c.description ?? null })),
    };
    const urn = this.catalog.datasetUrn(catalog, schema, table);
    const change: { description?: string; domain?: string } = {};
    if (req.description) change.description = req.description;
    if (req.domain != null) change.domain = req.domain;
    const event: OutboxEvent | undefined = this.events && {
      events: this.events,
      subject: tableSubject(catalog, schema, table),
      change: { type: 'metastore.table.registered', actor: caller.name, at: this.clock.iso() },
      data: async () => {
        // The annotation that follows replaces the description and domain it gives (and adds nothing else).
        const entity = await this.catalog.getEntity(urn);
        const annotated: EntityAnnotations = {
          ...entity,
          description: change.description ?? entity.description,
          domain: change.domain ?? entity.domain,
        };
        return tableMetadata(registered, urn, annotated) as unknown as Record<string, unknown>;
      },
    };
    await this.metastore.registerTable(registered, event);
    if (Object.keys(change).length > 0) await this.catalog.annotate(urn, change);
    return this.getTable(catalog, schema, table);
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
    const found = await this.metastore.getTable(catalog, schema, table);
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
    const event: AnnotationEvent | undefined = this.events && {
      events: this.events,
      subject: tableSubject(catalog, schema, table),
      change: { type: 'catalog.classification.accepted', actor: caller.name, at: this.clock.iso(), about: accepted },
      // The schema as it is now: a registration may have replaced it since `found` was read.
      data: async (after) =>
        tableMetadata(
          (await this.metastore.getTable(catalog, schema, table)) ?? found,
          urn,
          after,
        ) as unknown as Record<string, unknown>,
    };
    await this.catalog.annotate(urn, change, event);
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
