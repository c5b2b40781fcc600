import { secrets, workflowEngine, type Runtime } from '../composition.js';
import type { MigrationDeps } from './app.js';
import { MigrationService } from './service.js';
import { DynamoConfigStore, DynamoConnectionStore } from './store.js';

/** The service wired to DynamoDB, the secret box and the configured workflow engine. */
function migrationService(runtime: Runtime): MigrationService {
  return new MigrationService(
    new DynamoConfigStore(runtime.db, runtime.tableName('migrationConfig')),
    new DynamoConnectionStore(runtime.db, runtime.tableName('migrationConnections'), runtime.eventsTable),
    workflowEngine(runtime),
    secrets(runtime),
    runtime.clock,
  );
}

export function migrationDeps(runtime: Runtime): MigrationDeps {
  return { authenticator: runtime.authenticator, service: migrationService(runtime) };
}
