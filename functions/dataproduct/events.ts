import { fromItem } from '../../shared/auth/key-store.js';
import type { EventSource } from '../../shared/events/source.js';
import { toInfo } from './service.js';

/**
 * Pre-shared keys are the subjects (`psks/{psk}`), with the data their list answers for
 * them: never the secret nor its hash (the table's key), the roles, lineage or principal.
 * A deleted key is kept with its `deleted_at`, so its deletion is stamped like any change.
 */
export const pskEvents: EventSource = {
  table: 'keys',
  describe(item) {
    if (typeof item.psk !== 'string') return undefined;
    const key = toInfo(fromItem(item));
    return { subject: `psks/${key.psk}`, data: key as unknown as Record<string, unknown> };
  },
};
