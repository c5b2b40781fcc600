import { jsonBytes } from '../../shared/json.js';

/**
 * Size bounds of what a run writes and E13 answers, measured as JSON in UTF-8 bytes: an
 * event's data is stored as JSON text and served as JSON, where a control character takes
 * six bytes (`\u0001`), not one. A DynamoDB item holds at most 400 KB (names included).
 */

/** A step's output: every step of a run fits in its `run.completed` event. */
export const MAX_OUTPUT_BYTES = 16 * 1024;
/** Each text of a step's input as `step.started` shows it (a prompt, a body, a URL). */
export const MAX_INPUT_BYTES = 64 * 1024;
/** A failure's text (step.failed, run.failed, the run's `error`). */
export const MAX_ERROR_BYTES = 2 * 1024;
/** An approval's rendered prompt (in its `step.waiting` event). */
export const MAX_PROMPT_BYTES = 64 * 1024;
/** An event's message. */
export const MAX_MESSAGE_BYTES = 4 * 1024;
/** An event's data: with its message and the other attributes, well under 400 KB. */
export const MAX_EVENT_DATA_BYTES = 350_000;
/** One E13 answer (a JSON array of events). */
export const MAX_EVENTS_PAGE_BYTES = 1024 * 1024;

/** At most this many runs match one bulk cancel (POST /api/crew-runs/cancel); its `more` says whether others do. */
export const MAX_BULK_CANCEL = 1000;

/** Bytes one code point takes inside a JSON string (JSON.stringify's escapes, UTF-8). */
function escapedBytes(codePoint: number): number {
  if (codePoint === 0x22 || codePoint === 0x5c) return 2;
  if (codePoint < 0x20) return [0x08, 0x09, 0x0a, 0x0c, 0x0d].includes(codePoint) ? 2 : 6;
  if (codePoint < 0x80) return 1;
  if (codePoint < 0x800) return 2;
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) return 6; // a lone surrogate is escaped
  return codePoint < 0x10000 ? 3 : 4;
}

/** The longest start of `text` whose JSON string content takes at most `budget` bytes. */
function startWithin(text: string, budget: number): string {
  let used = 0;
  let end = 0;
  while (end < text.length) {
    const codePoint = text.codePointAt(end)!;
    used += escapedBytes(codePoint);
    if (used > budget) break;
    end += codePoint > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}

/**
 * `value` when its JSON takes at most `maxBytes`; otherwise the start of its text (a string
 * as it is, another value as its JSON) with a marker, together at most `maxBytes` as JSON.
 */
export function capJson(value: unknown, maxBytes: number): unknown {
  const size = jsonBytes(value);
  if (size <= maxBytes) return value;
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
  const marker = `…[truncated: ${size} bytes as JSON, over the limit of ${maxBytes}]`;
  return startWithin(text, Math.max(0, maxBytes - jsonBytes(marker))) + marker;
}

/** Text cut to at most `maxBytes` as a JSON string. */
export const capText = (text: string, maxBytes: number): string => capJson(text, maxBytes) as string;

/**
 * The outputs of `run.completed`, at most `maxBytes` as `{"outputs": ...}`: when they do not
 * fit, the largest are replaced by a note pointing to their step.completed event.
 */
export function boundOutputs(
  outputs: Readonly<Record<string, unknown>>,
  maxBytes = MAX_EVENT_DATA_BYTES,
): Record<string, unknown> {
  // Step ids are names from users: no inherited keys (as the runner keeps them).
  const bounded: Record<string, unknown> = Object.assign(Object.create(null), outputs);
  let size = jsonBytes({ outputs: bounded });
  const largestFirst = Object.keys(bounded)
    .map((id) => ({ id, bytes: jsonBytes(bounded[id]) }))
    .sort((a, b) => b.bytes - a.bytes);
  for (const { id, bytes } of largestFirst) {
    if (size <= maxBytes) break;
    const note = `[omitted: ${bytes} bytes as JSON; see the step.completed event of step ${id}]`;
    if (jsonBytes(note) >= bytes) break;
    size += jsonBytes(note) - bytes;
    bounded[id] = note;
  }
  return bounded;
}

/**
 * The first events that fit in `maxBytes` as one JSON array; at least one event when there
 * is any, so a client that continues after the last index always advances.
 */
export function fittingPage<T>(events: readonly T[], maxBytes = MAX_EVENTS_PAGE_BYTES): T[] {
  let size = 2; // []
  let count = 0;
  for (const event of events) {
    size += jsonBytes(event) + (count > 0 ? 1 : 0);
    if (size > maxBytes && count > 0) break;
    count++;
  }
  return events.slice(0, count);
}
