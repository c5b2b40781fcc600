import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands on its own: no file points outside it, or to documents it does not
 * have (the specification's old names), and every relative link of the guides reaches a file
 * of the repository.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README_MAX_LINES = 250;

/** Not ours to change (the vendored SDK is kept byte for byte), or not text we write. */
const SKIPPED = [/^node_modules\//, /^package-lock\.json$/, /^test\/sdk\/nx1-sdk\//];

/** Every file git tracks or would track (new files not yet added included), that exists and is text. */
function repositoryTextFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter((f) => f !== '');
  return [...new Set(listed)]
    .filter((file) => !SKIPPED.some((pattern) => pattern.test(file)))
    .filter((file) => existsSync(join(ROOT, file)) && statSync(join(ROOT, file)).isFile())
    .filter((file) => !readFileSync(join(ROOT, file)).subarray(0, 8000).includes(0))
    .sort();
}

// Built from parts, so that this file is not a hit itself.
const UP = '\\.\\./';
const OUTSIDE = new RegExp(`(?:${UP})+${'sha' + 'red'}(?![\\w-])`, 'g');
const OLD_DOCUMENTS = new RegExp(`\\b(?:${['API', 'INTERFACE'].join('|')})\\.md\\b`, 'g');

/** `file:line: text` of each reference to what is outside the repository or no longer exists. */
function strayReferences(file: string, text: string): string[] {
  const hits: string[] = [];
  text.split('\n').forEach((line, i) => {
    const outside = [...line.matchAll(OUTSIDE)].some((m) => {
      // A path relative to the file: only one that leaves the repository is stray.
      const target = resolve(ROOT, dirname(file), m[0]);
      return relative(ROOT, target).startsWith('..');
    });
    if (outside || OLD_DOCUMENTS.test(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
    OLD_DOCUMENTS.lastIndex = 0;
  });
  return hits;
}

/** The guides whose links are checked. */
function guides(): string[] {
  const docs = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'docs'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f.endsWith('.md') && existsSync(join(ROOT, f)));
  return ['README.md', ...new Set(docs)].sort();
}

/** The relative link targets of a markdown text (`#anchor` too), with their lines: fenced code and inline code are not links. */
export function relativeLinks(markdown: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((raw, i) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(raw)?.[1];
    if (opening && (fence === undefined || (opening[0] === fence[0] && opening.length >= fence.length))) {
      fence = fence === undefined ? opening : undefined;
      return;
    }
    if (fence !== undefined) return;
    const line = raw.replace(/(`+)[^`]*?\1/g, '');
    const targets = [
      ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
      ...[...line.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/g)].map((m) => m[1]!),
    ];
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links.push({ line: i + 1, target });
    }
  });
  return links;
}

/** The anchors of a markdown file's headings as GitHub makes them (repeats numbered `-1`, `-2`), and its `<a id>`s. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (opening && (fence === undefined || (opening[0] === fence[0] && opening.length >= fence.length))) {
      fence = fence === undefined ? opening : undefined;
      continue;
    }
    if (fence !== undefined) continue;
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

describe('the repository stands alone', () => {
  it(`names nothing outside it, nor the old specification documents`, () => {
    const files = repositoryTextFiles();
    expect(files.length).toBeGreaterThan(100);
    const hits = files.flatMap((file) => strayReferences(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(hits, `${hits.length} stray references (file:line)`).toEqual([]);
  });

  it(`README.md has at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines, 'README.md lines').toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('every relative link of README.md and docs/*.md reaches a file of the repository, and its heading', () => {
    const files = guides();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/api.md', 'docs/configuration.md']));
    const rootDir = ROOT.endsWith(sep) ? ROOT : ROOT + sep;
    const anchors = new Map<string, Set<string>>();
    const anchorsIn = (path: string) => {
      if (!anchors.has(path)) anchors.set(path, anchorsOf(readFileSync(path, 'utf8')));
      return anchors.get(path)!;
    };
    const broken: string[] = [];
    for (const file of files)
      for (const { line, target } of relativeLinks(readFileSync(join(ROOT, file), 'utf8'))) {
        const [path = '', anchor] = target.split('#', 2) as [string, string | undefined];
        const resolved =
          path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), decodeURI(path.replace(/\?.*$/, '')));
        if (!(resolved + sep).startsWith(rootDir) || !existsSync(resolved)) {
          broken.push(`${file}:${line}: ${target} (no such file)`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !anchorsIn(resolved).has(decodeURI(anchor)))
          broken.push(`${file}:${line}: ${target} (no such heading)`);
      }
    expect(broken, 'links to no file or heading of the repository (file:line: target)').toEqual([]);
  });

  it('finds the links of a markdown text, but not in code', () => {
    const text = [
      'See [the guide](docs/crews.md#retry) and [the site](https://example.com) and [here](#top).',
      '`[not](a-link.md)`',
      '```sh',
      '[not](either.md)',
      '```',
      '[ref]: ../test/README.md',
    ].join('\n');
    expect(relativeLinks(text)).toEqual([
      { line: 1, target: 'docs/crews.md#retry' },
      { line: 1, target: '#top' },
      { line: 6, target: '../test/README.md' },
    ]);
    expect([...anchorsOf('# Top\n## The `-c` settings (AWS)\n```\n# not\n```\n## Top\n<a id="x"></a>')]).toEqual([
      'top',
      'the--c-settings-aws',
      'top-1',
      'x',
    ]);
  });
});
