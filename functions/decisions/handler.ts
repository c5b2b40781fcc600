import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createDecisionsApp } from './app.js';
import { decisionsDeps } from './compose.js';

export const handler = handle(createDecisionsApp(decisionsDeps(lambdaRuntimeFromEnv())));
