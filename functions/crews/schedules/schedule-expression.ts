/**
 * EventBridge Scheduler's recurring schedule expressions (docs/crews.md "Runs people can plan
 * on"): the same `cron(...)` and `rate(...)` strings, evaluated as Scheduler documents them
 * (Scheduler User Guide, "Schedule types on EventBridge Scheduler"; EventBridge User Guide,
 * "Cron expressions reference" and "Rate expressions reference"). Pure: no clock, no I/O.
 *
 * What is accepted is what AWS documents, and nothing it leaves open (undocumented forms such
 * as `LW`, `L-3`, lower-case names or a five-field cron are refused): a string accepted here
 * is one Scheduler takes, so a schedule never fails only on AWS.
 *
 * Fire times:
 * - cron: every whole minute whose wall-clock time in the schedule's time zone the expression
 *   names. Daylight saving as Scheduler does it: "When time shifts forward in the Spring, if a
 *   cron expression falls on a non-existent date and time, your schedule invocation is
 *   skipped. When time shifts backwards in the Fall, your schedule runs only once and does not
 *   repeat its invocation" — a skipped wall time fires nothing that day, a repeated one fires
 *   at its first instance ("runs the schedule only once at 2:30 a.m. before the shift occurs").
 * - rate: a fixed duration, whatever the zone: "`days` represents a 24-hour duration on the
 *   clock ... EventBridge Scheduler still evaluates the rate expression 24 hours after the
 *   schedule's last invocation". The contract's rate first fires one period after the anchor
 *   (the schedule's creation or the last change of its expression, to the whole second), then
 *   every period: `rate(1 hour)` made at 10:00:30 fires at 11:00:30, 12:00:30, ... On AWS the
 *   schedule's StartDate is that series' next fire ("with rate-based schedules, you use the
 *   StartDate property to set the first occurrence of the schedule"), so Scheduler fires the
 *   same series, at its 60-second precision, rather than at once as it does without one.
 */

export type RateUnit = 'minute' | 'hour' | 'day';

export interface RateExpression {
  readonly kind: 'rate';
  readonly value: number;
  readonly unit: RateUnit;
  /** value × unit, in milliseconds. */
  readonly periodMs: number;
}

/** Day-of-month: listed days, `L` (the month's last day), or `nW` (the weekday nearest day n). */
export type DayOfMonthRule =
  | { readonly kind: 'days'; readonly days: readonly number[] }
  | { readonly kind: 'last' }
  | { readonly kind: 'nearest-weekday'; readonly day: number };

/** Day-of-week (1-7 = SUN-SAT): listed days, `nL` (the month's last such day) or `n#k` (its k-th). */
export type DayOfWeekRule =
  | { readonly kind: 'days'; readonly days: readonly number[] }
  | { readonly kind: 'last'; readonly day: number }
  | { readonly kind: 'nth'; readonly day: number; readonly nth: number };

export interface CronExpression {
  readonly kind: 'cron';
  /** Each field's values, ascending. */
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly months: readonly number[];
  readonly years: readonly number[];
  /** The day field that is not `?` decides the days. */
  readonly days:
    | { readonly field: 'day-of-month'; readonly rule: DayOfMonthRule }
    | { readonly field: 'day-of-week'; readonly rule: DayOfWeekRule };
}

export type ParsedExpression = RateExpression | CronExpression;

/** Scheduler's ScheduleExpression is at most 256 characters. */
const MAX_EXPRESSION_LENGTH = 256;
/** Not an AWS limit: keeps every period a safe integer of milliseconds (a million days is 2,700 years). */
const MAX_RATE_VALUE = 1_000_000;

const SECOND_MS = 1_000;
const MINUTE_MS = 60_000;
const UNIT_MS: Record<RateUnit, number> = { minute: MINUTE_MS, hour: 60 * MINUTE_MS, day: 24 * 60 * MINUTE_MS };

const SHAPE =
  'must be cron(minutes hours day-of-month month day-of-week year) or rate(value unit), e.g. cron(0 2 * * ? *) or rate(1 hour)';

class ExpressionError extends Error {}

const fail = (reason: string): never => {
  throw new ExpressionError(reason);
};

/** The expression, or why it is not one Scheduler takes (a sentence for the 422's `msg`). */
export function parseScheduleExpression(
  expr: string,
): { ok: true; expression: ParsedExpression } | { ok: false; reason: string } {
  try {
    return { ok: true, expression: parse(expr) };
  } catch (err) {
    if (err instanceof ExpressionError) return { ok: false, reason: err.message };
    throw err;
  }
}

function parse(expr: string): ParsedExpression {
  if (expr.length > MAX_EXPRESSION_LENGTH) fail(`must be at most ${MAX_EXPRESSION_LENGTH} characters`);
  const cron = /^cron\((.*)\)$/s.exec(expr);
  if (cron) return parseCron(cron[1]!);
  const rate = /^rate\((.*)\)$/s.exec(expr);
  if (rate) return parseRate(rate[1]!);
  return fail(SHAPE);
}

function parseRate(inner: string): RateExpression {
  const match = /^(\d+) ([a-z]+)$/.exec(inner);
  if (!match) return fail('rate(...) must be rate(value unit) with one space, e.g. rate(5 minutes) or rate(1 hour)');
  const [, digits, unitText] = match as unknown as [string, string, string];
  const value = Number(digits);
  if (!/^[1-9]\d*$/.test(digits) || value > MAX_RATE_VALUE)
    fail(`rate value must be a whole number from 1 to ${MAX_RATE_VALUE}, without leading zeros`);
  const unit = unitText.replace(/s$/, '') as RateUnit;
  if (!Object.hasOwn(UNIT_MS, unit))
    fail(`rate unit must be minute, minutes, hour, hours, day or days (not '${unitText}')`);
  // EventBridge: "If the value is equal to 1, then the unit must be singular. If the value is
  // greater than 1, the unit must be plural."
  const plural = unitText.endsWith('s');
  if (value === 1 && plural) fail(`rate(1 ${unitText}) must be rate(1 ${unit}): the unit is singular for 1`);
  if (value > 1 && !plural)
    fail(`rate(${value} ${unitText}) must be rate(${value} ${unit}s): the unit is plural above 1`);
  return { kind: 'rate', value, unit, periodMs: value * UNIT_MS[unit] };
}

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Upper-case names for min, min + 1, ... */
  readonly names?: readonly string[];
  /** What a value may be, for messages. */
  readonly accepts: string;
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const FIELDS = {
  minutes: { name: 'minutes', min: 0, max: 59, accepts: '0-59' },
  hours: { name: 'hours', min: 0, max: 23, accepts: '0-23' },
  dayOfMonth: { name: 'day-of-month', min: 1, max: 31, accepts: '1-31' },
  month: { name: 'month', min: 1, max: 12, names: MONTH_NAMES, accepts: '1-12 or JAN-DEC' },
  dayOfWeek: { name: 'day-of-week', min: 1, max: 7, names: DAY_NAMES, accepts: '1-7 or SUN-SAT' },
  year: { name: 'year', min: 1970, max: 2199, accepts: '1970-2199' },
} as const satisfies Record<string, FieldSpec>;

function parseCron(inner: string): CronExpression {
  const fields = inner.split(' ');
  if (fields.some((f) => f === '') || /\s/.test(inner.replace(/ /g, '')))
    fail('cron fields are separated by one space each, with none before the first or after the last');
  if (fields.length !== 6)
    fail(
      `cron(...) has ${fields.length} field${fields.length === 1 ? '' : 's'}; it needs 6: minutes hours day-of-month month day-of-week year`,
    );
  const [minutes, hours, dayOfMonth, month, dayOfWeek, year] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  for (const [text, spec] of [
    [minutes, FIELDS.minutes],
    [hours, FIELDS.hours],
    [month, FIELDS.month],
    [year, FIELDS.year],
  ] as const) {
    if (text.includes('?')) fail(`${spec.name}: ? is only for day-of-month or day-of-week`);
  }
  // "You can't specify the Day-of-month and Day-of-week fields in the same cron expression. If
  // you specify a value (or a *) in one of the fields, you must use a ? (question mark) in the other."
  if (dayOfMonth === '?' && dayOfWeek === '?') fail('only one of day-of-month and day-of-week may be ?');
  if (dayOfMonth !== '?' && dayOfWeek !== '?')
    fail(
      'one of day-of-month and day-of-week must be ? (e.g. cron(0 9 ? * MON-FRI *) by weekday, cron(0 0 1 * ? *) by date)',
    );
  return {
    kind: 'cron',
    minutes: valueList(minutes, FIELDS.minutes),
    hours: valueList(hours, FIELDS.hours),
    months: valueList(month, FIELDS.month),
    years: valueList(year, FIELDS.year),
    days:
      dayOfWeek === '?'
        ? { field: 'day-of-month', rule: dayOfMonthRule(dayOfMonth) }
        : { field: 'day-of-week', rule: dayOfWeekRule(dayOfWeek) },
  };
}

function dayOfMonthRule(text: string): DayOfMonthRule {
  const spec = FIELDS.dayOfMonth;
  if (text === 'L') return { kind: 'last' };
  if (/[LW]/.test(text)) {
    const weekday = /^(\d+)W$/.exec(text);
    if (weekday) return { kind: 'nearest-weekday', day: value(weekday[1]!, spec) };
    return fail(
      `day-of-month: '${text}' is not supported: L (the last day) and nW (the weekday nearest day n, e.g. 15W) stand alone`,
    );
  }
  if (text.includes('#')) fail('day-of-month: # is only for day-of-week (e.g. 6#3, the third Friday)');
  return { kind: 'days', days: valueList(text, spec) };
}

function dayOfWeekRule(text: string): DayOfWeekRule {
  const spec = FIELDS.dayOfWeek;
  // WED and the W wildcard share a letter.
  if (text.replace(/WED/g, '').includes('W')) fail('day-of-week: W is only for day-of-month (e.g. 15W)');
  if (text.includes('#')) {
    const nth = /^([A-Z]+|\d+)#(\d+)$/.exec(text);
    if (!nth)
      fail(
        `day-of-week: '${text}' is not valid: # takes one day and its place in the month (e.g. 6#3, the third Friday), and no list`,
      );
    const [, day, place] = nth as unknown as [string, string, string];
    const k = Number(place);
    if (!/^[1-5]$/.test(place)) fail(`day-of-week: in ${text}, the place in the month must be 1 to 5`);
    return { kind: 'nth', day: value(day, spec), nth: k };
  }
  if (text === 'L') return { kind: 'days', days: [spec.max] }; // "the last day of the week": Saturday
  if (text.includes('L')) {
    const last = /^([A-Z]+|\d+)L$/.exec(text);
    if (!last || last[1] === 'L')
      fail(
        `day-of-week: '${text}' is not valid: L stands alone (Saturday) or after one day (e.g. 6L, the last Friday)`,
      );
    return { kind: 'last', day: value(last![1]!, spec) };
  }
  return { kind: 'days', days: valueList(text, spec) };
}

/** `,`-separated items of `*`, `v`, `a-b`, each with an optional `/step`; ascending, without repeats. */
function valueList(text: string, spec: FieldSpec): number[] {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') fail(`${spec.name}: '${text}' has an empty item`);
    if (/[?LW#]/.test(item.replace(/[A-Z]{3}/g, '')) || item === '?')
      fail(`${spec.name}: '${item}' is not valid here (${spec.accepts}, with , - * /)`);
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined) fail(`${spec.name}: '${item}' has more than one /`);
    let from: number;
    let to: number;
    if (range === '*') {
      from = spec.min;
      to = spec.max;
    } else {
      const [a, b, more] = range!.split('-');
      if (more !== undefined || a === '' || b === '') fail(`${spec.name}: '${item}' is not a value or a range a-b`);
      from = value(a!, spec);
      // `a/n` runs from a to the field's end.
      to = b !== undefined ? value(b, spec) : stepText !== undefined ? spec.max : from;
      if (to < from) fail(`${spec.name}: the range ${range} goes backwards (write it as two, e.g. 22-23,0-2)`);
    }
    let step = 1;
    if (stepText !== undefined) {
      step = Number(stepText);
      const maxStep = spec.max - spec.min + (spec.min === 0 ? 0 : 1);
      if (!/^[1-9]\d*$/.test(stepText) || step > maxStep)
        fail(`${spec.name}: the step in '${item}' must be a whole number from 1 to ${maxStep}`);
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return [...values].sort((x, y) => x - y);
}

function value(text: string, spec: FieldSpec): number {
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n < spec.min || n > spec.max) fail(`${spec.name}: ${text} is out of range (${spec.accepts})`);
    return n;
  }
  const index = spec.names?.indexOf(text) ?? -1;
  if (index < 0) {
    const hint =
      spec.names && spec.names.includes(text.toUpperCase()) ? `; names are in capitals (${text.toUpperCase()})` : '';
    return fail(`${spec.name}: '${text}' is not a value (${spec.accepts})${hint}`);
  }
  return spec.min + index;
}

/** Scheduler's ScheduleExpressionTimezone is at most 50 characters. */
const MAX_ZONE_LENGTH = 50;
/** A name as the tz database spells it: segments that start with a capital (`America/New_York`, `Etc/GMT+5`, `UTC`). */
const ZONE_NAME = /^[A-Z][A-Za-z0-9_+-]*(?:\/[A-Z][A-Za-z0-9_+-]*)*$/;

/**
 * An IANA time zone name (Scheduler uses the IANA Time Zone Database) that this runtime knows,
 * spelled as the database spells it: `america/new_york` and offsets such as `+05:00` are not names.
 */
export function isTimeZone(name: string): boolean {
  if (name.length > MAX_ZONE_LENGTH || !ZONE_NAME.test(name)) return false;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return false;
  }
  // Intl matches names regardless of case: `AMERICA/NEW_YORK` resolves, but is no IANA name.
  return resolved === name || resolved.toLowerCase() !== name.toLowerCase();
}

/**
 * The first fire strictly after `afterMs` (epoch ms), or undefined when there is none (a cron
 * whose years are past). `anchorMs` is where a rate counts from (the schedule's creation or
 * last change, to the whole second; `afterMs` when absent): its fires are the anchor plus one
 * period, two, ... (never the anchor itself). Crons ignore it. `timezone` must pass isTimeZone.
 */
export function nextFireAfter(
  parsed: ParsedExpression,
  timezone: string,
  afterMs: number,
  anchorMs?: number,
): number | undefined {
  if (parsed.kind === 'rate') {
    const first = Math.floor((anchorMs ?? afterMs) / SECOND_MS) * SECOND_MS + parsed.periodMs;
    if (afterMs < first) return first;
    return first + (Math.floor((afterMs - first) / parsed.periodMs) + 1) * parsed.periodMs;
  }
  return nextCronFire(parsed, zoneClock(timezone), afterMs);
}

interface WallTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
}

/**
 * Walks the wall-clock minutes the expression names, from the wall-clock minute of `afterMs`
 * on, field by field (years, months, the month's days, hours, minutes), so a yearly cron skips
 * whole years at once. Each is mapped to its first instant; one the zone skips has none. That
 * mapping keeps the order of wall times, so no earlier wall time can map after `afterMs`; a
 * later one may map before it (the repeated hour of a fall-back), and is passed over.
 */
function nextCronFire(cron: CronExpression, clock: ZoneClock, afterMs: number): number | undefined {
  const start = clock.wallTime(afterMs);
  for (const year of cron.years) {
    if (year < start.year) continue;
    const fromYear = year === start.year;
    for (const month of cron.months) {
      if (fromYear && month < start.month) continue;
      const fromMonth = fromYear && month === start.month;
      for (const day of daysOf(cron.days, year, month)) {
        if (fromMonth && day < start.day) continue;
        const fromDay = fromMonth && day === start.day;
        for (const hour of cron.hours) {
          if (fromDay && hour < start.hour) continue;
          const fromHour = fromDay && hour === start.hour;
          for (const minute of cron.minutes) {
            if (fromHour && minute < start.minute) continue;
            const instant = clock.firstInstant({ year, month, day, hour, minute });
            if (instant !== undefined && instant > afterMs) return instant;
          }
        }
      }
    }
  }
  return undefined;
}

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate();
/** 1-7 = SUN-SAT, as cron counts. */
const weekdayOf = (year: number, month: number, day: number): number =>
  new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 1;

/** The days of the month the day rule names, ascending. */
function daysOf(days: CronExpression['days'], year: number, month: number): number[] {
  const last = daysInMonth(year, month);
  if (days.field === 'day-of-month') {
    const rule = days.rule;
    switch (rule.kind) {
      case 'days':
        return rule.days.filter((d) => d <= last);
      case 'last':
        return [last];
      case 'nearest-weekday': {
        // A day past the month's end names no day of that month, as a plain 31 does not.
        if (rule.day > last) return [];
        const weekday = weekdayOf(year, month, rule.day);
        // The nearest Monday to Friday, within the month: a Saturday 1st moves to Monday the
        // 3rd, a Sunday last day to Friday.
        if (weekday === 7) return [rule.day === 1 ? 3 : rule.day - 1];
        if (weekday === 1) return [rule.day === last ? rule.day - 2 : rule.day + 1];
        return [rule.day];
      }
    }
  }
  const rule = days.rule;
  const firstWeekday = weekdayOf(year, month, 1);
  /** The first day of the month that is weekday `w`. */
  const first = (w: number) => 1 + ((w - firstWeekday + 7) % 7);
  switch (rule.kind) {
    case 'days': {
      const out: number[] = [];
      for (let d = 1; d <= last; d++) if (rule.days.includes(((firstWeekday - 1 + d - 1) % 7) + 1)) out.push(d);
      return out;
    }
    case 'last': {
      const d = first(rule.day);
      return [d + 7 * Math.floor((last - d) / 7)];
    }
    case 'nth': {
      const d = first(rule.day) + 7 * (rule.nth - 1);
      return d <= last ? [d] : [];
    }
  }
}

interface ZoneClock {
  wallTime(ms: number): WallTime;
  /** The first instant showing this wall time (whole minute), or undefined when the zone skips it. */
  firstInstant(wall: WallTime): number | undefined;
}

const clocks = new Map<string, ZoneClock>();

/** Wall time in a zone by Intl (the runtime's tz database): one formatter per zone, reused. */
function zoneClock(timezone: string): ZoneClock {
  let clock = clocks.get(timezone);
  if (clock) return clock;
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const fields = (ms: number) => {
    const parts: Record<string, number> = {};
    for (const part of format.formatToParts(new Date(ms)))
      if (part.type !== 'literal') parts[part.type] = Number(part.value);
    return parts as Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', number>;
  };
  /** The zone's offset from UTC at `ms`, in ms (wall time read as UTC, minus the instant). */
  const offsetAt = (ms: number): number => {
    const f = fields(ms);
    return Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second) - Math.floor(ms / 1000) * 1000;
  };
  const DAY_MS = 24 * 60 * MINUTE_MS;
  clock = {
    wallTime(ms) {
      const { year, month, day, hour, minute } = fields(ms);
      return { year, month, day, hour, minute };
    },
    firstInstant({ year, month, day, hour, minute }) {
      const asUtc = Date.UTC(year, month - 1, day, hour, minute);
      // The offsets in force a day either side cover any one transition near this wall time:
      // an instant is right when the zone's offset there is the one it was computed with.
      let first: number | undefined;
      for (const offset of new Set([offsetAt(asUtc - DAY_MS), offsetAt(asUtc), offsetAt(asUtc + DAY_MS)])) {
        const instant = asUtc - offset;
        if (offsetAt(instant) === offset && (first === undefined || instant < first)) first = instant;
      }
      return first;
    },
  };
  clocks.set(timezone, clock);
  return clock;
}
