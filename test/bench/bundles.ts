import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { RUNTIME_SDK_CLIENTS } from '../../infra/aws/service-function.js';
import { GROUPS, STREAM_CONSUMERS, WORKERS } from '../../infra/groups.js';

/** Same esbuild settings as ServiceFunction's NodejsFunction bundling (infra/aws/service-function.ts). */
const LAMBDA_BUILD = {
  bundle: true,
  minify: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  mainFields: ['module', 'main'] as string[],
  banner: { js: "import { createRequire } from 'module';const require = createRequire(import.meta.url);" },
  logLevel: 'silent',
  external: [...RUNTIME_SDK_CLIENTS] as string[],
} as const;

/** A minimal Hono + DynamoDB document client Lambda: the yardstick for every bundle. */
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

export interface BundleFigure {
  name: string;
  bytes: number;
  initMs: number;
  /** HTTP bundles only: a fresh process importing the bundle and answering COLD_START_EVENT. */
  coldStart?: { ms: number; status: number };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const CHILD_ENV = {
  PATH: process.env.PATH,
  STAGE: 'bench',
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** Module init time of a bundle in a fresh Node process. */
function initTime(file: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t));`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: CHILD_ENV }).toString());
}

/**
 * The first request of every cold start measured, the same for every HTTP bundle and the
 * baseline: an API Gateway HTTP API (payload 2.0) GET without credentials of a path that
 * needs no AWS call. The platform answers it (200); every other group, and the baseline,
 * routes it and answers 404 through its not-found handler.
 */
const COLD_START_EVENT = {
  version: '2.0',
  routeKey: '$default',
  rawPath: '/api/health/ping',
  rawQueryString: '',
  headers: { host: 'bench.execute-api.us-east-1.amazonaws.com', 'user-agent': 'bench', accept: 'application/json' },
  requestContext: {
    accountId: '123456789012',
    apiId: 'bench',
    domainName: 'bench.execute-api.us-east-1.amazonaws.com',
    domainPrefix: 'bench',
    http: { method: 'GET', path: '/api/health/ping', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
    requestId: 'bench-cold-start',
    routeKey: '$default',
    stage: '$default',
    time: '01/Jan/2025:00:00:00 +0000',
    timeEpoch: 1735689600000,
  },
  isBase64Encoded: false,
};

const COLD_START_CONTEXT = `{
  callbackWaitsForEmptyEventLoop: true,
  functionName: 'bench',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench',
  memoryLimitInMB: '1024',
  awsRequestId: 'bench-cold-start',
  logGroupName: '/aws/lambda/bench',
  logStreamName: 'bench',
  getRemainingTimeInMillis: () => 30000,
}`;

/**
 * Cold start of an HTTP bundle in a fresh Node process: importing the bundle (module
 * init) plus answering its first request, COLD_START_EVENT. The figure goes out on
 * stderr, as the handler logs its request on stdout.
 */
function coldStart(file: string): { ms: number; status: number } {
  const script = [
    'const t = performance.now();',
    `const { handler } = await import(${JSON.stringify(file)});`,
    `const res = await handler(${JSON.stringify(COLD_START_EVENT)}, ${COLD_START_CONTEXT});`,
    'const ms = performance.now() - t;',
    'process.stderr.write(`\\n@@cold-start ${JSON.stringify({ ms, status: res.statusCode })}\\n`);',
  ].join('\n');
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: CHILD_ENV });
  const line = child.stderr
    .toString()
    .split('\n')
    .find((l) => l.startsWith('@@cold-start '));
  if (child.status !== 0 || !line) {
    throw new Error(`cold start of ${file} failed (${child.status}): ${child.stderr.toString().slice(-2000)}`);
  }
  return JSON.parse(line.slice('@@cold-start '.length)) as { ms: number; status: number };
}

/** Fresh processes per bundle for each figure: medians of this many. */
const RUNS = 7;

export async function measureBundles(root: string): Promise<{ baseline: BundleFigure; groups: BundleFigure[] }> {
  const dir = join(root, 'test/bench/.tmp');
  mkdirSync(dir, { recursive: true });
  const baselineSource = join(dir, 'baseline-src.ts');
  writeFileSync(baselineSource, BASELINE);
  const bundles: { name: string; entry: string; http: boolean }[] = [
    { name: 'baseline (Hono + DynamoDB document client)', entry: baselineSource, http: true },
    ...GROUPS.map((g) => ({ name: g.name, entry: join(root, g.entry), http: true })),
    // Queue and stream consumers: no HTTP request to answer, so module init only.
    ...WORKERS.map((g) => ({ name: g.name, entry: join(root, g.entry), http: false })),
    ...STREAM_CONSUMERS.map((c) => ({ name: c.name, entry: join(root, c.entry), http: false })),
  ];
  const built = [];
  for (const b of bundles) {
    const outfile = join(dir, `${b.name}.mjs`);
    await build({
      ...LAMBDA_BUILD,
      entryPoints: [b.entry],
      outfile,
      absWorkingDir: root,
      nodePaths: [join(root, 'node_modules')],
    });
    built.push({ ...b, outfile, inits: [] as number[], colds: [] as { ms: number; status: number }[] });
  }
  // Round after round over every bundle, so that a slower spell of this machine weighs on
  // all of them alike instead of on whichever was measured then.
  for (let round = 0; round < RUNS; round++) {
    for (const b of built) {
      b.inits.push(initTime(b.outfile));
      if (b.http) b.colds.push(coldStart(b.outfile));
    }
  }
  for (const b of built) {
    const statuses = new Set(b.colds.map((c) => c.status));
    if (statuses.size > 1) throw new Error(`cold start of ${b.name} answered ${[...statuses].join(', ')}`);
  }
  const figures: BundleFigure[] = built.map((b) => ({
    name: b.name,
    bytes: statSync(b.outfile).size,
    initMs: median(b.inits),
    ...(b.http ? { coldStart: { ms: median(b.colds.map((c) => c.ms)), status: b.colds[0]!.status } } : {}),
  }));
  return { baseline: figures[0]!, groups: figures.slice(1) };
}
