import type { StreamHandler } from '../../shared/aws/lambda.js';
import type { Runtime } from '../composition.js';
import { eventStore } from './compose.js';
import { createPublisher } from './publisher.js';
import { EVENT_SOURCES } from './sources.js';

/*
 * The publisher's builder (its Lambda, publisher-handler.ts, and the local platform's stream
 * poller), apart from the dispatcher's (compose-worker.ts) and the API's (compose.ts): only
 * the publisher's bundle carries every group's event source, and it carries no webhooks code.
 */

/** The publisher over a runtime: every group's event source, by its table's physical name. */
export function publisherFor(runtime: Runtime): StreamHandler {
  const sources = new Map(EVENT_SOURCES.map((s) => [runtime.tableName(s.table), s]));
  return createPublisher({
    events: eventStore(runtime),
    sources,
    origin: runtime.eventsTable.source,
  });
}
