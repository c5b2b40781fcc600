import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A design rule: one composition root per process. `functions/composition.ts` builds the
 * runtime and chooses every adapter; a group's `compose.ts` builds its stores and services;
 * `handler.ts` (and the local platform) call those. An app only defines routes over the
 * services it receives: it never imports an adapter, an SDK client, a store, a builder or
 * another group's code.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const COMPOSITION = 'functions/composition.ts';

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier a source imports or re-exports, statically or dynamically. */
function specifiersIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm)) found.push(match[1]!);
  for (const match of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) found.push(match[1]!);
  for (const match of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(match[1]!);
  return found;
}

/** What a file imports: project modules as `.ts` paths from the repository root, packages as named. */
function importsOf(file: string, text = readFileSync(join(ROOT, file), 'utf8')): string[] {
  return specifiersIn(text).map((s) =>
    s.startsWith('.')
      ? relative(ROOT, resolve(ROOT, dirname(file), s))
          .replaceAll('\\', '/')
          .replace(/\.js$/, '.ts')
      : s,
  );
}

/** The modules that implement a port: the adapters the configuration chooses between. */
const CHOSEN_ADAPTERS = [
  'builtin-catalog',
  'builtin-idp',
  'builtin-metastore',
  'builtin-workflow',
  'datahub',
  'trino',
  'keycloak',
  'airflow',
  'openai',
  'emf-metrics',
].map((name) => `shared/adapters/${name}.ts`);

const SDK_CLIENT_MODULES = ['clients', 's3', 'sqs', 'secrets-manager', 'kms'].map((name) => `shared/aws/${name}.ts`);

/** Modules that talk to DynamoDB, S3 or SQS for a group. */
const isStore = (path: string) =>
  /^functions\/[^/]+\/(?:[^/]+\/)?(?:[a-z-]+-)?store\.ts$/.test(path) ||
  ['functions/finetune/artifacts.ts', 'functions/crews/runs/run-queue.ts', 'shared/auth/key-store.ts'].includes(path);

/** Why an app may not import `path`, or undefined when it may. */
function forbiddenInApp(app: string, path: string): string | undefined {
  const group = app.split('/')[1];
  if (path.startsWith('@aws-sdk/')) return 'an AWS SDK package';
  if (path.startsWith('shared/adapters/')) return 'an adapter';
  if (SDK_CLIENT_MODULES.includes(path)) return 'an SDK client module';
  if (isStore(path)) return 'a store';
  if (path === COMPOSITION || /^functions\/[^/]+\/(?:[^/]+\/)?compose[^/]*\.ts$/.test(path))
    return 'a composition module';
  const other = /^functions\/([^/]+)\//.exec(path)?.[1];
  if (other !== undefined && other !== group) return "another group's module";
  return undefined;
}

function violationsOfApp(app: string, text?: string): string[] {
  return importsOf(app, text).flatMap((path) => {
    const why = forbiddenInApp(app, path);
    return why ? [`${path} (${why})`] : [];
  });
}

/** An adapter is chosen by reading the configured choice or by building a chosen adapter. */
const CHOICE_PATTERNS = [
  /\.adapters\.(metastore|catalog|idp|workflow)\b/,
  /\bconfig\.llm\b/,
  /\bnew\s+(BuiltinCatalog|BuiltinMetastore|BuiltinIdentityProvider|BuiltinWorkflow|DataHubCatalog|TrinoMetastore|KeycloakIdentityProvider|AirflowWorkflow|OpenAiChatModel|EmfBusinessMetrics|NoBusinessMetrics)\b/,
];

function choicesIn(file: string, text = readFileSync(join(ROOT, file), 'utf8')): string[] {
  const chosen = CHOICE_PATTERNS.flatMap((pattern) => {
    const match = pattern.exec(text);
    return match ? [match[0]] : [];
  });
  const imported = importsOf(file, text).filter((path) => CHOSEN_ADAPTERS.includes(path));
  return [...chosen, ...imported];
}

const apps = readdirSync(join(ROOT, 'functions'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => `functions/${entry.name}/app.ts`);

/** Production code outside the adapters themselves. */
const production = [...tsFiles('functions'), ...tsFiles('infra'), ...tsFiles('shared')].filter(
  (file) => !file.startsWith('shared/adapters/'),
);

describe('one composition root', () => {
  it('the scan sees what an app, a handler and the composition module import', () => {
    expect(apps).toContain('functions/decisions/app.ts');
    expect(apps.length).toBeGreaterThanOrEqual(11);
    expect(importsOf('functions/decisions/app.ts')).toContain('shared/http/service-app.ts');
    expect(importsOf('functions/decisions/handler.ts')).toEqual(
      expect.arrayContaining([COMPOSITION, 'functions/decisions/compose.ts', 'functions/decisions/app.ts']),
    );
    expect(choicesIn(COMPOSITION)).toEqual(
      expect.arrayContaining(['.adapters.metastore', 'shared/adapters/trino.ts', 'shared/adapters/emf-metrics.ts']),
    );
  });

  it('the checks catch an app that builds its own service, and a choice made elsewhere', () => {
    const app = 'functions/crews/app.ts';
    const wired = [
      "import { sqsClient } from '../../shared/aws/sqs.js';",
      "import { RunStore } from './store.js';",
      "import { documentService } from '../documents/app.js';",
      "import { metastore } from '../../shared/adapters/trino.js';",
      "import { SQSClient } from '@aws-sdk/client-sqs';",
      "import { chatModel } from '../composition.js';",
    ].join('\n');
    expect(violationsOfApp(app, wired)).toHaveLength(6);
    expect(violationsOfApp(app, "import { CrewRun } from './schemas.js';")).toEqual([]);
    expect(choicesIn('functions/query/compose.ts', "if (config.adapters.catalog === 'datahub') {}")).toHaveLength(1);
  });

  it.each(apps)('%s imports no adapter, SDK client, store, builder or other group', (app) => {
    expect(violationsOfApp(app)).toEqual([]);
  });

  it('adapters are chosen only in functions/composition.ts', () => {
    const elsewhere = production
      .filter((file) => file !== COMPOSITION)
      .flatMap((file) => choicesIn(file).map((choice) => `${file}: ${choice}`));
    expect(elsewhere).toEqual([]);
  });
});

describe('groups meet in compose files', () => {
  // Crews, webhooks and the domain-event dispatcher work together (per-run webhooks, the run
  // log's stream, the fan-out); each declares what it needs as an interface, and only a
  // composition module (compose*.ts) imports the other group's code to hand it in.
  const TIED = ['crews', 'webhooks', 'domain-events'];
  const groupOf = (path: string) => /^functions\/([^/]+)\//.exec(path)?.[1];
  const isCompose = (path: string) => /\/compose[^/]*\.ts$/.test(path);
  // The registries of every group's domain events (their sources and schemas) list them all.
  const REGISTRIES = ['functions/domain-events/catalog.ts', 'functions/domain-events/sources.ts'];
  const crossings = (file: string, text?: string) =>
    importsOf(file, text)
      .filter((target) => {
        const from = groupOf(file);
        const to = groupOf(target);
        return from !== undefined && to !== undefined && from !== to && TIED.includes(from) && TIED.includes(to);
      })
      .map((target) => `${file} → ${target}`);

  it('crews, webhooks and domain-events import each other only in their compose files', () => {
    const files = TIED.flatMap((group) => tsFiles(`functions/${group}`)).filter(
      (file) => !isCompose(file) && !REGISTRIES.includes(file),
    );
    expect(files.length).toBeGreaterThan(20);
    expect(files.flatMap((file) => crossings(file))).toEqual([]);
  });

  it('the check catches a service that imports another group', () => {
    const text = "import { runEndpointItem } from '../../webhooks/run-endpoint.js';\n";
    expect(crossings('functions/crews/runs/run-service.ts', text)).toEqual([
      'functions/crews/runs/run-service.ts → functions/webhooks/run-endpoint.ts',
    ]);
  });
});
