import { IDEMPOTENCY_HEADER, REPLAYED_HEADER } from './idempotency.js';
import * as z from 'zod/mini';
import { components } from '../schema.js';
import type { RequestSpec } from './request-input.js';
import type { Access, EndpointSpec, ServiceApp } from './service-app.js';
import { ErrorResponse, HTTPValidationError } from './schemas.js';
import { OAUTH2_SCHEME, PSK_SCHEME, SECURITY_SCHEMES } from './security-schemes.js';

/**
 * The OpenAPI 3.1 document, made from the endpoints' own schemas with zod's JSON Schema
 * output. Only `npm run openapi` (functions/platform/openapi.json, which the platform
 * Lambda serves), the local platform and the tests import this module: no Lambda builds
 * the document, or bundles what builds it.
 */

const ERROR_DESCRIPTIONS: Record<number, string> = {
  401: 'Missing or invalid credentials',
  403: 'The caller lacks the right',
  404: 'No such resource',
  409: 'The resource is not in a state that allows the action',
  413: 'Request body over 1 MiB',
  422: 'Validation Error',
  429: 'Too many requests of the caller under way: try again after `Retry-After` seconds',
  503: 'A dependency did not answer',
};

const RETRY_AFTER = { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 0 } };

/** FastAPI's operationId: function name + path with non-word characters as `_` + method. */
export const operationId = (name: string, path: string, method: string): string =>
  `${name}${path}`.replaceAll(/\W/g, '_') + `_${method.toLowerCase()}`;

export type Json = Record<string, unknown>;
type Schema = z.core.$ZodType;

const REF = '#/components/schemas/';

export interface SchemaSetOptions {
  /** The JSON Schema dialect: OpenAPI 3.1's (2020-12) unless told (AsyncAPI 3.0 reads draft-07). */
  readonly target?: 'draft-2020-12' | 'draft-07';
  /** Named schemas of this document only, beside the shared components (shared/schema.ts). */
  readonly named?: Readonly<Record<string, Schema>>;
}

/**
 * JSON Schemas of the named components and of the schemas the endpoints use, in one
 * pass of zod's generator (so a component is a `$ref` wherever it is used). Requests and
 * answers both read as their input: a field with a default is not required, as FastAPI
 * shows it. The AsyncAPI document (shared/http/asyncapi.ts) uses it too, so both
 * documents say a component the same way.
 */
export class SchemaSet {
  private readonly registry = z.registry<{ id: string }>();
  private readonly inline = new Map<Schema, string>();
  private readonly ids = new Map<Schema, string>();
  private readonly target: 'draft-2020-12' | 'draft-07';

  constructor(options: SchemaSetOptions = {}) {
    this.target = options.target ?? 'draft-2020-12';
    const taken = new Set<string>();
    const name = (id: string, schema: Schema) => {
      if (taken.has(id)) throw new Error(`two schemas are named ${id}`);
      taken.add(id);
      this.ids.set(schema, id);
      this.registry.add(schema, { id });
    };
    for (const [id, schema] of components._idmap) name(id, schema);
    for (const [id, schema] of Object.entries(options.named ?? {})) name(id, schema);
  }

  /** A placeholder for `schema`'s JSON Schema, resolved by `resolve` once every schema is known. */
  use(schema: Schema): Json {
    const id = this.ids.get(schema);
    if (id) return { $ref: `${REF}${id}` };
    let key = this.inline.get(schema);
    if (!key) {
      key = `__inline_${this.inline.size}`;
      this.inline.set(schema, key);
      this.registry.add(schema, { id: key });
    }
    return { $inline: key };
  }

  /** The component schemas, and a function that replaces placeholders in a value. */
  generate(): { schemas: Record<string, Json>; resolve: <T>(value: T) => T } {
    const { schemas } = z.toJSONSchema(this.registry, {
      target: this.target,
      uri: (id) => `${REF}${id}`,
      io: 'input',
      unrepresentable: 'any',
      override: ({ zodSchema, jsonSchema }) => {
        // zod drops a default it cannot know holds for a transformed value's input; the
        // documented one does (a parameter read from its string: `limit` defaults to 100).
        const documented = z.globalRegistry.get(zodSchema)?.default;
        if (documented !== undefined && jsonSchema.default === undefined) jsonSchema.default = documented;
        // A literal as a one-value enum, a nullable as a type list: as the document has always said them.
        if ('const' in jsonSchema && !('enum' in jsonSchema)) {
          jsonSchema.enum = [jsonSchema.const as string | number | boolean | null];
          delete jsonSchema.const;
        }
        collapseNullable(jsonSchema);
        // z.int()'s safe-integer bounds say nothing a client needs.
        if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
        if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      },
    }) as { schemas: Record<string, Json> };
    for (const schema of Object.values(schemas)) {
      delete schema.$schema;
      delete schema.$id;
    }
    const inlined = (key: string) => schemas[key]!;
    const resolve = <T>(value: T): T => {
      if (Array.isArray(value)) return value.map(resolve) as T;
      if (value === null || typeof value !== 'object') return value;
      const record = value as Json;
      if (typeof record.$inline === 'string') return resolve(inlined(record.$inline)) as T;
      // An inline schema used inside another is referred to by its placeholder id.
      if (typeof record.$ref === 'string' && record.$ref.startsWith(`${REF}__inline_`)) {
        return resolve(inlined(record.$ref.slice(REF.length))) as T;
      }
      return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, resolve(v)])) as T;
    };
    const named = Object.fromEntries(
      Object.entries(schemas)
        .filter(([id]) => !id.startsWith('__'))
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([id, schema]) => [id, resolve(schema)]),
    );
    return { schemas: named, resolve };
  }
}

/**
 * `anyOf: [X, {type: 'null'}]` as X with `null` in its type list, when X is a plain schema
 * of one type (not a reference, a union or an untyped value).
 */
function collapseNullable(schema: Record<string, unknown>): void {
  const options = schema.anyOf;
  if (!Array.isArray(options) || options.length !== 2) return;
  const isNull = (o: Record<string, unknown>) => o.type === 'null' && Object.keys(o).length === 1;
  const nullAt = options.findIndex(isNull);
  if (nullAt < 0) return;
  const other = options[1 - nullAt] as Record<string, unknown>;
  if (typeof other.type !== 'string' || '$ref' in other || 'anyOf' in other || 'oneOf' in other) return;
  if (Object.keys(other).some((k) => k in schema && k !== 'anyOf')) return;
  delete schema.anyOf;
  Object.assign(schema, other, { type: [other.type, 'null'] });
}

/** docs/identity-and-keys.md, idempotency keys: the request header of every creating POST. */
const IDEMPOTENCY_KEY = {
  name: IDEMPOTENCY_HEADER,
  in: 'header',
  required: false,
  description:
    'Makes a retry safe (IETF draft-ietf-httpapi-idempotency-key-header): the first request with a key is processed and its answer kept 24 hours for the caller (its principal); a repeat of the same request answers it again with `Idempotent-Replayed: true` and changes nothing. The same key with another method, path or body is 422 `idempotency_key_reused`; a repeat while the first is processed is 409; a request that failed keeps nothing.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]{1,255}$' },
};

const REPLAYED = {
  description: '`true` when this is the kept answer of an earlier request with the same `Idempotency-Key`',
  schema: { type: 'string', enum: ['true'] },
};

/** Parameters of one location, from an object schema's properties. */
function parameters(set: SchemaSet, object: z.core.$ZodObject | undefined, where: 'path' | 'query' | 'header') {
  if (!object) return [];
  return Object.entries(object._zod.def.shape).map(([name, field]) => ({
    name,
    in: where,
    required: where === 'path' || (field as Schema)._zod.optin !== 'optional',
    schema: set.use(field as Schema),
  }));
}

function operation(set: SchemaSet, spec: EndpointSpec<RequestSpec, Access>): Json {
  const req = spec.request ?? {};
  const statuses = new Set<number>(spec.errors ?? []);
  if (spec.access !== 'public') [401, 503].forEach((s) => statuses.add(s));
  if (typeof spec.access === 'object') statuses.add(403);
  if (req.params || req.query || req.headers || req.body || spec.idempotent) statuses.add(422);
  // A repeat of an idempotency key while the first request is still processed.
  if (spec.idempotent) statuses.add(409);
  const responses: Record<string, Json> = {
    [spec.success.status]: {
      description: spec.success.description,
      ...(spec.idempotent ? { headers: { [REPLAYED_HEADER]: REPLAYED } } : {}),
      ...(spec.success.schema ? { content: { 'application/json': { schema: set.use(spec.success.schema) } } } : {}),
    },
  };
  for (const status of [...statuses].sort()) {
    responses[status] = {
      description: ERROR_DESCRIPTIONS[status] ?? 'Error',
      ...(status === 429 ? { headers: { 'Retry-After': RETRY_AFTER } } : {}),
      content: { 'application/json': { schema: set.use(status === 422 ? HTTPValidationError : ErrorResponse) } },
    };
  }
  const security =
    spec.access === 'public'
      ? []
      : typeof spec.access === 'object' && spec.access.session
        ? [{ [OAUTH2_SCHEME]: [] }]
        : [{ [OAUTH2_SCHEME]: [] }, { [PSK_SCHEME]: [] }];
  const params = [
    ...parameters(set, req.params, 'path'),
    ...parameters(set, req.query, 'query'),
    ...parameters(set, req.headers, 'header'),
    ...(spec.idempotent ? [IDEMPOTENCY_KEY] : []),
  ];
  return {
    operationId: operationId(spec.name, spec.path, spec.method),
    summary: spec.summary,
    tags: [...spec.tags],
    security,
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(req.body
      ? {
          requestBody: {
            required: Boolean(req.bodyRequired),
            content: { 'application/json': { schema: set.use(req.body) } },
          },
        }
      : {}),
    responses,
  };
}

/** A parameter's description is its schema's: OpenAPI viewers show the parameter's own. */
function describeParameters(op: Json): Json {
  const params = op.parameters as { schema: Json }[] | undefined;
  if (!params) return op;
  return {
    ...op,
    parameters: params.map((p) =>
      typeof p.schema.description === 'string' ? { ...p, description: p.schema.description } : p,
    ),
  };
}

export interface DocumentInfo {
  readonly title: string;
  readonly version: string;
  readonly description: string;
}

/** The one document of every group's endpoints, paths sorted, components by name. */
export function documentOf(info: DocumentInfo, apps: readonly ServiceApp[]) {
  const set = new SchemaSet();
  const paths = new Map<string, Map<string, Json>>();
  const add = (path: string, method: string, op: Json) => {
    if (!paths.has(path)) paths.set(path, new Map());
    paths.get(path)!.set(method, op);
  };
  for (const app of apps) {
    for (const spec of app.endpoints) add(spec.path, spec.method, operation(set, spec));
    for (const other of app.otherOperations) add(other.path, other.method, other.operation);
  }
  const { schemas, resolve } = set.generate();
  return {
    openapi: '3.1.0' as const,
    info,
    paths: Object.fromEntries(
      [...paths]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([path, ops]) => [
          path,
          Object.fromEntries([...ops].map(([m, op]) => [m, describeParameters(resolve(op))])),
        ]),
    ),
    components: { schemas, securitySchemes: SECURITY_SCHEMES },
  };
}
