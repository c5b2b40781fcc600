import { z } from '@hono/zod-openapi';

/** The contract's error bodies (spec 2.13), registered as OpenAPI components. */
export const ErrorResponse = z
  .object({
    error: z.string().openapi({ description: 'brief description' }),
    code: z.int().default(500).openapi({ description: 'the HTTP status code' }),
  })
  .openapi('ErrorResponse');

export const ValidationError = z
  .object({
    loc: z.array(z.union([z.string(), z.int()])),
    msg: z.string(),
    type: z.string(),
    input: z.unknown().optional(),
    ctx: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi('ValidationError');

export const HTTPValidationError = z.object({ detail: z.array(ValidationError) }).openapi('HTTPValidationError');

/** Slug path parameters (`workspace`, `key`): at most 64, `^[a-z0-9][a-z0-9-]{0,63}$`. */
export const slug = () =>
  z
    .string()
    .max(64)
    .regex(/^[a-z0-9][a-z0-9-]{0,63}$/);

/** Nullable optional free text, as pydantic's `Optional[str] = None`. */
export const optionalText = (max = 4000) => z.string().max(max).nullable().optional();
