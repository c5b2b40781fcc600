import * as z from 'zod/mini';

/**
 * How schemas carry their documentation. Every schema is written with zod's tree-shakable
 * form (`zod/mini`): a Lambda bundles only the validators it uses and no OpenAPI
 * generator. The documentation is metadata on the schemas (zod's registries); the OpenAPI
 * document is made from it with zod's own JSON Schema output (shared/http/openapi.ts),
 * by `npm run openapi`, the local platform and the tests, never at a Lambda's cold start.
 */

/** What a schema's documentation may say besides its description (JSON Schema keywords). */
export interface SchemaDoc {
  readonly example?: unknown;
  readonly default?: unknown;
  /** Overrides of the generated JSON Schema, for values read from strings (parameters). */
  readonly type?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly format?: string;
}

/**
 * Defined `true` in Lambda bundles only (esbuild `define`: LAMBDA_DEFINE,
 * infra/aws/service-function.ts), a constant of the build, not configuration; undeclared
 * everywhere else (`npm run openapi`, the local platform, the tests).
 */
declare const DPM_LAMBDA_BUNDLE: boolean | undefined;

/**
 * Whether schemas carry their documentation. A Lambda never makes a document: its schemas are
 * the same validators without the copies and registrations the documentation costs at module
 * init (~13 ms of a group's cold start in the bench).
 */
const SCHEMA_DOCS = typeof DPM_LAMBDA_BUNDLE === 'undefined' || !DPM_LAMBDA_BUNDLE;

/** `schema` with a description (and examples...) in the OpenAPI document: a copy, the original unchanged. */
export const doc = <T extends z.ZodMiniType>(schema: T, description: string, more: SchemaDoc = {}): T =>
  SCHEMA_DOCS ? (schema.check(z.meta({ description, ...more })) as T) : schema;

/** The named schemas of the OpenAPI document (`#/components/schemas/<id>`). */
export const components = z.registry<{ id: string }>();

/** Names `schema` as a component of the OpenAPI document: answers and bodies refer to it by `$ref`. */
export function component<T extends z.core.$ZodType>(id: string, schema: T): T {
  if (SCHEMA_DOCS) components.add(schema, { id });
  return schema;
}
