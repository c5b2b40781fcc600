import { existsSync, readFileSync } from 'node:fs';
import pkg from '../../package.json' with { type: 'json' };
import { oauthEndpointsOf } from '../../shared/auth/discovery.js';
import type { Config } from '../../shared/config.js';
import type { PlatformDeps } from './app.js';
import { bundledConsoleAssets, type ConsoleAssets } from './console.js';

/** Where a Lambda keeps the generated documents: a `documents` folder beside its bundle (infra/groups.ts). */
export const BUNDLED_DOCUMENTS_DIR = 'documents';

/**
 * A committed document (written by `npm run openapi`; a unit test fails when one is stale), read and
 * parsed when first asked: on Lambda from the `documents` folder beside the bundle, from
 * source beside this module. Not part of the bundle: the platform's cold start would compile
 * and build 390 KB of object literals that only /openapi.json and /asyncapi.json use.
 */
export function committedDocument(name: 'openapi.json' | 'asyncapi.json'): () => unknown {
  let parsed: unknown;
  return () => {
    if (parsed === undefined) {
      const bundled = new URL(`./${BUNDLED_DOCUMENTS_DIR}/${name}`, import.meta.url);
      const file = existsSync(bundled) ? bundled : new URL(`./${name}`, import.meta.url);
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    }
    return parsed;
  };
}

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
  asyncApiDocument: () => unknown = committedDocument('asyncapi.json'),
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
