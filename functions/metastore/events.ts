import type { EventSource } from '../../shared/events/source.js';
import { domainUrn, type CatalogItem } from '../../shared/ports/catalog.js';
import { domainOf, domainSubject } from './metadata-catalog-service.js';

/**
 * A domain item of the built-in catalog (`DOMAIN` / name, holding `name`, `urn` and
 * `description`: shared/adapters/builtin-catalog.ts, which only the composition root may
 * import) as the port's CatalogItem, the way that adapter reads it; undefined for the
 * table's other items.
 */
function storedDomain(item: Record<string, unknown>): CatalogItem | undefined {
  if (item.pk !== 'DOMAIN' || typeof item.sk !== 'string') return undefined;
  return {
    name: item.sk,
    urn: typeof item.urn === 'string' ? item.urn : domainUrn(item.sk),
    description: typeof item.description === 'string' ? item.description : null,
  };
}

/**
 * The built-in catalog's domains (`catalog/domains/{name}`): a creation is stamped on the
 * domain's item. Its data is the domain as the domain list answers it once the creation
 * is done: every document that waited for it is attached by then, so none is pending.
 * Tags, glossary terms and entity items are no subjects here: an E5 acceptance writes its
 * event (`catalog.classification.accepted`, the table's subject) into the events table
 * in the transaction that annotates the entity.
 */
export const catalogEvents: EventSource = {
  table: 'catalog',
  describe(item) {
    const domain = storedDomain(item);
    if (!domain) return undefined;
    return { subject: domainSubject(domain.name), data: domainOf(domain, []) };
  },
};
