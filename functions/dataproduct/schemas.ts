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
    description: z.string().max(1000),
    validity_days: validityDays().default(30),
  })
  .openapi('CreatePskRequest');
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

export const ExtendKeyRequest = z.strictObject({ validity_days: validityDays() }).openapi('ExtendPskRequest');

export const ListKeysQuery = PageQuery.extend({
  include_deleted: boolParam().optional().openapi({ type: 'boolean', default: false }),
});

export const KeyInfo = z
  .object({
    psk: z.uuid(),
    dataproduct_id: z.string().nullable(),
    description: z.string(),
    valid_until: z.iso.datetime(),
    created_by: z.string(),
    created_at: z.iso.datetime(),
    deleted_at: z.iso.datetime().nullable(),
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
  .object({ psk: z.uuid(), description: z.string(), valid_until: z.iso.datetime() })
  .openapi('PskExtension');
export type ExtendedKey = z.infer<typeof ExtendedKey>;
