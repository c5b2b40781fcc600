import * as z from 'zod/mini';
import { valueError, type ValidationIssue } from '../errors.js';
import { toValidationIssues, type Source } from './issues.js';
import { isRecord, laxCoerce, laxIssue } from './lax.js';

type Path = (string | number)[];

/** A key JavaScript objects and DynamoDB's marshaller would silently drop (names are data). */
const PROTO_KEY_ERROR = 'an object key named __proto__ cannot be stored';

/**
 * Values the service could not keep as sent, wherever they are in the body, also inside
 * free-form values:
 * - numbers JSON cannot carry: `1e309` parses to Infinity (pydantic's `finite_number`; the
 *   `input` is `"Infinity"` or `"-Infinity"`, as pydantic's JSON shows them);
 * - object keys named `__proto__`: stored, the key would vanish without a word (422
 *   `value_error` at the key's `loc`).
 */
function unstorableValues(value: unknown, source: Source): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const visit = (v: unknown, path: Path) => {
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) out.push(laxIssue('finite_number', [source, ...path], String(v)));
    } else if (Array.isArray(v)) v.forEach((item, i) => visit(item, [...path, i]));
    else if (isRecord(v)) {
      for (const [k, item] of Object.entries(v)) {
        if (k === '__proto__') {
          out.push(valueError([source, ...path, k], PROTO_KEY_ERROR, item));
        } else visit(item, [...path, k]);
      }
    }
  };
  visit(value, []);
  return out;
}

/**
 * The schema's issues with the ones found before it ran (conversions, non-finite numbers)
 * in their place: one entry per `loc`, the earlier finding winning (it names the real
 * problem: `int_parsing` where zod saw a string); the rest after them.
 */
function mergeIssues(fromSchema: ValidationIssue[], found: ValidationIssue[]): ValidationIssue[] {
  const key = (issue: ValidationIssue) => JSON.stringify(issue.loc);
  const pending = new Map(found.map((issue) => [key(issue), issue]));
  const out = fromSchema.map((issue) => {
    const earlier = pending.get(key(issue));
    if (!earlier) return issue;
    pending.delete(key(issue));
    return earlier;
  });
  return [...out, ...pending.values()];
}

/**
 * Validates one source's value as the app does: for a JSON body, non-finite numbers and
 * `__proto__` keys are refused and pydantic's lax conversions made first ("3" for an integer, "yes" for a
 * boolean); path, query and header schemas read their strings themselves (params.ts).
 * A failure lists every issue, pydantic-shaped, each `input` as the client sent it.
 */
export function validateSource(
  schema: z.core.$ZodType,
  raw: unknown,
  source: Source,
): { success: true; data: unknown } | { success: false; issues: ValidationIssue[] } {
  let value = raw;
  const found: ValidationIssue[] = [];
  if (source === 'body') {
    found.push(...unstorableValues(raw, source));
    const lax = laxCoerce(schema, raw, [source]);
    value = lax.value;
    found.push(...lax.issues);
  }
  const result = z.safeParse(schema, value);
  if (result.success && found.length === 0) return { success: true, data: result.data };
  const fromSchema = result.success ? [] : toValidationIssues(result.error.issues, source, raw);
  return { success: false, issues: mergeIssues(fromSchema, found) };
}
