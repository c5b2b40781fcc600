import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createEventsApp } from './app.js';
import { eventsDeps } from './compose.js';

export const handler = handle(createEventsApp(eventsDeps(lambdaRuntimeFromEnv())));
