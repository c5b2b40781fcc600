import { readFileSync } from 'node:fs';
import pkg from '../../package.json' with { type: 'json' };
import { oauthEndpointsOf } from '../../shared/auth/discovery.js';
import type { Config } from '../../shared/config.js';
import type { PlatformDeps } from './app.js';

let committed: unknown;
/**
 * The generated AsyncAPI document (`npm run openapi`; a unit test fails when it is stale),
 * read when first asked: the local platform's. The Lambda passes the one bundled with it.
 */
const committedAsyncApi = () =>
  (committed ??= JSON.parse(readFileSync(new URL('./asyncapi.json', import.meta.url), 'utf8')));

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
  };
}
