import * as z from 'zod/mini';
import type { ValidationIssue } from '../errors.js';

/**
 * pydantic v2's lax mode (FastAPI validates a parsed JSON body as Python objects): what
 * an integer, number or boolean field accepts besides its own type, as pydantic-core's
 * `validate_int`, `validate_float` and `validate_bool` do (src/input/input_python.rs,
 * src/input/shared.rs). Pure conversions: the HTTP validation and the crew service (E2's
 * values) both use them.
 */
type Path = (string | number)[];

const MAX_INT_DIGITS = 4300;
const JSON_INT = /^-?(?:0|[1-9]\d*)$/;

/** Underscores between digits, as Python's `int('1_000')`: none leading, trailing or doubled. */
function stripUnderscores(s: string): string | undefined {
  if (s.startsWith('_') || s.endsWith('_') || !s.includes('_') || s.includes('__')) return undefined;
  return s.replaceAll('_', '');
}

/** Leading zeros off (`007` → `7`, `00.0` → `0.0`, `000` → `0`); undefined when not a number. */
function stripLeadingZeros(s: string): string | undefined {
  const first = s[0];
  if (first === undefined) return undefined;
  if (first !== '0') return (first >= '1' && first <= '9') || first === '-' ? s : undefined;
  for (let i = 1; i < s.length; i++) {
    const c = s[i]!;
    if (c === '0' || c === '_') continue;
    if ((c >= '1' && c <= '9') || c === '-') return s.slice(i);
    if (c === '.') return s.slice(i - 1);
    return undefined;
  }
  return s.slice(-1);
}

/** pydantic-core's `clean_int_str`: white space, a `+`, leading zeros, `.0…`, underscores. */
function cleanIntString(input: string): string | undefined {
  let s = input.trim();
  if (s.startsWith('+')) {
    if (s[1] === '-') return undefined;
    s = s.slice(1);
  }
  let negative = false;
  if (s.startsWith('-')) {
    if (s[1] === '-' || s[1] === '+') return undefined;
    negative = true;
    s = s.slice(1);
  }
  const digits = stripLeadingZeros(s);
  if (digits === undefined) return undefined;
  s = digits;
  const dot = s.indexOf('.');
  if (dot >= 0 && /^0+$/.test(s.slice(dot + 1))) s = s.slice(0, dot);
  const sign = negative ? '-' : '';
  const plain = stripUnderscores(s);
  if (plain !== undefined) return sign + plain;
  return s.length === input.length ? undefined : sign + s;
}

/**
 * A string as pydantic reads an integer from it: `"3"`, `" 3 "`, `"+3"`, `"007"`, `"3.0"`,
 * `"1_000"`; not `"3.5"`, `"1e3"` or `"ten"` (undefined), nor more than 4300 characters
 * (`'size'`).
 */
export function laxInt(text: string): number | 'size' | undefined {
  if (text.length > MAX_INT_DIGITS) return 'size';
  const candidate = JSON_INT.test(text) ? text : cleanIntString(text);
  if (candidate === undefined || !JSON_INT.test(candidate)) return undefined;
  return Number(candidate) || 0; // never -0
}

const RUST_FLOAT = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;

function floatOf(text: string): number {
  const bare = text.replace(/^[+-]/, '').toLowerCase();
  if (bare === 'nan') return NaN;
  if (bare === 'inf' || bare === 'infinity') return text.startsWith('-') ? -Infinity : Infinity;
  return Number(text);
}

/** A string as pydantic reads a number from it (Rust's float syntax, trimmed, `1_000.5`). */
export function laxFloat(text: string): number | undefined {
  const trimmed = text.trim();
  if (RUST_FLOAT.test(trimmed)) return floatOf(trimmed);
  const plain = stripUnderscores(text);
  return plain !== undefined && RUST_FLOAT.test(plain) ? floatOf(plain) : undefined;
}

const BOOL_WORDS = new Map([
  ['f', false],
  ['n', false],
  ['no', false],
  ['off', false],
  ['false', false],
  ['t', true],
  ['y', true],
  ['on', true],
  ['yes', true],
  ['true', true],
]);

/** A string as pydantic reads a boolean from it; undefined when it cannot (`bool_parsing`). */
export function laxBool(text: string): boolean | undefined {
  if (text === '0') return false;
  if (text === '1') return true;
  return BOOL_WORDS.get(text.toLowerCase());
}

const LAX_ISSUES = {
  int_parsing: 'Input should be a valid integer, unable to parse string as an integer',
  int_parsing_size: 'Unable to parse input string as an integer, exceeded maximum size',
  float_parsing: 'Input should be a valid number, unable to parse string as a number',
  bool_parsing: 'Input should be a valid boolean, unable to interpret input',
  finite_number: 'Input should be a finite number',
} as const;

/** pydantic's message for one of the lax reads' failures. */
export const laxMessage = (type: keyof typeof LAX_ISSUES): string => LAX_ISSUES[type];

export const laxIssue = (type: keyof typeof LAX_ISSUES, loc: Path, input: unknown): ValidationIssue => ({
  type,
  loc,
  msg: LAX_ISSUES[type],
  input,
});

type Schema = z.core.$ZodType;
type Def = { type: string } & Record<string, unknown>;
const defOf = (schema: Schema) => schema._zod.def as unknown as Def;
const accepts = (schema: Schema, value: unknown) => z.safeParse(schema, value).success;
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

interface Coercion {
  /** Where the value is (`['body']`, or a variable's `loc`): the issues' `loc` starts with it. */
  readonly at: Path;
  readonly issues: ValidationIssue[];
  changes: number;
}

function coerceNumber(schema: Schema, value: unknown, path: Path, run: Coercion): unknown {
  if (typeof value === 'boolean') {
    run.changes++;
    return value ? 1 : 0;
  }
  if (typeof value !== 'string') return value; // numbers: zod's checks (int_from_float, bounds)
  const loc: Path = [...run.at, ...path];
  const isInt = (schema as { isInt?: boolean }).isInt === true || /int/.test(String(defOf(schema).format ?? ''));
  if (isInt) {
    const n = laxInt(value);
    if (typeof n === 'number') {
      run.changes++;
      return n;
    }
    run.issues.push(laxIssue(n === 'size' ? 'int_parsing_size' : 'int_parsing', loc, value));
    return value;
  }
  const n = laxFloat(value);
  if (n === undefined) run.issues.push(laxIssue('float_parsing', loc, value));
  else if (!Number.isFinite(n)) run.issues.push(laxIssue('finite_number', loc, value));
  else {
    run.changes++;
    return n;
  }
  return value;
}

function coerceBoolean(value: unknown, path: Path, run: Coercion): unknown {
  const loc: Path = [...run.at, ...path];
  if (typeof value === 'string') {
    const b = laxBool(value);
    if (b === undefined) run.issues.push(laxIssue('bool_parsing', loc, value));
    else run.changes++;
    return b ?? value;
  }
  // 0 and 1 (also 0.0 and 1.0); another whole number cannot be read (a fraction is bool_type).
  if (typeof value === 'number' && Number.isInteger(value)) {
    if (value === 0 || value === 1) {
      run.changes++;
      return value === 1;
    }
    run.issues.push(laxIssue('bool_parsing', loc, value));
  }
  return value;
}

/**
 * A union takes the value as it is when a member does (pydantic's strict pass first);
 * else the first member that takes it converted; else the first conversion without
 * problems (so the member's own rule reports, e.g. `greater_than_equal` for `"0"`); else
 * the first member's conversion problems (`int_parsing` for `"ten"`).
 */
function coerceUnion(def: Def, value: unknown, path: Path, run: Coercion): unknown {
  const options = def.options as Schema[];
  const tag = def.discriminator as string | undefined;
  if (tag !== undefined) {
    if (!isRecord(value)) return value;
    const member = options.find((o) => {
      const field = (defOf(o).shape as Record<string, Schema> | undefined)?.[tag];
      return field !== undefined && accepts(field, value[tag]);
    });
    return member ? coerce(member, value, path, run) : value;
  }
  if (options.some((o) => accepts(o, value))) return value;
  const tries = options.map((o) => {
    const sub: Coercion = { at: run.at, issues: [], changes: 0 };
    return { option: o, sub, value: coerce(o, value, path, sub) };
  });
  const chosen =
    tries.find((t) => t.sub.issues.length === 0 && t.sub.changes > 0 && accepts(t.option, t.value)) ??
    tries.find((t) => t.sub.issues.length === 0 && t.sub.changes > 0) ??
    tries.find((t) => t.sub.issues.length > 0);
  if (!chosen) return value;
  run.issues.push(...chosen.sub.issues);
  run.changes += chosen.sub.changes;
  return chosen.sub.issues.length > 0 ? value : chosen.value;
}

function coerce(schema: Schema, value: unknown, path: Path, run: Coercion): unknown {
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return value === undefined || value === null ? value : coerce(def.innerType as Schema, value, path, run);
    case 'pipe':
      return coerce(def.in as Schema, value, path, run);
    case 'lazy':
      return coerce((def.getter as () => Schema)(), value, path, run);
    case 'number':
      return coerceNumber(schema, value, path, run);
    case 'boolean':
      return coerceBoolean(value, path, run);
    case 'union':
      return coerceUnion(def, value, path, run);
    case 'intersection':
      return coerce(def.right as Schema, coerce(def.left as Schema, value, path, run), path, run);
    case 'array':
      return Array.isArray(value) ? value.map((v, i) => coerce(def.element as Schema, v, [...path, i], run)) : value;
    case 'tuple': {
      if (!Array.isArray(value)) return value;
      const items = def.items as Schema[];
      const rest = def.rest as Schema | null | undefined;
      return value.map((v, i) => {
        const item = items[i] ?? rest;
        return item ? coerce(item, v, [...path, i], run) : v;
      });
    }
    case 'record':
      if (!isRecord(value)) return value;
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, coerce(def.valueType as Schema, v, [...path, k], run)]),
      );
    case 'object': {
      if (!isRecord(value)) return value;
      const shape = def.shape as Record<string, Schema>;
      const catchall = def.catchall as Schema | undefined;
      // fromEntries: a `__proto__` key stays an own property, as JSON.parse made it.
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => {
          const field = Object.hasOwn(shape, k) ? shape[k] : catchall;
          return [k, field ? coerce(field, v, [...path, k], run) : v];
        }),
      );
    }
    default:
      return value;
  }
}

/**
 * Converts what pydantic's lax mode would before the schema checks the value: integer
 * fields take `"3"`, `"3.0"`, `true`; number fields `"1.5"`, `true`; boolean fields
 * `"yes"`, `"off"`, `0`, `1`... What cannot be read is reported here with pydantic's type
 * (`int_parsing`, `float_parsing`, `bool_parsing`), at the value's `loc` (`at` first). The schemas stay
 * what they say (integer, number, boolean), so the OpenAPI document is unchanged.
 */
export function laxCoerce(schema: Schema, value: unknown, at: Path): { value: unknown; issues: ValidationIssue[] } {
  const run: Coercion = { at, issues: [], changes: 0 };
  const out = coerce(schema, value, [], run);
  return { value: out, issues: run.issues };
}
