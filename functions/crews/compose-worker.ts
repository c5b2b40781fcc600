import { OutboundHttp } from '../../shared/adapters/outbound-http.js';
import { sqsAccess } from '../../shared/aws/sqs.js';
import { chatModel, type Runtime } from '../composition.js';
import { SqsRunQueue } from './run-queue.js';
import { InProcessRunSignals, notifyingAppends } from './signals.js';
import { CrewRunner } from './runner.js';
import { StepExecutor } from './steps.js';
import { DynamoRunStore, type RunStore } from './store.js';

/*
 * The worker's and the dead-letter handler's builders, apart from compose.ts so that their
 * bundles leave the API's service out.
 */

/** The crew-run queue the API sends to and the worker sends a continued run back to. */
export function runQueue(runtime: Runtime): SqsRunQueue {
  return new SqsRunQueue(sqsAccess(runtime.config), runtime.config.crewRunQueueUrl);
}

/**
 * This process's run signals: where the API and the worker share a process (`npm start`),
 * E13 long polls wake on the worker's appends; elsewhere nothing notifies and they poll.
 */
export const runSignals = new InProcessRunSignals();

/** With `webhooksTable`, runs may be created with their own webhook endpoint (the API's). */
export function runStore(runtime: Runtime, webhooksTable?: string): RunStore {
  return notifyingAppends(
    new DynamoRunStore(runtime.db, runtime.tableName('crewRuns'), runtime.tableName('runLog'), webhooksTable),
    runSignals,
  );
}

/**
 * What the worker and the dead-letter handler run: the steps, over HTTP and the configured
 * model. `stop` (the local platform's shutdown) abandons the steps under way at once and
 * ends their deliveries without writing (CrewRunner).
 */
export function crewRunner(runtime: Runtime, options: { stop?: AbortSignal } = {}): CrewRunner {
  return new CrewRunner(
    runStore(runtime),
    new StepExecutor(new OutboundHttp(runtime.config.crewHttpAllowedHosts), chatModel(runtime.config)),
    runSignals,
    runQueue(runtime),
    options.stop,
  );
}
