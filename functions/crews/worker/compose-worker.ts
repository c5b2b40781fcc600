import { OutboundHttp } from '../../../shared/adapters/outbound-http.js';
import { type Runtime, stepModel } from '../../composition.js';
import { runQueue, runSignals, runStore, slotStore } from '../compose.js';
import { CrewRunner } from './runner.js';
import { StepExecutor } from './steps.js';

/*
 * The worker's and the dead-letter handler's builder, apart from compose.ts so that the API's
 * bundle leaves the steps (HTTP, the model) out.
 */

/**
 * What the worker and the dead-letter handler run: the steps, over HTTP and the configured
 * model. `stop` (the local platform's shutdown) abandons the steps under way at once and
 * ends their deliveries without writing (CrewRunner).
 */
export function crewRunner(runtime: Runtime, options: { stop?: AbortSignal } = {}): CrewRunner {
  const { model, timeoutMs } = stepModel(runtime.config);
  return new CrewRunner(
    runStore(runtime),
    slotStore(runtime),
    new StepExecutor(new OutboundHttp(runtime.config.crewHttpAllowedHosts), model, runtime.clock, timeoutMs),
    runSignals(runtime),
    runQueue(runtime),
    options.stop,
    runtime.clock,
  );
}
