import type { Page } from '../../shared/page.js';
import { NotFound } from '../../shared/errors.js';
import { type DomainEvent, DOMAIN_EVENT_TYPES, envelopeType } from '../../shared/events/types.js';
import type { FeedQuery } from './schemas.js';
import type { EventStore, FeedFilter } from './store.js';

/** The domain events feed (docs/events-and-webhooks.md): what happened, for admins and integrations that poll. */
export class EventFeedService {
  constructor(private readonly events: EventStore) {}

  list(query: FeedQuery): Promise<Page<DomainEvent>> {
    return this.events.list(feedFilter(query), query.limit, query.cursor);
  }

  async get(id: string): Promise<DomainEvent> {
    const event = await this.events.get(id);
    if (!event) throw new NotFound('No such event');
    return event;
  }
}

/**
 * The query's filters in the stored terms: types carry `dpm.`, a prefix is every type of the
 * catalogue (docs/events-and-webhooks.md) under it (the one of all, `dpm.*`, no filter), `since` compares with the
 * recording key.
 */
export function feedFilter(query: Pick<FeedQuery, 'type' | 'subject' | 'since'>): FeedFilter {
  const type = query.type && (query.type.startsWith('dpm.') ? query.type : envelopeType(query.type));
  const prefix = type?.endsWith('.*') ? type.slice(0, -1) : undefined;
  return {
    ...(type && prefix !== ALL_TYPES ? { types: prefix ? typesUnder(prefix) : [type] } : {}),
    ...(query.subject !== undefined ? { subject: query.subject } : {}),
    // normalised to the recording key's form (`...Z`), so the comparison is by instant
    ...(query.since ? { since: new Date(query.since).toISOString() } : {}),
  };
}

/** The prefix every type has. */
const ALL_TYPES = 'dpm.';

const typesUnder = (prefix: string): string[] =>
  DOMAIN_EVENT_TYPES.map(envelopeType).filter((t) => t.startsWith(prefix));
