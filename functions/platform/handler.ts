import { handle } from 'hono/aws-lambda';
import pkg from '../../package.json' with { type: 'json' };
import { loadConfig } from '../../shared/config.js';
import { createPlatformApp } from './app.js';
import document from './openapi.json' with { type: 'json' };

export const handler = handle(
  createPlatformApp({ version: pkg.version, buildNumber: loadConfig().buildNumber, document: () => document }),
);
