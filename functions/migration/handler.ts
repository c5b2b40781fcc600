import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { migrationApp } from './app.js';

export const handler = handle(migrationApp(lambdaRuntimeFromEnv()));
