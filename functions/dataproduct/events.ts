import { fromItem } from '../../shared/auth/key-store.js';
import type { EventSource } from '../../shared/events/source.js';
import { isProductItem, productSubject, toDataProduct, toDataProductRecord, toKeyInfo } from './store.js';

/**
 * Pre-shared keys are the subjects (`psks/{psk}`), with the data their list answers for
 * them: never the secret nor its hash (the table's key), the roles, lineage or principal.
 * A deleted key is kept with its `deleted_at`, so its deletion is stamped like any change.
 */
export const pskEvents: EventSource = {
  table: 'keys',
  describe(item) {
    if (typeof item.psk !== 'string') return undefined;
    const key = toKeyInfo(fromItem(item));
    return { subject: `psks/${key.psk}`, data: key };
  },
};

/**
 * Data products are the subjects (`dataproducts/{id}`), with the product as its list answers
 * it; a deleted product is kept, marked, so its deletion is stamped like its creation. The
 * claims on names are no subjects.
 */
export const dataProductEvents: EventSource = {
  table: 'dataProducts',
  describe(item) {
    if (!isProductItem(item)) return undefined;
    const product = toDataProduct(toDataProductRecord(item));
    return { subject: productSubject(product.id), data: product };
  },
};
