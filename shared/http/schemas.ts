import { z } from '@hono/zod-openapi';

/** The contract's error bodies (spec 2.13), registered as OpenAPI components. */
export const ErrorResponse = z
  .object({
    error: z.string().openapi({ description: 'a brief description of what went wrong' }),
    code: z.int().default(500).openapi({ description: 'the HTTP status code of the answer (default 500)' }),
  })
  .openapi('ErrorResponse');

export const ValidationError = z
  .object({
    loc: z.array(z.union([z.string(), z.int()])).openapi({
      description:
        'where the refused value is: `path`, `query`, `header` or `body`, then the field path, e.g. `["body", "columns", 0, "column_name"]`',
    }),
    msg: z.string().openapi({ description: "a human-readable message in pydantic v2's wording" }),
    type: z.string().openapi({
      description:
        'the pydantic v2 error type, e.g. `missing`, `string_type`, `int_parsing`, `string_too_long`, `extra_forbidden`, `json_invalid`, `value_error` (a rule across fields)',
    }),
    input: z.unknown().optional().openapi({
      description: 'the refused value; for `missing`, the object the field is missing from (null for a parameter)',
    }),
    ctx: z.record(z.string(), z.unknown()).optional().openapi({
      description:
        'the rule that failed, when it has parameters: e.g. `max_length`, `min_length`, `pattern`, `ge`, `le`, `expected`, or `error` for `value_error`',
    }),
  })
  .openapi('ValidationError');

export const HTTPValidationError = z
  .object({
    detail: z
      .array(ValidationError)
      .openapi({ description: 'every validation failure of the request, not only the first' }),
  })
  .openapi('HTTPValidationError');

/** Slug path parameters (`workspace`, `key`): at most 64, `^[a-z0-9][a-z0-9-]{0,63}$`. */
export const slug = () =>
  z
    .string()
    .max(64)
    .regex(/^[a-z0-9][a-z0-9-]{0,63}$/);

/** Nullable optional free text, as pydantic's `Optional[str] = None`. */
export const optionalText = (max = 4000) => z.string().max(max).nullable().optional();
