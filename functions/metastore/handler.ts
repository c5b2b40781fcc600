import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { metastoreApp } from './app.js';

export const handler = handle(metastoreApp(lambdaRuntimeFromEnv()));
