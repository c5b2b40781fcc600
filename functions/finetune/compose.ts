import { s3Access } from '../../shared/aws/s3.js';
import { type Runtime } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import { documentStore } from '../documents/compose.js';
import type { FinetuneDeps } from './app.js';
import { ArtifactStore } from './artifacts.js';
import { FinetuneService } from './service.js';
import { DynamoFinetuneJobStore } from './store.js';

/** The service wired to DynamoDB, the artifacts bucket and the documents it reads. */
function finetuneService(runtime: Runtime): FinetuneService {
  return new FinetuneService(
    new DynamoFinetuneJobStore(runtime.db, runtime.tableName('finetuneJobs'), runtime.eventsTable),
    new ArtifactStore(s3Access(runtime.config), runtime.config.artifactsBucket),
    documentStore(runtime),
    runtime.clock,
  );
}

export function finetuneDeps(runtime: Runtime): FinetuneDeps {
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime),
    service: finetuneService(runtime),
  };
}
