import { handle } from 'hono/aws-lambda';
import { loadConfig } from '../../shared/config.js';
import { createPlatformApp } from './app.js';
import asyncApiDocument from './asyncapi.json' with { type: 'json' };
import { platformDeps } from './compose.js';
import document from './openapi.json' with { type: 'json' };

export const handler = handle(
  createPlatformApp(
    platformDeps(
      loadConfig(),
      () => document,
      () => asyncApiDocument,
    ),
  ),
);
