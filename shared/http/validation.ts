import * as z from 'zod/mini';
import { missingField, valueError, type ValidationIssue } from '../errors.js';
import { isRecord, laxCoerce, laxIssue } from '../lax.js';

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

function pyChoices(values: readonly unknown[]): string {
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

/**
 * The offset at which `text` stops being JSON, as Python's decoder reports it (the first
 * unexpected character, or the end of the input). V8's messages often carry no position.
 */
export function jsonErrorPosition(text: string): number {
  let i = 0;
  const fail = (at: number): never => {
    throw at;
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const literal = (word: string) => {
    for (const ch of word) if (text[i++] !== ch) fail(i - 1);
  };
  const string = () => {
    i++;
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === '"') return void i++;
      if (ch < ' ') fail(i);
      if (ch === '\\') {
        const esc = text[i + 1];
        if (esc === undefined) fail(i + 1);
        if (esc === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail(i);
          i += 6;
        } else if ('"\\/bfnrt'.includes(esc!)) i += 2;
        else fail(i);
      } else i++;
    }
    fail(i);
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m || m[0] === '-' || m[0] === '') fail(i);
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail(i);
        string();
        ws();
        if (text[i] !== ':') fail(i);
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail(i);
      }
    }
    if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail(i);
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true');
    if (ch === 'f') return literal('false');
    if (ch === 'n') return literal('null');
    if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) return number();
    fail(i);
  };
  try {
    value();
    ws();
    return i < text.length ? i : 0;
  } catch (at) {
    return typeof at === 'number' ? Math.min(at, text.length) : 0;
  }
}

/** FastAPI's answer to a body that is not JSON: `json_invalid` at the error's position. */
export function jsonInvalid(text: string, _error: unknown): ValidationIssue {
  // Never the parser's own message: V8's quotes the body around the error, and the body
  // may hold write-only values (passwords, secret keys). Python's json says this much.
  const position = jsonErrorPosition(text);
  return {
    type: 'json_invalid',
    loc: ['body', position],
    msg: 'JSON decode error',
    input: {},
    ctx: { error: position >= text.length ? 'Unexpected end of input' : 'Expecting value' },
  };
}

/** How deep a JSON body may nest (arrays and objects); the decisions' `content` uses tens. */
export const MAX_JSON_DEPTH = 256;

/** The deepest nesting of arrays and objects in JSON text (strings skipped), without recursion. */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) max = Math.max(max, ++depth);
    else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return max;
}

/** The answer to a body nested deeper than MAX_JSON_DEPTH (its input is not echoed). */
export function tooDeeplyNested(): ValidationIssue {
  return valueError(['body'], `the body is nested more than ${MAX_JSON_DEPTH} levels deep`, null);
}

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
