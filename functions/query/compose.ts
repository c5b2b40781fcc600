import { languageModel, metadataCatalog, metastore, type Runtime } from '../composition.js';
import type { QueryDeps } from './app.js';
import { QueryService } from './service.js';

/** The service wired to the configured metastore, catalog and model. */
function queryService(runtime: Runtime): QueryService {
  return new QueryService(metastore(runtime), metadataCatalog(runtime), languageModel(runtime.config));
}

export function queryDeps(runtime: Runtime): QueryDeps {
  return { authenticator: runtime.authenticator, service: queryService(runtime) };
}
