import { type Runtime } from '../composition.js';
import { idempotencyKeys } from '../idempotency.js';
import type { DecisionsDeps } from './app.js';
import { DecisionService } from './service.js';
import { DynamoDecisionStore } from './store.js';

export function decisionsDeps(runtime: Runtime): DecisionsDeps {
  const store = new DynamoDecisionStore(runtime.db, runtime.tableName('decisions'));
  return {
    authenticator: runtime.authenticator,
    idempotency: idempotencyKeys(runtime),
    service: new DecisionService(store, runtime.clock),
  };
}
