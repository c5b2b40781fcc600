import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createMcpsApp } from './app.js';
import { mcpsDeps } from './compose.js';

export const handler = handle(createMcpsApp(mcpsDeps(lambdaRuntimeFromEnv())));
