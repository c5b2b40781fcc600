import { sqsEntry } from '../../../shared/aws/lambda.js';
import { lambdaRuntimeFromEnv } from '../../composition.js';
import { crewRunner } from './compose-worker.js';
import { createDeadLetterHandler } from './dead-letter.js';

export const handler = sqsEntry(() => createDeadLetterHandler(crewRunner(lambdaRuntimeFromEnv())));
