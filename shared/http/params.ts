import { z } from '@hono/zod-openapi';
import { laxInt } from '../lax.js';
import { INT_TYPE_MESSAGE, pydanticIssue } from './validation.js';

/**
 * Schemas for path, query and header values, which arrive as strings. They parse the
 * way FastAPI does (pydantic's lax integers: `"7"`, `" 7 "`, `"007"`, `"7.0"`, `"1_000"`):
 * `int_parsing` for "abc", then the numeric bounds on the number.
 */
export function intParam(bounds: { min?: number; max?: number } = {}) {
  let target = z.number().int();
  if (bounds.min !== undefined) target = target.min(bounds.min);
  if (bounds.max !== undefined) target = target.max(bounds.max);
  return z
    .string()
    .refine((s) => typeof laxInt(s) === 'number', {
      params: pydanticIssue('int_parsing', 'Input should be a valid integer, unable to parse string as an integer'),
      abort: true,
    })
    .transform((s) => laxInt(s) as number)
    .pipe(target)
    .openapi({
      type: 'integer',
      ...(bounds.min !== undefined ? { minimum: bounds.min } : {}),
      ...(bounds.max !== undefined ? { maximum: bounds.max } : {}),
    });
}

/**
 * An integer in a JSON body: `int_type` for a non-number, `int_from_float` for 1.5. (The
 * body's lax conversions, `"3"` → 3 and `int_parsing` for `"ten"`, are made for every
 * integer, number and boolean field before the schema runs: `laxCoerce` in shared/lax.ts.)
 */
export const integer = () =>
  z.int({
    error: (issue) => (issue.code === 'invalid_type' && issue.input !== undefined ? INT_TYPE_MESSAGE : undefined),
  });

const TRUE = new Set(['true', '1', 'yes', 'on', 't', 'y']);
const FALSE = new Set(['false', '0', 'no', 'off', 'f', 'n']);

/** Booleans as pydantic reads them: `true`/`false` in any case, `1`/`0`, `yes`/`no`, `on`/`off`. */
export function boolParam() {
  return z
    .string()
    .refine((s) => TRUE.has(s.toLowerCase()) || FALSE.has(s.toLowerCase()), {
      params: pydanticIssue('bool_parsing', 'Input should be a valid boolean, unable to interpret input'),
      abort: true,
    })
    .transform((s) => TRUE.has(s.toLowerCase()))
    .openapi({ type: 'boolean' });
}

export const DEFAULT_PAGE_SIZE = 100;

/** `limit` (1–1000, default 100) and `cursor`, shared by every list endpoint. */
export const PageQuery = z.object({
  limit: intParam({ min: 1, max: 1000 })
    .optional()
    .transform((limit) => limit ?? DEFAULT_PAGE_SIZE)
    .openapi({
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 100,
      description: 'the most items to answer (1–1000, default 100)',
    }),
  cursor: z.string().min(1).max(2048).optional().openapi({
    description:
      "where to continue: the opaque value of the previous answer's `X-Next-Cursor` header (sent only when more items remain); left out, the list starts at the beginning",
  }),
});
