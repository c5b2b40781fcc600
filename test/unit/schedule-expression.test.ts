import { describe, expect, it } from 'vitest';
import {
  isTimeZone,
  nextFireAfter,
  parseScheduleExpression,
  type ParsedExpression,
} from '../../functions/crews/schedules/schedule-expression.js';

/**
 * EventBridge Scheduler's expressions (docs/crews.md, schedules) with a fake clock:
 * every instant is a fixed ISO time, so nothing depends on when the suite runs.
 */

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

function parsed(expr: string): ParsedExpression {
  const result = parseScheduleExpression(expr);
  if (!result.ok) throw new Error(`${expr}: ${result.reason}`);
  return result.expression;
}

function reason(expr: string): string {
  const result = parseScheduleExpression(expr);
  if (result.ok) throw new Error(`${expr} was accepted`);
  return result.reason;
}

/** The next `count` fires after `after` (ISO, UTC), each strictly after the one before. */
function fires(expr: string, timezone: string, after: string, count: number, anchor?: string): (string | undefined)[] {
  const expression = parsed(expr);
  const out: (string | undefined)[] = [];
  let now = at(after);
  for (let i = 0; i < count; i++) {
    const next = nextFireAfter(expression, timezone, now, anchor === undefined ? undefined : at(anchor));
    out.push(iso(next));
    if (next === undefined) break;
    expect(next).toBeGreaterThan(now);
    now = next;
  }
  return out;
}

describe('parseScheduleExpression', () => {
  it.each([
    // every wildcard of the cron reference: , - * / ? L W #
    ['cron(0 2 * * ? *)', { minutes: [0], hours: [2], months: range(1, 12) }],
    ['cron(0,30 8-10 ? * * *)', { minutes: [0, 30], hours: [8, 9, 10] }],
    ['cron(0/15 * * * ? *)', { minutes: [0, 15, 30, 45], hours: range(0, 23) }],
    ['cron(*/20 * * * ? *)', { minutes: [0, 20, 40] }],
    ['cron(1/10 * * * ? *)', { minutes: [1, 11, 21, 31, 41, 51] }],
    ['cron(0 8-17/3 * * ? *)', { hours: [8, 11, 14, 17] }],
    ['cron(0 0 L * ? *)', { days: { field: 'day-of-month', rule: { kind: 'last' } } }],
    ['cron(0 0 15W * ? *)', { days: { field: 'day-of-month', rule: { kind: 'nearest-weekday', day: 15 } } }],
    ['cron(0 0 1,15 * ? *)', { days: { field: 'day-of-month', rule: { kind: 'days', days: [1, 15] } } }],
    ['cron(0 0 1/10 * ? *)', { days: { field: 'day-of-month', rule: { kind: 'days', days: [1, 11, 21, 31] } } }],
    ['cron(0 12 ? * 6#3 *)', { days: { field: 'day-of-week', rule: { kind: 'nth', day: 6, nth: 3 } } }],
    ['cron(0 12 ? * FRI#1 *)', { days: { field: 'day-of-week', rule: { kind: 'nth', day: 6, nth: 1 } } }],
    [
      'cron(15 10 ? * 6L 2022-2023)',
      { days: { field: 'day-of-week', rule: { kind: 'last', day: 6 } }, years: [2022, 2023] },
    ],
    ['cron(0 0 ? * L *)', { days: { field: 'day-of-week', rule: { kind: 'days', days: [7] } } }],
    // names: JAN-DEC, SUN-SAT (1-7 = SUN-SAT)
    ['cron(0 9 ? * MON-FRI *)', { days: { field: 'day-of-week', rule: { kind: 'days', days: [2, 3, 4, 5, 6] } } }],
    ['cron(0 9 ? * SUN,WED,SAT *)', { days: { field: 'day-of-week', rule: { kind: 'days', days: [1, 4, 7] } } }],
    ['cron(0 0 1 JAN,JUL-SEP ? *)', { months: [1, 7, 8, 9] }],
    ['cron(0 0 1 3/4 ? *)', { months: [3, 7, 11] }],
    ['cron(0 0 1 * ? 2030/50)', { years: [2030, 2080, 2130, 2180] }],
    ['cron(59 23 31 12 ? 2199)', { minutes: [59], hours: [23], months: [12], years: [2199] }],
  ])('accepts %s', (expr, expected) => {
    expect(parsed(expr)).toMatchObject({ kind: 'cron', ...expected });
  });

  it.each([
    ['rate(1 minute)', { value: 1, unit: 'minute', periodMs: 60_000 }],
    ['rate(5 minutes)', { value: 5, unit: 'minute', periodMs: 300_000 }],
    ['rate(1 hour)', { value: 1, unit: 'hour', periodMs: 3_600_000 }],
    ['rate(12 hours)', { value: 12, unit: 'hour', periodMs: 43_200_000 }],
    ['rate(1 day)', { value: 1, unit: 'day', periodMs: 86_400_000 }],
    ['rate(7 days)', { value: 7, unit: 'day', periodMs: 604_800_000 }],
  ])('accepts %s', (expr, expected) => {
    expect(parsed(expr)).toEqual({ kind: 'rate', ...expected });
  });

  it.each([
    // shape
    ['', /^must be cron\(minutes hours day-of-month month day-of-week year\) or rate\(value unit\)/],
    ['0 2 * * ? *', /^must be cron\(/],
    ['at(2030-01-01T00:00:00)', /^must be cron\(/],
    ['CRON(0 2 * * ? *)', /^must be cron\(/],
    [' cron(0 2 * * ? *)', /^must be cron\(/],
    ['cron(0 2 * * ?)', /^cron\(\.\.\.\) has 5 fields; it needs 6: minutes hours day-of-month month day-of-week year$/],
    ['cron(0 0 2 * * ? *)', /has 7 fields; it needs 6/],
    ['cron()', /separated by one space/],
    ['cron(0  2 * * ? *)', /separated by one space/],
    ['cron( 0 2 * * ? *)', /separated by one space/],
    ['cron(0\t2 * * ? *)', /separated by one space/],
    [`cron(${'0,'.repeat(130)}0 2 * * ? *)`, /^must be at most 256 characters$/],
    // the ? rule
    ['cron(0 2 * * * *)', /^one of day-of-month and day-of-week must be \?/],
    ['cron(0 2 1 * MON *)', /^one of day-of-month and day-of-week must be \?/],
    ['cron(0 2 ? * ? *)', /^only one of day-of-month and day-of-week may be \?$/],
    ['cron(? 2 * * ? *)', /^minutes: \? is only for day-of-month or day-of-week$/],
    ['cron(0 2 1,? * ? *)', /^day-of-month: '\?' is not valid here/],
    // ranges and values
    ['cron(60 0 * * ? *)', /^minutes: 60 is out of range \(0-59\)$/],
    ['cron(0 24 * * ? *)', /^hours: 24 is out of range \(0-23\)$/],
    ['cron(0 0 0 * ? *)', /^day-of-month: 0 is out of range \(1-31\)$/],
    ['cron(0 0 32 * ? *)', /^day-of-month: 32 is out of range/],
    ['cron(0 0 1 13 ? *)', /^month: 13 is out of range \(1-12 or JAN-DEC\)$/],
    ['cron(0 0 ? * 0 *)', /^day-of-week: 0 is out of range \(1-7 or SUN-SAT\)$/],
    ['cron(0 0 ? * 8 *)', /^day-of-week: 8 is out of range/],
    ['cron(0 0 1 * ? 1969)', /^year: 1969 is out of range \(1970-2199\)$/],
    ['cron(0 0 1 * ? 2200)', /^year: 2200 is out of range/],
    ['cron(0 22-2 * * ? *)', /^hours: the range 22-2 goes backwards/],
    ['cron(0 0 ? * FRI-MON *)', /^day-of-week: the range FRI-MON goes backwards/],
    ['cron(0 1-2-3 * * ? *)', /^hours: '1-2-3' is not a value or a range a-b$/],
    ['cron(0 0,,1 * * ? *)', /^hours: '0,,1' has an empty item$/],
    ['cron(x 0 * * ? *)', /^minutes: 'x' is not a value \(0-59\)$/],
    ['cron(-5 0 * * ? *)', /^minutes: '-5' is not a value or a range a-b$/],
    // steps
    ['cron(0/0 * * * ? *)', /^minutes: the step in '0\/0' must be a whole number from 1 to 59$/],
    ['cron(0/60 * * * ? *)', /^minutes: the step in '0\/60' must be a whole number from 1 to 59$/],
    ['cron(0/1/2 * * * ? *)', /more than one \//],
    // names: JAN-DEC and SUN-SAT, in capitals
    ['cron(0 0 ? * mon *)', /^day-of-week: 'mon' is not a value \(1-7 or SUN-SAT\); names are in capitals \(MON\)$/],
    ['cron(0 0 1 jan ? *)', /names are in capitals \(JAN\)/],
    ['cron(0 0 1 JANUARY ? *)', /^month: 'JANUARY' is not a value/],
    ['cron(0 0 1 MON ? *)', /^month: 'MON' is not a value/],
    ['cron(0 0 ? * JAN *)', /^day-of-week: 'JAN' is not a value/],
    // L, W, # where AWS does not document them
    ['cron(0 0 LW * ? *)', /^day-of-month: 'LW' is not supported/],
    ['cron(0 0 L-3 * ? *)', /^day-of-month: 'L-3' is not supported/],
    ['cron(0 0 1,L * ? *)', /^day-of-month: '1,L' is not supported/],
    ['cron(0 0 1-5W * ? *)', /^day-of-month: '1-5W' is not supported/],
    ['cron(0 0 32W * ? *)', /^day-of-month: 32 is out of range/],
    ['cron(0 0 1#2 * ? *)', /^day-of-month: # is only for day-of-week/],
    ['cron(0 0 ? * 3#1,6#3 *)', /^day-of-week: '3#1,6#3' is not valid: # takes one day/],
    ['cron(0 0 ? * 6#6 *)', /^day-of-week: in 6#6, the place in the month must be 1 to 5$/],
    ['cron(0 0 ? * 6#0 *)', /the place in the month must be 1 to 5/],
    ['cron(0 0 ? * 8#1 *)', /^day-of-week: 8 is out of range/],
    ['cron(0 0 ? * 3W *)', /^day-of-week: W is only for day-of-month/],
    ['cron(0 0 ? * 2,6L *)', /^day-of-week: '2,6L' is not valid: L stands alone/],
    ['cron(L 0 * * ? *)', /^minutes: 'L' is not valid here/],
    ['cron(0 0 * 1W ? *)', /^month: '1W' is not valid here/],
    // rate
    ['rate(0 minutes)', /^rate value must be a whole number from 1 to 1000000/],
    ['rate(05 minutes)', /^rate value must be a whole number from 1 to 1000000, without leading zeros$/],
    ['rate(1000001 minutes)', /^rate value must be a whole number from 1 to 1000000/],
    ['rate(1.5 hours)', /^rate\(\.\.\.\) must be rate\(value unit\)/],
    ['rate(-1 hours)', /^rate\(\.\.\.\) must be rate\(value unit\)/],
    ['rate(5minutes)', /^rate\(\.\.\.\) must be rate\(value unit\)/],
    ['rate(5  minutes)', /^rate\(\.\.\.\) must be rate\(value unit\)/],
    ['rate(5 Minutes)', /^rate\(\.\.\.\) must be rate\(value unit\)/],
    ['rate(5 seconds)', /^rate unit must be minute, minutes, hour, hours, day or days \(not 'seconds'\)$/],
    ['rate(2 weeks)', /^rate unit must be/],
    ['rate(2 constructors)', /^rate unit must be/],
    // "If the value is equal to 1, then the unit must be singular [...] greater than 1, [...] plural."
    ['rate(1 minutes)', /^rate\(1 minutes\) must be rate\(1 minute\): the unit is singular for 1$/],
    ['rate(1 hours)', /^rate\(1 hours\) must be rate\(1 hour\)/],
    ['rate(1 days)', /^rate\(1 days\) must be rate\(1 day\)/],
    ['rate(5 hour)', /^rate\(5 hour\) must be rate\(5 hours\): the unit is plural above 1$/],
  ])('refuses %j: %s', (expr, message) => {
    expect(reason(expr)).toMatch(message);
  });

  it('explains every refusal in one line', () => {
    for (const expr of ['cron(0 2 * * * *)', 'rate(1 minutes)', 'cron(0 0 ? * 3#1,6#3 *)', 'nightly'])
      expect(reason(expr)).not.toContain('\n');
  });
});

describe('isTimeZone', () => {
  it.each([
    'UTC',
    'America/New_York',
    'Europe/Berlin',
    'Asia/Kolkata',
    'Asia/Calcutta',
    'America/Argentina/Buenos_Aires',
    'Etc/GMT+5',
    'America/Port-au-Prince',
  ])('accepts %s', (name) => expect(isTimeZone(name)).toBe(true));

  it.each([
    '',
    'utc',
    'america/new_york',
    'AMERICA/NEW_YORK',
    'America/new_york',
    'Mars/Olympus',
    '+05:00',
    'UTC+1',
    'Z',
    ' UTC',
    'America/New_York/',
    `Etc/${'A'.repeat(60)}`,
  ])('refuses %j', (name) => expect(isTimeZone(name)).toBe(false));
});

describe('nextFireAfter: cron', () => {
  it('fires daily at 02:00 UTC, strictly after the given instant', () => {
    expect(fires('cron(0 2 * * ? *)', 'UTC', '2024-03-01T00:00:00Z', 3)).toEqual([
      '2024-03-01T02:00:00.000Z',
      '2024-03-02T02:00:00.000Z',
      '2024-03-03T02:00:00.000Z',
    ]);
    // At the fire itself, or within its minute: the next day's.
    expect(iso(nextFireAfter(parsed('cron(0 2 * * ? *)'), 'UTC', at('2024-03-01T02:00:00Z')))).toBe(
      '2024-03-02T02:00:00.000Z',
    );
    expect(iso(nextFireAfter(parsed('cron(0 2 * * ? *)'), 'UTC', at('2024-03-01T01:59:59.999Z')))).toBe(
      '2024-03-01T02:00:00.000Z',
    );
  });

  it('fires every quarter hour, across the hour and the day', () => {
    expect(fires('cron(0/15 * * * ? *)', 'UTC', '2024-12-31T23:31:10Z', 3)).toEqual([
      '2024-12-31T23:45:00.000Z',
      '2025-01-01T00:00:00.000Z',
      '2025-01-01T00:15:00.000Z',
    ]);
  });

  it('fires at 09:00 on weekdays only (2024-03-08 is a Friday)', () => {
    expect(fires('cron(0 9 ? * MON-FRI *)', 'UTC', '2024-03-08T09:00:00Z', 3)).toEqual([
      '2024-03-11T09:00:00.000Z',
      '2024-03-12T09:00:00.000Z',
      '2024-03-13T09:00:00.000Z',
    ]);
  });

  it('fires on the last day of each month (L), February of a leap year included', () => {
    expect(fires('cron(0 0 L * ? *)', 'UTC', '2024-01-15T00:00:00Z', 4)).toEqual([
      '2024-01-31T00:00:00.000Z',
      '2024-02-29T00:00:00.000Z',
      '2024-03-31T00:00:00.000Z',
      '2024-04-30T00:00:00.000Z',
    ]);
    expect(fires('cron(0 0 L 2 ? *)', 'UTC', '2025-01-01T00:00:00Z', 1)).toEqual(['2025-02-28T00:00:00.000Z']);
  });

  it('fires on the third Friday (6#3) and the last Friday (6L)', () => {
    expect(fires('cron(0 12 ? * 6#3 *)', 'UTC', '2024-01-01T00:00:00Z', 3)).toEqual([
      '2024-01-19T12:00:00.000Z',
      '2024-02-16T12:00:00.000Z',
      '2024-03-15T12:00:00.000Z',
    ]);
    // AWS's own example: 10:15 on the last Friday of each month of 2022-2023, then never again.
    expect(fires('cron(15 10 ? * 6L 2022-2023)', 'UTC', '2023-11-01T00:00:00Z', 3)).toEqual([
      '2023-11-24T10:15:00.000Z',
      '2023-12-29T10:15:00.000Z',
      undefined,
    ]);
    // A fifth Monday exists in some months only: 2024 has one in January, April, July, September, December.
    expect(fires('cron(0 0 ? * MON#5 *)', 'UTC', '2024-01-01T00:00:00Z', 3)).toEqual([
      '2024-01-29T00:00:00.000Z',
      '2024-04-29T00:00:00.000Z',
      '2024-07-29T00:00:00.000Z',
    ]);
  });

  it('fires on the weekday nearest the 15th (15W), and never across the month boundary (1W, 31W)', () => {
    // 2024-06-15 is a Saturday (Friday the 14th), 2024-09-15 a Sunday (Monday the 16th).
    expect(fires('cron(0 0 15W * ? *)', 'UTC', '2024-05-31T00:00:00Z', 5)).toEqual([
      '2024-06-14T00:00:00.000Z',
      '2024-07-15T00:00:00.000Z',
      '2024-08-15T00:00:00.000Z',
      '2024-09-16T00:00:00.000Z',
      '2024-10-15T00:00:00.000Z',
    ]);
    // 2024-06-01 is a Saturday: Monday the 3rd, not Friday May 31st.
    expect(fires('cron(0 0 1W 6 ? *)', 'UTC', '2024-01-01T00:00:00Z', 1)).toEqual(['2024-06-03T00:00:00.000Z']);
    // 2024-03-31 is a Sunday: Friday the 29th, not Monday April 1st; 31W names no day of April.
    expect(fires('cron(0 0 31W * ? *)', 'UTC', '2024-03-01T00:00:00Z', 2)).toEqual([
      '2024-03-29T00:00:00.000Z',
      '2024-05-31T00:00:00.000Z',
    ]);
  });

  it('finds rare and impossible dates at once: 29 February, 31 February, a past year', () => {
    expect(fires('cron(0 0 29 2 ? *)', 'UTC', '2024-03-01T00:00:00Z', 3)).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2032-02-29T00:00:00.000Z',
      '2036-02-29T00:00:00.000Z',
    ]);
    // 2100 is no leap year.
    expect(fires('cron(0 0 29 2 ? 2097-2199)', 'UTC', '2096-03-01T00:00:00Z', 2)).toEqual([
      '2104-02-29T00:00:00.000Z',
      '2108-02-29T00:00:00.000Z',
    ]);
    expect(fires('cron(0 0 31 2 ? *)', 'UTC', '2024-03-01T00:00:00Z', 1)).toEqual([undefined]);
    expect(fires('cron(0 9 * * ? 2020)', 'UTC', '2024-03-01T00:00:00Z', 1)).toEqual([undefined]);
    expect(fires('cron(59 23 31 12 ? 2199)', 'UTC', '2024-03-01T00:00:00Z', 2)).toEqual([
      '2199-12-31T23:59:00.000Z',
      undefined,
    ]);
    // Field by field, not minute by minute: a thousand searches that never fire stay far from a second each.
    const never = parsed('cron(0 0 31 2 ? *)');
    const started = performance.now();
    for (let i = 0; i < 1000; i++) nextFireAfter(never, 'Europe/Berlin', at('1970-01-01T00:00:00Z') + i * 60_000);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('reads the wall clock of the time zone (America/New_York, Europe/Berlin, Asia/Kolkata)', () => {
    // 09:00 in New York is 14:00 UTC in winter (EST) and 13:00 UTC in summer (EDT).
    expect(fires('cron(0 9 ? * MON-FRI *)', 'America/New_York', '2024-03-08T00:00:00Z', 2)).toEqual([
      '2024-03-08T14:00:00.000Z',
      '2024-03-11T13:00:00.000Z',
    ]);
    expect(fires('cron(0 9 * * ? *)', 'Europe/Berlin', '2024-07-01T00:00:00Z', 1)).toEqual([
      '2024-07-01T07:00:00.000Z',
    ]);
    expect(fires('cron(0 9 * * ? *)', 'Europe/Berlin', '2024-12-01T00:00:00Z', 1)).toEqual([
      '2024-12-01T08:00:00.000Z',
    ]);
    // +05:30, no daylight saving: midnight of New Year is 18:30 UTC the day before.
    expect(fires('cron(0 0 1 1 ? *)', 'Asia/Kolkata', '2024-03-01T00:00:00Z', 2)).toEqual([
      '2024-12-31T18:30:00.000Z',
      '2025-12-31T18:30:00.000Z',
    ]);
    // The day, month and year are the zone's: 23:30 on 31 December in New York is already 2025 in UTC.
    expect(fires('cron(30 23 31 12 ? 2024)', 'America/New_York', '2024-01-01T00:00:00Z', 2)).toEqual([
      '2025-01-01T04:30:00.000Z',
      undefined,
    ]);
    // The last day of the month in Kolkata starts 5.5 hours before it does in UTC, on the 30th.
    expect(fires('cron(0 0 L * ? *)', 'Asia/Kolkata', '2024-01-30T18:00:00Z', 2)).toEqual([
      '2024-01-30T18:30:00.000Z',
      '2024-02-28T18:30:00.000Z',
    ]);
  });

  describe('daylight saving, as Scheduler documents it: a skipped time does not fire, a repeated one fires once', () => {
    it('America/New_York, spring forward (2024-03-10, 02:00 EST → 03:00 EDT): no 02:30 that day', () => {
      expect(fires('cron(30 2 * * ? *)', 'America/New_York', '2024-03-08T12:00:00Z', 3)).toEqual([
        '2024-03-09T07:30:00.000Z', // 02:30 EST
        '2024-03-11T06:30:00.000Z', // 02:30 EDT: 10 March is skipped
        '2024-03-12T06:30:00.000Z',
      ]);
      // Hourly: 01:30 EST, then 03:30 EDT, one hour later.
      expect(fires('cron(30 * * * ? *)', 'America/New_York', '2024-03-10T06:00:00Z', 2)).toEqual([
        '2024-03-10T06:30:00.000Z',
        '2024-03-10T07:30:00.000Z',
      ]);
    });

    it('America/New_York, fall back (2024-11-03, 02:00 EDT → 01:00 EST): 01:30 fires once, at its first instance', () => {
      expect(fires('cron(30 2 * * ? *)', 'America/New_York', '2024-11-02T00:00:00Z', 3)).toEqual([
        '2024-11-02T06:30:00.000Z', // 02:30 EDT
        '2024-11-03T07:30:00.000Z', // 02:30 EST: after the shift, once
        '2024-11-04T07:30:00.000Z',
      ]);
      expect(fires('cron(30 1 * * ? *)', 'America/New_York', '2024-11-02T12:00:00Z', 2)).toEqual([
        '2024-11-03T05:30:00.000Z', // 01:30 EDT, before the shift
        '2024-11-04T06:30:00.000Z', // not 01:30 EST on the 3rd (06:30 UTC)
      ]);
      // Asked during the repeated hour (01:15 EST), after the first 01:30 has passed: the next day's.
      expect(iso(nextFireAfter(parsed('cron(30 1 * * ? *)'), 'America/New_York', at('2024-11-03T06:15:00Z')))).toBe(
        '2024-11-04T06:30:00.000Z',
      );
      // Hourly: 00:30 EDT, 01:30 EDT, then 02:30 EST two hours later.
      expect(fires('cron(30 * * * ? *)', 'America/New_York', '2024-11-03T04:00:00Z', 3)).toEqual([
        '2024-11-03T04:30:00.000Z',
        '2024-11-03T05:30:00.000Z',
        '2024-11-03T07:30:00.000Z',
      ]);
    });

    it('Europe/Berlin, spring forward (2024-03-31, 02:00 CET → 03:00 CEST): no 02:30 that day', () => {
      expect(fires('cron(30 2 * * ? *)', 'Europe/Berlin', '2024-03-29T12:00:00Z', 3)).toEqual([
        '2024-03-30T01:30:00.000Z', // 02:30 CET
        '2024-04-01T00:30:00.000Z', // 02:30 CEST: 31 March is skipped
        '2024-04-02T00:30:00.000Z',
      ]);
    });

    it('Europe/Berlin, fall back (2024-10-27, 03:00 CEST → 02:00 CET): 02:30 fires once, before the shift', () => {
      expect(fires('cron(30 2 * * ? *)', 'Europe/Berlin', '2024-10-25T12:00:00Z', 3)).toEqual([
        '2024-10-26T00:30:00.000Z', // 02:30 CEST
        '2024-10-27T00:30:00.000Z', // 02:30 CEST, the first instance; not 01:30 UTC (02:30 CET)
        '2024-10-28T01:30:00.000Z', // 02:30 CET
      ]);
    });

    it('a zone without daylight saving never skips or repeats (Asia/Kolkata, UTC)', () => {
      expect(fires('cron(30 2 * * ? *)', 'Asia/Kolkata', '2024-03-09T00:00:00Z', 3)).toEqual([
        '2024-03-09T21:00:00.000Z',
        '2024-03-10T21:00:00.000Z',
        '2024-03-11T21:00:00.000Z',
      ]);
      expect(fires('cron(30 2 * * ? *)', 'UTC', '2024-03-30T00:00:00Z', 3)).toEqual([
        '2024-03-30T02:30:00.000Z',
        '2024-03-31T02:30:00.000Z',
        '2024-04-01T02:30:00.000Z',
      ]);
    });
  });
});

describe('nextFireAfter: rate', () => {
  it('fires first one period after its anchor, then every period from there', () => {
    const anchor = '2024-03-01T10:00:30Z';
    expect(fires('rate(1 minute)', 'UTC', anchor, 3, anchor)).toEqual([
      '2024-03-01T10:01:30.000Z',
      '2024-03-01T10:02:30.000Z',
      '2024-03-01T10:03:30.000Z',
    ]);
    expect(fires('rate(5 minutes)', 'UTC', anchor, 2, anchor)).toEqual([
      '2024-03-01T10:05:30.000Z',
      '2024-03-01T10:10:30.000Z',
    ]);
    // Not at the next whole minute: an hour after the anchor, which is never itself a fire.
    expect(fires('rate(1 hour)', 'UTC', '2024-03-01T10:00:00Z', 2, '2024-03-01T10:00:00Z')).toEqual([
      '2024-03-01T11:00:00.000Z',
      '2024-03-01T12:00:00.000Z',
    ]);
    // The anchor counts to the whole second (Scheduler's StartDate and scheduled times have no milliseconds).
    expect(fires('rate(1 minute)', 'UTC', '2024-03-01T10:00:30.987Z', 1, '2024-03-01T10:00:30.987Z')).toEqual([
      '2024-03-01T10:01:30.000Z',
    ]);
  });

  it('keeps to the anchor whenever it is asked, between fires or on one', () => {
    const every = parsed('rate(2 hours)');
    const anchor = at('2024-03-01T10:00:30Z'); // fires 12:00:30, 14:00:30, 16:00:30, ...
    expect(iso(nextFireAfter(every, 'UTC', at('2024-03-01T13:37:00Z'), anchor))).toBe('2024-03-01T14:00:30.000Z');
    expect(iso(nextFireAfter(every, 'UTC', at('2024-03-01T14:00:30Z'), anchor))).toBe('2024-03-01T16:00:30.000Z');
    expect(iso(nextFireAfter(every, 'UTC', at('2024-03-01T14:00:29.999Z'), anchor))).toBe('2024-03-01T14:00:30.000Z');
    // On the anchor or before it: its first fire, one period on.
    expect(iso(nextFireAfter(every, 'UTC', anchor, anchor))).toBe('2024-03-01T12:00:30.000Z');
    expect(iso(nextFireAfter(every, 'UTC', at('2024-02-01T00:00:00Z'), anchor))).toBe('2024-03-01T12:00:30.000Z');
    // Without an anchor it counts from the instant asked about.
    expect(iso(nextFireAfter(every, 'UTC', at('2024-03-01T13:37:20Z')))).toBe('2024-03-01T15:37:20.000Z');
  });

  it('counts a day as 24 hours, across daylight saving and whatever the zone', () => {
    // "days represents a 24-hour duration on the clock": 09:00 EST becomes 10:00 EDT after 10 March.
    const anchor = '2024-03-09T14:00:10Z';
    const expected = ['2024-03-10T14:00:10.000Z', '2024-03-11T14:00:10.000Z', '2024-03-12T14:00:10.000Z'];
    expect(fires('rate(1 day)', 'America/New_York', anchor, 3, anchor)).toEqual(expected);
    expect(fires('rate(1 day)', 'UTC', anchor, 3, anchor)).toEqual(expected);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
