import type { EventSource } from '../../shared/events/source.js';
import {
  CONFIG_ID,
  CONFIG_SUBJECT,
  connectionSubject,
  toConfigItem,
  toConnection,
  toConnectionRecord,
  toInfrastructureConfig,
} from './store.js';

/** The one configuration item is the subject `migration/config`, with what its GET answers (no secret key). */
export const migrationConfigEvents: EventSource = {
  table: 'migrationConfig',
  describe(item) {
    if (item.id !== CONFIG_ID) return undefined;
    return {
      subject: CONFIG_SUBJECT,
      data: toInfrastructureConfig(toConfigItem(item)),
    };
  },
};

/** Each connection is the subject `migration/connections/{conn_id}`, with what its GET answers (no password). */
export const migrationConnectionEvents: EventSource = {
  table: 'migrationConnections',
  describe(item) {
    if (typeof item.conn_id !== 'string') return undefined;
    const connection = toConnection(toConnectionRecord(item));
    return {
      subject: connectionSubject(connection.conn_id),
      data: connection,
    };
  },
};
