import fc from 'fast-check';
// The default export: Node loads the package's CommonJS build, whose names ESM cannot list.
import jsonPatch, { type Operation } from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { contentChanges, DIFF_BOUNDS, type DiffBounds, versionDiff } from '../../functions/decisions/diff.js';
import type { ContentChange, VersionDiff } from '../../functions/decisions/schemas.js';
import { DecisionService, DIFFS_AT_ONCE, diffTurns } from '../../functions/decisions/service.js';
import { NotFound } from '../../shared/errors.js';
import type { DecisionStore, UnparsedVersion, VersionItem } from '../../functions/decisions/store.js';
import { AMPLIFYING, amplifyingContent } from '../support/amplifying-content.js';

const v = (version: number) => ({ version, content_sha: `sha-${version}` });
const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
/** The path of the finding's contents down to their leaves: 30 keys of 120 characters. */
const amplifyingPrefix = (() => {
  let path = '';
  let node: unknown = amplifyingContent(() => 0);
  while (typeof node === 'object' && node !== null && Object.keys(node).length === 1) {
    const key = Object.keys(node)[0]!;
    path += `/${key}`;
    node = (node as Record<string, unknown>)[key];
  }
  return path;
})();
const leafPath = (i: number) => `${amplifyingPrefix}/l${i}`;
/** The finding's two versions: every one of the 12,000 leaves differs. */
const amplifyingBefore = amplifyingContent((i) => i % 100);
const amplifyingAfter = amplifyingContent((i) => (i + 1) % 100);

/** The diff as it was made before the bounds: fast-json-patch's whole patch, turned into changes. */
function wholePatchChanges(before: unknown, after: unknown): ContentChange[] {
  const isContainer = (x: unknown) => typeof x === 'object' && x !== null;
  if (!isContainer(before) || !isContainer(after) || Array.isArray(before) !== Array.isArray(after)) {
    return JSON.stringify(before) === JSON.stringify(after)
      ? []
      : [{ op: 'replace', path: '', old: before, new: after }];
  }
  const changes: ContentChange[] = [];
  let tested: { path: string; value: unknown } | undefined;
  for (const op of jsonPatch.compare(before as object, after as object, true) as Operation[]) {
    if (op.op === 'test') tested = { path: op.path, value: op.value };
    else if (op.op === 'add') changes.push({ op: 'add', path: op.path, new: op.value });
    else if (op.op === 'remove' || op.op === 'replace') {
      const old = tested?.path === op.path ? { old: tested.value } : {};
      changes.push(
        op.op === 'remove'
          ? { op: 'remove', path: op.path, ...old }
          : { op: 'replace', path: op.path, ...old, new: op.value },
      );
      tested = undefined;
    }
  }
  return changes;
}

/** `value` with every property read of it (at any depth) counted in `reads`. */
function countingReads<T>(value: T, reads: { n: number }): T {
  if (typeof value !== 'object' || value === null) return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      reads.n++;
      return countingReads(Reflect.get(target, key, receiver), reads);
    },
  });
}

/** Contents that share keys and values often, so that pairs of them differ in every way. */
const content = fc
  .letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom(0, 1, 'x', null, true),
      tie('array'),
      tie('object'),
    ),
    array: fc.array(tie('value'), { maxLength: 4 }),
    object: fc.dictionary(fc.constantFrom('a', 'b', 'c', 'a/b', '~0', '__proto__'), tie('value'), { maxKeys: 4 }),
  }))
  .value.map((x) => JSON.parse(JSON.stringify(x)) as unknown);

describe('contentChanges', () => {
  it('finds the changes the whole fast-json-patch patch gave, in its order, and they apply as a JSON Patch', () => {
    fc.assert(
      fc.property(content, content, (before, after) => {
        const changes = [...contentChanges(before, after)];
        expect(changes).toEqual(wholePatchChanges(before, after));
        const patch = changes.map(({ op, path, new: value }) =>
          op === 'remove' ? { op, path } : { op, path, value },
        ) as Operation[];
        // fast-json-patch applies a "__proto__" key by assignment (the prototype, not a key):
        // a plain key in parsed JSON, compared above but not applied here
        if (JSON.stringify([before, after]).includes('"__proto__"')) return;
        const applied = jsonPatch.applyPatch(structuredClone(before), patch, false, false).newDocument;
        expect(applied).toEqual(after);
      }),
      { numRuns: 2_000 },
    );
  });

  it('escapes "/" and "~" in keys, and replaces contents of different kinds as a whole', () => {
    expect([...contentChanges({ 'a/b': { '~x': 1 } }, { 'a/b': { '~x': 2 } })]).toEqual([
      { op: 'replace', path: '/a~1b/~0x', old: 1, new: 2 },
    ]);
    expect([...contentChanges({ a: 1 }, [1])]).toEqual([{ op: 'replace', path: '', old: { a: 1 }, new: [1] }]);
    expect([...contentChanges(1, 1)]).toEqual([]);
    expect([...contentChanges(null, { a: 1 })]).toEqual([{ op: 'replace', path: '', old: null, new: { a: 1 } }]);
  });
});

describe('versionDiff: below the bounds', () => {
  it('answers every change exactly, with truncated false and no change_count', () => {
    const before = { limits: { daily: 100, tiers: [1, 2] }, region: 'eu', owner: 'risk' };
    const after = { limits: { daily: 150, tiers: [1, 3, 4] }, owner: 'risk', approved_regions: ['eu', 'us'] };
    expect(versionDiff({ ref: v(1), content: before }, { ref: v(2), content: after })).toStrictEqual({
      from: v(1),
      to: v(2),
      changes: [
        { op: 'remove', path: '/region', old: 'eu' },
        { op: 'replace', path: '/limits/tiers/1', old: 2, new: 3 },
        { op: 'add', path: '/limits/tiers/2', new: 4 },
        { op: 'replace', path: '/limits/daily', old: 100, new: 150 },
        { op: 'add', path: '/approved_regions', new: ['eu', 'us'] },
      ],
      truncated: false,
    });
    expect(versionDiff({ ref: v(1), content: after }, { ref: v(1), content: after })).toStrictEqual({
      from: v(1),
      to: v(1),
      changes: [],
      truncated: false,
    });
  });

  it('without a version to compare with: the whole content as one add at "", up to the content limit', () => {
    expect(versionDiff(null, { ref: v(1), content: { a: 1 } })).toStrictEqual({
      from: null,
      to: v(1),
      changes: [{ op: 'add', path: '', new: { a: 1 } }],
      truncated: false,
    });
    // a content of 200 KiB (the largest a version holds) fits in 1 MiB
    const large = { text: 'x'.repeat(200 * 1024 - 20) };
    const diff = versionDiff(null, { ref: v(1), content: large });
    expect(diff.truncated).toBe(false);
    expect(diff.changes).toEqual([{ op: 'add', path: '', new: large }]);
  });

  it('exactly 1,000 changes is not truncated', () => {
    const before = Array.from({ length: 1_000 }, () => 0);
    const after = Array.from({ length: 1_000 }, () => 1);
    const diff = versionDiff({ ref: v(1), content: before }, { ref: v(2), content: after });
    expect(diff.truncated).toBe(false);
    expect(diff.changes).toHaveLength(1_000);
    expect(diff).not.toHaveProperty('change_count');
  });
});

describe('versionDiff: bounded', () => {
  it('by count: 1,000 changes, truncated, change_count the changes found (the one left out included)', () => {
    for (const total of [1_001, 5_000]) {
      const before = Array.from({ length: total }, () => 0);
      const after = Array.from({ length: total }, () => 1);
      const diff = versionDiff({ ref: v(1), content: before }, { ref: v(2), content: after });
      expect(diff.changes).toEqual(wholePatchChanges(before, after).slice(0, 1_000));
      expect(diff.truncated).toBe(true);
      // a lower bound: the comparison stopped at the 1,001st change
      expect(diff.change_count).toBe(1_001);
      expect(diff.change_count).toBeLessThanOrEqual(total);
    }
  });

  it("by bytes: the finding's 12,000 changes of 3.6 KB paths answer at most 1 MiB, as many changes as fit", () => {
    const diff = versionDiff({ ref: v(1), content: amplifyingBefore }, { ref: v(2), content: amplifyingAfter });
    const size = bytesOf(diff);
    expect(size).toBeLessThanOrEqual(DIFF_BOUNDS.bytes);
    expect(diff.truncated).toBe(true);
    expect(diff.changes.length).toBeLessThan(DIFF_BOUNDS.changes);
    expect(diff.change_count).toBe(diff.changes.length + 1);
    // the changes are the first of the whole diff, and the next one would not have fitted
    const whole = [...contentChanges(amplifyingBefore, amplifyingAfter)];
    expect(whole).toHaveLength(AMPLIFYING.leaves);
    expect(diff.changes).toEqual(whole.slice(0, diff.changes.length));
    const next = whole[diff.changes.length]!;
    expect(size + 1 + bytesOf(next)).toBeGreaterThan(DIFF_BOUNDS.bytes);
    // within a change of the bound: about 280 changes of 3.7 KB
    expect(size).toBeGreaterThan(DIFF_BOUNDS.bytes - 2 * bytesOf(next));
    expect(diff.changes[0]).toEqual({ op: 'replace', path: leafPath(11_999), old: 99, new: 0 });
  });

  it('by bytes, exactly: changes that fill 1 MiB to the byte are all there, one byte more leaves the last out', () => {
    // 300 replacements of 0 by a string. The bytes are counted with room for `truncated:
    // true` and the largest `change_count` (whether more follow is not known yet), so the
    // bound is met by that form of the answer; the last change found (index 0: a JSON
    // Patch's order goes from an array's end) is made as long as brings it to 1 MiB.
    const before = Array.from({ length: 300 }, () => 0);
    const after = (first: number) => Array.from({ length: 300 }, (_, i) => 'x'.repeat(i === 0 ? first : 3_400));
    const diffTo = (first: number) => versionDiff({ ref: v(1), content: before }, { ref: v(2), content: after(first) });
    const asTruncated = (diff: VersionDiff) =>
      bytesOf({ ...diff, truncated: true, change_count: DIFF_BOUNDS.changes + 1 });
    const exact = DIFF_BOUNDS.bytes - asTruncated(diffTo(0));
    expect(exact).toBeGreaterThan(0);

    const full = diffTo(exact);
    expect(full.truncated).toBe(false);
    expect(full.changes).toHaveLength(300);
    expect(asTruncated(full)).toBe(DIFF_BOUNDS.bytes);
    expect(bytesOf(full)).toBeLessThan(DIFF_BOUNDS.bytes);

    const over = diffTo(exact + 1);
    expect(over).toMatchObject({ truncated: true, change_count: 300 });
    expect(over.changes).toEqual(full.changes.slice(0, 299));
    expect(bytesOf(over)).toBeLessThanOrEqual(DIFF_BOUNDS.bytes);
  });

  it('a whole content larger than the byte bound is left out, with change_count 1', () => {
    const content = { text: 'x'.repeat(2_000) };
    expect(versionDiff(null, { ref: v(1), content }, { changes: 1_000, bytes: 1_000 })).toStrictEqual({
      from: null,
      to: v(1),
      changes: [],
      truncated: true,
      change_count: 1,
    });
  });

  it('under any bounds: a prefix of the whole diff, within the bytes, truncated exactly when changes are left out', () => {
    fc.assert(
      fc.property(
        content,
        content,
        fc.record({ changes: fc.integer({ min: 0, max: 8 }), bytes: fc.integer({ min: 0, max: 600 }) }),
        (before, after, bounds: DiffBounds) => {
          const whole = [...contentChanges(before, after)];
          const diff = versionDiff({ ref: v(1), content: before }, { ref: v(2), content: after }, bounds);
          expect(diff.changes).toEqual(whole.slice(0, diff.changes.length));
          expect(diff.changes.length).toBeLessThanOrEqual(bounds.changes);
          if (diff.changes.length > 0) expect(bytesOf(diff)).toBeLessThanOrEqual(bounds.bytes);
          expect(diff.truncated).toBe(diff.changes.length < whole.length);
          if (diff.truncated) {
            expect(diff.change_count).toBe(diff.changes.length + 1);
            // left out only because the next change did not fit
            const next = whole[diff.changes.length]!;
            const withNext = { ...diff, changes: [...diff.changes, next], change_count: bounds.changes + 1 };
            expect(diff.changes.length === bounds.changes || bytesOf(withNext) > bounds.bytes).toBe(true);
          } else {
            expect(diff).not.toHaveProperty('change_count');
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('stops the comparison at the bound: reads of the finding’s contents stay far below their 12,000 leaves', () => {
    const reads = { n: 0 };
    const diff = versionDiff(
      { ref: v(1), content: countingReads(amplifyingBefore, reads) },
      { ref: v(2), content: countingReads(amplifyingAfter, reads) },
    );
    expect(diff.truncated).toBe(true);
    // each change found reads its leaf in both contents, and each level its key: a few reads
    // per change (about 630 in all), none for the leaves past the bound
    expect(reads.n).toBeLessThan(3 * (diff.changes.length + 1) + 4 * AMPLIFYING.levels);
    expect(reads.n).toBeLessThan(AMPLIFYING.leaves / 2);

    // with a bound of 3 changes, a handful of reads
    const few = { n: 0 };
    const three = versionDiff(
      { ref: v(1), content: countingReads(amplifyingBefore, few) },
      { ref: v(2), content: countingReads(amplifyingAfter, few) },
      { changes: 3, bytes: DIFF_BOUNDS.bytes },
    );
    expect(three.changes).toHaveLength(3);
    expect(three.change_count).toBe(4);
    expect(few.n).toBeLessThan(3 * 4 + 4 * AMPLIFYING.levels);

    // the whole comparison, for scale: every leaf read
    const all = { n: 0 };
    const whole = [...contentChanges(countingReads(amplifyingBefore, all), countingReads(amplifyingAfter, all))];
    expect(whole).toHaveLength(AMPLIFYING.leaves);
    expect(all.n).toBeGreaterThanOrEqual(2 * AMPLIFYING.leaves);
  });
});

describe('DecisionService.diff', () => {
  const item = (version: number, content: unknown): VersionItem =>
    ({ workspace: 'ws', key: 'k', version, content_sha: `sha-${version}`, content }) as VersionItem;
  /** A version as the store reads it: its content still JSON text. */
  const stored = ({ content, ...rest }: VersionItem): UnparsedVersion => ({
    ...rest,
    content_json: JSON.stringify(content),
  });
  const storeOf = (items: VersionItem[], published?: VersionItem): DecisionStore =>
    ({
      getUnparsed: async (_w: string, _k: string, version: number | 'published') => {
        const found = version === 'published' ? published : items.find((i) => i.version === version);
        return found && stored(found);
      },
    }) as unknown as DecisionStore;

  it("bounds the finding's diff against a version or the published one", async () => {
    const v1 = item(1, amplifyingBefore);
    const v2 = item(2, amplifyingAfter);
    const service = new DecisionService(storeOf([v1, v2], v1));
    for (const against of [1, 'published'] as const) {
      const diff = await service.diff('ws', 'k', 2, against);
      expect(diff).toMatchObject({ from: v(1), to: v(2), truncated: true });
      expect(bytesOf(diff)).toBeLessThanOrEqual(DIFF_BOUNDS.bytes);
      expect(diff.change_count).toBe(diff.changes.length + 1);
    }
  });

  it('with nothing published: the whole content, not truncated; 404 for a version that does not exist', async () => {
    const service = new DecisionService(storeOf([item(1, { a: 1 })]));
    expect(await service.diff('ws', 'k', 1, 'published')).toStrictEqual({
      from: null,
      to: v(1),
      changes: [{ op: 'add', path: '', new: { a: 1 } }],
      truncated: false,
    });
    await expect(service.diff('ws', 'k', 2, 'published')).rejects.toBeInstanceOf(NotFound);
    await expect(service.diff('ws', 'k', 1, 2)).rejects.toBeInstanceOf(NotFound);
  });

  it('parses and compares in its turn (diffTurns, DIFFS_AT_ONCE), but reads at once: a read that fails waits for no turn', async () => {
    expect(DIFFS_AT_ONCE).toBe(1);
    const reads: string[] = [];
    const service = new DecisionService({
      getUnparsed: async (_w: string, key: string, version: number | 'published') => {
        reads.push(`${key}/${version}`);
        if (key === 'down') throw new Error('the store does not answer');
        return stored(item(version === 'published' ? 1 : version, { version }));
      },
    } as unknown as DecisionStore);
    const settled = () => new Promise((resolve) => setImmediate(resolve));
    // the turn is held elsewhere until `release`
    let release!: () => void;
    const held = diffTurns(() => new Promise<void>((resolve) => (release = resolve)));

    let answered = false;
    const waiting = service.diff('ws', 'a', 2, 1).then((diff) => ((answered = true), diff));
    const failing = service.diff('ws', 'down', 2, 'published').catch((err: Error) => err.message);
    await settled();
    // both read at once; the failure answers without its turn, the other waits for it
    expect(reads).toEqual(['a/2', 'a/1', 'down/2', 'down/published']);
    expect(await failing).toBe('the store does not answer');
    await settled();
    expect(answered).toBe(false);
    release();
    await held;
    expect((await waiting).changes).toEqual([{ op: 'replace', path: '/version', old: 1, new: 2 }]);
  });
});
