import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { build } from 'esbuild';
import type { RunningPlatform } from '../../infra/local/platform.js';
import { LAMBDA_DEFINE, RUNTIME_SDK_CLIENTS } from '../../infra/aws/service-function.js';
import { GROUPS, STREAM_CONSUMERS, WORKERS, type GroupDefinition } from '../../infra/groups.js';
import { sqsAccess } from '../../shared/aws/sqs.js';
import type { TestIssuer } from '../support/identity-provider.js';
import { mintToken } from '../support/tokens.js';
import { CallLog, startRecordingProxy } from './aws-call-recorder.js';
import { COLD_START_CASES } from './cold-start-cases.js';
import {
  type ChildAnswer,
  type ColdStartCase,
  type ColdStartTargets,
  type HandlerRequest,
  lambdaEnvironment,
  LOOPBACK_ONLY,
  runChild,
  SEED_REQUEST_ID,
  signedInBare,
  startReceiver,
} from './cold-start.js';
import { startKmsStandIn } from './kms-stand-in.js';

/** Same esbuild settings as ServiceFunction's NodejsFunction bundling (infra/aws/service-function.ts). */
const LAMBDA_BUILD = {
  bundle: true,
  minify: true,
  sourcemap: true,
  define: { ...LAMBDA_DEFINE },
  platform: 'node',
  format: 'esm',
  target: 'node24',
  mainFields: ['module', 'main'] as string[],
  banner: { js: "import { createRequire } from 'module';const require = createRequire(import.meta.url);" },
  logLevel: 'silent',
  external: [...RUNTIME_SDK_CLIENTS] as string[],
} as const;

/** A minimal Hono + DynamoDB document client Lambda: the yardstick of the bundles' size and module init. */
const BASELINE = `
import { Hono } from 'hono';
import { handle } from 'hono/aws-lambda';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const app = new Hono().get('/items/:id', async (c) =>
  c.json((await db.send(new GetCommand({ TableName: 'items', Key: { id: c.req.param('id') } }))).Item ?? null));
export const handler = handle(app);
`;

/** One side of a cold start (the group's bundle, or its bare handler): medians over the fresh processes. */
export interface ColdStartSide {
  /** Import of the bundle through the answer to the request. */
  readonly ms: number;
  /** The import alone (module init). */
  readonly initMs: number;
  readonly bytes: number;
  /** The AWS calls the request made, in order (through the recording proxies and the KMS stand-in), in the first run. */
  readonly calls: readonly string[];
  /** Other lists of calls that later runs made (none when every run made the same). */
  readonly otherCalls: readonly string[];
}

export interface ColdStartFigure {
  /** The main request, as the row names it. */
  readonly what: string;
  readonly status: number;
  readonly runs: number;
  readonly group: ColdStartSide;
  /** The bare handler making the same calls: the AWS calls, and the sign-in's (signedInBare; the target's yardstick). */
  readonly bare: ColdStartSide;
  /** The bare handler without the sign-in (its AWS calls only): as the rows of the first measurements compared. */
  readonly bareWithoutSignIn: ColdStartSide;
  /** Whether the request carries a Bearer token (else the two bare handlers are one: `bare`). */
  readonly bearer: boolean;
}

export interface BundleFigure {
  name: string;
  bytes: number;
  initMs: number;
  /** HTTP groups only: the cold start of the group's main request, beside its bare handler. */
  coldStart?: ColdStartFigure;
}

/** What the cold starts need of the running bench: the local platform and its token issuer. */
export interface ColdStartPlatform {
  readonly platform: RunningPlatform;
  readonly idp: TestIssuer;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const CHILD_ENV = {
  PATH: process.env.PATH,
  STAGE: 'bench',
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** Module init time of a bundle in a fresh Node process (connections to loopback only, as every child's). */
function initTime(file: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t));`;
  return Number(
    execFileSync(process.execPath, ['--import', LOOPBACK_ONLY, '--input-type=module', '-e', script], {
      env: CHILD_ENV,
    }).toString(),
  );
}

/** Fresh processes per bundle without a cold start, for its module init (information): medians of this many. */
export const INIT_RUNS = 5;
/** Fresh processes per group and per bare handler for the cold starts: medians of this many. */
export const COLD_START_RUNS = 11;

/**
 * Every Lambda's bundle, and the cold starts of the HTTP groups' main requests: of every group,
 * or of `coldStartGroups` only (BENCH_COLD_STARTS, a closer look; the others' rows give their
 * bundles alone).
 */
export async function measureBundles(
  root: string,
  bench: ColdStartPlatform,
  coldStartGroups?: ReadonlySet<string>,
): Promise<{ baseline: BundleFigure; groups: BundleFigure[] }> {
  // Inside the repository, so that the SDK clients the bundles leave out resolve from its node_modules.
  const dir = join(root, 'test/bench/.tmp');
  mkdirSync(dir, { recursive: true });
  const bundle = async (name: string, entry: string) => {
    const outfile = join(dir, `${name}.mjs`);
    await build({
      ...LAMBDA_BUILD,
      entryPoints: [entry],
      outfile,
      absWorkingDir: root,
      nodePaths: [join(root, 'node_modules')],
    });
    return outfile;
  };
  const source = (name: string, text: string) => {
    const file = join(dir, `${name}-src.ts`);
    writeFileSync(file, text);
    return file;
  };
  const bundles: { name: string; entry: string }[] = [
    { name: 'baseline (Hono + DynamoDB document client)', entry: source('baseline', BASELINE) },
    ...[...GROUPS, ...WORKERS, ...STREAM_CONSUMERS].map((g) => ({ name: g.name, entry: join(root, g.entry) })),
  ];
  const built: { name: string; entry: string; outfile: string; inits: number[] }[] = [];
  for (const b of bundles) built.push({ ...b, outfile: await bundle(b.name, b.entry), inits: [] as number[] });
  // The files a Lambda's asset holds beside its bundle (the platform's documents, Swagger UI's), as ServiceFunction copies them.
  for (const g of [...GROUPS, ...WORKERS, ...STREAM_CONSUMERS] as GroupDefinition[])
    for (const [folder, paths] of Object.entries(g.bundledFiles ?? {})) {
      mkdirSync(join(dir, folder), { recursive: true });
      for (const path of paths) copyFileSync(join(root, path), join(dir, folder, basename(path)));
    }
  const coldStarts = await measureColdStarts(
    bench,
    coldStartGroups,
    (name) => built.find((b) => b.name === name)!.outfile,
    bundle,
    source,
  );
  // Module init of the bundles without a cold start (the baseline, queue and stream Lambdas), in
  // rounds over all of them, so that a slower spell of this machine weighs on all alike; an HTTP
  // group's is the import in its cold-start processes.
  const initOnly = built.filter((b) => !coldStarts.has(b.name));
  for (let round = 0; round < INIT_RUNS; round++) for (const b of initOnly) b.inits.push(initTime(b.outfile));
  const figures: BundleFigure[] = built.map((b) => {
    const coldStart = coldStarts.get(b.name);
    return {
      name: b.name,
      bytes: statSync(b.outfile).size,
      initMs: coldStart ? coldStart.group.initMs : median(b.inits),
      ...(coldStart ? { coldStart } : {}),
    };
  });
  return { baseline: figures[0]!, groups: figures.slice(1) };
}

/**
 * Per HTTP group, COLD_START_RUNS fresh processes answering its main request and as many of
 * its bare handler, signed in the bare way (signedInBare) and not, in rounds over every group
 * (each of the three first in turn). The emulators are reached through recording proxies, KMS through the
 * stand-in; every child gets its group Lambda's environment (cold-start.ts: lambdaEnvironment).
 */
async function measureColdStarts(
  { platform, idp }: ColdStartPlatform,
  only: ReadonlySet<string> | undefined,
  groupBundle: (name: string) => string,
  bundle: (name: string, entry: string) => Promise<string>,
  source: (name: string, text: string) => string,
): Promise<Map<string, ColdStartFigure>> {
  const log = new CallLog();
  const { config } = platform;
  const dynamodb = await startRecordingProxy(config.endpoints.dynamodb!, log);
  // fauxqs serves SQS and S3 on one endpoint.
  const fauxqs = await startRecordingProxy(config.endpoints.sqs!, log);
  const kms = await startKmsStandIn((operation) => log.note(`KMS ${operation}`));
  const receiver = await startReceiver();
  const audience = config.auth.audience!;
  /** The cases ready to run, for their cleanup also when a run fails. */
  const prepared: Prepared[] = [];
  let runError: Error | undefined;
  try {
    const targets: ColdStartTargets = {
      baseUrl: platform.baseUrl,
      stage: config.stage,
      region: config.region,
      issuer: idp.issuer,
      audience,
      token: (name, roles = []) =>
        mintToken(idp.privateJwk, { issuer: idp.issuer, audience }, name, { roles, expiresIn: '1h' }),
      tableName: (table) => platform.runtime.tableName(table),
      queueUrls: {
        crewRuns: config.crewRunQueueUrl!,
        webhookDeliveries: config.webhookQueueUrl!,
        runWebhookDeliveries: config.runWebhookQueueUrl!,
      },
      artifactsBucket: config.artifactsBucket!,
      endpoints: { dynamodb: dynamodb.endpoint, sqs: fauxqs.endpoint, s3: fauxqs.endpoint, kms: kms.endpoint },
      kmsKeyArn: kms.keyArn,
      receiverUrl: receiver.url,
      queue: async (name) => {
        const { sdk, client } = await sqsAccess(config)();
        const out = await client.send(new sdk.CreateQueueCommand({ QueueName: `dpm-${config.stage}-${name}` }));
        return out.QueueUrl!;
      },
    };
    const missing = GROUPS.filter((g) => !COLD_START_CASES.some((c) => c.group === g.name));
    if (missing.length > 0) throw new Error(`no cold-start case for ${missing.map((g) => g.name).join(', ')}`);
    for (const c of COLD_START_CASES.filter((c) => !only || only.has(c.group))) {
      const definition = (GROUPS as readonly GroupDefinition[]).find((g) => g.name === c.group)!;
      const env = lambdaEnvironment(definition, targets);
      const groupFile = groupBundle(c.group);
      const viaLambda = (req: HandlerRequest) => runChild(groupFile, env, req, SEED_REQUEST_ID);
      const state = await c.prepare(targets, viaLambda);
      const bareSource = source(`bare-${c.group}`, c.bare(targets, state));
      const bareFile = await bundle(`bare-${c.group}`, bareSource);
      const signedFile = await bundle(
        `bare-signed-in-${c.group}`,
        source(`bare-signed-in-${c.group}`, signedInBare(`./bare-${c.group}-src.ts`)),
      );
      const side = (file: string): Side => ({ file, answers: [], calls: [] });
      prepared.push({
        c,
        targets,
        env,
        state,
        bearer: false,
        group: side(groupFile),
        bare: side(signedFile),
        unsigned: side(bareFile),
      });
    }
    for (let round = 0; round < COLD_START_RUNS; round++) {
      for (const p of prepared) {
        // each side first in turn (without a token the signed-in bare handler only hands the request on)
        const sides = [p.group, p.bare, p.unsigned];
        for (const side of [...sides.slice(round % sides.length), ...sides.slice(0, round % sides.length)]) {
          const req = await p.c.request(targets, p.state, round);
          p.bearer ||= Boolean(req.token);
          log.take();
          const answer = await runChild(side.file, p.env, req, `bench-cold-start-${round}`);
          side.calls.push(log.take());
          if (answer.status !== p.c.status) {
            throw new Error(`cold start of ${side.file} answered ${answer.status}, not ${p.c.status}: ${answer.body}`);
          }
          side.answers.push(answer);
          if (side === p.group) await p.c.settle?.(targets, p.state, answer);
        }
      }
    }
    const sideOf = (side: Side): ColdStartSide => ({
      ms: median(side.answers.map((a) => a.ms)),
      initMs: median(side.answers.map((a) => a.initMs)),
      bytes: statSync(side.file).size,
      calls: side.calls[0]!,
      otherCalls: [...new Set(side.calls.map((c) => c.join(', ')))].filter((c) => c !== side.calls[0]!.join(', ')),
    });
    return new Map(
      prepared.map((p) => [
        p.c.group,
        {
          what: p.c.what,
          status: p.c.status,
          runs: COLD_START_RUNS,
          group: sideOf(p.group),
          bare: sideOf(p.bearer ? p.bare : p.unsigned),
          bareWithoutSignIn: sideOf(p.unsigned),
          bearer: p.bearer,
        },
      ]),
    );
  } catch (err) {
    runError = err as Error;
    throw err;
  } finally {
    try {
      await cleanUp(prepared).catch((cleanupErr: unknown) => {
        // the runs' failure is the one to report; the cleanup's is told beside it
        if (!runError) throw cleanupErr;
        runError.message += `; and the cleanup after it failed: ${(cleanupErr as Error).message}`;
      });
    } finally {
      await Promise.all([dynamodb.stop(), fauxqs.stop(), kms.stop(), receiver.stop()]);
    }
  }
}

/** One side of a case (the group's bundle or a bare handler): its answers and calls, run by run. */
interface Side {
  readonly file: string;
  readonly answers: ChildAnswer[];
  readonly calls: string[][];
}

interface Prepared {
  readonly c: ColdStartCase;
  readonly targets: ColdStartTargets;
  readonly env: Record<string, string>;
  readonly state: unknown;
  bearer: boolean;
  readonly group: Side;
  readonly bare: Side;
  readonly unsigned: Side;
}

/** Every case's cleanup with what its runs answered, each even when one before it failed; rejects with the first failure. */
async function cleanUp(prepared: readonly Prepared[]): Promise<void> {
  const failures: unknown[] = [];
  for (const p of prepared) {
    const answers = [p.group, p.bare, p.unsigned].flatMap((side) => side.answers);
    await p.c.cleanup?.(p.targets, p.state, answers).catch((err: unknown) => failures.push(err));
  }
  if (failures.length > 0) throw failures[0];
}
