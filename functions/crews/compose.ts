import { onLambda, secrets, type Runtime } from '../composition.js';
import { runWebhookHttp } from '../webhooks/compose-stores.js';
import type { CrewsDeps } from './app.js';
import { runQueue, runSignals, runStore } from './compose-worker.js';
import { CrewService } from './service.js';
import { DynamoTemplateStore } from './store.js';

/** The service wired to DynamoDB and the crew-run queue. */
export function crewService(runtime: Runtime): CrewService {
  return new CrewService(
    new DynamoTemplateStore(runtime.db, runtime.tableName('crewTemplates'), runtime.eventsTable),
    runStore(runtime, runtime.tableName('webhooks')),
    runQueue(runtime),
    // On AWS the crews Lambda makes the built-in templates itself (the local platform at its start).
    { eventsTtlDays: runtime.config.eventsTtlDays, builtInsOnFirstUse: onLambda(runtime) },
    { urls: runWebhookHttp(runtime), box: secrets(runtime) },
    runSignals,
  );
}

export function crewsDeps(runtime: Runtime): CrewsDeps {
  return { authenticator: runtime.authenticator, service: crewService(runtime) };
}
