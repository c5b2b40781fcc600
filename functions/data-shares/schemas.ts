import * as z from 'zod/mini';
import { optionalText, slug } from '../../shared/http/schemas.js';
import { pydanticIssue } from '../../shared/pydantic/issues.js';
import { component, doc } from '../../shared/schema.js';

/**
 * A share's id as the identity provider writes it (a lowercase UUID). It also has the shape
 * of a name, so a path key of this shape is read as an id (docs/sdk.md), and new names of
 * this shape are refused.
 */
export const SHARE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const UUID_NAME_ERROR = "must not have the shape of a UUID: that is how a share's id is written";

/** A new share's name: the slug that is also the identity provider's client id, never shaped like an id. */
const newShareName = () =>
  doc(
    slug().check(
      z.refine((name) => !SHARE_ID.test(name), {
        params: pydanticIssue('value_error', `Value error, ${UUID_NAME_ERROR}`, { error: UUID_NAME_ERROR }),
      }),
    ),
    "slug; also the client id; not shaped like a UUID (a share's id)",
    { example: 'sales-analytics' },
  );

export const CreateShareRequest = component(
  'CreateDataShareRequest',
  z.strictObject({
    name: newShareName(),
    description: doc(optionalText(), 'what the share is for (at most 4000 characters)'),
    tables: doc(
      z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(512))).check(z.maxLength(1000))),
      'the tables the share gives access to',
    ),
  }),
);
export type CreateShareRequest = z.infer<typeof CreateShareRequest>;

/** A share named by its name or by its id (a UUID: see SHARE_ID). */
export const ShareParams = z.object({
  share_id: doc(slug(), "the share's name, or its `id` (a UUID)", { example: 'sales-analytics' }),
});

/** Spec 2.10 SharedClient, plus the share's registry fields. */
export const SharedClient = component(
  'SharedClient',
  z.object({
    id: doc(
      z.string(),
      'internal identity-provider id (UUID) of the client; `/api/data_shares/{share_id}` takes it as well as the name',
    ),
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
