import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createDataSharesApp } from './app.js';
import { dataSharesDeps } from './compose.js';

export const handler = handle(createDataSharesApp(dataSharesDeps(lambdaRuntimeFromEnv())));
