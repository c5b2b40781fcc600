import { streamEntry } from '../../shared/aws/lambda.js';
import { lambdaRuntimeFromEnv } from '../composition.js';
import { publisherFor } from './compose-publisher.js';

export const handler = streamEntry(() => publisherFor(lambdaRuntimeFromEnv()));
