import { metadataCatalog, type Runtime } from '../composition.js';
import type { DocumentsDeps } from './app.js';
import { DocumentService } from './service.js';
import { DynamoDocumentStore } from './store.js';

/** The service wired to DynamoDB and the configured metadata catalog. */
export function documentService(runtime: Runtime): DocumentService {
  return new DocumentService(
    new DynamoDocumentStore(runtime.db, runtime.tableName('documents')),
    metadataCatalog(runtime),
  );
}

export function documentsDeps(runtime: Runtime): DocumentsDeps {
  return { authenticator: runtime.authenticator, service: documentService(runtime) };
}
