import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createMetastoreApp } from './app.js';
import { metastoreDeps } from './compose.js';

export const handler = handle(createMetastoreApp(metastoreDeps(lambdaRuntimeFromEnv())));
