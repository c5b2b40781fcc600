import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  GROUPS,
  STREAM_CONSUMERS,
  WORKERS,
  type GroupDefinition,
  type StreamConsumerDefinition,
  type WorkerDefinition,
} from '../../infra/groups.js';
import { REPOSITORY_ROOT } from '../../infra/aws/service-function.js';
import { stageNamed, type Stage, type StageName } from '../../infra/aws/stages.js';
import { stageStacks } from '../../infra/aws/stage-stacks.js';

/** Shared by the infra tests: synthesizing both stacks as app.ts does, and reading the templates. */

export type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string };
export type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Sid?: string };

export const groups: readonly GroupDefinition[] = GROUPS;
export const workers: readonly WorkerDefinition[] = WORKERS;
export const streamConsumers: readonly StreamConsumerDefinition[] = STREAM_CONSUMERS;
/** Every Lambda the stateless stack builds: groups serve HTTP, workers consume queues, stream consumers streams. */
export const functionDefs: readonly { name: string; entry: string; tables: WorkerDefinition['tables'] }[] = [
  ...groups,
  ...workers,
  ...streamConsumers,
];

/** What a stage requires besides its record (prod: an alarm topic, an issuer and its audience), as an operator gives it. */
export const REQUIRED_FIXTURE: Readonly<Partial<Record<StageName, Partial<Stage>>>> = {
  prod: {
    alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:dpm-prod-alarms',
    authIssuer: 'https://id.example.com',
    authAudience: 'dpm-api',
  },
};

/** The stage the tests synthesize: its record with REQUIRED_FIXTURE. */
export const stageFor = (name: StageName): Stage => ({ ...stageNamed(name), ...REQUIRED_FIXTURE[name] });

export interface SynthesizeOptions {
  readonly stage?: Partial<Stage>;
  readonly workers?: readonly WorkerDefinition[];
  readonly streamConsumers?: readonly StreamConsumerDefinition[];
  readonly buildNumber?: string;
}

/**
 * Stub handlers stand in for functions/: bundling is skipped, but NodejsFunction still
 * insists that the entry file and a lock file exist. Registers the hooks that make and remove
 * them, and returns what synthesizes both stacks (as app.ts does, with cdk.json's feature
 * flags and no bundling) against them.
 */
export function withStubHandlers(): {
  synthesize: (name: StageName, options?: SynthesizeOptions) => Synthesized;
  synthesizeOnce: (name: StageName, options?: SynthesizeOptions) => Synthesized;
} {
  let stubRoot: string | undefined;
  beforeAll(() => {
    stubRoot = mkdtempSync(join(tmpdir(), 'dpm-infra-'));
    writeFileSync(join(stubRoot, 'package-lock.json'), '{}');
    for (const { entry } of functionDefs) {
      mkdirSync(dirname(join(stubRoot, entry)), { recursive: true });
      writeFileSync(join(stubRoot, entry), 'export const handler = async () => ({});\n');
    }
  });
  afterAll(() => {
    if (stubRoot) rmSync(stubRoot, { recursive: true, force: true });
  });

  const synthesize = (name: StageName, options: SynthesizeOptions = {}) => {
    if (!stubRoot) throw new Error('synthesize runs inside a test or a hook, after the stub handlers exist');
    const cdkJson = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'cdk.json'), 'utf8'));
    const app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
    const stage = { ...stageFor(name), ...options.stage };
    const { stateful, stateless } = stageStacks(app, stage, {
      projectRoot: stubRoot,
      ...(options.workers && { workers: options.workers }),
      ...(options.streamConsumers && { streamConsumers: options.streamConsumers }),
      ...(options.buildNumber && { buildNumber: options.buildNumber }),
    });
    return { stateful: Template.fromStack(stateful), stateless: Template.fromStack(stateless), app };
  };
  /** The same synthesis for the same stage and options, once per worker process. */
  const synthesizeOnce = (name: StageName, options: SynthesizeOptions = {}) => {
    const { stage, ...rest } = options;
    // `{ stage: {} }` is the stage's own record, as no options are.
    const key = JSON.stringify([name, stage && Object.keys(stage).length > 0 ? options : rest]);
    let built = synthesized.get(key);
    if (!built) synthesized.set(key, (built = synthesize(name, options)));
    return built;
  };
  return { synthesize, synthesizeOnce };
}

export interface Synthesized {
  readonly stateful: Template;
  readonly stateless: Template;
  readonly app: App;
}

/**
 * Syntheses that tests only read, by stage and options, kept for the worker's next files (the
 * infra project does not isolate its files). A test that adds to the app or the stacks
 * synthesizes its own.
 */
const synthesized = new Map<string, Synthesized>();

export const resources = (t: Template, type: string) => Object.entries(t.findResources(type)) as [string, Resource][];

export const single = <T>(items: T[], what: string): T => {
  expect(items, what).toHaveLength(1);
  return items[0]!;
};

export const actions = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

export const resourcesOf = (s: Statement): unknown[] => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

/** Whether an IAM action pattern (`s3:GetObject*`) covers an action. */
export const covers = (pattern: string, action: string): boolean =>
  new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i').test(action);

/** Whether some Allow statement covers the action on a resource the predicate accepts. */
export const allows = (statements: Statement[], action: string, onResource: (r: unknown) => boolean): boolean =>
  statements.some(
    (s) => s.Effect === 'Allow' && actions(s).some((p) => covers(p, action)) && resourcesOf(s).some(onResource),
  );

/** The function named `dpm-<stage>-<fn>` in a stateless template. */
export const functionIn = (t: Template, stage: StageName, fn: string): [string, Resource] =>
  single(
    resources(t, 'AWS::Lambda::Function').filter(([, r]) => r.Properties.FunctionName === `dpm-${stage}-${fn}`),
    `function of ${fn}`,
  );

/** The statements of every policy attached to the function's role. */
export const statementsIn = (t: Template, stage: StageName, fn: string): Statement[] => {
  const roleId = functionIn(t, stage, fn)[1].Properties.Role['Fn::GetAtt'][0];
  return resources(t, 'AWS::IAM::Policy')
    .filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
    .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Statement[]);
};

/** The function's event source mappings (SQS or DynamoDB streams). */
export const mappingsIn = (t: Template, stage: StageName, fn: string): Resource[] => {
  const fnId = functionIn(t, stage, fn)[0];
  return resources(t, 'AWS::Lambda::EventSourceMapping')
    .filter(([, m]) => m.Properties.FunctionName?.Ref === fnId)
    .map(([, m]) => m);
};

/** What a stateless template holds for a stateful resource's attribute: a strong cross-stack import. */
export const importOf = (stage: StageName, logicalId: string, attribute: 'Arn' | 'Ref' | 'StreamArn') => ({
  'Fn::ImportValue': expect.stringMatching(
    new RegExp(
      `^Dpm-${stage}-Stateful:ExportsOutput${attribute === 'Ref' ? 'Ref' : 'FnGetAtt'}${logicalId}${attribute === 'Ref' ? '' : attribute}`,
    ),
  ),
});
