import { metadataCatalog, metastore, type Runtime } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import { documentService } from '../documents/compose.js';
import type { MetastoreDeps } from './app.js';
import { MetastoreService } from './service.js';

/** The service wired to the configured metastore and catalog, and the documents service. */
function metastoreService(runtime: Runtime): MetastoreService {
  return new MetastoreService(
    metastore(runtime),
    metadataCatalog(runtime),
    documentService(runtime),
    runtime.eventsTable,
    runtime.clock,
  );
}

export function metastoreDeps(runtime: Runtime): MetastoreDeps {
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime),
    service: metastoreService(runtime),
  };
}
