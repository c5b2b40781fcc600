import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/app.js';
import { PageQuery } from '../../shared/http/params.js';
import {
  AcceptanceResult,
  CatalogItem,
  CatalogList,
  CatalogParams,
  ClassificationAcceptance,
  ClassifyParams,
  Domain,
  DomainRequest,
  SchemaList,
  SchemaParams,
  TableList,
  TableMetadata,
  TableParams,
  TableRegistration,
} from './schemas.js';
import type { MetastoreService } from './service.js';

export interface MetastoreDeps {
  readonly authenticator: RequestAuthenticator;
  readonly service: MetastoreService;
}

const METASTORE = ['metastore'];
const CATALOG = ['metadata catalog'];
const ADMIN = { anyRole: ['admin'] } as const;

export function createMetastoreApp({ authenticator, service }: MetastoreDeps): ServiceApp {
  return createServiceApp(authenticator)
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
      async (c) => c.json({ catalogs: await service.listCatalogs() }, 200),
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
      async (c, { params }) => c.json({ schemas: await service.listSchemas(params.catalog_name) }, 200),
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
        c.json({ tables: await service.listTables(params.catalog_name, params.schema_name) }, 200),
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
          await service.registerTable(params.catalog_name, params.schema_name, params.table_name, body, caller),
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
        c.json(await service.getTable(params.catalog_name, params.schema_name, params.table_name), 200),
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
        c.json(await service.accept(params.catalog, params.schema, params.table, body, caller), 200),
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
        success: { status: 200, description: 'Tags; more in `X-Next-Cursor`', schema: z.array(CatalogItem) },
      },
      async (c, { query }) => pageJson(c, await service.listTags(query.limit, query.cursor)),
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
        success: { status: 200, description: 'Glossary terms; more in `X-Next-Cursor`', schema: z.array(CatalogItem) },
      },
      async (c, { query }) => pageJson(c, await service.listGlossaryTerms(query.limit, query.cursor)),
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
      async (c, { query }) => pageJson(c, await service.listDomains(query.limit, query.cursor)),
    )
    .endpoint(
      {
        name: 'create_domain',
        method: 'post',
        path: '/api/catalog/domains',
        summary: 'Create a catalog domain',
        tags: CATALOG,
        access: ADMIN,
        request: { body: DomainRequest, bodyRequired: true },
        success: { status: 201, description: 'The new domain', schema: Domain },
        errors: [409],
      },
      async (c, { body, caller }) => c.json(await service.createDomain(body, caller), 201),
    );
}
