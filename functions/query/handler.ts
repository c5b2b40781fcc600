import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { queryApp } from './app.js';

export const handler = handle(queryApp(lambdaRuntimeFromEnv()));
