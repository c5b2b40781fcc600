import type { EventSource } from '../../shared/events/source.js';
import { toVersionDetail, toVersionItem } from './store.js';

/** Versions are the subjects (`decisions/{ws}/{key}/versions/{v}`); the per-key counter is none. */
export const decisionEvents: EventSource = {
  table: 'decisions',
  describe(item) {
    if (typeof item.sk !== 'string' || !item.sk.startsWith('V#')) return undefined;
    const version = toVersionDetail(toVersionItem(item));
    return {
      subject: `decisions/${version.workspace}/${version.key}/versions/${version.version}`,
      data: version,
    };
  },
};
