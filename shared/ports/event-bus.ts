import type { DomainEvent } from '../events/types.js';

/**
 * Where domain events go beyond the feed: the stage's EventBridge bus on AWS; locally
 * nothing (EventBridge has no emulator), the feed and webhooks being the local outputs.
 */
export interface EventBus {
  /** Puts the events; answers those that could not be put after retries (to hand again later). */
  publish(events: readonly DomainEvent[]): Promise<{ readonly failed: readonly DomainEvent[] }>;
}
