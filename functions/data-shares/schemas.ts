import * as z from 'zod/mini';
import { optionalText, slug } from '../../shared/http/schemas.js';
import { component, doc } from '../../shared/schema.js';

/** A share's name: the slug that is also the identity provider's client id. */
const shareName = () => doc(slug(), 'slug; also the client id', { example: 'sales-analytics' });

export const CreateShareRequest = component(
  'CreateDataShareRequest',
  z.strictObject({
    name: shareName(),
    description: doc(optionalText(), 'what the share is for (at most 4000 characters)'),
    tables: doc(
      z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(512))).check(z.maxLength(1000))),
      'the tables the share gives access to',
    ),
  }),
);
export type CreateShareRequest = z.infer<typeof CreateShareRequest>;

export const ShareParams = z.object({ name: shareName() });

/** Spec 2.10 SharedClient, plus the share's registry fields. */
export const SharedClient = component(
  'SharedClient',
  z.object({
    id: doc(z.string(), 'internal identity-provider id (UUID) of the client'),
    client_id: doc(z.string(), 'the client id known to the identity provider'),
    name: doc(z.string(), 'display name'),
    enabled: doc(z.boolean(), 'whether the client is enabled in the identity provider'),
    service_accounts_enabled: doc(
      z.boolean(),
      'whether the service account for the client-credentials grant is enabled',
    ),
    secret: doc(z.nullable(z.string()), 'null when the client has none, it could not be retrieved, or in lists'),
    owner: doc(z.string(), "the name of the share's creator"),
    description: doc(z.nullable(z.string()), 'as given at creation; null when not given'),
    tables: doc(z.array(z.string()), 'the tables the share gives access to'),
    created_at: doc(z.iso.datetime(), 'when the share was created (ISO 8601 UTC)'),
  }),
);
export type SharedClient = z.infer<typeof SharedClient>;
