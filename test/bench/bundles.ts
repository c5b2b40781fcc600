import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { RUNTIME_SDK_CLIENTS } from '../../infra/aws/service-function.js';
import { GROUPS, WORKERS } from '../../infra/groups.js';

/** Same esbuild settings as ServiceFunction's NodejsFunction bundling (infra/aws/service-function.ts). */
const LAMBDA_BUILD = {
  bundle: true,
  minify: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
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

/** Module init time of a bundle in fresh Node processes (median of `runs`). */
function initTime(file: string, runs = 7): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t));`;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: CHILD_ENV });
    times.push(Number(out.toString()));
  }
  return median(times);
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
 * Cold start of an HTTP bundle in fresh Node processes (median of `runs`): importing the
 * bundle (module init) plus answering its first request, COLD_START_EVENT. The figure goes
 * out on stderr, as the handler logs its request on stdout.
 */
function coldStart(file: string, runs = 7): { ms: number; status: number } {
  const script = [
    'const t = performance.now();',
    `const { handler } = await import(${JSON.stringify(file)});`,
    `const res = await handler(${JSON.stringify(COLD_START_EVENT)}, ${COLD_START_CONTEXT});`,
    'const ms = performance.now() - t;',
    'process.stderr.write(`\\n@@cold-start ${JSON.stringify({ ms, status: res.statusCode })}\\n`);',
  ].join('\n');
  const figures: { ms: number; status: number }[] = [];
  for (let i = 0; i < runs; i++) {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: CHILD_ENV });
    const line = child.stderr
      .toString()
      .split('\n')
      .find((l) => l.startsWith('@@cold-start '));
    if (child.status !== 0 || !line) {
      throw new Error(`cold start of ${file} failed (${child.status}): ${child.stderr.toString().slice(-2000)}`);
    }
    figures.push(JSON.parse(line.slice('@@cold-start '.length)));
  }
  const statuses = new Set(figures.map((f) => f.status));
  if (statuses.size !== 1) throw new Error(`cold start of ${file} answered ${[...statuses].join(', ')}`);
  return { ms: median(figures.map((f) => f.ms)), status: figures[0]!.status };
}

export async function measureBundles(root: string): Promise<{ baseline: BundleFigure; groups: BundleFigure[] }> {
  const dir = join(root, 'test/bench/.tmp');
  mkdirSync(dir, { recursive: true });
  const baselineSource = join(dir, 'baseline-src.ts');
  writeFileSync(baselineSource, BASELINE);
  const one = async (name: string, entry: string, http: boolean): Promise<BundleFigure> => {
    const outfile = join(dir, `${name}.mjs`);
    await build({
      ...LAMBDA_BUILD,
      entryPoints: [entry],
      outfile,
      absWorkingDir: root,
      nodePaths: [join(root, 'node_modules')],
    });
    return {
      name,
      bytes: statSync(outfile).size,
      initMs: initTime(outfile),
      ...(http ? { coldStart: coldStart(outfile) } : {}),
    };
  };
  const baseline = await one('baseline (Hono + DynamoDB document client)', baselineSource, true);
  const groups: BundleFigure[] = [];
  for (const g of GROUPS) groups.push(await one(g.name, join(root, g.entry), true));
  // Queue consumers: no HTTP request to answer, so module init only.
  for (const g of WORKERS) groups.push(await one(g.name, join(root, g.entry), false));
  return { baseline, groups };
}
