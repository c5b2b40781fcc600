import { describe, expect, it } from 'vitest';
import { createMetastoreApp } from '../../functions/metastore/app.js';
import { type AnnotationCatalog, MetadataCatalogService } from '../../functions/metastore/metadata-catalog-service.js';
import { MetastoreService, type TableCatalog } from '../../functions/metastore/service.js';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import type { Metastore } from '../../shared/ports/metastore.js';

const admin: RequestAuthenticator = {
  authenticate: async () => ({
    principal: '["https://issuer.test","sub-ops"]',
    name: 'ops',
    roles: new Set(['admin']),
    via: 'bearer' as const,
  }),
};

describe('table registration with an external metastore', () => {
  it('answers 409 and writes nothing', async () => {
    const registered: unknown[] = [];
    const unused = () => Promise.reject(new Error('not used by this test'));
    const trinoLike: Metastore = {
      engine: 'trino',
      external: true,
      registerTable: async (t) => void registered.push(t),
      listCatalogs: unused,
      listSchemas: unused,
      listTables: unused,
      getTable: unused,
      getTables: unused,
      catalogDetails: unused,
      schemaDetails: unused,
      tableDetails: unused,
      previewTable: unused,
      createCatalog: unused,
      dropCatalog: unused,
      createSchema: unused,
      dropSchema: unused,
      createTable: unused,
      dropTable: unused,
      alterTable: unused,
    };
    const catalog: AnnotationCatalog & TableCatalog = {
      getDomain: async () => undefined,
      annotate: async () => undefined,
      checkAnnotation: unused,
      createDomain: unused,
      createGlossaryTerm: unused,
      createTag: unused,
      datasetUrn: () => {
        throw new Error('not used by this test');
      },
      getEntity: unused,
      getEntities: unused,
      getGlossaryTerm: unused,
      listDomains: unused,
      listGlossaryTerms: unused,
      listTags: unused,
    };
    const metastore = new MetastoreService(trinoLike, catalog);
    const app = createMetastoreApp({
      authenticator: admin,
      metastore,
      metadataCatalog: new MetadataCatalogService(catalog, metastore, {
        pendingDocumentIds: async () => [],
        attachPendingDocuments: async () => [],
      }),
    });
    const res = await app.request('/api/metastore/catalogs/hive/schemas/sales/tables/orders', {
      method: 'PUT',
      headers: { authorization: 'Bearer x', 'content-type': 'application/json' },
      body: JSON.stringify({ columns: [{ name: 'id', type: 'bigint' }] }),
    });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: expect.stringContaining('external metastore'), code: 409 });
    expect(registered).toEqual([]);
  });
});
