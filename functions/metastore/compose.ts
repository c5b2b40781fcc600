import { metadataCatalog, metastore, type Runtime } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import { documentService } from '../documents/compose.js';
import type { MetastoreDeps } from './app.js';
import { MetadataCatalogService } from './metadata-catalog-service.js';
import { MetastoreService } from './service.js';

/**
 * The group's two services on the configured metastore and catalog (one adapter of each,
 * shared): the metastore's, and the metadata catalog's, which reads tables through the
 * first and hands domains' pending documents to the documents service.
 */
export function metastoreDeps(runtime: Runtime): MetastoreDeps {
  const metastorePort = metastore(runtime);
  const catalogPort = metadataCatalog(runtime);
  const metastoreService = new MetastoreService(metastorePort, catalogPort, runtime.eventsTable, runtime.clock);
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime),
    metastore: metastoreService,
    metadataCatalog: new MetadataCatalogService(
      catalogPort,
      metastoreService,
      documentService(runtime),
      runtime.eventsTable,
      runtime.clock,
    ),
  };
}
