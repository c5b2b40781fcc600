import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { finetuneApp } from './app.js';

export const handler = handle(finetuneApp(lambdaRuntimeFromEnv()));
