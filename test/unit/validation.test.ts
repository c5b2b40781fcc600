import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import type { ValidationIssue } from '../../shared/errors.js';
import { laxBool, laxFloat, laxInt } from '../../shared/pydantic/lax.js';
import { boolParam, integer, intParam, PageQuery } from '../../shared/params.js';
import { slug } from '../../shared/http/schemas.js';
import { pydanticIssue, type Source, toValidationIssues } from '../../shared/pydantic/issues.js';
import { jsonInvalid } from '../../shared/pydantic/json-body.js';
import { validateSource } from '../../shared/pydantic/validate.js';

/** Parses `raw` with `schema`, which must fail, and maps the failure the way the app does. */
function detail(schema: z.ZodMiniType, raw: unknown, source: Source = 'body'): ValidationIssue[] {
  const result = schema.safeParse(raw);
  if (result.success)
    throw new Error(`expected ${JSON.stringify(raw)} to be refused, got ${JSON.stringify(result.data)}`);
  return toValidationIssues(result.error.issues, source, raw);
}

/** The detail as a client sees it: JSON-encoded and decoded (undefined values vanish). */
const overTheWire = (entries: ValidationIssue[]) => JSON.parse(JSON.stringify(entries)) as Record<string, unknown>[];

function parseError(text: string): unknown {
  try {
    JSON.parse(text);
  } catch (err) {
    return err;
  }
  throw new Error(`${text} is valid JSON`);
}

describe('missing', () => {
  it('is reported for an absent body field with the parent object as input', () => {
    expect(detail(z.object({ name: z.string() }), { other: 1 })).toEqual([
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: { other: 1 } },
    ]);
  });

  it('is reported for an absent nested body field with the nested object as input', () => {
    const schema = z.object({ owner: z.object({ name: z.string(), email: z.string() }) });
    expect(detail(schema, { owner: { name: 'x' } })).toEqual([
      { type: 'missing', loc: ['body', 'owner', 'email'], msg: 'Field required', input: { name: 'x' } },
    ]);
  });

  it('is reported for an absent query parameter with input null', () => {
    const entries = detail(z.object({ start: intParam({ min: 0 }) }), {}, 'query');
    expect(entries).toEqual([{ type: 'missing', loc: ['query', 'start'], msg: 'Field required', input: null }]);
    expect(overTheWire(entries)[0]).toHaveProperty('input', null);
  });

  it('keeps `input` (the parent object) when a custom rule reports a required any-JSON field as missing', () => {
    // The pattern a body field of "any JSON value" uses (e.g. a decision's `content`).
    const schema = z.strictObject({
      content: z
        .unknown()
        .check(z.refine((v) => v !== undefined, { params: pydanticIssue('missing', 'Field required') })),
    });
    const [entry] = overTheWire(detail(schema, {}));
    expect(entry).toMatchObject({ type: 'missing', loc: ['body', 'content'], msg: 'Field required' });
    // pydantic always sends `input`; for a missing field it is the object that lacks it
    expect(entry).toHaveProperty('input', {});
  });
});

describe('type errors', () => {
  it('string_type', () => {
    expect(detail(z.object({ name: z.string() }), { name: 12 })).toEqual([
      { type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 12 },
    ]);
  });

  it('int_type for a body integer that is not a number', () => {
    const schema = z.object({ n: integer() });
    for (const input of [[1], { a: 1 }, null]) {
      expect(detail(schema, { n: input })).toEqual([
        { type: 'int_type', loc: ['body', 'n'], msg: 'Input should be a valid integer', input },
      ]);
    }
  });

  it('int_from_float for a number with a fractional part', () => {
    for (const schema of [z.object({ n: integer() }), z.object({ n: z.int() })]) {
      expect(detail(schema, { n: 1.5 })).toEqual([
        {
          type: 'int_from_float',
          loc: ['body', 'n'],
          msg: 'Input should be a valid integer, got a number with a fractional part',
          input: 1.5,
        },
      ]);
    }
  });

  it('accepts an integral number as an integer', () => {
    expect(z.object({ n: integer() }).parse({ n: 3 })).toEqual({ n: 3 });
  });

  it('list_type', () => {
    expect(detail(z.object({ tags: z.array(z.string()) }), { tags: 'pii' })).toEqual([
      { type: 'list_type', loc: ['body', 'tags'], msg: 'Input should be a valid list', input: 'pii' },
    ]);
  });

  it('dict_type for an object and for a record', () => {
    expect(detail(z.object({ extra: z.object({ a: z.string() }) }), { extra: 'x' })).toEqual([
      { type: 'dict_type', loc: ['body', 'extra'], msg: 'Input should be a valid dictionary', input: 'x' },
    ]);
    expect(detail(z.object({ env: z.record(z.string(), z.string()) }), { env: [1] })).toEqual([
      { type: 'dict_type', loc: ['body', 'env'], msg: 'Input should be a valid dictionary', input: [1] },
    ]);
  });

  it('locates an item of a list by its index', () => {
    expect(detail(z.object({ tags: z.array(z.string()) }), { tags: ['a', 7, 'b', false] })).toEqual([
      { type: 'string_type', loc: ['body', 'tags', 1], msg: 'Input should be a valid string', input: 7 },
      { type: 'string_type', loc: ['body', 'tags', 3], msg: 'Input should be a valid string', input: false },
    ]);
  });

  it('uuid_parsing', () => {
    expect(detail(z.object({ id: z.uuid() }), { id: 'not-a-uuid' })).toEqual([
      { type: 'uuid_parsing', loc: ['body', 'id'], msg: 'Input should be a valid UUID', input: 'not-a-uuid' },
    ]);
  });
});

describe('string constraints', () => {
  it('string_pattern_mismatch gives the pattern without slashes or flags', () => {
    const pattern = '^[a-z0-9][a-z0-9-]{0,63}$';
    expect(detail(z.object({ workspace: slug() }), { workspace: 'BAD' }, 'path')).toEqual([
      {
        type: 'string_pattern_mismatch',
        loc: ['path', 'workspace'],
        msg: `String should match pattern '${pattern}'`,
        input: 'BAD',
        ctx: { pattern },
      },
    ]);
    const [entry] = detail(z.object({ code: z.string().check(z.regex(/^[A-Z]{3}$/i)) }), { code: '12' });
    expect(entry?.ctx).toEqual({ pattern: '^[A-Z]{3}$' });
  });

  it('string_too_long with ctx max_length', () => {
    expect(detail(z.object({ s: z.string().check(z.maxLength(3)) }), { s: 'abcd' })).toEqual([
      {
        type: 'string_too_long',
        loc: ['body', 's'],
        msg: 'String should have at most 3 characters',
        input: 'abcd',
        ctx: { max_length: 3 },
      },
    ]);
  });

  it('string_too_short with ctx min_length, singular for one character', () => {
    expect(detail(z.object({ s: z.string().check(z.minLength(2)) }), { s: 'a' })).toEqual([
      {
        type: 'string_too_short',
        loc: ['body', 's'],
        msg: 'String should have at least 2 characters',
        input: 'a',
        ctx: { min_length: 2 },
      },
    ]);
    expect(detail(z.object({ s: z.string().check(z.minLength(1)) }), { s: '' })).toEqual([
      {
        type: 'string_too_short',
        loc: ['body', 's'],
        msg: 'String should have at least 1 character',
        input: '',
        ctx: { min_length: 1 },
      },
    ]);
  });

  it('a string of exactly 36 characters passes length(36)-style bounds, 35 and 37 do not', () => {
    const schema = z.object({ id: z.string().check(z.minLength(36), z.maxLength(36)) });
    expect(schema.safeParse({ id: 'x'.repeat(36) }).success).toBe(true);
    expect(detail(schema, { id: 'x'.repeat(35) }, 'path')[0]).toMatchObject({
      type: 'string_too_short',
      ctx: { min_length: 36 },
    });
    expect(detail(schema, { id: 'x'.repeat(37) }, 'path')[0]).toMatchObject({
      type: 'string_too_long',
      ctx: { max_length: 36 },
    });
  });
});

describe('numeric bounds', () => {
  it('greater_than_equal with ctx ge', () => {
    expect(detail(z.object({ n: integer().check(z.gte(1)) }), { n: 0 })).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['body', 'n'],
        msg: 'Input should be greater than or equal to 1',
        input: 0,
        ctx: { ge: 1 },
      },
    ]);
  });

  it('less_than_equal with ctx le', () => {
    expect(detail(z.object({ n: integer().check(z.lte(3650)) }), { n: 3651 })).toEqual([
      {
        type: 'less_than_equal',
        loc: ['body', 'n'],
        msg: 'Input should be less than or equal to 3650',
        input: 3651,
        ctx: { le: 3650 },
      },
    ]);
  });

  it('bounds on a path/query integer report the string that was sent', () => {
    expect(detail(PageQuery, { limit: '0' }, 'query')).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['query', 'limit'],
        msg: 'Input should be greater than or equal to 1',
        input: '0',
        ctx: { ge: 1 },
      },
    ]);
    expect(detail(PageQuery, { limit: '1001' }, 'query')).toEqual([
      {
        type: 'less_than_equal',
        loc: ['query', 'limit'],
        msg: 'Input should be less than or equal to 1000',
        input: '1001',
        ctx: { le: 1000 },
      },
    ]);
  });
});

describe('choices', () => {
  it("enum with ctx expected `'a', 'b' or 'c'`", () => {
    expect(detail(z.object({ format: z.enum(['a', 'b', 'c']) }), { format: 'd' })).toEqual([
      {
        type: 'enum',
        loc: ['body', 'format'],
        msg: "Input should be 'a', 'b' or 'c'",
        input: 'd',
        ctx: { expected: "'a', 'b' or 'c'" },
      },
    ]);
  });

  it("enum of two values reads `'a' or 'b'`", () => {
    const [entry] = detail(z.object({ format: z.enum(['jsonl', 'csv']) }), { format: 'xml' });
    expect(entry).toMatchObject({ type: 'enum', ctx: { expected: "'jsonl' or 'csv'" } });
  });

  it('literal_error', () => {
    expect(detail(z.object({ conn_type: z.literal('generic') }), { conn_type: 'ssh' })).toEqual([
      {
        type: 'literal_error',
        loc: ['body', 'conn_type'],
        msg: "Input should be 'generic'",
        input: 'ssh',
        ctx: { expected: "'generic'" },
      },
    ]);
  });
});

describe('extra_forbidden', () => {
  it('gives one entry per unknown key, the loc ending with the key', () => {
    const entries = detail(z.strictObject({ name: z.string() }), { name: 'x', colour: 'red', size: null });
    expect(entries).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'colour'], msg: 'Extra inputs are not permitted', input: 'red' },
      { type: 'extra_forbidden', loc: ['body', 'size'], msg: 'Extra inputs are not permitted', input: null },
    ]);
    expect(overTheWire(entries)[1]).toHaveProperty('input', null);
  });

  it('locates an unknown key inside a nested object', () => {
    const schema = z.strictObject({ columns: z.array(z.strictObject({ name: z.string() })) });
    expect(detail(schema, { columns: [{ name: 'a' }, { name: 'b', kind: 1 }] })).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'columns', 1, 'kind'], msg: 'Extra inputs are not permitted', input: 1 },
    ]);
  });
});

describe('rules and several failures', () => {
  it('value_error from a refine across fields', () => {
    const schema = z
      .object({ copy_mappers: z.optional(z.nullable(integer())), copy_bandwidth: z.optional(z.nullable(integer())) })
      .check(
        z.refine((o) => (o.copy_mappers == null) === (o.copy_bandwidth == null), {
          message: 'copy_mappers and copy_bandwidth are set together',
        }),
      );
    expect(detail(schema, { copy_mappers: 4 })).toEqual([
      {
        type: 'value_error',
        loc: ['body'],
        msg: 'Value error, copy_mappers and copy_bandwidth are set together',
        input: { copy_mappers: 4 },
        ctx: { error: 'copy_mappers and copy_bandwidth are set together' },
      },
    ]);
  });

  it('value_error at the path a refine names', () => {
    const schema = z.object({ a: z.string() }).check(z.refine(() => false, { message: 'bad a', path: ['a'] }));
    expect(detail(schema, { a: 'x' })).toEqual([
      { type: 'value_error', loc: ['body', 'a'], msg: 'Value error, bad a', input: 'x', ctx: { error: 'bad a' } },
    ]);
  });

  it('a custom rule may carry its own pydantic type, message and ctx', () => {
    const schema = z.object({
      d: z
        .string()
        .check(z.refine(() => false, { params: pydanticIssue('unknown_domain', 'No such domain', { domain: 'x' }) })),
    });
    expect(detail(schema, { d: 'x' })).toEqual([
      { type: 'unknown_domain', loc: ['body', 'd'], msg: 'No such domain', input: 'x', ctx: { domain: 'x' } },
    ]);
  });

  it('keeps only the first issue for one loc', () => {
    const schema = z.object({ s: z.string().check(z.minLength(5), z.maxLength(3), z.regex(/^a+$/)) });
    const entries = detail(schema, { s: 'bb' });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ type: 'string_too_short', loc: ['body', 's'] });
  });

  it('lists the failures of every field together', () => {
    const schema = z.strictObject({ name: z.string(), n: integer().check(z.gte(1)), tags: z.array(z.string()) });
    const entries = detail(schema, { n: 0, tags: 'x', other: true });
    expect(entries.map((e) => [e.type, e.loc])).toEqual(
      expect.arrayContaining([
        ['missing', ['body', 'name']],
        ['greater_than_equal', ['body', 'n']],
        ['list_type', ['body', 'tags']],
        ['extra_forbidden', ['body', 'other']],
      ]),
    );
    expect(entries).toHaveLength(4);
  });

  it('uses the source as the first loc element', () => {
    const schema = z.object({ 'x-tenant': slug() });
    for (const source of ['path', 'query', 'header', 'body'] as const) {
      expect(detail(schema, { 'x-tenant': 'NO' }, source)[0]?.loc).toEqual([source, 'x-tenant']);
    }
  });
});

describe('intParam (path and query integers)', () => {
  const version = z.object({ version: intParam({ min: 1 }) });

  it('int_parsing for a string that is not an integer', () => {
    for (const input of ['abc', '1.5', '', '1e3', '0x10', 'one']) {
      expect(detail(version, { version: input }, 'path')).toEqual([
        {
          type: 'int_parsing',
          loc: ['path', 'version'],
          msg: 'Input should be a valid integer, unable to parse string as an integer',
          input,
        },
      ]);
    }
  });

  it('accepts the spellings pydantic accepts: sign, leading zeros, surrounding spaces', () => {
    expect(version.parse({ version: ' +7 ' })).toEqual({ version: 7 });
    expect(version.parse({ version: '007' })).toEqual({ version: 7 });
  });

  it('checks the bounds after parsing', () => {
    expect(detail(version, { version: '-3' }, 'path')).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['path', 'version'],
        msg: 'Input should be greater than or equal to 1',
        input: '-3',
        ctx: { ge: 1 },
      },
    ]);
  });

  it('property: every integer string ≥ 1 parses to that number', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        fc.constantFrom('', '+', '0', '00'),
        fc.constantFrom('', ' ', '  '),
        (n, prefix, pad) => {
          expect(version.parse({ version: `${pad}${prefix}${n}${pad}` })).toEqual({ version: n });
        },
      ),
    );
  });

  it('property: integers below the minimum give exactly one greater_than_equal', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1_000_000, max: 0 }), (n) => {
        const entries = detail(version, { version: String(n) }, 'path');
        expect(entries).toEqual([expect.objectContaining({ type: 'greater_than_equal', ctx: { ge: 1 } })]);
      }),
    );
  });

  it('property: any string that is not an integer gives exactly one int_parsing issue', () => {
    const notInteger = fc.oneof(
      // anything containing a character that never appears in an integer pydantic reads
      fc.string({ minLength: 1 }).filter((s) => /[^0-9\s+._-]/.test(s)),
      // digits with an inner separator (`1_000` and `7.0` are integers to pydantic); not after a
      // leading 0, whose zeros and underscores pydantic strips first (`0__5` reads as 5)
      fc
        .tuple(fc.integer({ min: 1 }), fc.constantFrom(',', 'e', ' ', '__'), fc.nat())
        .map(([a, sep, b]) => `${a}${sep}${b}`),
      // a fraction that is not zero
      fc.tuple(fc.nat(), fc.integer({ min: 1 })).map(([a, b]) => `${a}.${b}`),
      // only signs or whitespace
      fc.stringMatching(/^[\s+-]*$/),
    );
    fc.assert(
      fc.property(notInteger, (input) => {
        const entries = detail(version, { version: input }, 'path');
        expect(entries).toEqual([
          {
            type: 'int_parsing',
            loc: ['path', 'version'],
            msg: 'Input should be a valid integer, unable to parse string as an integer',
            input,
          },
        ]);
      }),
    );
  });
});

describe('boolParam (query booleans)', () => {
  const schema = z.object({ include_deleted: boolParam() });

  it.each([
    ['true', true],
    ['True', true],
    ['TRUE', true],
    ['1', true],
    ['yes', true],
    ['Yes', true],
    ['on', true],
    ['false', false],
    ['False', false],
    ['FALSE', false],
    ['0', false],
    ['no', false],
    ['NO', false],
    ['off', false],
  ])('accepts %j as %j', (input, expected) => {
    expect(schema.parse({ include_deleted: input })).toEqual({ include_deleted: expected });
  });

  it.each(['maybe', '', '2', 'truee', 'null'])('bool_parsing for %j', (input) => {
    expect(detail(schema, { include_deleted: input }, 'query')).toEqual([
      {
        type: 'bool_parsing',
        loc: ['query', 'include_deleted'],
        msg: 'Input should be a valid boolean, unable to interpret input',
        input,
      },
    ]);
  });
});

describe('json_invalid', () => {
  it('gives loc ["body", <position>] where the parser names the position', () => {
    const entry = jsonInvalid('{"a" 1}', parseError('{"a" 1}'));
    expect(entry).toMatchObject({ type: 'json_invalid', loc: ['body', 5], msg: 'JSON decode error', input: {} });
    expect(typeof (entry.ctx as { error?: unknown }).error).toBe('string');
    expect(jsonInvalid('{"a":1} x', parseError('{"a":1} x')).loc).toEqual(['body', 8]);
    expect(jsonInvalid('{a:1}', parseError('{a:1}')).loc).toEqual(['body', 1]);
  });

  it('gives the position of an unexpected token and of a premature end, as FastAPI does', () => {
    // Python: json.loads('{"a": x}') fails at char 6, json.loads('{"a":') at char 5.
    expect(jsonInvalid('{"a": x}', parseError('{"a": x}')).loc).toEqual(['body', 6]);
    expect(jsonInvalid('{"a":', parseError('{"a":')).loc).toEqual(['body', 5]);
    expect(jsonInvalid('[1, 2', parseError('[1, 2')).loc).toEqual(['body', 5]);
    expect(jsonInvalid('{"a": "x\\q"}', parseError('{"a": "x\\q"}')).loc).toEqual(['body', 8]);
    expect(jsonInvalid('{"a": 01}', parseError('{"a": 01}')).loc).toEqual(['body', 7]);
  });
});

describe('json_invalid', () => {
  it('never quotes the body (it may hold write-only values)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[QXZ][QXZ0-9]{7,39}$/), (secret) => {
        for (const text of [
          `{"password": ${secret}}`,
          `{"password": "${secret}"`,
          `{"a": 1,, "password": "${secret}"}`,
        ]) {
          let error: unknown;
          try {
            JSON.parse(text);
          } catch (err) {
            error = err;
          }
          expect(error, text).toBeInstanceOf(SyntaxError);
          const shown = JSON.stringify(jsonInvalid(text, error));
          expect(shown, text).not.toContain(secret.slice(0, 6));
        }
      }),
    );
  });
});

/** A JSON body through the app's validation (lax conversions, non-finite numbers, schema). */
function body(schema: z.ZodMiniType, raw: unknown) {
  return validateSource(schema, raw, 'body');
}
const accepted = (schema: z.ZodMiniType, raw: unknown) => {
  const result = body(schema, raw);
  if (!result.success) throw new Error(`expected ${JSON.stringify(raw)} to pass: ${JSON.stringify(result.issues)}`);
  return result.data;
};
const refused = (schema: z.ZodMiniType, raw: unknown) => {
  const result = body(schema, raw);
  if (result.success) throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
  return result.issues;
};

const INT_PARSING = 'Input should be a valid integer, unable to parse string as an integer';

describe("laxInt, laxFloat, laxBool (pydantic-core's str_as_int, str_as_float, str_as_bool)", () => {
  it.each([
    ['3', 3],
    [' 3 ', 3],
    ['\t-3\n', -3],
    ['+3', 3],
    ['007', 7],
    ['-007', -7],
    ['3.0', 3],
    ['3.000', 3],
    ['00.0', 0],
    ['-0', 0],
    ['1_000', 1000],
    ['1_000.0', 1000],
  ])('reads %j as the integer %d', (text, n) => {
    expect(laxInt(text)).toBe(n);
  });

  it.each(['ten', '', ' ', '3.5', '3.', '.0', '1e3', '0x10', '_1', '1_', '1__0', '+-1', '--1', '-+1', '1 000', '١'])(
    'cannot read %j as an integer',
    (text) => {
      expect(laxInt(text)).toBeUndefined();
    },
  );

  it('refuses more than 4300 characters as too large to read (int_parsing_size)', () => {
    expect(laxInt('1'.repeat(4301))).toBe('size');
  });

  it.each([
    ['1.5', 1.5],
    [' 1.5 ', 1.5],
    ['-2', -2],
    ['1.', 1],
    ['.5', 0.5],
    ['1e3', 1000],
    ['+1E-2', 0.01],
    ['1_000.5', 1000.5],
    ['inf', Infinity],
    ['-Infinity', -Infinity],
  ])('reads %j as the number %d', (text, n) => {
    expect(laxFloat(text)).toBe(n);
  });

  it.each(['x', '', '.', '1e', 'e3', '0x10', '1,5', '_1.5'])('cannot read %j as a number', (text) => {
    expect(laxFloat(text)).toBeUndefined();
  });

  it('reads the booleans pydantic reads, words in any case, and nothing else', () => {
    for (const t of ['true', 'True', 'TRUE', '1', 'yes', 'YES', 'on', 'On', 't', 'T', 'y', 'Y'])
      expect(laxBool(t), t).toBe(true);
    for (const f of ['false', 'False', '0', 'no', 'NO', 'off', 'Off', 'f', 'F', 'n', 'N'])
      expect(laxBool(f), f).toBe(false);
    for (const x of ['2', 'maybe', '', ' true', 'true ', '00', '1.0', 'nope']) expect(laxBool(x), x).toBeUndefined();
  });
});

describe('lax conversions of body values (pydantic v2 lax mode)', () => {
  const ints = z.strictObject({
    n: z.optional(integer().check(z.gte(1), z.lte(100))),
    m: z.optional(z.nullable(z.int())),
  });

  it('takes an integer as a numeric string, a whole float, or a boolean', () => {
    expect(accepted(ints, { n: '3' })).toEqual({ n: 3 });
    expect(accepted(ints, { n: ' 42 ' })).toEqual({ n: 42 });
    expect(accepted(ints, { n: '3.0' })).toEqual({ n: 3 });
    expect(accepted(ints, { n: 3.0 })).toEqual({ n: 3 });
    expect(accepted(ints, { n: true })).toEqual({ n: 1 });
    expect(accepted(ints, { m: '-12', n: '1_0' })).toEqual({ m: -12, n: 10 });
    expect(accepted(ints, { m: null })).toEqual({ m: null });
  });

  it('answers int_parsing for a string that is no integer, and int_from_float for a fraction', () => {
    expect(refused(ints, { n: 'ten' })).toEqual([
      { type: 'int_parsing', loc: ['body', 'n'], msg: INT_PARSING, input: 'ten' },
    ]);
    expect(refused(ints, { n: '3.5' })).toEqual([
      { type: 'int_parsing', loc: ['body', 'n'], msg: INT_PARSING, input: '3.5' },
    ]);
    expect(refused(ints, { n: 3.5 })).toEqual([
      {
        type: 'int_from_float',
        loc: ['body', 'n'],
        msg: 'Input should be a valid integer, got a number with a fractional part',
        input: 3.5,
      },
    ]);
    expect(refused(ints, { n: [3] })).toEqual([
      { type: 'int_type', loc: ['body', 'n'], msg: 'Input should be a valid integer', input: [3] },
    ]);
  });

  it('checks the bounds on the number read, and shows the string that was sent', () => {
    expect(refused(ints, { n: '0' })).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['body', 'n'],
        msg: 'Input should be greater than or equal to 1',
        input: '0',
        ctx: { ge: 1 },
      },
    ]);
    expect(refused(ints, { n: false })).toEqual([
      expect.objectContaining({ type: 'greater_than_equal', input: false }),
    ]);
  });

  it('takes a number as a numeric string or a boolean; float_parsing otherwise', () => {
    const schema = z.object({ x: z.number().check(z.gte(0)) });
    expect(accepted(schema, { x: '1.5' })).toEqual({ x: 1.5 });
    expect(accepted(schema, { x: ' 2e3 ' })).toEqual({ x: 2000 });
    expect(accepted(schema, { x: true })).toEqual({ x: 1 });
    expect(refused(schema, { x: 'x' })).toEqual([
      {
        type: 'float_parsing',
        loc: ['body', 'x'],
        msg: 'Input should be a valid number, unable to parse string as a number',
        input: 'x',
      },
    ]);
    expect(refused(schema, { x: 'inf' })).toEqual([
      { type: 'finite_number', loc: ['body', 'x'], msg: 'Input should be a finite number', input: 'inf' },
    ]);
    expect(refused(schema, { x: '-1' })).toEqual([
      expect.objectContaining({ type: 'greater_than_equal', input: '-1' }),
    ]);
  });

  it('takes a boolean as 0/1 or a word; bool_parsing for other strings and numbers, bool_type for the rest', () => {
    const schema = z.object({ b: z._default(z.boolean(), true) });
    for (const [input, value] of [
      ['yes', true],
      ['Off', false],
      ['TRUE', true],
      ['f', false],
      ['1', true],
      [0, false],
      [1, true],
      [1.0, true],
    ] as const) {
      expect(accepted(schema, { b: input }), String(input)).toEqual({ b: value });
    }
    for (const input of ['maybe', '', 'true ', 2, -1]) {
      expect(refused(schema, { b: input }), String(input)).toEqual([
        {
          type: 'bool_parsing',
          loc: ['body', 'b'],
          msg: 'Input should be a valid boolean, unable to interpret input',
          input,
        },
      ]);
    }
    for (const input of [0.5, [], {}, null]) {
      expect(refused(schema, { b: input }), JSON.stringify(input)).toEqual([
        { type: 'bool_type', loc: ['body', 'b'], msg: 'Input should be a valid boolean', input },
      ]);
    }
  });

  it('never turns a number into a string (pydantic does not either)', () => {
    expect(refused(z.object({ s: z.string() }), { s: 3 })).toEqual([
      { type: 'string_type', loc: ['body', 's'], msg: 'Input should be a valid string', input: 3 },
    ]);
  });

  it('reaches fields in lists, records, nested objects and discriminated unions', () => {
    const schema = z.strictObject({
      list: z.optional(z.array(integer())),
      map: z.optional(z.record(z.string(), z.boolean())),
      nested: z.optional(z.object({ deep: z.object({ n: z.number() }) })),
      steps: z.optional(
        z.array(
          z.discriminatedUnion('kind', [
            z.strictObject({ kind: z.literal('wait'), seconds: z.number().check(z.gte(0), z.lte(60)) }),
            z.strictObject({ kind: z.literal('flag'), on: z.boolean() }),
          ]),
        ),
      ),
    });
    expect(
      accepted(schema, {
        list: ['1', 2, '3.0'],
        map: { a: 'on', b: 0 },
        nested: { deep: { n: '2.5' } },
        steps: [
          { kind: 'wait', seconds: '5' },
          { kind: 'flag', on: 'no' },
        ],
      }),
    ).toEqual({
      list: [1, 2, 3],
      map: { a: true, b: false },
      nested: { deep: { n: 2.5 } },
      steps: [
        { kind: 'wait', seconds: 5 },
        { kind: 'flag', on: false },
      ],
    });
    expect(
      refused(schema, { list: ['1', 'x'], map: { a: 'perhaps' }, steps: [{ kind: 'wait', seconds: '61' }] }),
    ).toEqual([
      { type: 'int_parsing', loc: ['body', 'list', 1], msg: INT_PARSING, input: 'x' },
      expect.objectContaining({ type: 'bool_parsing', loc: ['body', 'map', 'a'], input: 'perhaps' }),
      expect.objectContaining({ type: 'less_than_equal', loc: ['body', 'steps', 0, 'seconds'], input: '61' }),
    ]);
  });

  it('in a union, keeps a value a member takes as it is, else converts for the member that takes it', () => {
    const count = z.object({
      c: z.optional(z.nullable(z.union([integer().check(z.gte(1)), z.literal('')]))),
    });
    expect(accepted(count, { c: '' })).toEqual({ c: '' });
    expect(accepted(count, { c: '4' })).toEqual({ c: 4 });
    expect(accepted(count, { c: true })).toEqual({ c: 1 });
    expect(refused(count, { c: 'four' })).toEqual([
      { type: 'int_parsing', loc: ['body', 'c'], msg: INT_PARSING, input: 'four' },
    ]);
    expect(refused(count, { c: '0' })).toEqual([expect.objectContaining({ type: 'greater_than_equal', input: '0' })]);
    // A string member takes a numeric string as it is.
    expect(accepted(z.object({ v: z.union([z.string(), z.int()]) }), { v: '3' })).toEqual({ v: '3' });
  });

  it('lists conversion failures with the other failures of the body, one per loc', () => {
    const schema = z.strictObject({ a: integer(), b: z.string(), c: z.boolean() });
    expect(refused(schema, { a: 'x', b: 1, c: 'x', d: 1 }).map((i) => [i.loc, i.type])).toEqual([
      [['body', 'a'], 'int_parsing'],
      [['body', 'b'], 'string_type'],
      [['body', 'c'], 'bool_parsing'],
      [['body', 'd'], 'extra_forbidden'],
    ]);
  });

  it('property: every safe integer written as a string is read as that integer', () => {
    const schema = z.object({ n: integer() });
    fc.assert(
      fc.property(fc.maxSafeInteger(), (n) => {
        expect(accepted(schema, { n: String(n) })).toEqual({ n });
        expect(accepted(schema, { n: ` ${n}.0 ` })).toEqual({ n });
      }),
    );
  });

  it('property: every finite number written as a string is read as that number', () => {
    const schema = z.object({ x: z.number() });
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        expect(accepted(schema, { x: String(x) })).toEqual({ x: x === 0 ? 0 : x });
      }),
    );
  });

  it('leaves path and query values to their own schemas (they arrive as strings)', () => {
    const schema = z.object({ flag: z.boolean() });
    expect(validateSource(schema, { flag: 'yes' }, 'query').success).toBe(false);
  });
});

describe('finite_number: numbers JSON cannot carry (1e309 parses to Infinity)', () => {
  it('is refused anywhere in the body, also in free-form values, with the loc of the value', () => {
    const schema = z.object({ content: z.unknown(), n: z.optional(integer()) });
    const raw = JSON.parse('{"content": {"a": [1, 1e309], "b": -1e309}, "n": 1e309}') as unknown;
    expect(refused(schema, raw)).toEqual([
      { type: 'finite_number', loc: ['body', 'n'], msg: 'Input should be a finite number', input: 'Infinity' },
      {
        type: 'finite_number',
        loc: ['body', 'content', 'a', 1],
        msg: 'Input should be a finite number',
        input: 'Infinity',
      },
      {
        type: 'finite_number',
        loc: ['body', 'content', 'b'],
        msg: 'Input should be a finite number',
        input: '-Infinity',
      },
    ]);
  });

  it('is refused at the top of the body too', () => {
    expect(refused(z.unknown(), Infinity)).toEqual([
      { type: 'finite_number', loc: ['body'], msg: 'Input should be a finite number', input: 'Infinity' },
    ]);
  });
});
