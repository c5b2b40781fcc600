import type { Runtime } from '../composition.js';
import { DynamoRunStore } from '../crews/runs/run-store.js';
import { DynamoDecisionStore } from '../decisions/store.js';
import type { ApprovalsDeps } from './app.js';
import { ApprovalService } from './service.js';

export function approvalsDeps(runtime: Runtime): ApprovalsDeps {
  const sources = {
    decisions: new DynamoDecisionStore(runtime.db, runtime.tableName('decisions')),
    // read only: no events table, so it cannot change a run
    runs: new DynamoRunStore(runtime.db, runtime.tableName('crewRuns'), runtime.tableName('runLog')),
  };
  return { authenticator: runtime.authenticator, service: new ApprovalService(sources, runtime.clock) };
}
