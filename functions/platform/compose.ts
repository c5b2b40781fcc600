import pkg from '../../package.json' with { type: 'json' };
import { oauthEndpointsOf } from '../../shared/auth/discovery.js';
import type { Config } from '../../shared/config.js';
import type { PlatformDeps } from './app.js';

/** Health and docs need no runtime: the version, the build, the issuer and the document. */
export function platformDeps(config: Config, document: () => unknown): PlatformDeps {
  return {
    version: pkg.version,
    buildNumber: config.buildNumber,
    document,
    oauthEndpoints: oauthEndpointsOf(config.auth.issuer),
    docsClientId: config.auth.docsClientId,
  };
}
