import { streamEntry } from '../../shared/aws/lambda.js';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { dispatcherFor } from './compose-worker.js';

export const handler = streamEntry(() => dispatcherFor(lambdaRuntimeFromEnv()));
