import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { dataSharesApp } from './app.js';

export const handler = handle(dataSharesApp(lambdaRuntimeFromEnv()));
