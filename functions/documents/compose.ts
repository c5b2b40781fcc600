import { metadataCatalog, type Runtime } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import type { DocumentsDeps } from './app.js';
import { DocumentService } from './service.js';
import { DynamoDocumentStore } from './store.js';

/** The documents table's store (also read by the fine-tuning group). */
export function documentStore(runtime: Runtime): DynamoDocumentStore {
  return new DynamoDocumentStore(runtime.db, runtime.tableName('documents'));
}

/** The service wired to DynamoDB and the configured metadata catalog. */
export function documentService(runtime: Runtime): DocumentService {
  return new DocumentService(documentStore(runtime), metadataCatalog(runtime), runtime.clock);
}

export function documentsDeps(runtime: Runtime): DocumentsDeps {
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime),
    service: documentService(runtime),
  };
}
