import * as z from 'zod/mini';
import { DOMAIN_EVENT_TYPES, envelopeType } from '../../shared/events/types.js';
import { PageQuery } from '../../shared/params.js';
import { pyChoices, pydanticIssue } from '../../shared/pydantic/issues.js';
import { component, doc } from '../../shared/schema.js';

/** The CloudEvents 1.0 envelope of a domain event (docs/events-and-webhooks.md). */
export const DomainEventSchema = component(
  'DomainEvent',
  z.object({
    specversion: doc(z.literal('1.0'), 'CloudEvents version'),
    id: doc(z.uuid(), 'the event id (UUID): receivers deduplicate on it'),
    source: doc(z.string(), '`dpm/<stage>`', { example: 'dpm/prod' }),
    type: doc(z.string(), '`dpm.<type>`, a type of the domain events catalogue', {
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

/** The catalogued types as the envelope has them (`dpm.decision.version.created`). */
const CATALOGUED = DOMAIN_EVENT_TYPES.map(envelopeType);

/**
 * Whether a type filter names a catalogued type (docs/events-and-webhooks.md), or a prefix (`decision.*`) that
 * has at least one under it (`dpm.*`: all). A filter that names none would answer `[]` for
 * ever, which reads as "nothing happened" rather than "no such type": it is a 422.
 */
export function namesCataloguedType(filter: string): boolean {
  const type = filter.startsWith('dpm.') ? filter : envelopeType(filter);
  if (!type.endsWith('.*')) return CATALOGUED.includes(type);
  const prefix = type.slice(0, -1);
  return CATALOGUED.some((t) => t.startsWith(prefix));
}

/** pydantic's answer for a value outside a fixed set: `enum`, with the known types in `expected`. */
const KNOWN_TYPES = pyChoices(DOMAIN_EVENT_TYPES);

export const FeedQuery = z.extend(PageQuery, {
  type: doc(
    z.optional(
      z.string().check(
        z.maxLength(200),
        z.regex(TYPE_FILTER),
        // A malformed filter is the pattern's to refuse: one issue per value.
        z.refine((v) => !TYPE_FILTER.test(v) || namesCataloguedType(v), {
          params: pydanticIssue('enum', `Input should be ${KNOWN_TYPES}`, { expected: KNOWN_TYPES }),
        }),
      ),
    ),
    'only events of this type (`decision.version.approved`), or of every type under a prefix (`decision.*`); `dpm.` may lead; a type or prefix that names no domain event type is a 422 (`enum`, the known types in `expected`)',
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
