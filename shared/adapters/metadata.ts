import type { MetadataCatalog } from '../ports/catalog.js';
import type { Metastore } from '../ports/metastore.js';
import type { Runtime } from '../runtime.js';
import { BuiltinCatalog } from './builtin-catalog.js';
import { BuiltinMetastore } from './builtin-metastore.js';
import { DataHubCatalog } from './datahub.js';
import { TrinoMetastore } from './trino.js';

/**
 * The configured metastore and metadata catalog, chosen in one place for every group that
 * uses them (metastore, documents, query). Separate functions, so a bundle that needs
 * only the catalog leaves the metastore adapters out.
 */
export function metastore(runtime: Runtime): Metastore {
  const { config } = runtime;
  if (config.adapters.metastore === 'trino') {
    if (!config.trino) throw new Error('METASTORE=trino needs TRINO_URL and TRINO_USER');
    return new TrinoMetastore({ url: config.trino.url, user: config.trino.user });
  }
  return new BuiltinMetastore(runtime.db, runtime.tableName('metastore'));
}

export function metadataCatalog(runtime: Runtime): MetadataCatalog {
  const { config } = runtime;
  if (config.adapters.catalog === 'datahub') {
    if (!config.datahub) throw new Error('CATALOG=datahub needs DATAHUB_GMS_URL and DATAHUB_TOKEN');
    return new DataHubCatalog({ gmsUrl: config.datahub.gmsUrl, token: config.datahub.token });
  }
  return new BuiltinCatalog(runtime.db, runtime.tableName('catalog'));
}
