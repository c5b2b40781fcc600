import fc from 'fast-check';

/**
 * The routes of an OpenAPI 3.1 document, and fast-check arbitraries for values its
 * JSON schemas accept, so a fuzzer can cover every endpoint the service serves
 * (a new endpoint is picked up from `/openapi.json` without touching the fuzzer).
 */

export type JsonSchema = Record<string, any>;

export interface OpenApiDocument {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export interface RouteParam {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header' | 'cookie';
  readonly required: boolean;
  readonly schema: JsonSchema;
}

export interface Route {
  /** Upper case: `GET`, `POST`, ... */
  readonly method: string;
  /** OpenAPI template, e.g. `/api/mcps/{server_id}`. */
  readonly path: string;
  readonly operationId: string;
  readonly params: readonly RouteParam[];
  /** The JSON request body, when the operation takes one. */
  readonly body?: { readonly schema: JsonSchema; readonly required: boolean };
  /** False for the open endpoints (no `security` entry). */
  readonly secured: boolean;
  /** The documented status codes. */
  readonly statuses: readonly number[];
  /** The documented content type of the success answer, if any (the first, when several). */
  readonly successType?: string;
  /** Every documented content type of the success answer. */
  readonly successTypes: readonly string[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of the document, in document order. */
export function routesFromOpenApi(doc: OpenApiDocument): Route[] {
  const routes: Route[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const params: RouteParam[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) => {
        const param = resolve(doc, p);
        return { name: param.name, in: param.in, required: Boolean(param.required), schema: param.schema ?? {} };
      });
      const requestBody = op.requestBody ? resolve(doc, op.requestBody) : undefined;
      const bodySchema = requestBody?.content?.['application/json']?.schema;
      const statuses = Object.keys(op.responses ?? {})
        .map(Number)
        .filter(Number.isInteger);
      const success = Object.entries(op.responses ?? {}).find(([code]) => code.startsWith('2'))?.[1] as any;
      routes.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId ?? `${method} ${path}`,
        params,
        ...(bodySchema ? { body: { schema: bodySchema, required: Boolean(requestBody.required) } } : {}),
        secured: Array.isArray(op.security) && op.security.length > 0,
        statuses,
        ...(success?.content ? { successType: Object.keys(success.content)[0] } : {}),
        successTypes: Object.keys(success?.content ?? {}),
      });
    }
  }
  return routes;
}

/** Follows `$ref`s to components. */
export function resolve(doc: OpenApiDocument, schema: JsonSchema): JsonSchema {
  let current = schema;
  for (let hops = 0; current && typeof current.$ref === 'string'; hops++) {
    if (hops > 32) throw new Error(`$ref cycle at ${schema.$ref}`);
    const parts = (current.$ref as string).replace(/^#\//, '').split('/');
    let target: any = doc;
    for (const part of parts) target = target?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    if (!target) throw new Error(`unresolved $ref ${current.$ref}`);
    current = target;
  }
  return current;
}

/** The names of a path template's parameters, in order. */
export const pathParamNames = (path: string): string[] => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

/** Fills a path template; values are used as given (encode them first). */
export const fillPath = (path: string, values: Readonly<Record<string, string>>): string =>
  path.replaceAll(/\{(\w+)\}/g, (_, name: string) => values[name] ?? '');

export interface ValueOptions {
  /**
   * Known-good values (ids of existing resources, names) for a string property or
   * parameter of this name: the generator picks one of them half of the time.
   */
  readonly hints?: (name: string) => readonly string[] | undefined;
  /** Cap on generated array lengths and free-text string lengths (default 3 and 24). */
  readonly maxItems?: number;
  readonly maxText?: number;
}

const ANY_JSON = fc.jsonValue({ maxDepth: 2 });

/**
 * An arbitrary of values the schema accepts (best effort: `pattern`, `format`, bounds,
 * `enum`, `required`, `additionalProperties`, `oneOf`/`anyOf`/`allOf`, nullable types).
 */
export function schemaValue(
  doc: OpenApiDocument,
  schema: JsonSchema,
  options: ValueOptions = {},
  name?: string,
  depth = 0,
): fc.Arbitrary<unknown> {
  const s = resolve(doc, schema);
  const maxItems = options.maxItems ?? 3;
  const maxText = options.maxText ?? 24;
  if (depth > 8) return fc.constant(null);
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  const alternatives = s.oneOf ?? s.anyOf;
  if (Array.isArray(alternatives)) {
    return fc.oneof(...alternatives.map((alt: JsonSchema) => schemaValue(doc, alt, options, name, depth + 1)));
  }
  if (Array.isArray(s.allOf)) {
    const { allOf, ...rest } = s;
    const merged = Object.assign({}, ...allOf.map((part: JsonSchema) => resolve(doc, part)), rest);
    return schemaValue(doc, merged, options, name, depth + 1);
  }
  if (Array.isArray(s.type)) {
    return fc.oneof(...s.type.map((type: string) => schemaValue(doc, { ...s, type }, options, name, depth + 1)));
  }
  switch (s.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -1_000_000);
      const max = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : 1_000_000);
      return fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max));
    }
    case 'number': {
      const min = s.minimum ?? -1_000_000;
      const max = s.maximum ?? 1_000_000;
      return fc.oneof(fc.double({ min, max, noNaN: true, noDefaultInfinity: true }), fc.integer({ min, max }));
    }
    case 'string':
      return withHints(stringValue(s, maxText), name, options);
    case 'array': {
      const minLength = s.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(s.maxItems ?? maxItems, maxItems));
      const items = s.items ? schemaValue(doc, s.items, options, name, depth + 1) : ANY_JSON;
      return fc.array(items, { minLength, maxLength });
    }
    case 'object':
      return objectValue(doc, s, options, depth);
    default:
      if (s.properties) return objectValue(doc, s, options, depth);
      // No type: "any JSON value".
      return ANY_JSON;
  }
}

function objectValue(doc: OpenApiDocument, s: JsonSchema, options: ValueOptions, depth: number) {
  const properties: Record<string, JsonSchema> = s.properties ?? {};
  const required: string[] = s.required ?? [];
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, prop] of Object.entries(properties)) shape[key] = schemaValue(doc, prop, options, key, depth + 1);
  const known = fc.record(shape, { requiredKeys: required.filter((k) => k in shape) });
  const extra = s.additionalProperties;
  if (extra && typeof extra === 'object' && Object.keys(properties).length === 0) {
    // Identifier-like keys most of the time (env names, variable names), any string sometimes.
    const key = s.propertyNames
      ? stringValue(resolve(doc, s.propertyNames), 16)
      : fc.oneof(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,15}$/), fc.string({ maxLength: 16 }));
    return fc.dictionary(key, schemaValue(doc, extra, options, undefined, depth + 1), {
      maxKeys: options.maxItems ?? 3,
    });
  }
  return known;
}

function stringValue(s: JsonSchema, maxText: number): fc.Arbitrary<string> {
  const minLength: number = s.minLength ?? 0;
  const maxLength: number = s.maxLength ?? Number.MAX_SAFE_INTEGER;
  const fits = (v: string) => v.length >= minLength && v.length <= maxLength;
  if (s.format === 'uuid') return fc.uuid({ version: 4 });
  if (s.format === 'date-time') {
    return fc
      .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  if (typeof s.pattern === 'string') {
    return fc.stringMatching(new RegExp(s.pattern), { maxLength: Math.min(maxLength, 80) }).filter(fits);
  }
  const upper = Math.max(minLength, Math.min(maxLength, maxText));
  return fc.oneof(
    fc.string({ minLength, maxLength: upper }),
    fc.string({ unit: 'grapheme', minLength, maxLength: upper }),
    // Sometimes the longest the schema allows (bounded so requests stay small).
    ...(maxLength <= 10_000 && maxLength > upper ? [fc.constant('x'.repeat(maxLength))] : []),
  );
}

function withHints(arb: fc.Arbitrary<string>, name: string | undefined, options: ValueOptions) {
  const known = name ? options.hints?.(name) : undefined;
  return known && known.length > 0 ? fc.oneof(fc.constantFrom(...known), arb) : arb;
}
