import type { EventSource } from '../../shared/events/source.js';
import { toDocument } from './store.js';

/** The subject of a document's events (docs/events-and-webhooks.md). */
export const documentSubject = (id: string): string => `documents/${id}`;

/**
 * Every item of the documents table is a document (`documents/{id}`), its data the
 * document as GET answers it (toDocument: no principal, claim or index attributes).
 */
export const documentEvents: EventSource = {
  table: 'documents',
  describe(item) {
    if (typeof item.id !== 'string') return undefined;
    const document = toDocument(item);
    return { subject: documentSubject(document.id), data: document };
  },
};
