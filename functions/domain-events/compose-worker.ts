import type { StreamHandler } from '../../shared/aws/lambda.js';
import type { EventBus } from '../../shared/ports/event-bus.js';
import { businessMetrics, eventBus, type Runtime } from '../composition.js';
import { entryOfRunWithoutWebhook, toRunLogEntry } from '../crews/runs/run-store.js';
import { runEventEnvelope } from '../webhooks/run-endpoint.js';
import { webhookFanout } from '../webhooks/compose.js';
import { createDispatcher, type EventFanout, type RunLogStream } from './dispatcher.js';

/*
 * The dispatcher's builders (its Lambda, dispatcher-handler.ts, and the local platform's stream
 * poller); the publisher's are apart (compose-publisher.ts), so neither bundle carries the other's.
 */

/**
 * What the domain-event dispatcher works with: the stage's bus, the webhooks group's fan-out,
 * and the run log's stream with crews' reading of an entry in the webhooks group's envelope.
 * The groups meet here, in the composition, and nowhere else. `endpointsFreshMs`: how long the
 * fan-out keeps the endpoints it read (ENDPOINTS_FRESH_MS unless given).
 */
export function dispatcherDeps(
  runtime: Runtime,
  endpointsFreshMs?: number,
): { bus: EventBus; fanout: EventFanout; runLog: RunLogStream } {
  const origin = runtime.eventsTable.source;
  return {
    bus: eventBus(runtime),
    fanout: webhookFanout(runtime, endpointsFreshMs),
    runLog: {
      table: runtime.tableName('runLog'),
      envelopeOf: (item) =>
        entryOfRunWithoutWebhook(item) ? undefined : runEventEnvelope(toRunLogEntry(item), origin),
    },
  };
}

/** The dispatcher over a runtime: the stage's bus, webhooks, and the crew runs' events. */
export function dispatcherFor(runtime: Runtime, deps = dispatcherDeps(runtime)): StreamHandler {
  return createDispatcher(deps.bus, deps.fanout, deps.runLog, businessMetrics(runtime, 'domain-events-dispatcher'));
}
