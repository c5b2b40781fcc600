import type { ContentChange, VersionDiff } from './schemas.js';

/**
 * The bounds of one diff answer (docs/reviewing.md; fair use): small stored content can differ in
 * many places, and each change repeats its whole path (30 levels of 120-character keys make
 * a 3.6 KB path), so 137 KB of content could otherwise make a 44 MB answer.
 */
export interface DiffBounds {
  /** The most changes an answer holds. */
  readonly changes: number;
  /** The most bytes of the answer's JSON, its `from`, `to` and flags included. */
  readonly bytes: number;
}
export const DIFF_BOUNDS: DiffBounds = { changes: 1_000, bytes: 1024 * 1024 };

/** A version compared: what the answer names it by, and its content. */
export interface ComparedVersion {
  readonly ref: { version: number; content_sha: string };
  readonly content: unknown;
}

const isContainer = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const has = (o: object, key: string) => Object.prototype.hasOwnProperty.call(o, key);
/** An array's indexes as strings (its elements unread), an object's own keys: the segments under a container. */
function keysOf(o: object): string[] {
  if (!Array.isArray(o)) return Object.keys(o);
  const keys = new Array<string>(o.length);
  for (let i = 0; i < keys.length; i++) keys[i] = String(i);
  return keys;
}
/** A key as one JSON Pointer segment (RFC 6901): "~" is "~0" and "/" is "~1". */
const segment = (key: string) =>
  key.includes('/') || key.includes('~') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/**
 * The changes that turn `before` into `after` (docs/reviewing.md), one at a time: each is found
 * only when the one before it has been taken, so a caller that stops taking stops the
 * comparison. Paths are JSON Pointers (RFC 6901); the changes come in the order of a JSON
 * Patch (RFC 6902) that applies in sequence, the order fast-json-patch's `compare` gives
 * (which this replaced: it always made the whole patch): within a container, its keys from
 * the last to the first (changed, or removed: an array's extra elements go from its end),
 * then the keys only `after` has, first to last. A `remove` and a `replace` carry the value
 * they find (`old`). Two values that are not both objects or both arrays are one `replace`
 * of the whole content (`""`).
 */
export function* contentChanges(before: unknown, after: unknown): Generator<ContentChange, void, undefined> {
  if (isContainer(before) && isContainer(after) && Array.isArray(before) === Array.isArray(after)) {
    yield* containerChanges(before, after, '');
  } else if (before !== after) {
    // JSON has no two equal primitives that are not ===, and a container never equals a primitive
    yield { op: 'replace', path: '', old: before, new: after };
  }
}

function* containerChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
): Generator<ContentChange, void, undefined> {
  if (before === after) return;
  const oldKeys = keysOf(before);
  let removed = false;
  for (let i = oldKeys.length - 1; i >= 0; i--) {
    const key = oldKeys[i]!;
    const old = before[key];
    if (!has(after, key)) {
      removed = true;
      yield { op: 'remove', path: `${path}/${segment(key)}`, old };
      continue;
    }
    const now = after[key];
    if (isContainer(old) && isContainer(now) && Array.isArray(old) === Array.isArray(now)) {
      yield* containerChanges(old, now, `${path}/${segment(key)}`);
    } else if (old !== now) {
      yield { op: 'replace', path: `${path}/${segment(key)}`, old, new: now };
    }
  }
  const newKeys = keysOf(after);
  // Nothing removed and as many keys: `after` has no key `before` lacks.
  if (!removed && newKeys.length === oldKeys.length) return;
  for (const key of newKeys) {
    if (!has(before, key)) yield { op: 'add', path: `${path}/${segment(key)}`, new: after[key] };
  }
}

/**
 * The diff answer of `to` against `from` (docs/reviewing.md), bounded: at most `bounds.changes`
 * changes and `bounds.bytes` bytes of JSON. The answer's bytes are counted as it is built
 * (each change's JSON, and the comma before it), beside the bytes of the rest of the answer
 * at their largest (`truncated: true` and a `change_count` past the count bound). The first
 * change that does not fit ends the comparison: the answer keeps the changes before it,
 * with `truncated: true` and `change_count` the changes found so far, that one included,
 * which is a lower bound of the total (counting the rest would be the comparison the bound
 * is there to stop). Otherwise `truncated` is false and every change is there. With no
 * `from`, the whole content is one `add` at "", bounded the same way.
 */
export function versionDiff(
  from: ComparedVersion | null,
  to: ComparedVersion,
  bounds: DiffBounds = DIFF_BOUNDS,
): VersionDiff {
  const head = { from: from?.ref ?? null, to: to.ref };
  const changes: Iterable<ContentChange> = from
    ? contentChanges(from.content, to.content)
    : [{ op: 'add', path: '', new: to.content }];
  let bytes = jsonBytes({ ...head, changes: [], truncated: true, change_count: bounds.changes + 1 });
  const kept: ContentChange[] = [];
  // Leaving the loop early closes the generator: the comparison goes no further.
  for (const change of changes) {
    const size = jsonBytes(change) + (kept.length > 0 ? 1 : 0);
    if (kept.length >= bounds.changes || bytes + size > bounds.bytes) {
      return { ...head, changes: kept, truncated: true, change_count: kept.length + 1 };
    }
    kept.push(change);
    bytes += size;
  }
  return { ...head, changes: kept, truncated: false };
}
