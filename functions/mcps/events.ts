import type { EventSource } from '../../shared/events/source.js';
import { serverSubject, toMcpServer } from './store.js';

/** Every item is a server (`mcps/{id}`); data is the server as GET answers it. */
export const mcpEvents: EventSource = {
  table: 'mcpServers',
  describe(item) {
    if (typeof item.id !== 'string') return undefined;
    return { subject: serverSubject(item.id), data: toMcpServer(item) };
  },
};
