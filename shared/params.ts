import * as z from 'zod/mini';
import { laxBool, laxInt, laxMessage } from './pydantic/lax.js';
import { doc } from './schema.js';
import { INT_TYPE_MESSAGE, pydanticIssue } from './pydantic/issues.js';

/**
 * Schemas for path, query and header values, which arrive as strings. They parse the
 * way FastAPI does (pydantic's lax integers: `"7"`, `" 7 "`, `"007"`, `"7.0"`, `"1_000"`):
 * `int_parsing` for "abc", then the numeric bounds on the number. The OpenAPI document
 * shows them as the integers they are.
 */
export function intParam(bounds: { min?: number; max?: number } = {}) {
  const checks = [
    ...(bounds.min !== undefined ? [z.gte(bounds.min)] : []),
    ...(bounds.max !== undefined ? [z.lte(bounds.max)] : []),
  ];
  const parsed = z.pipe(
    z.string().check(
      z.refine((s) => typeof laxInt(s) === 'number', {
        params: pydanticIssue('int_parsing', laxMessage('int_parsing')),
        abort: true,
      }),
    ),
    z.transform((s) => laxInt(s) as number),
  );
  return z.pipe(parsed, checks.length > 0 ? z.int().check(...checks) : z.int()).check(
    z.meta({
      type: 'integer',
      ...(bounds.min !== undefined ? { minimum: bounds.min } : {}),
      ...(bounds.max !== undefined ? { maximum: bounds.max } : {}),
    }),
  );
}

/**
 * An integer in a JSON body: `int_type` for a non-number, `int_from_float` for 1.5. (The
 * body's lax conversions, `"3"` → 3 and `int_parsing` for `"ten"`, are made for every
 * integer, number and boolean field before the schema runs: `laxCoerce` in shared/pydantic/lax.ts.)
 */
export const integer = () =>
  z.int({
    error: (issue) => (issue.code === 'invalid_type' && issue.input !== undefined ? INT_TYPE_MESSAGE : undefined),
  });

/** Booleans as pydantic reads them: `true`/`false` in any case, `1`/`0`, `yes`/`no`, `on`/`off`, `t`/`f`, `y`/`n`. */
export function boolParam() {
  return z
    .pipe(
      z.string().check(
        z.refine((s) => laxBool(s) !== undefined, {
          params: pydanticIssue('bool_parsing', laxMessage('bool_parsing')),
          abort: true,
        }),
      ),
      z.transform((s) => laxBool(s) === true),
    )
    .check(z.meta({ type: 'boolean' }));
}

export const DEFAULT_PAGE_SIZE = 100;

/** `limit` (1–1000, default 100) and `cursor`, shared by every list endpoint. */
export const PageQuery = z.object({
  limit: doc(
    z.pipe(
      z.optional(intParam({ min: 1, max: 1000 })),
      z.transform((limit) => limit ?? DEFAULT_PAGE_SIZE),
    ),
    'the most items to answer (1–1000, default 100)',
    { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  ),
  cursor: doc(
    z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
    "where to continue: the opaque value of the previous answer's `X-Next-Cursor` header (sent only when more items remain); left out, the list starts at the beginning",
  ),
});
