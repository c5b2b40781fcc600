import * as z from 'zod/mini';
import { boolParam, integer, PageQuery } from '../../shared/params.js';
import { pydanticIssue } from '../../shared/pydantic/issues.js';
import { domainUrn } from '../../shared/ports/catalog.js';
import { component, doc } from '../../shared/schema.js';
import { MAX_SQL_LENGTH } from '../query/read-only-sql.js';

export const ProductParams = z.object({
  dataproduct_id: doc(
    z.string().check(z.maxLength(128), z.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/)),
    "a data product's id; `default` is the data product that always exists",
  ),
});

export const PskParams = z.object({ psk_id: doc(z.uuid(), 'the public id of the key') });

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

/** Most roles one list filter names. */
export const MAX_ROLE_FILTER = 50;
const TOO_MANY_ROLES = `names more than ${MAX_ROLE_FILTER} roles`;

const MAX_NAME = 255;
/** A domain urn names a domain of 1–255 characters (the catalog's names). */
const DOMAIN_URN_PREFIX = domainUrn('');

/** Text without control characters, not starting or ending with a blank. */
const TRIMMED_TEXT = /^[^\s\x00-\x1f\x7f](?:[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f])?$/;
/** A role name: trimmed text without `,` (the list filter separates roles with commas). */
const ROLE_NAME = /^[^\s,\x00-\x1f\x7f](?:[^,\x00-\x1f\x7f]*[^\s,\x00-\x1f\x7f])?$/;

/** The roles of `?roles=a, b`: comma-separated, blanks around each trimmed, empty ones and repeats left out. */
export const roleFilter = (roles: string): string[] => [
  ...new Set(
    roles
      .split(',')
      .map((r) => r.trim())
      .filter((r) => r !== ''),
  ),
];

export const CreateProductRequest = component(
  'CreateDataProductRequest',
  z.strictObject({
    name: doc(
      z.string().check(z.minLength(1), z.maxLength(MAX_NAME), z.regex(TRIMMED_TEXT)),
      "the product's name: unique, 1–255 characters, no control characters, no leading or trailing blank",
      { example: 'eu-orders' },
    ),
    role_name: doc(
      z.string().check(z.minLength(1), z.maxLength(MAX_NAME), z.regex(ROLE_NAME)),
      'the role the product is for: 1–255 characters, no `,`, no control characters, no leading or trailing blank',
      { example: 'analyst' },
    ),
    domain_urn: doc(
      z.optional(
        z.nullable(
          z.string().check(z.maxLength(DOMAIN_URN_PREFIX.length + MAX_NAME), z.regex(/^urn:li:domain:[\s\S]+$/)),
        ),
      ),
      "the catalog domain the product belongs to (`urn:li:domain:<name>`, an existing domain); its `query` then reads only that domain's tables",
      { example: 'urn:li:domain:sales' },
    ),
    query: doc(
      z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(MAX_SQL_LENGTH)))),
      "the product's SQL: one read-only SELECT (or WITH ... SELECT) over tables named `catalog.schema.table`; at most one of `query` and `suggestion_id`. Without either, the product has no SQL (`query` null): a role-scoped owner of pre-shared keys, as the NX1 SDK's `data_products.create(name, role_name)` makes it",
      { example: 'SELECT * FROM "sales"."core"."orders"' },
    ),
    suggestion_id: doc(
      z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(128)))),
      "an E12 suggestion of the product's domain (`domain_urn`, then required), whose SQL becomes the product's `query`; at most one of `query` and `suggestion_id`",
    ),
    query_id: doc(
      z.optional(z.nullable(z.string().check(z.maxLength(128)))),
      'a saved query: this service keeps none, so a `query_id` is refused (422); give `query` or `suggestion_id`',
    ),
    is_view: doc(z.optional(z.boolean()), 'whether the product is published as a view (default false)', {
      default: false,
    }),
  }),
);
export type CreateProductRequest = z.infer<typeof CreateProductRequest>;

export const ListProductsQuery = z.extend(PageQuery, {
  roles: doc(
    z.optional(
      z.pipe(
        z.string().check(
          z.maxLength(MAX_ROLE_FILTER * (MAX_NAME + 1)),
          z.refine((roles) => roleFilter(roles).length <= MAX_ROLE_FILTER, {
            params: pydanticIssue('value_error', `Value error, ${TOO_MANY_ROLES}`, { error: TOO_MANY_ROLES }),
          }),
        ),
        z.transform(roleFilter),
      ),
    ),
    `only the products of these roles: comma-separated role names (blanks around each are ignored), at most ${MAX_ROLE_FILTER}; left out or empty, every product`,
    { type: 'string', example: 'analyst,finance' },
  ),
});

export const DataProduct = component(
  'DataProduct',
  z.object({
    id: doc(z.uuid(), "the product's id"),
    name: doc(z.string(), "the product's name (unique)"),
    role_name: doc(z.string(), 'the role the product is for'),
    domain_urn: doc(z.nullable(z.string()), 'the catalog domain the product belongs to; null when none'),
    query: doc(
      z.nullable(z.string()),
      "the product's SQL (a suggestion's SQL when made from `suggestion_id`); null for a product made without SQL (a role-scoped owner of pre-shared keys)",
    ),
    is_view: doc(z.boolean(), 'whether the product is published as a view'),
    created_by: doc(z.string(), "the creator's name"),
    created_at: doc(z.iso.datetime(), 'when the product was created (ISO 8601 UTC)'),
  }),
);
export type DataProduct = z.infer<typeof DataProduct>;
