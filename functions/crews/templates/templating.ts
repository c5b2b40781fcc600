/**
 * `{{name}}` (a variable) and `{{steps.<id>.output}}` (an earlier step's output) in step
 * fields: found when a template is declared, replaced when a step runs.
 */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const VARIABLE = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;
const STEP_OUTPUT = /^steps\.([a-z0-9_-]{1,64})\.output$/;

export type Reference =
  { kind: 'variable'; name: string } | { kind: 'step'; id: string } | { kind: 'invalid'; text: string };

export function references(text: string): Reference[] {
  return [...text.matchAll(PLACEHOLDER)].map(([, inner = '']) => {
    if (VARIABLE.test(inner)) return { kind: 'variable', name: inner };
    const step = STEP_OUTPUT.exec(inner);
    if (step) return { kind: 'step', id: step[1]! };
    return { kind: 'invalid', text: inner };
  });
}

export interface RenderContext {
  readonly values: Readonly<Record<string, unknown>>;
  readonly outputs: Readonly<Record<string, unknown>>;
}

const asText = (value: unknown): string =>
  value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);

/** Replaces every placeholder; strings go in as they are, null as nothing, other values as JSON. */
export function render(text: string, ctx: RenderContext): string {
  return text.replace(PLACEHOLDER, (whole, inner: string) => {
    if (VARIABLE.test(inner) && Object.hasOwn(ctx.values, inner)) return asText(ctx.values[inner]);
    const step = STEP_OUTPUT.exec(inner);
    if (step && Object.hasOwn(ctx.outputs, step[1]!)) return asText(ctx.outputs[step[1]!]);
    return whole;
  });
}
