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

/** `schema` with a description (and examples...) in the OpenAPI document: a copy, the original unchanged. */
export const doc = <T extends z.ZodMiniType>(schema: T, description: string, more: SchemaDoc = {}): T =>
  schema.check(z.meta({ description, ...more })) as T;

/** The named schemas of the OpenAPI document (`#/components/schemas/<id>`). */
export const components = z.registry<{ id: string }>();

/** Names `schema` as a component of the OpenAPI document: answers and bodies refer to it by `$ref`. */
export function component<T extends z.core.$ZodType>(id: string, schema: T): T {
  components.add(schema, { id });
  return schema;
}
