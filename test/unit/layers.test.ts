import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A design rule: errors are domain errors that know nothing of HTTP, and only
 * `shared/http` maps them to answers. So code below HTTP (services, stores, the crew
 * worker, auth, AWS helpers, ports, adapters) never imports `shared/http`, and
 * `shared/errors.ts` imports nothing of the project.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** In a group's folder, the files that are HTTP or composition (they may use shared/http). */
const HTTP_FILES = new Set(['app.ts', 'schemas.ts', 'handler.ts', 'compose.ts']);

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier a file imports or re-exports, statically or dynamically. */
function specifiers(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm)) found.push(match[1]!);
  for (const match of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) found.push(match[1]!);
  for (const match of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(match[1]!);
  return found;
}

/** The project files a file imports, as paths from the repository root. */
function projectImports(file: string): string[] {
  return specifiers(file)
    .filter((s) => s.startsWith('.'))
    .map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)).replaceAll('\\', '/'));
}

const importsHttp = (file: string) => projectImports(file).filter((p) => p.startsWith('shared/http/'));

const groups = readdirSync(join(ROOT, 'functions'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name !== 'platform')
  .map((entry) => entry.name);

const belowHttp = [
  ...groups.flatMap((group) =>
    tsFiles(`functions/${group}`).filter((file) => !HTTP_FILES.has(file.slice(file.lastIndexOf('/') + 1))),
  ),
  ...tsFiles('shared').filter((file) => !file.startsWith('shared/http/')),
];

describe('layers', () => {
  it('scans the layers below HTTP, and the scan sees an import of shared/http', () => {
    for (const file of [
      'functions/decisions/service.ts',
      'functions/crews/runs/run-store.ts',
      'functions/crews/worker/worker.ts',
      'shared/auth/jwt.ts',
      'shared/aws/pagination.ts',
      'shared/adapters/trino.ts',
      'shared/ports/catalog.ts',
      'shared/pydantic/lax.ts',
    ]) {
      expect(belowHttp).toContain(file);
    }
    // An app is HTTP: the same scan finds its import of the app factory.
    expect(importsHttp('functions/decisions/app.ts')).toContain('shared/http/service-app.js');
  });

  it.each(belowHttp)('%s does not import shared/http', (file) => {
    expect(importsHttp(file)).toEqual([]);
  });

  it('shared/errors.ts is a leaf: it imports nothing of the project', () => {
    expect(specifiers('shared/errors.ts').filter((s) => s.startsWith('.'))).toEqual([]);
  });

  it('shared/http maps the domain errors: its errors module imports shared/errors.ts', () => {
    expect(projectImports('shared/http/errors.ts')).toContain('shared/errors.js');
  });
});
