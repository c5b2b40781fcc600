import type { TableKey } from '../../infra/tables.js';

/**
 * What the events publisher needs from a domain table: for an item its last change
 * stamped (shared/events/stamp.ts), the subject of the event and the resource as its GET
 * answers. Each group declares its own (`functions/<group>/events.ts`).
 */
export interface EventSource {
  readonly table: TableKey;
  /** Undefined for an item that is no event subject (a counter, an index helper). */
  describe(item: Record<string, unknown>): { subject: string; data: object } | undefined;
}
