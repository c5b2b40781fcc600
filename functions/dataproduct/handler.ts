import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { dataproductApp } from './app.js';

export const handler = handle(dataproductApp(lambdaRuntimeFromEnv()));
