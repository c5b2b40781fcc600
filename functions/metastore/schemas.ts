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

export const CatalogList = z.object({ catalogs: z.array(z.string()) }).openapi('CatalogList');
export const SchemaList = z.object({ schemas: z.array(z.string()) }).openapi('SchemaList');
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
    name: z.string(),
    type: z.string(),
    description: z.string().nullable(),
    tags: z.array(z.string()),
    classifications: z.array(z.string()),
    glossary_terms: z.array(z.string()),
  })
  .openapi('ColumnMetadata');

export const TableMetadata = z
  .object({
    catalog: z.string(),
    schema: z.string(),
    table: z.string(),
    urn: z.string(),
    description: z.string().nullable(),
    domain: z.string().nullable(),
    tags: z.array(z.string()),
    classifications: z.array(z.string()).openapi({
      description: 'the catalog keeps classifications as tags (E5), so these are the same names as `tags`',
    }),
    glossary_terms: z.array(z.string()),
    columns: z.array(ColumnMetadata),
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
  accepted_tags: z.array(label('tag')).max(1000).default([]),
  description: description('written when non-empty').default(''),
  accepted_glossary_terms: z
    .array(label('glossary term'))
    .max(1000)
    .default([])
    .openapi({ description: 'existing glossary terms to link' }),
  new_glossary_terms: z.array(GlossaryTermEntry).max(1000).default([]),
};

/** Spec 2.6: the table part. */
export const TableClassification = z.strictObject(classificationFields).openapi('TableClassification');
/** Spec 2.6: a column entry. */
export const ColumnClassification = z
  .strictObject({ column_name: label('a column of the table'), ...classificationFields })
  .openapi('ColumnClassification');
export type TableClassification = z.infer<typeof TableClassification>;
export type ColumnClassification = z.infer<typeof ColumnClassification>;

export const ClassificationAcceptance = z
  .strictObject({
    table: TableClassification,
    columns: z.array(ColumnClassification).max(1000).default([]),
  })
  .openapi('ClassificationAcceptance');
export type ClassificationAcceptance = z.infer<typeof ClassificationAcceptance>;

/** Spec 2.6: the acceptance result. */
export const AcceptanceResult = z
  .object({
    success: z.boolean(),
    table_tags_applied: z.array(z.string()),
    column_tags_applied: z.record(z.string(), z.array(z.string())),
    glossary_terms_linked: z.int().default(0),
    glossary_terms_created: z.int().default(0),
    descriptions_updated: z.int().default(0),
  })
  .openapi('AcceptanceResult');
export type AcceptanceResult = z.infer<typeof AcceptanceResult>;

export const CatalogItem = z
  .object({ name: z.string(), urn: z.string(), description: z.string().nullable() })
  .openapi('CatalogItem');

export const Domain = z
  .object({
    name: z.string(),
    urn: z.string(),
    description: z.string().nullable(),
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
