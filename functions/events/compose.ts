import type { Runtime } from '../composition.js';
import type { EventsDeps } from './app.js';
import { EventFeedService } from './service.js';
import { DynamoEventStore } from './store.js';

export function eventStore(runtime: Runtime): DynamoEventStore {
  return new DynamoEventStore(runtime.db, runtime.eventsTable);
}

export function eventsDeps(runtime: Runtime): EventsDeps {
  return { authenticator: runtime.authenticator, service: new EventFeedService(eventStore(runtime)) };
}
