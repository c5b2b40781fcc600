import * as z from 'zod/mini';
import { component, doc } from '../../../shared/schema.js';

/* Crew schedules (docs/crews.md, schedules). */

export const SCHEDULE_OVERLAPS = ['skip', 'allow'] as const;

const scheduleExpression = doc(
  z.string().check(z.minLength(1), z.maxLength(256)),
  "EventBridge Scheduler's syntax and semantics: `cron(minutes hours day-of-month month day-of-week year)` (one of the day fields `?`; `, - * / L W #`; JAN-DEC, SUN-SAT) or `rate(N minute|minutes|hour|hours|day|days)`, which first fires N units after the schedule's creation or the last change of its expression, then every N units",
);
const scheduleTimezone = doc(
  z.string().check(z.minLength(1), z.maxLength(64)),
  'IANA time zone name (`ScheduleExpressionTimezone`) the cron fields are read in, with its daylight-saving rules: a skipped wall time fires nothing that day, a repeated one fires once',
);
const scheduleValues = doc(
  z.record(z.string(), z.unknown()),
  "the run's variable values, checked as E2 checks them against the template's variables",
);
const scheduleOverlap = doc(
  z.enum(SCHEDULE_OVERLAPS),
  "`skip`: a fire while the schedule's previous run is unfinished starts nothing (it records `last_skipped_at`); `allow`: it starts a run anyway",
);

export const ScheduleRequest = component(
  'CrewScheduleRequest',
  z.strictObject({
    template_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the crew template each fire runs'),
    name: doc(z.string().check(z.minLength(1), z.maxLength(200)), 'what people call it'),
    expression: scheduleExpression,
    timezone: z._default(scheduleTimezone, 'UTC'),
    values: z._default(scheduleValues, {}),
    overlap: z._default(scheduleOverlap, 'skip'),
    enabled: doc(z._default(z.boolean(), true), 'a disabled schedule fires nothing'),
  }),
);
export type ScheduleRequest = z.infer<typeof ScheduleRequest>;

export const SchedulePatch = component(
  'CrewSchedulePatch',
  z.strictObject({
    expression: z.optional(scheduleExpression),
    timezone: z.optional(scheduleTimezone),
    values: z.optional(scheduleValues),
    overlap: z.optional(scheduleOverlap),
    enabled: z.optional(doc(z.boolean(), 'a disabled schedule fires nothing')),
  }),
);
export type SchedulePatch = z.infer<typeof SchedulePatch>;

export const ScheduleParams = z.object({
  schedule_id: doc(z.string().check(z.minLength(1), z.maxLength(64)), 'the schedule id returned at creation'),
});

export const CrewSchedule = component(
  'CrewSchedule',
  z.object({
    id: doc(z.string(), 'the schedule id (UUID)'),
    template_id: doc(z.string(), 'the crew template each fire runs'),
    name: doc(z.string(), 'what people call it'),
    expression: scheduleExpression,
    timezone: scheduleTimezone,
    values: scheduleValues,
    overlap: scheduleOverlap,
    enabled: doc(z.boolean(), 'a disabled schedule fires nothing'),
    next_run_at: doc(
      z.nullable(z.iso.datetime()),
      'the next fire (null when disabled or when the expression has none left)',
    ),
    last_run_at: doc(z.nullable(z.iso.datetime()), 'the scheduled time of the last fire that started a run'),
    last_correlation_id: doc(z.nullable(z.string()), 'the run that fire started'),
    last_skipped_at: doc(
      z.nullable(z.iso.datetime()),
      'the scheduled time of the last fire that started nothing (`overlap: skip` while the previous run was unfinished, values the template no longer takes, or a later fire had started its run)',
    ),
    created_by: doc(z.string(), 'who created it: every run it starts is theirs'),
    created_at: doc(z.iso.datetime(), 'when it was created (ISO 8601 UTC)'),
    updated_at: doc(z.iso.datetime(), 'when it was last changed (ISO 8601 UTC)'),
  }),
);
export type CrewSchedule = z.infer<typeof CrewSchedule>;
