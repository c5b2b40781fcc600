import * as z from 'zod/mini';
import { intParam } from '../../shared/params.js';
import { component, doc } from '../../shared/schema.js';

/**
 * Catalog, schema and table names: no `#` and no `/`, which keeps the built-in metastore's
 * key layout (`TABLE#<catalog>#<schema>`) unambiguous and the names path-safe.
 */
export const NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.$-]*$/;
export const MAX_NAME = 255;
export const MAX_DESCRIPTION = 4000;

const name = (description: string) =>
  doc(
    z.string().check(z.minLength(1), z.maxLength(MAX_NAME), z.regex(NAME_PATTERN)),
    `${description}: 1–255 characters matching \`${NAME_PATTERN.source}\``,
  );

/** A tag, glossary term, domain or column name as the catalog stores it (undescribed: for wrappers). */
const labelText = () => z.string().check(z.minLength(1), z.maxLength(MAX_NAME));
/** A tag, glossary term, domain or column name as the catalog stores it. */
const label = (description: string) => doc(labelText(), description);

/** Free text (undescribed: for wrappers, which carry the description). */
const descriptionText = () => z.string().check(z.maxLength(MAX_DESCRIPTION));

export const CatalogParams = z.object({ catalog_name: name('catalog name') });
export const SchemaParams = z.object({ catalog_name: name('catalog name'), schema_name: name('schema name') });
export const TableParams = z.object({
  catalog_name: name('catalog name'),
  schema_name: name('schema name'),
  table_name: name('table name'),
});
/** E5's path: `{catalog}/{schema}/{table}` as the spec names them. */
export const ClassifyParams = z.object({
  catalog: name('catalog name'),
  schema: name('schema name'),
  table: name('table name'),
});

export const CatalogList = component('CatalogList', z.object({ catalogs: doc(z.array(z.string()), 'catalog names') }));
export const SchemaList = component(
  'SchemaList',
  z.object({ schemas: doc(z.array(z.string()), 'the schema names of the catalog') }),
);
/** Spec 2.12. */
export const TableList = component('TableList', z.object({ tables: doc(z.array(z.string()), 'table names, sorted') }));

export const ColumnRequest = z.strictObject({
  name: label('column name; unique within the table'),
  type: doc(z.string().check(z.minLength(1), z.maxLength(MAX_NAME)), 'column type, e.g. `varchar`'),
  description: doc(z.optional(z.nullable(descriptionText())), 'column description'),
});

export const TableRegistration = component(
  'TableRegistration',
  z.strictObject({
    description: doc(
      z.optional(z.nullable(descriptionText())),
      'table description; written to the metadata catalog too',
    ),
    domain: doc(z.optional(z.nullable(labelText())), 'the name of an existing catalog domain'),
    columns: doc(z.array(ColumnRequest).check(z.minLength(1), z.maxLength(1000)), 'the columns in their order'),
  }),
);
export type TableRegistration = z.infer<typeof TableRegistration>;

export const ColumnMetadata = component(
  'ColumnMetadata',
  z.object({
    name: doc(z.string(), 'column name'),
    type: doc(z.string(), 'column type, e.g. `varchar`'),
    description: doc(z.nullable(z.string()), 'column description; null when none'),
    tags: doc(z.array(z.string()), "the column's tags in the metadata catalog"),
    classifications: doc(
      z.array(z.string()),
      'the catalog keeps classifications as tags (E5), so these are the same names as `tags`',
    ),
    glossary_terms: doc(z.array(z.string()), 'glossary terms linked to the column'),
  }),
);

export const TableMetadata = component(
  'TableMetadata',
  z.object({
    catalog: doc(z.string(), 'catalog name'),
    schema: doc(z.string(), 'schema name'),
    table: doc(z.string(), 'table name'),
    urn: doc(z.string(), "the table's dataset urn in the metadata catalog"),
    description: doc(z.nullable(z.string()), 'table description; null when none'),
    domain: doc(z.nullable(z.string()), 'the catalog domain of the table; null when none'),
    tags: doc(z.array(z.string()), "the table's tags in the metadata catalog"),
    classifications: doc(
      z.array(z.string()),
      'the catalog keeps classifications as tags (E5), so these are the same names as `tags`',
    ),
    glossary_terms: doc(z.array(z.string()), 'glossary terms linked to the table'),
    columns: doc(z.array(ColumnMetadata), 'the columns in their order'),
  }),
);
export type TableMetadata = z.infer<typeof TableMetadata>;
export type ColumnMetadata = z.infer<typeof ColumnMetadata>;

/** Spec 2.6: a glossary term entry. */
export const GlossaryTermEntry = component(
  'GlossaryTermEntry',
  z.strictObject({
    term_name: label('glossary term name'),
    term_description: doc(z._default(descriptionText(), ''), 'description used when the term is created'),
    is_existing: doc(
      z._default(z.boolean(), false),
      'true: the term must exist already; false: created unless it exists',
    ),
    term_urn: doc(z.optional(z.nullable(z.string().check(z.maxLength(1000)))), 'informational; not used'),
  }),
);
export type GlossaryTermEntry = z.infer<typeof GlossaryTermEntry>;

const classificationFields = {
  accepted_classifications: doc(
    z._default(z.array(label('classification')).check(z.maxLength(1000)), []),
    'applied as catalog tags',
  ),
  accepted_tags: doc(
    z._default(z.array(label('tag')).check(z.maxLength(1000)), []),
    'tags to apply; a tag the catalog does not have yet is created',
  ),
  description: doc(z._default(descriptionText(), ''), 'written when non-empty'),
  accepted_glossary_terms: doc(
    z._default(z.array(label('glossary term')).check(z.maxLength(1000)), []),
    'existing glossary terms to link',
  ),
  new_glossary_terms: doc(
    z._default(z.array(GlossaryTermEntry).check(z.maxLength(1000)), []),
    'glossary terms to link, each created unless it exists (see `is_existing`)',
  ),
};

/** Spec 2.6: the table part. */
export const TableClassification = component(
  'TableClassification',
  doc(z.strictObject(classificationFields), 'what to apply to the table itself; every field is optional'),
);
/** Spec 2.6: a column entry. */
export const ColumnClassification = component(
  'ColumnClassification',
  z.strictObject({ column_name: label('a column of the table'), ...classificationFields }),
);
export type TableClassification = z.infer<typeof TableClassification>;
export type ColumnClassification = z.infer<typeof ColumnClassification>;

export const ClassificationAcceptance = component(
  'ClassificationAcceptance',
  z.strictObject({
    table: TableClassification,
    columns: doc(
      z._default(z.array(ColumnClassification).check(z.maxLength(1000)), []),
      'what to apply to columns, one entry per column (an unknown column is 422)',
    ),
  }),
);
export type ClassificationAcceptance = z.infer<typeof ClassificationAcceptance>;

/** Spec 2.6: the acceptance result. */
export const AcceptanceResult = component(
  'AcceptanceResult',
  z.object({
    success: doc(z.boolean(), 'true: everything was applied (a failure answers an error instead)'),
    table_tags_applied: doc(z.array(z.string()), "the table's applied tags"),
    column_tags_applied: doc(z.record(z.string(), z.array(z.string())), 'column name → its applied tags'),
    glossary_terms_linked: doc(
      z._default(z.int(), 0),
      'term links made to the table and its columns (accepted and new)',
    ),
    glossary_terms_created: doc(
      z._default(z.int(), 0),
      'glossary terms actually created (not those that existed already)',
    ),
    descriptions_updated: doc(z._default(z.int(), 0), 'non-empty descriptions written'),
  }),
);
export type AcceptanceResult = z.infer<typeof AcceptanceResult>;

/**
 * A schema named `…Schema` is the wire form of the port type of the same name (here
 * shared/ports/catalog.ts:CatalogItem); its OpenAPI component keeps that name.
 */
export const CatalogItemSchema = component(
  'CatalogItem',
  z.object({
    name: doc(z.string(), 'the name of the tag or glossary term'),
    urn: doc(z.string(), 'its urn in the metadata catalog'),
    description: doc(z.nullable(z.string()), 'its description; null when none'),
  }),
);

export const Domain = component(
  'Domain',
  z.object({
    name: doc(z.string(), 'domain name'),
    urn: doc(z.string(), 'its urn in the metadata catalog'),
    description: doc(z.nullable(z.string()), 'domain description; null when none'),
    pending_documents: doc(
      z.array(z.string()),
      'documents waiting for this domain (always empty until documents exist)',
    ),
  }),
);
export type Domain = z.infer<typeof Domain>;

export const DomainRequest = component(
  'DomainRequest',
  z.strictObject({
    name: label('domain name'),
    description: doc(z.optional(z.nullable(descriptionText())), 'domain description'),
  }),
);
export type DomainRequest = z.infer<typeof DomainRequest>;

// --- The NX1 SDK's metastore (docs/sdk.md) ---

/** Catalog, schema and table property names: identifiers, as Trino's `WITH (name = value)` takes them. */
export const PROPERTY_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

const properties = () =>
  doc(
    z._default(
      z.record(
        // A `__proto__` key is refused for every body before this runs (shared/pydantic/validate.ts).
        z.string().check(z.minLength(1), z.maxLength(MAX_NAME), z.regex(PROPERTY_NAME_PATTERN)),
        z.union([z.string().check(z.maxLength(MAX_DESCRIPTION)), z.number(), z.boolean()]),
      ),
      {},
    ),
    'properties (`WITH (name = value, ...)` on Trino): names are identifiers, values strings, numbers or booleans',
  );

/** A connector name (Trino's `CREATE CATALOG ... USING <connector>`), e.g. `hive`, `iceberg`, `memory`. */
export const CATALOG_TYPE_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/**
 * A SQL type as the engine spells it (`bigint`, `varchar(20)`, `decimal(10,2)`,
 * `array(varchar)`, `timestamp(3) with time zone`): letters, digits, `_`, spaces, parentheses
 * and commas only, so a type can never end a statement or open a quoted string.
 */
export const COLUMN_TYPE_PATTERN = /^[A-Za-z][A-Za-z0-9_ (),]*$/;

const columnType = () =>
  doc(
    z.string().check(z.minLength(1), z.maxLength(MAX_NAME), z.regex(COLUMN_TYPE_PATTERN)),
    'column type, e.g. `varchar`, `decimal(10,2)`',
  );

export const CatalogCreation = component(
  'CatalogCreation',
  z.strictObject({
    catalog: name('catalog name'),
    catalog_type: doc(
      z.string().check(z.regex(CATALOG_TYPE_PATTERN)),
      `the catalog's connector, e.g. \`hive\`, \`iceberg\`, \`memory\` (\`${CATALOG_TYPE_PATTERN.source}\`)`,
    ),
    properties: properties(),
  }),
);
export type CatalogCreation = z.infer<typeof CatalogCreation>;

export const SchemaCreation = component(
  'SchemaCreation',
  z.strictObject({ schema_name: name('schema name'), properties: properties() }),
);
export type SchemaCreation = z.infer<typeof SchemaCreation>;

/** The wire form of shared/ports/metastore.ts:ColumnDefinition (component `ColumnDefinition`). */
export const ColumnDefinitionSchema = component(
  'ColumnDefinition',
  z.strictObject({
    name: label('column name; unique within the table'),
    type: columnType(),
    comment: doc(z.optional(z.nullable(descriptionText())), "the column's description"),
    nullable: doc(z._default(z.boolean(), true), 'false: `NOT NULL`'),
  }),
);

export const TableCreation = component(
  'TableCreation',
  z.strictObject({
    table_name: name('table name'),
    columns: doc(
      z.array(ColumnDefinitionSchema).check(z.minLength(1), z.maxLength(1000)),
      'the columns in their order',
    ),
    properties: properties(),
  }),
);
export type TableCreation = z.infer<typeof TableCreation>;

const operation = <const O extends string, S extends Record<string, z.core.$ZodType>>(op: O, shape: S) =>
  z.strictObject({ op: doc(z.literal(op), 'the operation'), ...shape });

/** The wire form of shared/ports/metastore.ts:AlterOperation (component `AlterOperation`). */
export const AlterOperationSchema = component(
  'AlterOperation',
  doc(
    z.discriminatedUnion('op', [
      operation('add_column', {
        name: label('the new column'),
        type: columnType(),
        comment: doc(z.optional(z.nullable(descriptionText())), "the column's description"),
      }),
      operation('drop_column', { name: label('the column to drop') }),
      operation('rename_column', { name: label('the column to rename'), new_name: label('its new name') }),
      operation('set_column_comment', {
        name: label('the column'),
        comment: doc(z.nullable(descriptionText()), 'its description; null clears it'),
      }),
      operation('set_comment', {
        comment: doc(z.nullable(descriptionText()), "the table's description; null clears it"),
      }),
      operation('set_properties', { properties: properties() }),
    ]),
    'one change of the table, chosen by `op`',
  ),
);

export const TableAlteration = component(
  'TableAlteration',
  z.strictObject({
    operations: doc(
      z.array(AlterOperationSchema).check(z.minLength(1), z.maxLength(100)),
      'applied in order, all or none: one refused (an unknown column, a name taken, the last column dropped) changes nothing',
    ),
  }),
);
export type TableAlteration = z.infer<typeof TableAlteration>;

export const EngineList = component(
  'EngineList',
  z.object({
    engines: doc(
      z.array(
        z.object({
          name: doc(z.string(), 'the metastore engine: `builtin` or `trino`'),
          default: doc(z.boolean(), 'true for the engine requests go to'),
        }),
      ),
      'the configured metastore (`METASTORE`)',
    ),
  }),
);

/** The wire form of shared/ports/metastore.ts:CatalogDetail (component `CatalogDetail`). */
export const CatalogDetailSchema = component(
  'CatalogDetail',
  z.object({
    name: doc(z.string(), 'catalog name'),
    type: doc(z.nullable(z.string()), 'the `catalog_type` it was created with; null when unknown'),
    schema_count: doc(z.int(), 'how many schemas it has'),
  }),
);
export const CatalogDetails = component(
  'CatalogDetails',
  z.object({ catalogs: doc(z.array(CatalogDetailSchema), 'every catalog, sorted by name') }),
);

/** The wire form of shared/ports/metastore.ts:SchemaDetail (component `SchemaDetail`). */
export const SchemaDetailSchema = component(
  'SchemaDetail',
  z.object({ name: doc(z.string(), 'schema name'), table_count: doc(z.int(), 'how many tables it has') }),
);
export const SchemaDetails = component(
  'SchemaDetails',
  z.object({ schemas: doc(z.array(SchemaDetailSchema), 'every schema of the catalog, sorted by name') }),
);

export const TableSummary = component('TableSummary', z.omit(TableMetadata, { columns: true }));
export type TableSummary = z.infer<typeof TableSummary>;
export const TableDetails = component(
  'TableDetails',
  z.object({
    tables: doc(z.array(TableSummary), 'every table of the schema with its catalog annotations (no columns), sorted'),
  }),
);

export const ColumnList = component(
  'ColumnList',
  z.object({ columns: doc(z.array(ColumnMetadata), 'the columns in their order, as in TableMetadata') }),
);

/** The wire form of shared/ports/metastore.ts:TablePreview (component `TablePreview`). */
export const TablePreviewSchema = component(
  'TablePreview',
  z.object({
    columns: doc(z.array(z.string()), 'the column names'),
    rows: doc(
      z.array(z.array(z.unknown())),
      'the first rows (always empty on the built-in metastore, which holds no rows)',
    ),
  }),
);

export const PreviewQuery = z.object({
  limit: doc(
    z.pipe(
      z.optional(intParam({ min: 1, max: 1000 })),
      z.transform((limit) => limit ?? 20),
    ),
    'the most rows to answer (1–1000, default 20)',
    { type: 'integer', minimum: 1, maximum: 1000, default: 20 },
  ),
});

export const DomainSummary = component(
  'DomainSummary',
  z.object({
    name: doc(z.string(), 'domain name'),
    urn: doc(z.string(), 'its urn in the metadata catalog'),
    description: doc(z.nullable(z.string()), 'domain description; null when none'),
  }),
);
export const DomainSummaries = component(
  'DomainSummaries',
  z.object({ domains: doc(z.array(DomainSummary), 'every catalog domain, sorted by name') }),
);

const tableReference = () =>
  doc(
    z.string().check(z.minLength(1), z.maxLength(3 * (MAX_NAME + 2) + 2)),
    '`catalog.schema.table`; a part holding `.` or `"` is a double-quoted SQL identifier (`"sales.eu".core.orders`, `""` for a quote inside)',
  );
export const TagTableParams = z.object({ tag: label('tag name'), table: tableReference() });
export const DomainTableParams = z.object({ domain: label('domain name'), table: tableReference() });
