import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { mcpsApp } from './app.js';

export const handler = handle(mcpsApp(lambdaRuntimeFromEnv()));
