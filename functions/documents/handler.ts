import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createDocumentsApp } from './app.js';
import { documentsDeps } from './compose.js';

export const handler = handle(createDocumentsApp(documentsDeps(lambdaRuntimeFromEnv())));
