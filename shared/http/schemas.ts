import * as z from 'zod/mini';
import { component, doc } from '../schema.js';

/** The contract's error bodies (spec 2.13), registered as OpenAPI components. */
export const ErrorResponse = component(
  'ErrorResponse',
  z.object({
    error: doc(z.string(), 'a brief description of what went wrong'),
    code: doc(z._default(z.int(), 500), 'the HTTP status code of the answer (default 500)'),
  }),
);

export const ValidationError = component(
  'ValidationError',
  z.object({
    loc: doc(
      z.array(z.union([z.string(), z.int()])),
      'where the refused value is: `path`, `query`, `header` or `body`, then the field path, e.g. `["body", "columns", 0, "column_name"]`',
    ),
    msg: doc(z.string(), "a human-readable message in pydantic v2's wording"),
    type: doc(
      z.string(),
      'the pydantic v2 error type, e.g. `missing`, `string_type`, `int_parsing`, `string_too_long`, `extra_forbidden`, `json_invalid`, `value_error` (a rule across fields)',
    ),
    input: doc(
      z.optional(z.unknown()),
      'the refused value; for `missing`, the object the field is missing from (null for a parameter)',
    ),
    ctx: doc(
      z.optional(z.record(z.string(), z.unknown())),
      'the rule that failed, when it has parameters: e.g. `max_length`, `min_length`, `pattern`, `ge`, `le`, `expected`, or `error` for `value_error`',
    ),
  }),
);

export const HTTPValidationError = component(
  'HTTPValidationError',
  z.object({
    detail: doc(z.array(ValidationError), 'every validation failure of the request, not only the first'),
  }),
);

/** Slug path parameters (`workspace`, `key`): at most 64, `^[a-z0-9][a-z0-9-]{0,63}$`. */
export const slug = () => z.string().check(z.maxLength(64), z.regex(/^[a-z0-9][a-z0-9-]{0,63}$/));

/** Nullable optional free text, as pydantic's `Optional[str] = None`. */
export const optionalText = (max = 4000) => z.optional(z.nullable(z.string().check(z.maxLength(max))));
