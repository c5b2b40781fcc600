import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createWebhooksApp } from './app.js';
import { webhooksDeps } from './compose-api.js';

export const handler = handle(createWebhooksApp(webhooksDeps(lambdaRuntimeFromEnv())));
