/**
 * `npm run bench`: measures on this machine, in one run, what the service adds over its
 * bare DynamoDB calls, and the Lambda bundles; prints one table and writes RESULTS.md.
 */
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONCURRENCY = 16;
const GET_REQUESTS = 6_000;
const E1_REQUESTS = 2_000;

const { startPlatform } = await import('../../infra/local/platform.js');
const { loadConfig } = await import('../../shared/config.js');
const { startTestIssuer } = await import('../support/identity-provider.js');
const { mintToken } = await import('../support/tokens.js');
const { DecisionStore } = await import('../../functions/decisions/store.js');
const { DecisionService } = await import('../../functions/decisions/service.js');
const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
const { runLoad, httpCall } = await import('./load.js');
const { measureBundles } = await import('./bundles.js');
type LoadResult = Awaited<ReturnType<typeof runLoad>>;

const idp = await startTestIssuer();
const platform = await startPlatform(
  loadConfig({ STAGE: 'bench', PORT: '0', AUTH_ISSUER: idp.issuer, AUTH_AUDIENCE: 'dpm-api', DPM_ADMIN_PSK: 'bench-admin-key-0123456789' }),
  { inMemory: true },
);
const db = platform.runtime.db;
let dynamoCalls = 0;
db.middlewareStack.add((next) => (args) => {
  dynamoCalls++;
  return next(args);
}, { step: 'initialize', name: 'benchCallCounter' });

const table = platform.runtime.tableName('decisions');
const store = new DecisionStore(db, table);
const service = new DecisionService(store);
const tokenFor = (name: string, roles: string[] = []) =>
  mintToken(idp.privateJwk, { issuer: idp.issuer, audience: 'dpm-api' }, name, { roles, expiresIn: '1h' });
const userToken = await tokenFor('bench-user');
const approverToken = await tokenFor('bench-approver', ['approver']);
const author = { name: 'bench-author', roles: new Set<string>(), via: 'bearer' as const };

async function seedSubmitted(key: string, count: number) {
  await runLoad(
    async () => {
      const v = await service.createVersion('bench', key, { content: { rule: key } }, author);
      await service.transition('submit', 'bench', key, v.version, null, author);
      return true;
    },
    { concurrency: CONCURRENCY, total: count, maxSeconds: 300 },
  );
}

/** Runs a measured load and counts the DynamoDB calls it made. */
async function measured(op: (i: number) => Promise<boolean>, total: number) {
  const before = dynamoCalls;
  const result = await runLoad(op, { concurrency: CONCURRENCY, total, maxSeconds: 120 });
  return { ...result, callsPerOp: (dynamoCalls - before) / result.requests };
}

// GET /api/decisions/{workspace}/{key}/versions/{version} against a GetItem.
await service.createVersion('bench', 'get', { content: { limit: 100, tiers: [1, 2, 3] } }, author);
const getUrl = `${platform.baseUrl}/api/decisions/bench/get/versions/1`;
const auth = (t: string) => ({ authorization: `Bearer ${t}` });
await runLoad(async () => (await httpCall(getUrl, 'GET', auth(userToken))) === 200, { concurrency: CONCURRENCY, total: 500 });
const getEndpoint = await measured(async () => (await httpCall(getUrl, 'GET', auth(userToken))) === 200, GET_REQUESTS);
const getKey = { pk: 'D#bench#get', sk: `V#${'1'.padStart(10, '0')}` };
const getBare = await measured(async () => Boolean((await db.send(new GetCommand({ TableName: table, Key: getKey }))).Item), GET_REQUESTS);

// E1: approve distinct submitted versions, against the one conditional UpdateItem.
await seedSubmitted('e1-http', E1_REQUESTS);
await seedSubmitted('e1-bare', E1_REQUESTS);
const e1Endpoint = await measured(
  async (i) =>
    (await httpCall(`${platform.baseUrl}/api/decisions/bench/e1-http/versions/${i + 1}/approve`, 'POST', {
      ...auth(approverToken),
      'content-type': 'application/json',
    }, '{"notes":"bench"}')) === 200,
  E1_REQUESTS,
);
const e1Bare = await measured(async (i) => {
  const at = new Date().toISOString();
  const result = await store.transition('bench', 'e1-bare', i + 1, {
    from: 'submitted',
    to: 'approved',
    set: { approved_by: 'bench-approver', approved_at: at, notes: 'bench' },
    remove: [],
    history: { from: 'submitted', to: 'approved', action: 'approve', by: 'bench-approver', at, notes: 'bench' },
    notEqual: { created_by: 'bench-approver', submitted_by: 'bench-approver' },
    published: true,
  });
  return result.ok;
}, E1_REQUESTS);

await platform.stop();
await idp.stop();

const bundles = await measureBundles(ROOT);

const ms = (n: number) => n.toFixed(2);
const row = (name: string, r: LoadResult & { callsPerOp: number }) =>
  `| ${name} | ${r.requests} | ${r.errors} | ${r.rps.toFixed(0)} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.callsPerOp.toFixed(2)} |`;
const ratio = (a: number, b: number) => (a / b).toFixed(2);
const kb = (b: number) => `${(b / 1024).toFixed(0)} KB`;

const lines = [
  '# Benchmark results',
  '',
  `Measured ${new Date().toISOString()} by \`npm run bench\` on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}.`,
  'Local platform in one process: DynamoDB Local (in memory), Bearer JWT auth (RS256, cached JWKS), keep-alive HTTP.',
  `Concurrency ${CONCURRENCY}; the same load loop drives the endpoints and their bare store calls.`,
  '',
  '## Endpoints vs. their bare DynamoDB calls',
  '',
  '| measurement | requests | errors | req/s | p50 ms | p99 ms | DynamoDB calls / request |',
  '|---|---|---|---|---|---|---|',
  row('GET /api/decisions/{ws}/{key}/versions/{v}', getEndpoint),
  row('bare GetItem', getBare),
  row('POST .../versions/{v}/approve (E1)', e1Endpoint),
  row('bare conditional UpdateItem', e1Bare),
  '',
  `Overhead ratio (p50 endpoint / p50 bare; target ≤ 1.5): GET **${ratio(getEndpoint.p50, getBare.p50)}**, E1 **${ratio(e1Endpoint.p50, e1Bare.p50)}**.`,
  '',
  '## Lambda bundles (esbuild, minified, AWS SDK bundled, ESM, node22)',
  '',
  '| bundle | size | size ratio | module init ms (median of 7 fresh processes) | init ratio |',
  '|---|---|---|---|---|',
  `| ${bundles.baseline.name} | ${kb(bundles.baseline.bytes)} | 1.00 | ${ms(bundles.baseline.initMs)} | 1.00 |`,
  ...bundles.groups.map(
    (b) =>
      `| ${b.name} | ${kb(b.bytes)} | ${ratio(b.bytes, bundles.baseline.bytes)} | ${ms(b.initMs)} | ${ratio(b.initMs, bundles.baseline.initMs)} |`,
  ),
  '',
  'Targets: ratio ≤ 1.3 for size and init time.',
  '',
];
const report = lines.join('\n');
console.log(report);
writeFileSync(`${ROOT}test/bench/RESULTS.md`, report);
process.exit(0);
