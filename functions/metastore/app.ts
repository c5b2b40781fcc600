import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import { PageQuery } from '../../shared/params.js';
import {
  AcceptanceResult,
  CatalogCreation,
  CatalogDetailSchema,
  CatalogDetails,
  CatalogItemSchema,
  CatalogList,
  CatalogParams,
  ClassificationAcceptance,
  ClassifyParams,
  ColumnList,
  Domain,
  DomainRequest,
  DomainSummaries,
  DomainTableParams,
  EngineList,
  PreviewQuery,
  SchemaCreation,
  SchemaDetailSchema,
  SchemaDetails,
  SchemaList,
  SchemaParams,
  TableAlteration,
  TableCreation,
  TableDetails,
  TableList,
  TableMetadata,
  TableParams,
  TablePreviewSchema,
  TableRegistration,
  TagTableParams,
} from './schemas.js';
import type { MetadataCatalogService } from './metadata-catalog-service.js';
import type { MetastoreService } from './service.js';

export interface MetastoreDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  /** Catalogs, schemas and tables (the metastore port). */
  readonly metastore: MetastoreService;
  /** Tags, glossary terms, domains and the annotation of tables (the catalog port). */
  readonly metadataCatalog: MetadataCatalogService;
}

const METASTORE = ['metastore'];
const CATALOG = ['metadata catalog'];
const ADMIN = { anyRole: ['admin'] } as const;

export function createMetastoreApp({
  authenticator,
  idempotency,
  metastore,
  metadataCatalog,
}: MetastoreDeps): ServiceApp {
  return (
    createServiceApp(authenticator, idempotency)
      .endpoint(
        {
          name: 'list_catalogs',
          method: 'get',
          path: '/api/metastore/catalogs',
          summary: 'List the metastore catalogs, sorted',
          tags: METASTORE,
          access: 'user',
          success: { status: 200, description: 'Catalog names', schema: CatalogList },
        },
        async (c) => c.json({ catalogs: await metastore.listCatalogs() }, 200),
      )
      .endpoint(
        {
          name: 'list_schemas',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas',
          summary: 'List the schemas of a catalog, sorted',
          tags: METASTORE,
          access: 'user',
          request: { params: CatalogParams },
          success: { status: 200, description: 'Schema names', schema: SchemaList },
          errors: [404],
        },
        async (c, { params }) => c.json({ schemas: await metastore.listSchemas(params.catalog_name) }, 200),
      )
      .endpoint(
        {
          name: 'list_tables',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables',
          summary: 'List the tables of a schema, sorted (E10)',
          tags: METASTORE,
          access: 'user',
          request: { params: SchemaParams },
          success: { status: 200, description: 'Table names', schema: TableList },
          errors: [404],
        },
        async (c, { params }) =>
          c.json({ tables: await metastore.listTables(params.catalog_name, params.schema_name) }, 200),
      )
      // The NX1 SDK's metastore (docs/sdk.md). `.../tables/details` comes before `.../tables/{table_name}`
      // (same depth): the first route registered answers.
      .endpoint(
        {
          name: 'get_engines',
          method: 'get',
          path: '/api/metastore/engines',
          summary: 'The configured metastore engine (`builtin` or `trino`), the default',
          tags: METASTORE,
          access: 'user',
          success: { status: 200, description: 'The engines', schema: EngineList },
        },
        async (c) => c.json({ engines: metastore.engines() }, 200),
      )
      .endpoint(
        {
          name: 'get_catalogs_details',
          method: 'get',
          path: '/api/metastore/catalogs/details',
          summary: 'Every catalog with its type and schema count, sorted',
          tags: METASTORE,
          access: 'user',
          success: { status: 200, description: 'The catalogs', schema: CatalogDetails },
        },
        async (c) => c.json({ catalogs: await metastore.catalogDetails() }, 200),
      )
      .endpoint(
        {
          name: 'get_schemas_details',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/details',
          summary: 'Every schema of a catalog with its table count, sorted',
          tags: METASTORE,
          access: 'user',
          request: { params: CatalogParams },
          success: { status: 200, description: 'The schemas', schema: SchemaDetails },
          errors: [404],
        },
        async (c, { params }) => c.json({ schemas: await metastore.schemaDetails(params.catalog_name) }, 200),
      )
      .endpoint(
        {
          name: 'get_tables_details',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/details',
          summary: 'Every table of a schema with its catalog annotations, without columns, sorted',
          tags: METASTORE,
          access: 'user',
          request: { params: SchemaParams },
          success: { status: 200, description: 'The tables', schema: TableDetails },
          errors: [404],
        },
        async (c, { params }) =>
          c.json({ tables: await metastore.tableDetails(params.catalog_name, params.schema_name) }, 200),
      )
      .endpoint(
        {
          name: 'get_table_details',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}/details',
          summary: 'Read a table (as `GET .../tables/{table_name}`)',
          tags: METASTORE,
          access: 'user',
          request: { params: TableParams },
          success: { status: 200, description: 'The table', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params }) =>
          c.json(await metastore.getTable(params.catalog_name, params.schema_name, params.table_name), 200),
      )
      .endpoint(
        {
          name: 'get_table_metadata',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}/metadata',
          summary: 'Read a table (as `GET .../tables/{table_name}`)',
          tags: METASTORE,
          access: 'user',
          request: { params: TableParams },
          success: { status: 200, description: 'The table', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params }) =>
          c.json(await metastore.getTable(params.catalog_name, params.schema_name, params.table_name), 200),
      )
      .endpoint(
        {
          name: 'get_columns',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}/columns',
          summary: "A table's columns with their catalog annotations",
          tags: METASTORE,
          access: 'user',
          request: { params: TableParams },
          success: { status: 200, description: 'The columns in their order', schema: ColumnList },
          errors: [404],
        },
        async (c, { params }) => {
          const table = await metastore.getTable(params.catalog_name, params.schema_name, params.table_name);
          return c.json({ columns: table.columns }, 200);
        },
      )
      .endpoint(
        {
          name: 'get_table_preview',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}/preview',
          summary: "A table's first rows (`SELECT * ... LIMIT`); the built-in metastore holds no rows",
          tags: METASTORE,
          access: 'user',
          request: { params: TableParams, query: PreviewQuery },
          success: { status: 200, description: 'Column names and rows', schema: TablePreviewSchema },
          errors: [404],
        },
        async (c, { params, query }) =>
          c.json(
            await metastore.previewTable(params.catalog_name, params.schema_name, params.table_name, query.limit),
            200,
          ),
      )
      .endpoint(
        {
          name: 'create_catalog',
          method: 'post',
          path: '/api/metastore/catalogs',
          summary: 'Create a catalog; answers the catalog as the catalog details list it',
          tags: METASTORE,
          access: ADMIN,
          idempotent: true,
          request: { body: CatalogCreation, bodyRequired: true },
          success: { status: 201, description: 'The new catalog', schema: CatalogDetailSchema },
          errors: [409],
        },
        async (c, { body, caller }) => c.json(await metastore.createCatalog(body, caller), 201),
      )
      .endpoint(
        {
          name: 'delete_catalog',
          method: 'delete',
          path: '/api/metastore/catalogs/{catalog_name}',
          summary: 'Drop an empty catalog (409 while it has schemas)',
          tags: METASTORE,
          access: ADMIN,
          request: { params: CatalogParams },
          success: { status: 204, description: 'Dropped' },
          errors: [404, 409],
        },
        async (c, { params, caller }) => {
          await metastore.dropCatalog(params.catalog_name, caller);
          return c.body(null, 204);
        },
      )
      .endpoint(
        {
          name: 'create_schema',
          method: 'post',
          path: '/api/metastore/catalogs/{catalog_name}/schemas',
          summary: 'Create a schema in a catalog; answers the schema as the schema details list it',
          tags: METASTORE,
          access: ADMIN,
          idempotent: true,
          request: { params: CatalogParams, body: SchemaCreation, bodyRequired: true },
          success: { status: 201, description: 'The new schema', schema: SchemaDetailSchema },
          errors: [404, 409],
        },
        async (c, { params, body, caller }) =>
          c.json(await metastore.createSchema(params.catalog_name, body, caller), 201),
      )
      .endpoint(
        {
          name: 'delete_schema',
          method: 'delete',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}',
          summary: 'Drop an empty schema (409 while it has tables)',
          tags: METASTORE,
          access: ADMIN,
          request: { params: SchemaParams },
          success: { status: 204, description: 'Dropped' },
          errors: [404, 409],
        },
        async (c, { params, caller }) => {
          await metastore.dropSchema(params.catalog_name, params.schema_name, caller);
          return c.body(null, 204);
        },
      )
      .endpoint(
        {
          name: 'create_table',
          method: 'post',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables',
          summary: 'Create a table in a schema',
          tags: METASTORE,
          access: ADMIN,
          idempotent: true,
          request: { params: SchemaParams, body: TableCreation, bodyRequired: true },
          success: { status: 201, description: 'The new table with its catalog annotations', schema: TableMetadata },
          errors: [404, 409],
        },
        async (c, { params, body, caller }) =>
          c.json(await metastore.createTable(params.catalog_name, params.schema_name, body, caller), 201),
      )
      .endpoint(
        {
          name: 'delete_table',
          method: 'delete',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
          summary: 'Drop a table',
          tags: METASTORE,
          access: ADMIN,
          request: { params: TableParams },
          success: { status: 204, description: 'Dropped' },
          errors: [404],
        },
        async (c, { params, caller }) => {
          await metastore.dropTable(params.catalog_name, params.schema_name, params.table_name, caller);
          return c.body(null, 204);
        },
      )
      .endpoint(
        {
          name: 'alter_table',
          method: 'patch',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
          summary: 'Alter a table: every operation in order, or none when one is refused (422 naming it)',
          tags: METASTORE,
          access: ADMIN,
          request: { params: TableParams, body: TableAlteration, bodyRequired: true },
          success: { status: 200, description: 'The table after the operations', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params, body, caller }) =>
          c.json(
            await metastore.alterTable(params.catalog_name, params.schema_name, params.table_name, body, caller),
            200,
          ),
      )
      .endpoint(
        {
          name: 'get_tags',
          method: 'get',
          path: '/api/metastore/tags',
          summary: 'Every tag name of the metadata catalog, sorted',
          tags: METASTORE,
          access: 'user',
          success: { status: 200, description: 'Tag names', schema: z.array(z.string()) },
        },
        async (c) => c.json(await metadataCatalog.tagNames(), 200),
      )
      .endpoint(
        {
          name: 'get_domains',
          method: 'get',
          path: '/api/metastore/domains',
          summary: 'Every domain of the metadata catalog, sorted',
          tags: METASTORE,
          access: 'user',
          success: { status: 200, description: 'The domains', schema: DomainSummaries },
        },
        async (c) => c.json({ domains: await metadataCatalog.domainSummaries() }, 200),
      )
      .endpoint(
        {
          name: 'set_table_tag',
          method: 'post',
          path: '/api/metastore/tags/{tag}/tables/{table}',
          summary: 'Tag a table (`catalog.schema.table`, quoted parts); a missing tag is created first',
          tags: METASTORE,
          access: 'user',
          request: { params: TagTableParams },
          success: { status: 200, description: 'The table with its catalog annotations', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params, caller }) => c.json(await metadataCatalog.tagTable(params.tag, params.table, caller), 200),
      )
      .endpoint(
        {
          name: 'delete_table_tag',
          method: 'delete',
          path: '/api/metastore/tags/{tag}/tables/{table}',
          summary: 'Take a tag off a table (`catalog.schema.table`, quoted parts)',
          tags: METASTORE,
          access: 'user',
          request: { params: TagTableParams },
          success: { status: 200, description: 'The table with its catalog annotations', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params, caller }) =>
          c.json(await metadataCatalog.untagTable(params.tag, params.table, caller), 200),
      )
      .endpoint(
        {
          name: 'set_table_domain',
          method: 'post',
          path: '/api/metastore/domains/{domain}/tables/{table}',
          summary: "Set a table's catalog domain (`catalog.schema.table`, quoted parts); the domain must exist",
          tags: METASTORE,
          access: 'user',
          request: { params: DomainTableParams },
          success: { status: 200, description: 'The table with its catalog annotations', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params, caller }) =>
          c.json(await metadataCatalog.setTableDomain(params.domain, params.table, caller), 200),
      )
      .endpoint(
        {
          name: 'delete_table_domain',
          method: 'delete',
          path: '/api/metastore/domains/{domain}/tables/{table}',
          summary: 'Take a table out of a catalog domain (`catalog.schema.table`, quoted parts)',
          tags: METASTORE,
          access: 'user',
          request: { params: DomainTableParams },
          success: { status: 200, description: 'The table with its catalog annotations', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params, caller }) =>
          c.json(await metadataCatalog.removeTableDomain(params.domain, params.table, caller), 200),
      )
      .endpoint(
        {
          name: 'register_table',
          method: 'put',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
          summary: 'Register or replace a table in the built-in metastore',
          tags: METASTORE,
          access: ADMIN,
          request: { params: TableParams, body: TableRegistration, bodyRequired: true },
          success: { status: 200, description: 'The table with its catalog annotations', schema: TableMetadata },
          errors: [409],
        },
        async (c, { params, body, caller }) =>
          c.json(
            await metastore.registerTable(params.catalog_name, params.schema_name, params.table_name, body, caller),
            200,
          ),
      )
      .endpoint(
        {
          name: 'get_table',
          method: 'get',
          path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
          summary: "Read a table: the metastore's schema merged with the catalog's annotations",
          tags: METASTORE,
          access: 'user',
          request: { params: TableParams },
          success: { status: 200, description: 'The table', schema: TableMetadata },
          errors: [404],
        },
        async (c, { params }) =>
          c.json(await metastore.getTable(params.catalog_name, params.schema_name, params.table_name), 200),
      )
      .endpoint(
        {
          name: 'accept_classification',
          method: 'post',
          path: '/api/metastore/classify/{catalog}/{schema}/{table}/accept',
          summary: 'Accept and persist classification (E5)',
          tags: METASTORE,
          access: 'user',
          request: { params: ClassifyParams, body: ClassificationAcceptance, bodyRequired: true },
          success: { status: 200, description: 'What was applied', schema: AcceptanceResult },
          errors: [404],
        },
        async (c, { params, body, caller }) =>
          c.json(await metadataCatalog.accept(params.catalog, params.schema, params.table, body, caller), 200),
      )
      .endpoint(
        {
          name: 'list_tags',
          method: 'get',
          path: '/api/catalog/tags',
          summary: 'List the catalog tags, sorted by name',
          tags: CATALOG,
          access: 'user',
          request: { query: PageQuery },
          success: { status: 200, description: 'Tags; more in `X-Next-Cursor`', schema: z.array(CatalogItemSchema) },
        },
        async (c, { query }) => pageJson(c, await metadataCatalog.listTags(query.limit, query.cursor)),
      )
      .endpoint(
        {
          name: 'list_glossary_terms',
          method: 'get',
          path: '/api/catalog/glossary-terms',
          summary: 'List the catalog glossary terms, sorted by name',
          tags: CATALOG,
          access: 'user',
          request: { query: PageQuery },
          success: {
            status: 200,
            description: 'Glossary terms; more in `X-Next-Cursor`',
            schema: z.array(CatalogItemSchema),
          },
        },
        async (c, { query }) => pageJson(c, await metadataCatalog.listGlossaryTerms(query.limit, query.cursor)),
      )
      .endpoint(
        {
          name: 'list_domains',
          method: 'get',
          path: '/api/catalog/domains',
          summary: 'List the catalog domains, sorted by name',
          tags: CATALOG,
          access: 'user',
          request: { query: PageQuery },
          success: { status: 200, description: 'Domains; more in `X-Next-Cursor`', schema: z.array(Domain) },
        },
        async (c, { query }) => pageJson(c, await metadataCatalog.listDomains(query.limit, query.cursor)),
      )
      .endpoint(
        {
          name: 'create_domain',
          method: 'post',
          path: '/api/catalog/domains',
          summary: 'Create a catalog domain',
          tags: CATALOG,
          access: ADMIN,
          idempotent: true,
          request: { body: DomainRequest, bodyRequired: true },
          success: { status: 201, description: 'The new domain', schema: Domain },
          errors: [409],
        },
        async (c, { body, caller }) => c.json(await metadataCatalog.createDomain(body, caller), 201),
      )
  );
}
