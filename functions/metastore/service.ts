import type { Caller } from '../../shared/auth/caller.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { Conflict, Invalid, NotFound, type ValidationIssue, valueError } from '../../shared/errors.js';
import type { EventsTable } from '../../shared/events/events-table.js';
import type { Change } from '../../shared/events/types.js';
import type { ColumnChange, EntityAnnotations, EntityChange, MetadataCatalog } from '../../shared/ports/catalog.js';
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
  CatalogCreation,
  ColumnMetadata,
  SchemaCreation,
  TableAlteration,
  TableCreation,
  TableMetadata,
  TableRegistration,
  TableSummary,
} from './schemas.js';

/**
 * Classifications are not stored apart from tags: E5 applies both as catalog tags
 * (docs/data-and-catalog.md), and DataHub has no facet that would tell them apart either. So the classifications
 * reported for a table or column are its tags — the only rule both adapters can keep
 * without extra state, and one that never hides an accepted classification.
 */
const classificationsOf = (tags: string[]): string[] => [...tags];

/** The subject of a table's domain events (docs/events-and-webhooks.md): registrations and E5 acceptances. */
export const tableSubject = (catalog: string, schema: string, table: string): string =>
  `metastore/${catalog}/${schema}/${table}`;

/** The subjects of a catalog's and a schema's events (docs/events-and-webhooks.md). */
export const catalogSubject = (catalog: string): string => `metastore/${catalog}`;
export const schemaSubject = (catalog: string, schema: string): string => `metastore/${catalog}/${schema}`;

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

/**
 * What the metastore's endpoints ask of the metadata catalog: the annotations a table's
 * answer merges in, and the descriptions and domain a registration or alteration writes.
 */
export type TableCatalog = Pick<MetadataCatalog, 'annotate' | 'datasetUrn' | 'getDomain' | 'getEntities' | 'getEntity'>;

/** Request properties (a JSON object) as the port's Map: names are data, never looked up on an object. */
const propertiesOf = (properties: Record<string, string | number | boolean>): Properties =>
  new Map(Object.entries(properties));

/**
 * The metastore behind docs/data-and-catalog.md and docs/sdk.md (E10, registration, the NX1 SDK's DDL): catalogs,
 * schemas and tables through the metastore port, each table answered with the metadata
 * catalog's annotations. Tags, glossary terms, domains and E5 are MetadataCatalogService's
 * (metadata-catalog-service.ts).
 */
export class MetastoreService {
  constructor(
    private readonly metastore: Metastore,
    private readonly catalog: TableCatalog,
    /**
     * Where the events of catalogs, schemas and tables are written, in the metastore's own
     * transaction (docs/events-and-webhooks.md); without it (fakes) none are.
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
    const found = await this.findTable({ catalog, schema, table });
    const urn = this.catalog.datasetUrn(catalog, schema, table);
    return tableMetadata(found, urn, await this.catalog.getEntity(urn));
  }

  /** The table's schema as the metastore holds it now; undefined when there is no such table. */
  tableSchema(catalog: string, schema: string, table: string): Promise<TableSchema | undefined> {
    return this.metastore.getTable(catalog, schema, table);
  }

  /** The table's schema; NotFound naming what is missing (its catalog, its schema or itself). */
  async findTable(ref: TableRef): Promise<TableSchema> {
    const found = await this.metastore.getTable(ref.catalog, ref.schema, ref.table);
    if (!found) throw await this.missingTable(ref);
    return found;
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

  // --- The NX1 SDK's metastore (docs/sdk.md) ---

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
}
