import { identityProvider, type Runtime, secrets } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import type { DataSharesDeps } from './app.js';
import { DataShareService } from './service.js';
import { DynamoDataShareStore } from './store.js';

/** The service wired to the registry table and the configured identity provider. */
function dataShareService(runtime: Runtime): DataShareService {
  return new DataShareService(
    new DynamoDataShareStore(runtime.db, runtime.tableName('dataShares'), runtime.eventsTable),
    identityProvider(runtime),
    runtime.clock,
  );
}

export function dataSharesDeps(runtime: Runtime): DataSharesDeps {
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime, secrets(runtime)),
    service: dataShareService(runtime),
  };
}
