import { sqsEntry } from '../../../shared/aws/lambda.js';
import { lambdaRuntimeFromEnv } from '../../composition.js';
import { runQueue, scheduleService } from '../compose.js';
import { crewRunner } from './compose-worker.js';
import { createWorkerHandler } from './worker.js';

export const handler = sqsEntry(() => {
  const runtime = lambdaRuntimeFromEnv();
  return createWorkerHandler(crewRunner(runtime), runQueue(runtime), scheduleService(runtime));
});
