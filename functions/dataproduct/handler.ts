import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createDataproductApp } from './app.js';
import { dataproductDeps } from './compose.js';

export const handler = handle(createDataproductApp(dataproductDeps(lambdaRuntimeFromEnv())));
