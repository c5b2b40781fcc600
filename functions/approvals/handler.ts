import { handle } from 'hono/aws-lambda';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { createApprovalsApp } from './app.js';
import { approvalsDeps } from './compose.js';

export const handler = handle(createApprovalsApp(approvalsDeps(lambdaRuntimeFromEnv())));
