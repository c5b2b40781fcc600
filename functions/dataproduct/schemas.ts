import * as z from 'zod/mini';
import { boolParam, integer, PageQuery } from '../../shared/http/params.js';
import { component, doc } from '../../shared/schema.js';

export const ProductParams = z.object({
  dataproduct_id: doc(
    z.string().check(z.maxLength(128), z.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/)),
    'the data product the key is for',
  ),
});

export const KeyParams = z.object({ psk_id: doc(z.uuid(), 'the public id of the key') });

const validityDays = () => integer().check(z.gte(1), z.lte(3650));

export const CreateKeyRequest = component(
  'CreatePskRequest',
  z.strictObject({
    description: doc(z.string().check(z.maxLength(1000)), 'what the key is for (required, at most 1000 characters)'),
    validity_days: doc(
      z._default(validityDays(), 30),
      "days the key is valid from now: 1–3650, default 30; a key created with another key never outlives that key's `valid_until`",
    ),
  }),
);
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

export const ExtendKeyRequest = component(
  'ExtendPskRequest',
  z.strictObject({
    validity_days: doc(
      validityDays(),
      "days to add, 1–3650: the new `valid_until` is max(old `valid_until`, now) + validity_days; with a key as credentials, at most that key's `valid_until`",
    ),
  }),
);

export const ListKeysQuery = z.extend(PageQuery, {
  include_deleted: doc(z.optional(boolParam()), 'also list deleted keys (with their `deleted_at`); default false', {
    type: 'boolean',
    default: false,
  }),
});

export const KeyInfo = component(
  'PskInfo',
  z.object({
    psk: doc(z.uuid(), 'the public id of the key (not its secret)'),
    dataproduct_id: doc(
      z.nullable(z.string()),
      'the data product the key was created for; null for the bootstrap admin key',
    ),
    description: doc(z.string(), 'what the key is for, as given at creation'),
    valid_until: doc(z.iso.datetime(), 'when the key stops working (ISO 8601 UTC)'),
    created_by: doc(z.string(), "the creator's name"),
    created_at: doc(z.iso.datetime(), 'when the key was created (ISO 8601 UTC)'),
    deleted_at: doc(z.nullable(z.iso.datetime()), 'when the key was deleted; null while it is not'),
  }),
);
export type KeyInfo = z.infer<typeof KeyInfo>;

/** Creation is the only answer that carries the secret (`key`): it is shown once. */
export const CreatedKey = component(
  'CreatedPsk',
  z.extend(z.omit(KeyInfo, { deleted_at: true }), {
    key: doc(z.string(), 'the secret for Authorization-PSK; shown once'),
  }),
);
export type CreatedKey = z.infer<typeof CreatedKey>;

/** Spec 2.9. */
export const ExtendedKey = component(
  'PskExtension',
  z.object({
    psk: doc(z.uuid(), 'the public id of the key'),
    description: doc(z.string(), 'what the key is for, as given at creation'),
    valid_until: doc(z.iso.datetime(), 'the new expiry (ISO 8601 UTC)'),
  }),
);
export type ExtendedKey = z.infer<typeof ExtendedKey>;
