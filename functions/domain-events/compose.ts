import type { Runtime } from '../composition.js';
import type { DomainEventsDeps } from './app.js';
import { EventFeedService } from './service.js';
import { DynamoEventStore } from './store.js';

export function eventStore(runtime: Runtime): DynamoEventStore {
  return new DynamoEventStore(runtime.db, runtime.eventsTable);
}

export function domainEventsDeps(runtime: Runtime): DomainEventsDeps {
  return { authenticator: runtime.authenticator, service: new EventFeedService(eventStore(runtime)) };
}
