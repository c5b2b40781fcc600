import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
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
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Module init time of a bundle in fresh Node processes (median of `runs`). */
function initTime(file: string, runs = 7): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t));`;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: {
        PATH: process.env.PATH,
        STAGE: 'bench',
        AWS_REGION: 'us-east-1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    });
    times.push(Number(out.toString()));
  }
  return median(times);
}

export async function measureBundles(root: string): Promise<{ baseline: BundleFigure; groups: BundleFigure[] }> {
  const dir = join(root, 'test/bench/.tmp');
  mkdirSync(dir, { recursive: true });
  const baselineSource = join(dir, 'baseline-src.ts');
  writeFileSync(baselineSource, BASELINE);
  const one = async (name: string, entry: string): Promise<BundleFigure> => {
    const outfile = join(dir, `${name}.mjs`);
    await build({
      ...LAMBDA_BUILD,
      entryPoints: [entry],
      outfile,
      absWorkingDir: root,
      nodePaths: [join(root, 'node_modules')],
    });
    return { name, bytes: statSync(outfile).size, initMs: initTime(outfile) };
  };
  const baseline = await one('baseline (Hono + DynamoDB document client)', baselineSource);
  const groups: BundleFigure[] = [];
  for (const g of [...GROUPS, ...WORKERS]) groups.push(await one(g.name, join(root, g.entry)));
  return { baseline, groups };
}
