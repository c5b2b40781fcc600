// The default export: Node loads the package's CommonJS build, whose names ESM cannot list.
import jsonPatch, { type Operation } from 'fast-json-patch';
import type { ContentChange } from './schemas.js';

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null;

/**
 * The changes that turn `before` into `after` (API.md §16): fast-json-patch's JSON Patch
 * (RFC 6902) between the two, made with its `test` operations (`invertible`), which carry
 * the value each `remove` and `replace` finds: that is the change's `old`. Paths are JSON
 * Pointers (RFC 6901), in the patch's order, so the changes apply in sequence. Two values
 * that are not both objects or both arrays are one `replace` of the whole content (`""`).
 */
export function contentChanges(before: unknown, after: unknown): ContentChange[] {
  if (!isContainer(before) || !isContainer(after) || Array.isArray(before) !== Array.isArray(after)) {
    return JSON.stringify(before) === JSON.stringify(after)
      ? []
      : [{ op: 'replace', path: '', old: before, new: after }];
  }
  const changes: ContentChange[] = [];
  let tested: { path: string; value: unknown } | undefined;
  for (const op of jsonPatch.compare(before, after, true) as Operation[]) {
    switch (op.op) {
      case 'test':
        tested = { path: op.path, value: op.value };
        break;
      case 'add':
        changes.push({ op: 'add', path: op.path, new: op.value });
        break;
      case 'remove':
      case 'replace': {
        const old = tested?.path === op.path ? { old: tested.value } : {};
        changes.push(
          op.op === 'remove'
            ? { op: 'remove', path: op.path, ...old }
            : { op: 'replace', path: op.path, ...old, new: op.value },
        );
        tested = undefined;
        break;
      }
      default:
        // compare() makes only add, remove, replace and (invertible) test.
        throw new Error(`unexpected patch operation ${op.op}`);
    }
  }
  return changes;
}
