import { metadataCatalog, metastore, type Runtime, secrets } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import { QueryService } from '../query/service.js';
import type { DataproductDeps } from './app.js';
import { KeyService } from './key-service.js';
import { DataProductService } from './service.js';

export function dataproductDeps(runtime: Runtime): DataproductDeps {
  const catalog = metadataCatalog(runtime);
  // E12 without a model: a suggestion's id and SQL come from the catalog alone.
  const queries = new QueryService(metastore(runtime), catalog);
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime, secrets(runtime)),
    keys: new KeyService(runtime.keys, runtime.psk, runtime.dataProducts, runtime.clock),
    products: new DataProductService(runtime.dataProducts, catalog, queries, runtime.psk, runtime.clock),
  };
}
