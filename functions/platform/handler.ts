import { handle } from 'hono/aws-lambda';
import pkg from '../../package.json' with { type: 'json' };
import { oauthEndpointsOf } from '../../shared/auth/discovery.js';
import { loadConfig } from '../../shared/config.js';
import { createPlatformApp } from './app.js';
import document from './openapi.json' with { type: 'json' };

const config = loadConfig();

export const handler = handle(
  createPlatformApp({
    version: pkg.version,
    buildNumber: config.buildNumber,
    document: () => document,
    oauthEndpoints: oauthEndpointsOf(config.auth.issuer),
    docsClientId: config.auth.docsClientId,
  }),
);
