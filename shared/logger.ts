import { Logger } from '@aws-lambda-powertools/logger';

/** The structured JSON logger. Secrets never go in here. */
export const logger = new Logger({ serviceName: 'dpm' });
