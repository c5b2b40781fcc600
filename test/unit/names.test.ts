import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Words that must not be confused: one type per name. Two exported types of the
 * same name (three `EventType`s once) make a reader open the wrong one.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The types a source exports: `export type|interface|class|enum X`. */
function exportedTypes(text: string): string[] {
  return [...text.matchAll(/^export (?:declare )?(?:abstract )?(?:type|interface|class|enum) ([A-Za-z0-9_]+)/gm)].map(
    (m) => m[1]!,
  );
}

describe('names', () => {
  it('sees the exported types of a source', () => {
    expect(exportedTypes('export interface A {}\nexport type B = 1;\nexport class C {}\nconst x = 1;\n')).toEqual([
      'A',
      'B',
      'C',
    ]);
  });

  it('no two exported types of functions/, shared/ or infra/ share a name', () => {
    const homes = new Map<string, string[]>();
    for (const file of ['functions', 'shared', 'infra'].flatMap(tsFiles)) {
      for (const name of exportedTypes(readFileSync(join(ROOT, file), 'utf8'))) {
        homes.set(name, [...(homes.get(name) ?? []), file]);
      }
    }
    expect(homes.size).toBeGreaterThan(200);
    expect([...homes].filter(([, files]) => files.length > 1)).toEqual([]);
  });
});
