import { sqsAccess } from '../../shared/aws/sqs.js';
import { onLambda, type Runtime, scheduler, secrets } from '../composition.js';
import { runWebhookHttp } from '../webhooks/compose.js';
import { RunEndpoints } from '../webhooks/run-endpoint.js';
import { SqsRunQueue } from './run-queue.js';
import { DynamoScheduleStore } from './schedule-store.js';
import { ScheduleService } from './schedules.js';
import { CrewService } from './service.js';
import { InProcessRunSignals, notifyingAppends } from './signals.js';
import { DynamoRunStore, DynamoTemplateStore, type RunStore } from './store.js';

/*
 * The crews group's builders: the run store and queue (which the worker builds on too,
 * compose-worker.ts), and the API's service.
 */

/** The crew-run queue the API sends to and the worker sends a continued run back to. */
export function runQueue(runtime: Runtime): SqsRunQueue {
  return new SqsRunQueue(sqsAccess(runtime.config), runtime.config.crewRunQueueUrl);
}

/**
 * The runtime's run signals: where the API and the worker share a runtime (`npm start`),
 * E13 long polls wake on the worker's appends; elsewhere nothing notifies and they poll.
 * Their waits are on the runtime's clock.
 */
export function runSignals(runtime: Runtime): InProcessRunSignals {
  let signals = signalsOf.get(runtime);
  if (!signals) {
    signals = new InProcessRunSignals(runtime.clock);
    signalsOf.set(runtime, signals);
  }
  return signals;
}

const signalsOf = new WeakMap<Runtime, InProcessRunSignals>();

/** With `webhooksTable`, runs may be created with their own webhook endpoint (the API's). */
export function runStore(runtime: Runtime, webhooksTable?: string): RunStore {
  return notifyingAppends(
    new DynamoRunStore(
      runtime.db,
      runtime.tableName('crewRuns'),
      runtime.tableName('runLog'),
      runtime.eventsTable,
      webhooksTable,
    ),
    runSignals(runtime),
  );
}

/** The service wired to DynamoDB and the crew-run queue. */
export function crewService(runtime: Runtime): CrewService {
  return new CrewService(
    new DynamoTemplateStore(runtime.db, runtime.tableName('crewTemplates'), runtime.eventsTable),
    runStore(runtime, runtime.tableName('webhooks')),
    runQueue(runtime),
    // On AWS the crews Lambda makes the built-in templates itself (the local platform at its start).
    { eventsTtlDays: runtime.config.eventsTtlDays, builtInsOnFirstUse: onLambda(runtime), clock: runtime.clock },
    new RunEndpoints(runWebhookHttp(runtime), secrets(runtime)),
    runSignals(runtime),
  );
}

/** The crew service that starts a schedule's runs in the worker: without per-run webhooks. */
function firesCrewService(runtime: Runtime): CrewService {
  return new CrewService(
    new DynamoTemplateStore(runtime.db, runtime.tableName('crewTemplates'), runtime.eventsTable),
    runStore(runtime),
    runQueue(runtime),
    { eventsTtlDays: runtime.config.eventsTtlDays, clock: runtime.clock },
  );
}

/**
 * Crew schedules: their store, and the Scheduler chosen by the composition (fires go to the
 * crew-run queue). The worker's starts runs with a crew service of its own: a fire has no
 * per-run webhook, so its bundle keeps neither the webhooks' code nor KMS.
 */
export function scheduleService(runtime: Runtime, crews: CrewService = firesCrewService(runtime)): ScheduleService {
  const queue = runQueue(runtime);
  return new ScheduleService(
    new DynamoScheduleStore(
      runtime.db,
      runtime.tableName('crewSchedules'),
      runtime.tableName('crewRuns'),
      runtime.eventsTable,
    ),
    new DynamoTemplateStore(runtime.db, runtime.tableName('crewTemplates'), runtime.eventsTable),
    runStore(runtime),
    crews,
    scheduler(runtime, (fire) => queue.sendFire(fire)),
    runtime.clock,
  );
}
