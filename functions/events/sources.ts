import type { EventSource } from '../../shared/events/source.js';
import { decisionEvents } from '../decisions/events.js';

/** Every domain table whose changes become events, with what its items mean. */
export const EVENT_SOURCES: readonly EventSource[] = [decisionEvents];
