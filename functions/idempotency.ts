import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { AnswerSealer, IdempotencyKeys } from '../shared/http/idempotency.js';
import { keptAnswers } from '../shared/http/idempotent-answers.js';
import type { Runtime } from './composition.js';

/*
 * The HTTP groups' idempotency keys, apart from composition.ts and the shared app
 * (shared/http/service-app.ts) so that a group without idempotent endpoints, and the queue and
 * stream Lambdas, bundle none of Powertools' idempotency utility (test/infra/stacks.test.ts
 * holds the list): only the groups' compose-api.ts or compose.ts import this module.
 */

/**
 * Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys): Powertools' DynamoDB persistence
 * layer on the idempotency table, over the runtime's client. `sealer` (`secrets(runtime)`,
 * for the groups whose answers may hold a secret) keeps those answers sealed.
 */
export function idempotencyKeys(runtime: Runtime, sealer?: AnswerSealer): IdempotencyKeys {
  let persistence = idempotencyOf.get(runtime);
  if (!persistence) {
    persistence = new DynamoDBPersistenceLayer({
      tableName: runtime.tableName('idempotency'),
      awsSdkV3Client: runtime.db,
    });
    idempotencyOf.set(runtime, persistence);
  }
  return keptAnswers(persistence, sealer);
}

/** One persistence layer per runtime (Powertools configures one once). */
const idempotencyOf = new WeakMap<Runtime, DynamoDBPersistenceLayer>();
