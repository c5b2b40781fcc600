import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../../shared/runtime.js';
import { crewsApp } from './app.js';

export const handler = handle(crewsApp(lambdaRuntimeFromEnv()));
