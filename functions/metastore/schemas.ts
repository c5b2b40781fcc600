import { z } from '@hono/zod-openapi';

/**
 * Catalog, schema and table names: no `#` and no `/`, which keeps the built-in metastore's
 * key layout (`TABLE#<catalog>#<schema>`) unambiguous and the names path-safe.
 */
export const NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.$-]*$/;
export const MAX_NAME = 255;
export const MAX_DESCRIPTION = 4000;

const name = (description: string) =>
  z
    .string()
    .min(1)
    .max(MAX_NAME)
    .regex(NAME_PATTERN)
    .openapi({ description: `${description}: 1–255 characters matching \`${NAME_PATTERN.source}\`` });

/** A tag, glossary term, domain or column name as the catalog stores it. */
const label = (description: string) => z.string().min(1).max(MAX_NAME).openapi({ description });

const description = (what: string) => z.string().max(MAX_DESCRIPTION).openapi({ description: what });

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

export const CatalogList = z
  .object({ catalogs: z.array(z.string()).openapi({ description: 'catalog names' }) })
  .openapi('CatalogList');
export const SchemaList = z
  .object({ schemas: z.array(z.string()).openapi({ description: 'the schema names of the catalog' }) })
  .openapi('SchemaList');
/** Spec 2.12. */
export const TableList = z
  .object({ tables: z.array(z.string()).openapi({ description: 'table names, sorted' }) })
  .openapi('TableList');

export const ColumnRequest = z.strictObject({
  name: label('column name; unique within the table'),
  type: z.string().min(1).max(MAX_NAME).openapi({ description: 'column type, e.g. `varchar`' }),
  description: description('column description').nullable().optional(),
});

export const TableRegistration = z
  .strictObject({
    description: description('table description; written to the metadata catalog too').nullable().optional(),
    domain: label('the name of an existing catalog domain').nullable().optional(),
    columns: z.array(ColumnRequest).min(1).max(1000).openapi({ description: 'the columns in their order' }),
  })
  .openapi('TableRegistration');
export type TableRegistration = z.infer<typeof TableRegistration>;

export const ColumnMetadata = z
  .object({
    name: z.string().openapi({ description: 'column name' }),
    type: z.string().openapi({ description: 'column type, e.g. `varchar`' }),
    description: z.string().nullable().openapi({ description: 'column description; null when none' }),
    tags: z.array(z.string()).openapi({ description: "the column's tags in the metadata catalog" }),
    classifications: z.array(z.string()).openapi({
      description: 'the catalog keeps classifications as tags (E5), so these are the same names as `tags`',
    }),
    glossary_terms: z.array(z.string()).openapi({ description: 'glossary terms linked to the column' }),
  })
  .openapi('ColumnMetadata');

export const TableMetadata = z
  .object({
    catalog: z.string().openapi({ description: 'catalog name' }),
    schema: z.string().openapi({ description: 'schema name' }),
    table: z.string().openapi({ description: 'table name' }),
    urn: z.string().openapi({ description: "the table's dataset urn in the metadata catalog" }),
    description: z.string().nullable().openapi({ description: 'table description; null when none' }),
    domain: z.string().nullable().openapi({ description: 'the catalog domain of the table; null when none' }),
    tags: z.array(z.string()).openapi({ description: "the table's tags in the metadata catalog" }),
    classifications: z.array(z.string()).openapi({
      description: 'the catalog keeps classifications as tags (E5), so these are the same names as `tags`',
    }),
    glossary_terms: z.array(z.string()).openapi({ description: 'glossary terms linked to the table' }),
    columns: z.array(ColumnMetadata).openapi({ description: 'the columns in their order' }),
  })
  .openapi('TableMetadata');
export type TableMetadata = z.infer<typeof TableMetadata>;
export type ColumnMetadata = z.infer<typeof ColumnMetadata>;

/** Spec 2.6: a glossary term entry. */
export const GlossaryTermEntry = z
  .strictObject({
    term_name: label('glossary term name'),
    term_description: description('description used when the term is created').default(''),
    is_existing: z
      .boolean()
      .default(false)
      .openapi({ description: 'true: the term must exist already; false: created unless it exists' }),
    term_urn: z.string().max(1000).nullable().optional().openapi({ description: 'informational; not used' }),
  })
  .openapi('GlossaryTermEntry');
export type GlossaryTermEntry = z.infer<typeof GlossaryTermEntry>;

const classificationFields = {
  accepted_classifications: z
    .array(label('classification'))
    .max(1000)
    .default([])
    .openapi({ description: 'applied as catalog tags' }),
  accepted_tags: z
    .array(label('tag'))
    .max(1000)
    .default([])
    .openapi({ description: 'tags to apply; a tag the catalog does not have yet is created' }),
  description: description('written when non-empty').default(''),
  accepted_glossary_terms: z
    .array(label('glossary term'))
    .max(1000)
    .default([])
    .openapi({ description: 'existing glossary terms to link' }),
  new_glossary_terms: z
    .array(GlossaryTermEntry)
    .max(1000)
    .default([])
    .openapi({ description: 'glossary terms to link, each created unless it exists (see `is_existing`)' }),
};

/** Spec 2.6: the table part. */
export const TableClassification = z.strictObject(classificationFields).openapi('TableClassification', {
  description: 'what to apply to the table itself; every field is optional',
});
/** Spec 2.6: a column entry. */
export const ColumnClassification = z
  .strictObject({ column_name: label('a column of the table'), ...classificationFields })
  .openapi('ColumnClassification');
export type TableClassification = z.infer<typeof TableClassification>;
export type ColumnClassification = z.infer<typeof ColumnClassification>;

export const ClassificationAcceptance = z
  .strictObject({
    table: TableClassification,
    columns: z
      .array(ColumnClassification)
      .max(1000)
      .default([])
      .openapi({ description: 'what to apply to columns, one entry per column (an unknown column is 422)' }),
  })
  .openapi('ClassificationAcceptance');
export type ClassificationAcceptance = z.infer<typeof ClassificationAcceptance>;

/** Spec 2.6: the acceptance result. */
export const AcceptanceResult = z
  .object({
    success: z.boolean().openapi({ description: 'true: everything was applied (a failure answers an error instead)' }),
    table_tags_applied: z.array(z.string()).openapi({ description: "the table's applied tags" }),
    column_tags_applied: z
      .record(z.string(), z.array(z.string()))
      .openapi({ description: 'column name → its applied tags' }),
    glossary_terms_linked: z
      .int()
      .default(0)
      .openapi({ description: 'term links made to the table and its columns (accepted and new)' }),
    glossary_terms_created: z
      .int()
      .default(0)
      .openapi({ description: 'glossary terms actually created (not those that existed already)' }),
    descriptions_updated: z.int().default(0).openapi({ description: 'non-empty descriptions written' }),
  })
  .openapi('AcceptanceResult');
export type AcceptanceResult = z.infer<typeof AcceptanceResult>;

export const CatalogItem = z
  .object({
    name: z.string().openapi({ description: 'the name of the tag or glossary term' }),
    urn: z.string().openapi({ description: 'its urn in the metadata catalog' }),
    description: z.string().nullable().openapi({ description: 'its description; null when none' }),
  })
  .openapi('CatalogItem');

export const Domain = z
  .object({
    name: z.string().openapi({ description: 'domain name' }),
    urn: z.string().openapi({ description: 'its urn in the metadata catalog' }),
    description: z.string().nullable().openapi({ description: 'domain description; null when none' }),
    pending_documents: z
      .array(z.string())
      .openapi({ description: 'documents waiting for this domain (always empty until documents exist)' }),
  })
  .openapi('Domain');
export type Domain = z.infer<typeof Domain>;

export const DomainRequest = z
  .strictObject({
    name: label('domain name'),
    description: description('domain description').nullable().optional(),
  })
  .openapi('DomainRequest');
export type DomainRequest = z.infer<typeof DomainRequest>;
