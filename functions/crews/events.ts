import type { EventSource } from '../../shared/events/source.js';
import type { Change, DomainEventType } from '../../shared/events/types.js';
import type { CrewRun } from './runs/run-schemas.js';
import { SCHEDULE_ITEM, toCrewSchedule, toSchedule } from './schedules/schedule-store.js';
import { storedRun, toRun } from './runs/run-store.js';
import { toCrewTemplate } from './templates/template-store.js';

/** The domain event of a run reaching each status (docs/events-and-webhooks.md). */
const RUN_EVENT: Record<CrewRun['status'], DomainEventType> = {
  pending: 'crew.run.queued',
  running: 'crew.run.started',
  waiting: 'crew.run.waiting',
  succeeded: 'crew.run.succeeded',
  failed: 'crew.run.failed',
  cancelled: 'crew.run.cancelled',
};

/** The change of a run moving to `status`; the service's own (a worker's) unless `actor` says whose. */
export const runChange = (status: CrewRun['status'], at: string, actor: string | null = null): Change => ({
  type: RUN_EVENT[status],
  actor,
  at,
});

/** A failed or cancelled run continued by `actor` (it is `pending` again). */
export const runRetried = (at: string, actor: string): Change => ({ type: 'crew.run.retried', actor, at });

export const crewTemplateEvents: EventSource = {
  table: 'crewTemplates',
  describe: (item) => ({ subject: `crew-templates/${String(item.id)}`, data: { ...toCrewTemplate(item) } }),
};

export const crewRunEvents: EventSource = {
  table: 'crewRuns',
  describe(item) {
    const run = toRun(storedRun(item));
    return { subject: `crew-runs/${run.correlation_id}`, data: { ...run } };
  },
};

export const crewScheduleEvents: EventSource = {
  table: 'crewSchedules',
  // The table also holds each schedule's records of the runs it started: no event subjects.
  describe: (item) =>
    item.item === SCHEDULE_ITEM
      ? { subject: `crew-schedules/${String(item.schedule_id)}`, data: { ...toCrewSchedule(toSchedule(item)) } }
      : undefined,
};
