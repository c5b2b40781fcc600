import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { decisionsApp } from './app.js';

export const handler = handle(decisionsApp(lambdaRuntimeFromEnv()));
