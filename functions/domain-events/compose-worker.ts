import type { EventBus } from '../../shared/ports/event-bus.js';
import { eventBus, type Runtime } from '../composition.js';
import { entryOfRunWithoutWebhook, toRunLogEntry } from '../crews/store.js';
import { runEventEnvelope } from '../webhooks/run-endpoint.js';
import { webhookFanout } from '../webhooks/compose.js';
import type { EventFanout, RunLogStream } from './dispatcher.js';

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
