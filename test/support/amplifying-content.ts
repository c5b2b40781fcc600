/**
 * The decision content of the diff amplification finding (docs/reviewing.md, the fair-use limits): 30
 * nested levels of 120-character keys over 12,000 leaves (`l0`...`l11999`), about 135 KB as
 * JSON with leaves of two digits. Two such contents with other leaf values differ at every
 * leaf, and each change's path repeats the 30 keys (3.6 KB): a whole diff of them is 12,000
 * changes, about 44 MB of answer. `leaf` gives the value of leaf i, so two versions differ
 * where their leaves do.
 */
export const AMPLIFYING = { levels: 30, keyLength: 120, leaves: 12_000 } as const;

export function amplifyingContent(leaf: (i: number) => unknown): Record<string, unknown> {
  const leaves: Record<string, unknown> = {};
  for (let i = 0; i < AMPLIFYING.leaves; i++) leaves[`l${i}`] = leaf(i);
  let content: Record<string, unknown> = leaves;
  for (let level = AMPLIFYING.levels - 1; level >= 0; level--) {
    content = { [`${String(level).padStart(3, '0')}${'k'.repeat(AMPLIFYING.keyLength - 3)}`]: content };
  }
  return content;
}
