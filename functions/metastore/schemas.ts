import * as z from 'zod/mini';
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

export const CatalogItem = component(
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
