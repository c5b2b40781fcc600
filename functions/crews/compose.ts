import { sqsAccess } from '../../shared/aws/sqs.js';
import { chatModel, onLambda, type Runtime, scheduler, secrets } from '../composition.js';
import { runWebhookHttp } from '../webhooks/compose.js';
import { RunEndpoints } from '../webhooks/run-endpoint.js';
import { SqsRunQueue } from './runs/run-queue.js';
import { DynamoScheduleStore } from './schedules/schedule-store.js';
import { ScheduleService } from './schedules/schedule-service.js';
import { RunLogService } from './runs/run-log-service.js';
import { RunService, type RunWebhooks } from './runs/run-service.js';
import { WaitingPolls } from './runs/waiting-polls.js';
import { CrewsSdk } from './sdk-service.js';
import { TemplateService } from './templates/template-service.js';
import { InProcessRunSignals, notifyingAppends } from './runs/signals.js';
import { DynamoRunStore, type RunStore } from './runs/run-store.js';
import { DynamoSlotStore } from './runs/slot-store.js';
import { DynamoTemplateStore } from './templates/template-store.js';

/*
 * The crews group's builders: the run and slot stores and the queue (which the worker builds
 * on too, worker/compose-worker.ts), and the API's services.
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

/** The slots of runs' concurrency limits (the runner's). */
export function slotStore(runtime: Runtime): DynamoSlotStore {
  return new DynamoSlotStore(runtime.db, runtime.tableName('crewRuns'));
}

/** The crew templates' store. */
function templateStore(runtime: Runtime): DynamoTemplateStore {
  return new DynamoTemplateStore(runtime.db, runtime.tableName('crewTemplates'), runtime.eventsTable);
}

/** The template service: with `builtInsOnFirstUse` on AWS, where the crews Lambda makes the built-in templates itself. */
export function templateService(runtime: Runtime): TemplateService {
  return new TemplateService(templateStore(runtime), {
    // On AWS the crews Lambda makes the built-in templates itself (the local platform at its start).
    builtInsOnFirstUse: onLambda(runtime),
    clock: runtime.clock,
  });
}

/**
 * The run service over `runs` (the API's: with per-run webhooks; a schedule's fire in the
 * worker has none, so the worker's bundle keeps neither the webhooks' code nor KMS).
 */
function runService(runtime: Runtime, templates: TemplateService, runs: RunStore, webhooks?: RunWebhooks): RunService {
  return new RunService(
    templates,
    runs,
    runQueue(runtime),
    { eventsTtlDays: runtime.config.eventsTtlDays, clock: runtime.clock },
    webhooks,
  );
}

/** The crews API's services: templates, runs, run logs, and the SDK's crews client over them. */
export function crewServices(runtime: Runtime): {
  templates: TemplateService;
  runs: RunService;
  runLog: RunLogService;
  sdk: CrewsSdk;
} {
  const templates = templateService(runtime);
  const store = runStore(runtime, runtime.tableName('webhooks'));
  const runs = runService(runtime, templates, store, new RunEndpoints(runWebhookHttp(runtime), secrets(runtime)));
  return {
    templates,
    runs,
    runLog: new RunLogService(store, runSignals(runtime), new WaitingPolls(), runtime.clock),
    sdk: new CrewsSdk(templates, runs, store, chatModel(runtime.config)),
  };
}

/** The run service that requeues open runs and starts a schedule's runs: without per-run webhooks. */
export function plainRunService(runtime: Runtime): RunService {
  return runService(runtime, templateService(runtime), runStore(runtime));
}

/**
 * Crew schedules: their store, and the Scheduler chosen by the composition (fires go to the
 * crew-run queue). The worker's starts runs with a crew service of its own: a fire has no
 * per-run webhook, so its bundle keeps neither the webhooks' code nor KMS.
 */
export function scheduleService(runtime: Runtime, runs: RunService = plainRunService(runtime)): ScheduleService {
  const queue = runQueue(runtime);
  return new ScheduleService(
    new DynamoScheduleStore(
      runtime.db,
      runtime.tableName('crewSchedules'),
      runtime.tableName('crewRuns'),
      runtime.eventsTable,
    ),
    templateStore(runtime),
    runStore(runtime),
    runs,
    scheduler(runtime, (fire) => queue.sendFire(fire)),
    runtime.clock,
  );
}
