import { handle } from 'hono/aws-lambda';
import { loadConfig } from '../../shared/config.js';
import { createPlatformApp } from './app.js';
import { committedDocument, platformDeps } from './compose.js';

export const handler = handle(
  createPlatformApp(platformDeps(loadConfig(), committedDocument('openapi.json'), committedDocument('asyncapi.json'))),
);
