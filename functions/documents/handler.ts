import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { documentsApp } from './app.js';

export const handler = handle(documentsApp(lambdaRuntimeFromEnv()));
