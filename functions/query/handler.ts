import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createQueryApp } from './app.js';
import { queryDeps } from './compose.js';

export const handler = handle(createQueryApp(queryDeps(lambdaRuntimeFromEnv())));
