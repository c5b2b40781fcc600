import { z } from '@hono/zod-openapi';
import { boolParam, integer, PageQuery } from '../../shared/http/params.js';

export const ProductParams = z.object({
  dataproduct_id: z
    .string()
    .max(128)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/)
    .openapi({ description: 'the data product the key is for' }),
});

export const KeyParams = z.object({ psk_id: z.uuid().openapi({ description: 'the public id of the key' }) });

const validityDays = () => integer().min(1).max(3650);

export const CreateKeyRequest = z
  .strictObject({
    description: z
      .string()
      .max(1000)
      .openapi({ description: 'what the key is for (required, at most 1000 characters)' }),
    validity_days: validityDays().default(30).openapi({
      description:
        "days the key is valid from now: 1–3650, default 30; a key created with another key never outlives that key's `valid_until`",
    }),
  })
  .openapi('CreatePskRequest');
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

export const ExtendKeyRequest = z
  .strictObject({
    validity_days: validityDays().openapi({
      description:
        "days to add, 1–3650: the new `valid_until` is max(old `valid_until`, now) + validity_days; with a key as credentials, at most that key's `valid_until`",
    }),
  })
  .openapi('ExtendPskRequest');

export const ListKeysQuery = PageQuery.extend({
  include_deleted: boolParam().optional().openapi({
    type: 'boolean',
    default: false,
    description: 'also list deleted keys (with their `deleted_at`); default false',
  }),
});

export const KeyInfo = z
  .object({
    psk: z.uuid().openapi({ description: 'the public id of the key (not its secret)' }),
    dataproduct_id: z
      .string()
      .nullable()
      .openapi({ description: 'the data product the key was created for; null for the bootstrap admin key' }),
    description: z.string().openapi({ description: 'what the key is for, as given at creation' }),
    valid_until: z.iso.datetime().openapi({ description: 'when the key stops working (ISO 8601 UTC)' }),
    created_by: z.string().openapi({ description: "the creator's name" }),
    created_at: z.iso.datetime().openapi({ description: 'when the key was created (ISO 8601 UTC)' }),
    deleted_at: z.iso.datetime().nullable().openapi({ description: 'when the key was deleted; null while it is not' }),
  })
  .openapi('PskInfo');
export type KeyInfo = z.infer<typeof KeyInfo>;

/** Creation is the only answer that carries the secret (`key`): it is shown once. */
export const CreatedKey = KeyInfo.omit({ deleted_at: true })
  .extend({ key: z.string().openapi({ description: 'the secret for Authorization-PSK; shown once' }) })
  .openapi('CreatedPsk');
export type CreatedKey = z.infer<typeof CreatedKey>;

/** Spec 2.9. */
export const ExtendedKey = z
  .object({
    psk: z.uuid().openapi({ description: 'the public id of the key' }),
    description: z.string().openapi({ description: 'what the key is for, as given at creation' }),
    valid_until: z.iso.datetime().openapi({ description: 'the new expiry (ISO 8601 UTC)' }),
  })
  .openapi('PskExtension');
export type ExtendedKey = z.infer<typeof ExtendedKey>;
