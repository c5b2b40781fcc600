import { inspect } from 'node:util';

/** What a check answers while its condition does not hold yet, with what it saw. */
export interface NotYet {
  readonly notYet: true;
  readonly seen: unknown;
}

/** "Not yet": `seen` (what the check found) is shown if the time runs out. */
export const notYet = (seen: unknown): NotYet => ({ notYet: true, seen });

const isNotYet = (value: unknown): value is NotYet =>
  typeof value === 'object' && value !== null && (value as Partial<NotYet>).notYet === true;

/** Thrown by `eventually` when the time ran out; `last` is what the check saw last. */
export class NotWithin extends Error {
  constructor(
    readonly what: string,
    readonly ms: number,
    readonly last: unknown,
  ) {
    super(`eventually: ${what}, not within ${ms} ms; the last check saw ${show(last)}`);
    this.name = 'NotWithin';
  }
}

/** A value for a failure message: a string as it is (a process's output reads better so), else inspected. */
function show(value: unknown): string {
  const text = typeof value === 'string' ? value : inspect(value, { depth: 4, maxArrayLength: 30, breakLength: 120 });
  return text.length > 4_000 ? `${text.slice(0, 4_000)}… (${text.length} characters)` : text;
}

type Answer<T> = T | undefined | false | NotYet;

/**
 * Polls `check` until its condition holds, and answers what the check answered then.
 * A check holds by answering anything but undefined, false or `notYet(seen)`. It runs at
 * once, then every `every` ms; once `ms` have passed it fails with `NotWithin`, naming
 * `what` and what the check saw last. An error the check throws fails at once: it is a
 * failure, not a "not yet".
 *
 * The one way tests wait for something to happen; a fixed sleep is only for a wait that is
 * the thing tested ("nothing more arrives within 2 s").
 */
export async function eventually<T>(
  check: () => Answer<T> | Promise<Answer<T>>,
  ms = 15_000,
  what = 'the condition',
  every = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await check();
    if (answer !== undefined && answer !== false && !isNotYet(answer)) return answer;
    if (Date.now() > deadline) throw new NotWithin(what, ms, isNotYet(answer) ? answer.seen : answer);
    await new Promise((r) => setTimeout(r, every));
  }
}
