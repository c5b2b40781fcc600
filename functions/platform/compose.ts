import { readFileSync } from 'node:fs';
import pkg from '../../package.json' with { type: 'json' };
import { oauthEndpointsOf } from '../../shared/auth/discovery.js';
import type { Config } from '../../shared/config.js';
import type { PlatformDeps } from './app.js';
import { bundledConsoleAssets, type ConsoleAssets } from './console.js';

let committed: unknown;
/**
 * The generated AsyncAPI document (`npm run openapi`; a unit test fails when it is stale),
 * read when first asked: the local platform's. The Lambda passes the one bundled with it.
 */
const committedAsyncApi = () =>
  (committed ??= JSON.parse(readFileSync(new URL('./asyncapi.json', import.meta.url), 'utf8')));

/**
 * The console's built files: beside the bundle on Lambda (built at synth time); when running
 * from source (npm start, tests), built once in memory by the same build, on first request.
 * The build's module is named at run time, so no Lambda bundle follows it into esbuild.
 */
function consoleAssets(): () => Promise<ConsoleAssets> {
  let built: Promise<ConsoleAssets> | undefined;
  return () =>
    (built ??= (async () => {
      const bundled = bundledConsoleAssets();
      if (bundled) return bundled;
      const builder = new URL('../../infra/console-build.ts', import.meta.url).href;
      const { buildConsole } = (await import(builder)) as { buildConsole: () => Promise<ConsoleAssets> };
      return buildConsole();
    })().catch((err: unknown) => {
      built = undefined;
      throw err;
    }));
}

/** Health and docs need no runtime: the version, the build, the stage, the issuer and the documents. */
export function platformDeps(
  config: Config,
  document: () => unknown,
  asyncApiDocument: () => unknown = committedAsyncApi,
): PlatformDeps {
  return {
    version: pkg.version,
    buildNumber: config.buildNumber,
    document,
    asyncApiDocument,
    stage: config.stage,
    region: config.region,
    oauthEndpoints: oauthEndpointsOf(config.auth.issuer),
    docsClientId: config.auth.docsClientId,
    issuer: config.auth.issuer,
    consoleClientId: config.auth.consoleClientId,
    consoleAssets: consoleAssets(),
  };
}
