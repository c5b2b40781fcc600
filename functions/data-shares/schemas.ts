import { z } from '@hono/zod-openapi';
import { optionalText, slug } from '../../shared/http/schemas.js';

/** A share's name: the slug that is also the identity provider's client id. */
const shareName = () => slug().openapi({ description: 'slug; also the client id', example: 'sales-analytics' });

export const CreateShareRequest = z
  .strictObject({
    name: shareName(),
    description: optionalText().openapi({ description: 'what the share is for (at most 4000 characters)' }),
    tables: z
      .array(z.string().min(1).max(512))
      .max(1000)
      .optional()
      .openapi({ description: 'the tables the share gives access to' }),
  })
  .openapi('CreateDataShareRequest');
export type CreateShareRequest = z.infer<typeof CreateShareRequest>;

export const ShareParams = z.object({ name: shareName() });

/** Spec 2.10 SharedClient, plus the share's registry fields. */
export const SharedClient = z
  .object({
    id: z.string().openapi({ description: 'internal identity-provider id (UUID) of the client' }),
    client_id: z.string().openapi({ description: 'the client id known to the identity provider' }),
    name: z.string().openapi({ description: 'display name' }),
    enabled: z.boolean().openapi({ description: 'whether the client is enabled in the identity provider' }),
    service_accounts_enabled: z
      .boolean()
      .openapi({ description: 'whether the service account for the client-credentials grant is enabled' }),
    secret: z
      .string()
      .nullable()
      .openapi({ description: 'null when the client has none, it could not be retrieved, or in lists' }),
    owner: z.string().openapi({ description: "the name of the share's creator" }),
    description: z.string().nullable().openapi({ description: 'as given at creation; null when not given' }),
    tables: z.array(z.string()).openapi({ description: 'the tables the share gives access to' }),
    created_at: z.iso.datetime().openapi({ description: 'when the share was created (ISO 8601 UTC)' }),
  })
  .openapi('SharedClient');
export type SharedClient = z.infer<typeof SharedClient>;
