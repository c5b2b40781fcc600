import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { AnswerSealer, IdempotencyKeys } from '../shared/http/idempotency.js';
import type { Runtime } from './composition.js';

/*
 * The HTTP groups' idempotency keys, apart from composition.ts so that the queue and stream
 * Lambdas, which take no request, bundle none of Powertools' idempotency utility.
 */

/**
 * Where `Idempotency-Key` answers are kept (API.md §1): Powertools' DynamoDB persistence
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
  return { persistence, ...(sealer ? { sealer } : {}) };
}

/** One persistence layer per runtime (Powertools configures one once). */
const idempotencyOf = new WeakMap<Runtime, DynamoDBPersistenceLayer>();
