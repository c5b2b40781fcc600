import type { EventSource } from '../../shared/events/source.js';
import { shareSubject, toDataShare, toShareItem } from './store.js';

/**
 * Shares are the subjects (`data-shares/{name}`), reservations are none; data is the share
 * as GET answers it, with `secret` null as in lists: a share's secret is never in an event.
 */
export const dataShareEvents: EventSource = {
  table: 'dataShares',
  describe(item) {
    if (typeof item.name !== 'string' || item.reservation !== undefined) return undefined;
    return {
      subject: shareSubject(item.name),
      data: toDataShare(toShareItem(item), undefined, null),
    };
  },
};
