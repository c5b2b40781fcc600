import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { CONTEXT_SETTINGS, REQUIRED_SETTINGS, STAGES, type StageName } from '../../infra/aws/stages.js';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, EnvSchema } from '../../shared/config.js';

/**
 * docs/configuration.md against the code: every environment variable of `EnvSchema`
 * (shared/config.ts) and every stage setting of `StageSettings` (infra/aws/stages.ts) has its
 * row, no row names one the code does not have, each stage's column shows what `STAGES` gives,
 * and the `-c` settings are those the CDK app reads.
 */

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const PAGE = 'docs/configuration.md';
const page = readFileSync(root(PAGE), 'utf8');
const STALE = `${PAGE} is out of date with the code: update it`;

/** The page's lines after the heading `title`, up to the next heading of its level or above. */
function section(title: string): string[] {
  const lines = page.split('\n');
  const start = lines.indexOf(title);
  if (start < 0) throw new Error(`${PAGE} has no heading "${title}"`);
  const level = /^#+/.exec(title)![0].length;
  const end = lines.findIndex((line, i) => i > start && /^#+ /.test(line) && /^#+/.exec(line)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The rows of every table in `lines` whose first cell is one backticked name: name → its cells. */
function tableRows(lines: readonly string[]): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of lines) {
    if (!line.startsWith('|')) continue;
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    const name = /^`([^`]+)`$/.exec(cells[0] ?? '')?.[1];
    if (!name) continue;
    if (rows.has(name)) throw new Error(`${PAGE} has two rows for ${name}`);
    rows.set(name, cells);
  }
  return rows;
}

/** The properties of `StageSettings`, read from infra/aws/stages.ts by the TypeScript compiler. */
function stageSettingNames(): string[] {
  const file = root('infra/aws/stages.ts');
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const settings = source.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'StageSettings',
  );
  if (!settings) throw new Error('infra/aws/stages.ts declares no interface StageSettings');
  return settings.members.filter(ts.isPropertySignature).map((m) => m.name.getText(source));
}

/** A stage's value as the page's stage columns show it. */
function shown(value: unknown): string {
  if (value === undefined) return '—';
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.map(String).join(', ');
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if ('rateLimit' in record && 'burstLimit' in record) return `${record.rateLimit}/s, burst ${record.burstLimit}`;
    return Object.entries(record)
      .map(([k, v]) => `${k} ${String(v)}`)
      .join(', ');
  }
  return String(value);
}

const plain = (cell: string | undefined) => (cell ?? '').replaceAll('`', '').trim();

describe(PAGE, () => {
  const envRows = tableRows(section('## Environment variables'));
  const stageSection = section('## Stage settings (AWS)');
  const CONTEXT_HEADING = '### Settings on the command line';
  // The settings' tables come before the `-c` table, which names some of them again.
  const stageRows = tableRows(stageSection.slice(0, stageSection.indexOf(CONTEXT_HEADING)));
  const contextRows = tableRows(section(CONTEXT_HEADING));
  const envNames = Object.keys(EnvSchema.shape);
  const settingNames = stageSettingNames();

  it('has a row for every environment variable the service reads, and for no other', () => {
    expect(envNames.length).toBeGreaterThan(40);
    expect(
      envNames.filter((name) => !envRows.has(name)),
      `${STALE}: variables without a row`,
    ).toEqual([]);
    expect(
      [...envRows.keys()].filter((name) => !envNames.includes(name)),
      `${STALE}: rows of variables the code does not read`,
    ).toEqual([]);
  });

  it("gives each variable's default as the code has it", () => {
    const defaults = EnvSchema.parse({}) as Record<string, unknown>;
    const wrong: string[] = [];
    for (const name of envNames) {
      const cell = plain(envRows.get(name)?.[1]);
      const expected =
        defaults[name] !== undefined
          ? String(defaults[name])
          : name === 'WEBHOOK_RETRY_SCHEDULE'
            ? DEFAULT_WEBHOOK_RETRY_SCHEDULE.join(',')
            : undefined;
      // Without a default in the schema, the page says none (—) or how it is worked out.
      if (expected !== undefined ? cell !== expected : /^[\w.,:-]+$/.test(cell) && cell !== '—')
        wrong.push(`${name}: the page says "${cell}", the code ${expected ?? 'has no default'}`);
    }
    expect(wrong, STALE).toEqual([]);
  });

  it('names no other environment variable anywhere', () => {
    // Backticked upper-case names, `NAME` or `NAME=value`, that are no variable: the record of the stages.
    const notVariables = new Set<string>(['STAGES']);
    const named = [...page.matchAll(/`([A-Z][A-Z0-9_]{2,})(=[^`]*)?`/g)].map((m) => m[1]!);
    expect(
      [...new Set(named)].filter((name) => !envNames.includes(name) && !notVariables.has(name)),
      `${STALE}: names that are no variable of shared/config.ts`,
    ).toEqual([]);
  });

  it('has a row for every stage setting, and for no other', () => {
    expect(settingNames.length).toBeGreaterThan(30);
    // The compiler's reading agrees with the records: every key a stage sets is a setting.
    for (const stage of Object.values(STAGES)) expect(settingNames).toEqual(expect.arrayContaining(Object.keys(stage)));
    expect(
      settingNames.filter((name) => !stageRows.has(name)),
      `${STALE}: settings without a row`,
    ).toEqual([]);
    expect(
      [...stageRows.keys()].filter((name) => !settingNames.includes(name)),
      `${STALE}: rows of settings StageSettings does not have`,
    ).toEqual([]);
  });

  it("shows each stage's value as STAGES gives it", () => {
    const stages = Object.keys(STAGES) as StageName[];
    const headers = stageSection.filter((line) => line.startsWith('| Setting'));
    expect(headers.length).toBeGreaterThan(0);
    for (const header of headers)
      expect(
        header
          .split('|')
          .map((c) => c.trim())
          .slice(2, 2 + stages.length),
      ).toEqual(stages);
    const wrong: string[] = [];
    for (const name of settingNames) {
      const cells = stageRows.get(name);
      if (!cells) continue;
      stages.forEach((stage, i) => {
        const expected = shown((STAGES[stage] as unknown as Record<string, unknown>)[name]);
        if (plain(cells[1 + i]) !== expected) wrong.push(`${name} on ${stage}: the code has "${expected}"`);
      });
    }
    expect(wrong, STALE).toEqual([]);
  });

  it('lists what a stage may require, and the -c settings the CDK app reads', () => {
    const requires = section('### What prod requires').join('\n');
    for (const setting of Object.keys(REQUIRED_SETTINGS)) expect(requires, STALE).toContain(`- \`${setting}\`: `);
    // infra/aws/app.ts reads `stage` and `buildNumber`; stageFromContext reads CONTEXT_SETTINGS.
    const app = readFileSync(root('infra/aws/app.ts'), 'utf8');
    const read = [...app.matchAll(/tryGetContext\('(\w+)'\)/g)].map((m) => m[1]!);
    expect(read).toEqual(expect.arrayContaining(['stage', 'buildNumber']));
    expect([...contextRows.keys()].sort(), STALE).toEqual([...new Set([...read, ...CONTEXT_SETTINGS])].sort());
  });

  it('says what npm start defaults to: the local stand-in model without LLM_PROVIDER or LLM_BASE_URL', () => {
    const main = readFileSync(root('infra/local/main.ts'), 'utf8');
    // The default this page describes is still the code's.
    expect(main).toMatch(
      /unset\('LLM_PROVIDER'\) && unset\('LLM_BASE_URL'\) \? \{ \.\.\.env, LLM_PROVIDER: 'local' \}/,
    );
    expect(page).toContain('neither `LLM_PROVIDER` nor `LLM_BASE_URL` is set');
    for (const provider of ['openai', 'bedrock', 'local'])
      expect(envRows.get('LLM_PROVIDER')?.[3]).toContain(`\`${provider}\``);
  });
});
