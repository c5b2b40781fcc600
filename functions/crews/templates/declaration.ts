import * as z from 'zod/mini';
import { Invalid, missingField, type ValidationIssue, valueError } from '../../../shared/errors.js';
import { laxCoerce } from '../../../shared/pydantic/lax.js';
import type { Step, TemplateRequest, Variable, VariableType } from './template-schemas.js';
import { references } from './templating.js';

/*
 * The checks of a crew template's declaration (docs/crews.md) and of E2's values against it:
 * pydantic-shaped issues, no storage. TemplateService and RunService apply them.
 */
const TYPE_CHECKS: Record<VariableType, { ok: (v: unknown) => boolean; type: string; msg: string }> = {
  string: { ok: (v) => typeof v === 'string', type: 'string_type', msg: 'Input should be a valid string' },
  integer: { ok: (v) => Number.isInteger(v), type: 'int_type', msg: 'Input should be a valid integer' },
  number: {
    ok: (v) => typeof v === 'number' && Number.isFinite(v),
    type: 'float_type',
    msg: 'Input should be a valid number',
  },
  boolean: { ok: (v) => typeof v === 'boolean', type: 'bool_type', msg: 'Input should be a valid boolean' },
  object: {
    ok: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
    type: 'dict_type',
    msg: 'Input should be a valid dictionary',
  },
  array: { ok: (v) => Array.isArray(v), type: 'list_type', msg: 'Input should be a valid list' },
};

/** Types whose values pydantic's lax mode converts: `"3"` is 3, `"yes"` is true. */
const LAX_SCHEMAS: Partial<Record<VariableType, z.ZodMiniType>> = {
  integer: z.int(),
  number: z.number(),
  boolean: z.boolean(),
};

/**
 * `value` as a value of `type` after pydantic's lax conversions, or the pydantic error
 * (`int_parsing` for `"ten"`, `int_type` for a list...) at `loc`.
 */
function typed(
  type: VariableType,
  value: unknown,
  loc: (string | number)[],
): { value: unknown; issue?: undefined } | { issue: ValidationIssue } {
  const lax = LAX_SCHEMAS[type];
  if (lax) {
    const converted = laxCoerce(lax, value, loc);
    const [first] = converted.issues;
    if (first) return { issue: first };
    value = converted.value;
  }
  const wrong = typeIssue(type, value, loc);
  return wrong ? { issue: wrong } : { value };
}

/** The pydantic error for `value` not being of `type`, or undefined when it is. */
function typeIssue(type: VariableType, value: unknown, loc: (string | number)[]): ValidationIssue | undefined {
  const check = TYPE_CHECKS[type];
  if (check.ok(value)) return undefined;
  if (type === 'integer' && typeof value === 'number' && Number.isFinite(value)) {
    return {
      type: 'int_from_float',
      loc,
      msg: 'Input should be a valid integer, got a number with a fractional part',
      input: value,
    };
  }
  return { type: check.type, loc, msg: check.msg, input: value };
}

/** The text fields of a step that may hold placeholders, each with its path in the step. */
function renderedFields(step: Step): [string[], string][] {
  const optional = (path: string[], text: string | undefined): [string[], string][] =>
    text === undefined ? [] : [[path, text]];
  switch (step.kind) {
    case 'render':
      return [[['template'], step.template]];
    case 'http':
      return [
        [['url'], step.url],
        ...optional(['body'], step.body),
        ...Object.entries(step.headers ?? {}).map(([name, value]): [string[], string] => [['headers', name], value]),
      ];
    case 'llm':
      return [[['prompt'], step.prompt], ...optional(['system'], step.system)];
    case 'approval':
      return [[['prompt'], step.prompt]];
    case 'wait':
      return [];
  }
}

/**
 * Variable names and step ids become keys of stored objects (`values`, `outputs`), and
 * DynamoDB's marshaller drops a key named `__proto__`: such a name could never be used.
 */
const RESERVED_KEY = '__proto__';
const RESERVED_MESSAGE = `'${RESERVED_KEY}' is reserved`;

/**
 * The declaration rules of docs/crews.md: unique variable names, defaults of the declared
 * type, unique step ids, and references only to variables and earlier steps.
 */
export function declarationIssues(req: TemplateRequest): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const names = new Set<string>();
  req.variables.forEach((v, i) => {
    if (names.has(v.name))
      issues.push(valueError(['body', 'variables', i, 'name'], `duplicate variable name '${v.name}'`, v.name));
    if (v.name === RESERVED_KEY) issues.push(valueError(['body', 'variables', i, 'name'], RESERVED_MESSAGE, v.name));
    names.add(v.name);
    if (v.default !== undefined) {
      const wrong = typeIssue(v.type, v.default, ['body', 'variables', i, 'default']);
      if (wrong) issues.push(wrong);
    }
  });
  const earlier = new Set<string>();
  const all = new Set(req.steps.map((s) => s.id));
  req.steps.forEach((step, i) => {
    if (earlier.has(step.id))
      issues.push(valueError(['body', 'steps', i, 'id'], `duplicate step id '${step.id}'`, step.id));
    if (step.id === RESERVED_KEY) issues.push(valueError(['body', 'steps', i, 'id'], RESERVED_MESSAGE, step.id));
    for (const [field, text] of renderedFields(step)) {
      const loc = ['body', 'steps', i, ...field];
      for (const ref of references(text)) {
        if (ref.kind === 'variable' && !names.has(ref.name)) {
          issues.push(valueError(loc, `reference to unknown variable '${ref.name}'`, text));
        } else if (ref.kind === 'step' && !earlier.has(ref.id)) {
          const why = all.has(ref.id) ? 'a later step' : 'an unknown step';
          issues.push(valueError(loc, `reference to ${why} '${ref.id}'`, text));
        } else if (ref.kind === 'invalid') {
          issues.push(valueError(loc, `unknown placeholder '{{${ref.text}}}'`, text));
        }
      }
    }
    earlier.add(step.id);
  });
  issues.push(...concurrencyKeyIssues(req, names));
  return issues;
}

/**
 * `concurrency_key` counts only under `max_concurrent_runs`, and is rendered when a run is
 * queued, before any step ran: it may reference declared variables only.
 */
function concurrencyKeyIssues(req: TemplateRequest, names: ReadonlySet<string>): ValidationIssue[] {
  const key = req.concurrency_key;
  if (key == null) return [];
  const loc = ['body', 'concurrency_key'];
  const issues: ValidationIssue[] = [];
  if (req.max_concurrent_runs == null)
    issues.push(valueError(loc, 'concurrency_key needs max_concurrent_runs: the limit it counts per key', key));
  for (const ref of references(key)) {
    if (ref.kind === 'variable' && !names.has(ref.name))
      issues.push(valueError(loc, `reference to unknown variable '${ref.name}'`, key));
    else if (ref.kind === 'step')
      issues.push(
        valueError(
          loc,
          `reference to step '${ref.id}': a concurrency key is rendered before any step runs, from variables only`,
          key,
        ),
      );
    else if (ref.kind === 'invalid') issues.push(valueError(loc, `unknown placeholder '{{${ref.text}}}'`, key));
  }
  return issues;
}

/**
 * E2's check of `values` against the declaration: missing required → `missing`, unknown
 * → `extra_forbidden`, wrong type → the pydantic type; returns the values with defaults.
 * `field` is where the body holds them (`values`; the SDK's crews send `task_input`).
 */
export function resolveValues(
  variables: readonly Variable[],
  values: Record<string, unknown>,
  field = 'values',
): Record<string, unknown> {
  const issues: ValidationIssue[] = [];
  const declared = new Map(variables.map((v) => [v.name, v]));
  const resolved: Record<string, unknown> = Object.create(null);
  for (const v of variables) {
    const loc = ['body', field, v.name];
    if (Object.hasOwn(values, v.name)) {
      const checked = typed(v.type, values[v.name], loc);
      if (checked.issue) issues.push(checked.issue);
      else resolved[v.name] = checked.value;
    } else if (v.default !== undefined) {
      resolved[v.name] = v.default;
    } else if (v.required) {
      issues.push(missingField(loc, values));
    } else {
      resolved[v.name] = null;
    }
  }
  for (const name of Object.keys(values)) {
    if (!declared.has(name)) {
      issues.push({
        type: 'extra_forbidden',
        loc: ['body', field, name],
        msg: 'Extra inputs are not permitted',
        input: values[name],
      });
    }
  }
  if (issues.length > 0) throw new Invalid(issues);
  return resolved;
}

/**
 * A rerun's values (docs/crews.md): the old run's, with `overrides` checked as E2 checks values
 * (unknown → `extra_forbidden`, wrong type → the pydantic type). A variable the old run has
 * a value for is never missing; one it has none for (its declaration changed since) is
 * resolved as E2 would.
 */
export function rerunValues(
  variables: readonly Variable[],
  old: Readonly<Record<string, unknown>>,
  overrides: Record<string, unknown>,
): Record<string, unknown> {
  const checked = resolveValues(
    variables.map((v) => (Object.hasOwn(old, v.name) ? { ...v, required: false } : v)),
    overrides,
  );
  const values: Record<string, unknown> = Object.create(null);
  for (const v of variables)
    values[v.name] = Object.hasOwn(overrides, v.name) || !Object.hasOwn(old, v.name) ? checked[v.name] : old[v.name];
  return values;
}
