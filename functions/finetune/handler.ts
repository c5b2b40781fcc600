import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createFinetuneApp } from './app.js';
import { finetuneDeps } from './compose.js';

export const handler = handle(createFinetuneApp(finetuneDeps(lambdaRuntimeFromEnv())));
