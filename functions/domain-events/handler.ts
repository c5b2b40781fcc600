import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createDomainEventsApp } from './app.js';
import { domainEventsDeps } from './compose.js';

export const handler = handle(createDomainEventsApp(domainEventsDeps(lambdaRuntimeFromEnv())));
