import * as z from 'zod/mini';
import { PageQuery } from '../../shared/http/params.js';
import { component, doc } from '../../shared/schema.js';

/** The CloudEvents 1.0 envelope of a domain event (API.md §13). */
export const DomainEventSchema = component(
  'DomainEvent',
  z.object({
    specversion: doc(z.literal('1.0'), 'CloudEvents version'),
    id: doc(z.uuid(), 'the event id (UUID): receivers deduplicate on it'),
    source: doc(z.string(), '`dpm/<stage>`', { example: 'dpm/prod' }),
    type: doc(z.string(), '`dpm.<type>`, a type of the table in API.md §13', {
      example: 'dpm.decision.version.approved',
    }),
    subject: doc(z.string(), 'the resource path', { example: 'decisions/finance/credit-limit/versions/3' }),
    time: doc(z.iso.datetime(), 'when the change was committed (ISO 8601 UTC)'),
    datacontenttype: doc(z.literal('application/json'), 'the media type of `data`'),
    actor: doc(z.nullable(z.string()), "the name of who made the change; null for the service's own changes"),
    sequence: doc(z.int(), "the event's place among its subject's events: 1, 2, 3... without gaps"),
    data: doc(
      z.record(z.string(), z.unknown()),
      'the resource as its GET answers after the change, plus what the change was about',
    ),
  }),
);

/** `decision.version.approved`, `dpm.decision.version.approved`, or a prefix with `.*` (`decision.*`). */
const TYPE_FILTER = /^(dpm\.)?[a-z_]+(\.[a-z_]+)*(\.\*)?$/;

export const FeedQuery = z.extend(PageQuery, {
  type: doc(
    z.optional(z.string().check(z.maxLength(200), z.regex(TYPE_FILTER))),
    'only events of this type (`decision.version.approved`), or of every type under a prefix (`decision.*`); `dpm.` may lead',
  ),
  subject: doc(
    z.optional(z.string().check(z.minLength(1), z.maxLength(1024))),
    'only events about this subject (exact), in sequence order',
    { example: 'decisions/finance/credit-limit/versions/3' },
  ),
  since: doc(z.optional(z.iso.datetime()), 'only events recorded at or after this instant (ISO 8601)'),
});
export type FeedQuery = z.infer<typeof FeedQuery>;

export const EventParams = z.object({
  event_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the event id'),
});
