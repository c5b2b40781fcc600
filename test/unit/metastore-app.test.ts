import { describe, expect, it } from 'vitest';
import { createMetastoreApp } from '../../functions/metastore/app.js';
import { MetastoreService } from '../../functions/metastore/service.js';
import type { Authenticator } from '../../shared/auth/authenticator.js';
import type { MetadataCatalog } from '../../shared/ports/catalog.js';
import type { Metastore } from '../../shared/ports/metastore.js';

const admin = {
  authenticate: async () => ({
    principal: '["https://issuer.test","sub-ops"]',
    name: 'ops',
    roles: new Set(['admin']),
    via: 'bearer' as const,
  }),
} as unknown as Authenticator;

describe('table registration with an external metastore', () => {
  it('answers 409 and writes nothing', async () => {
    const registered: unknown[] = [];
    const trinoLike = {
      external: true,
      registerTable: async (t: unknown) => void registered.push(t),
    } as unknown as Metastore;
    const catalog = { getDomain: async () => undefined, annotate: async () => undefined } as unknown as MetadataCatalog;
    const app = createMetastoreApp({
      authenticator: admin,
      service: new MetastoreService(trinoLike, catalog, {
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
