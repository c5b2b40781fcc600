import { sqsEntry } from '../../shared/aws/lambda.js';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { webhookWorkerFor } from './compose-worker.js';

export const handler = sqsEntry(() => webhookWorkerFor(lambdaRuntimeFromEnv()));
