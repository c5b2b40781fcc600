import { Logger } from '@aws-lambda-powertools/logger';
import { redactUrls } from './redact.js';

/**
 * The structured JSON logger. Secrets never go in here; as a last guard every URL in a log
 * line (a message, an attribute, an error's message or stack) loses its userinfo and query.
 */
export const logger = new Logger({
  serviceName: 'dpm',
  jsonReplacerFn: (_key, value) => (typeof value === 'string' ? redactUrls(value) : value),
});
