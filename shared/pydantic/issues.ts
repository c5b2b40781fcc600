import type * as z from 'zod/mini';
import { missingField, valueError, type ValidationIssue } from '../errors.js';

/**
 * Maps zod issues to FastAPI's (pydantic v2) HTTPValidationError entries, so clients
 * written against the Python platform read the same `type`, `loc`, `msg` and `ctx`.
 */
export type Source = 'path' | 'query' | 'header' | 'body';
type Issue = z.core.$ZodIssue;
type Path = (string | number)[];

/** Custom issues carry their pydantic shape in `params` (see `pydanticIssue`). */
export interface PydanticParams {
  pydantic: { type: string; msg: string; ctx?: Record<string, unknown> };
}

export const pydanticIssue = (type: string, msg: string, ctx?: Record<string, unknown>): PydanticParams => ({
  pydantic: ctx ? { type, msg, ctx } : { type, msg },
});

const pyRepr = (v: unknown): string => (typeof v === 'string' ? `'${v}'` : String(v));

/** pydantic's list of choices (an `enum` issue's `expected`): `'a', 'b' or 'c'`. */
export function pyChoices(values: readonly unknown[]): string {
  const reprs = values.map(pyRepr);
  return reprs.length <= 1 ? (reprs[0] ?? '') : `${reprs.slice(0, -1).join(', ')} or ${reprs.at(-1)}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** pydantic's `input` for a missing body field is the object lacking it; elsewhere None. */
const missingInput = (source: Source, raw: unknown, path: Path): unknown =>
  source === 'body' && path.length > 0 ? (valueAt(raw, path.slice(0, -1)) ?? null) : null;

const TYPE_BY_EXPECTED: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  number: ['float_type', 'Input should be a valid number'],
  int: ['int_type', 'Input should be a valid integer'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  array: ['list_type', 'Input should be a valid list'],
  object: ['dict_type', 'Input should be a valid dictionary'],
  record: ['dict_type', 'Input should be a valid dictionary'],
  null: ['none_required', 'Input should be None'],
};

/** The message `integer()` gives its type errors, so they map to `int_type`, not `float_type`. */
export const INT_TYPE_MESSAGE = 'Input should be a valid integer';

function invalidType(issue: Extract<Issue, { code: 'invalid_type' }>, input: unknown): [string, string] {
  if (issue.expected === 'int' && typeof input === 'number' && Number.isFinite(input)) {
    return ['int_from_float', 'Input should be a valid integer, got a number with a fractional part'];
  }
  if (issue.expected === 'number' && issue.message === INT_TYPE_MESSAGE) return ['int_type', INT_TYPE_MESSAGE];
  return TYPE_BY_EXPECTED[issue.expected] ?? [`${issue.expected}_type`, `Input should be a valid ${issue.expected}`];
}

function sizeIssue(
  issue: Extract<Issue, { code: 'too_small' | 'too_big' }>,
  input: unknown,
): Omit<ValidationIssue, 'loc' | 'input'> {
  const small = issue.code === 'too_small';
  const limit = Number(
    small ? (issue as { minimum: number | bigint }).minimum : (issue as { maximum: number | bigint }).maximum,
  );
  if (issue.origin === 'string') {
    return small
      ? {
          type: 'string_too_short',
          msg: `String should have at least ${plural(limit, 'character')}`,
          ctx: { min_length: limit },
        }
      : {
          type: 'string_too_long',
          msg: `String should have at most ${plural(limit, 'character')}`,
          ctx: { max_length: limit },
        };
  }
  if (issue.origin === 'array' || issue.origin === 'set') {
    const actual = Array.isArray(input) ? input.length : 0;
    return small
      ? {
          type: 'too_short',
          msg: `List should have at least ${plural(limit, 'item')} after validation, not ${actual}`,
          ctx: { field_type: 'List', min_length: limit, actual_length: actual },
        }
      : {
          type: 'too_long',
          msg: `List should have at most ${plural(limit, 'item')} after validation, not ${actual}`,
          ctx: { field_type: 'List', max_length: limit, actual_length: actual },
        };
  }
  if (issue.inclusive) {
    return small
      ? { type: 'greater_than_equal', msg: `Input should be greater than or equal to ${limit}`, ctx: { ge: limit } }
      : { type: 'less_than_equal', msg: `Input should be less than or equal to ${limit}`, ctx: { le: limit } };
  }
  return small
    ? { type: 'greater_than', msg: `Input should be greater than ${limit}`, ctx: { gt: limit } }
    : { type: 'less_than', msg: `Input should be less than ${limit}`, ctx: { lt: limit } };
}

function formatIssue(issue: Extract<Issue, { code: 'invalid_format' }>): Omit<ValidationIssue, 'loc' | 'input'> {
  switch (issue.format) {
    case 'regex': {
      const pattern = String((issue as { pattern?: string }).pattern ?? '').replace(/^\/(.*)\/[a-z]*$/s, '$1');
      return { type: 'string_pattern_mismatch', msg: `String should match pattern '${pattern}'`, ctx: { pattern } };
    }
    case 'uuid':
    case 'guid':
      return { type: 'uuid_parsing', msg: 'Input should be a valid UUID' };
    case 'url':
      return { type: 'url_parsing', msg: 'Input should be a valid URL' };
    case 'datetime':
      return { type: 'datetime_from_date_parsing', msg: 'Input should be a valid datetime' };
    default:
      return { type: 'value_error', msg: `Value error, ${issue.message}`, ctx: { error: issue.message } };
  }
}

function convert(issue: Issue, source: Source, raw: unknown, prefix: Path): ValidationIssue[] {
  const path: Path = [...prefix, ...(issue.path as Path)];
  const loc: Path = source === 'body' ? ['body', ...path] : [source, ...path];
  const input = valueAt(raw, path);
  switch (issue.code) {
    case 'invalid_type': {
      if (input === undefined) return [missingField(loc, missingInput(source, raw, path))];
      const [type, msg] = invalidType(issue, input);
      return [{ type, loc, msg, input }];
    }
    case 'too_small':
    case 'too_big':
      return [{ ...sizeIssue(issue, input), loc, input }];
    case 'invalid_format':
      return [{ ...formatIssue(issue), loc, input }];
    case 'invalid_value': {
      // zod reports a missing enum or literal field as a wrong value; pydantic as missing.
      if (input === undefined) return [missingField(loc, missingInput(source, raw, path))];
      const values = issue.values as readonly unknown[];
      const expected = pyChoices(values);
      return [
        values.length === 1
          ? { type: 'literal_error', loc, msg: `Input should be ${expected}`, input, ctx: { expected } }
          : { type: 'enum', loc, msg: `Input should be ${expected}`, input, ctx: { expected } },
      ];
    }
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        type: 'extra_forbidden',
        loc: [...loc, key],
        msg: 'Extra inputs are not permitted',
        input: valueAt(input, [key]),
      }));
    case 'invalid_union': {
      const tagged = issue as typeof issue & { discriminator?: string; options?: unknown[] };
      if (tagged.discriminator && issue.errors.length === 0) return [unionTagIssue(tagged, source, raw, path)];
      // Report the branch that got furthest: the one with the fewest problems.
      const branches = issue.errors.filter((b) => b.length > 0);
      const best = branches.sort((a, b) => a.length - b.length)[0] ?? [];
      return best.flatMap((sub) => convert(sub, source, raw, path));
    }
    case 'invalid_key': {
      // pydantic reports a bad dict key at `[..., key, "[key]"]` with the key as input
      const keyName = path.at(-1);
      return issue.issues.flatMap((sub) =>
        convert(sub, source, { key: keyName }, ['key']).map((entry) => ({
          ...entry,
          loc: [...loc, '[key]'],
          input: keyName,
        })),
      );
    }
    case 'invalid_element':
      return issue.issues.flatMap((sub) => convert(sub, source, raw, path));
    case 'not_multiple_of':
      return [
        {
          type: 'multiple_of',
          loc,
          msg: `Input should be a multiple of ${String(issue.divisor)}`,
          input,
          ctx: { multiple_of: Number(issue.divisor) },
        },
      ];
    case 'custom': {
      const shaped = (issue.params as Partial<PydanticParams> | undefined)?.pydantic;
      if (shaped?.type === 'missing') return [{ ...shaped, loc, input: missingInput(source, raw, path) }];
      if (shaped) return [{ ...shaped, loc, input }];
      return [valueError(loc, issue.message, input)];
    }
    default: {
      const message = (issue as { message: string }).message;
      return [valueError(loc, message, input)];
    }
  }
}

/** A discriminated union whose tag is missing or matches no member (pydantic's names). */
function unionTagIssue(
  issue: { discriminator?: string; options?: unknown[] },
  source: Source,
  raw: unknown,
  path: Path,
): ValidationIssue {
  // zod points at the tag; pydantic points at the object that carries it
  const objectPath = path.at(-1) === issue.discriminator ? path.slice(0, -1) : path;
  const loc: Path = [source, ...objectPath];
  const input = valueAt(raw, objectPath);
  const discriminator = `'${issue.discriminator}'`;
  const expected = (issue.options ?? []).map(pyRepr).join(', ');
  const tag = valueAt(input, [issue.discriminator ?? '']);
  if (tag === undefined) {
    return {
      type: 'union_tag_not_found',
      loc,
      msg: `Unable to extract tag using discriminator ${discriminator}`,
      input,
      ctx: { discriminator },
    };
  }
  return {
    type: 'union_tag_invalid',
    loc,
    msg: `Input tag '${String(tag)}' found using ${discriminator} does not match any of the expected tags: ${expected}`,
    input,
    ctx: { discriminator, tag: String(tag), expected_tags: expected },
  };
}

/**
 * Converts one source's zod issues. Like pydantic, a field reports only its first
 * failing constraint, so issues at an already reported `loc` are dropped.
 */
export function toValidationIssues(issues: readonly Issue[], source: Source, raw: unknown): ValidationIssue[] {
  const seen = new Set<string>();
  const out: ValidationIssue[] = [];
  for (const issue of issues) {
    for (const entry of convert(issue, source, raw, [])) {
      const key = JSON.stringify(entry.loc);
      if (seen.has(key)) continue;
      seen.add(key);
      // `input` is part of every entry: an absent value is None, never a dropped key.
      out.push(entry.input === undefined ? { ...entry, input: null } : entry);
    }
  }
  // Never let a failed parse through unexplained: that would reach the handler.
  if (out.length === 0 && issues.length > 0) {
    out.push(valueError([source], 'invalid input', raw));
  }
  return out;
}
