import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
});

import { EXAMPLE_TEMPLATE, TemplateRequest } from '../../functions/crews/templates/template-schemas.js';
import { declarationIssues, resolveValues } from '../../functions/crews/templates/declaration.js';
import { references, render } from '../../functions/crews/templates/templating.js';
import { generatedDocument } from '../../functions/platform/generate-openapi.js';
import { validateSource } from '../../shared/pydantic/validate.js';

interface Schema {
  $ref?: string;
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema | boolean;
  additionalProperties?: Schema | boolean;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  example?: unknown;
}

interface Parameter {
  name: string;
  in: string;
  description?: string;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; parameters?: Record<string, Parameter> };
}

const doc = JSON.parse(JSON.stringify(generatedDocument())) as Document;

/**
 * Fields defined outside the schema files (functions/platform/app.ts) that have no
 * description yet. Remove an entry once its field is described (a test below insists).
 */

const target = (ref: string): Schema | undefined =>
  ref.startsWith('#/components/schemas/')
    ? doc.components.schemas[ref.slice('#/components/schemas/'.length)]
    : undefined;

/**
 * Whether a property's schema says what it is: its own description, the description of
 * the component it refers to, or one in the `allOf`/`anyOf`/`oneOf` wrapper the generator
 * makes of a nullable or described reference.
 */
function described(schema: Schema): boolean {
  if (schema.description) return true;
  if (schema.$ref && target(schema.$ref)?.description) return true;
  return [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].some(described);
}

/** The dotted paths of every property, at any depth, that has no description. */
function undescribed(schema: Schema, path: string): string[] {
  const found: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (!described(property)) found.push(`${path}.${name}`);
    found.push(...undescribed(property, `${path}.${name}`));
  }
  for (const key of ['items', 'additionalProperties'] as const) {
    const nested = schema[key];
    if (nested && typeof nested === 'object') found.push(...undescribed(nested, `${path}[${key}]`));
  }
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const)
    (schema[key] ?? []).forEach((member, i) => found.push(...undescribed(member, `${path}/${key}[${i}]`)));
  return found;
}

function allUndescribed(): string[] {
  const found: string[] = [];
  for (const [name, schema] of Object.entries(doc.components.schemas)) found.push(...undescribed(schema, name));
  for (const [name, parameter] of Object.entries(doc.components.parameters ?? {}))
    if (!parameter.description) found.push(`parameter ${name}`);
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const p of op.parameters ?? []) if (!p.description) found.push(`${where} ${p.in} parameter ${p.name}`);
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {}))
        if (media.schema) found.push(...undescribed(media.schema, `${where} request ${type}`));
      for (const [status, response] of Object.entries(op.responses ?? {}))
        for (const [type, media] of Object.entries(response.content ?? {}))
          if (media.schema) found.push(...undescribed(media.schema, `${where} ${status} ${type}`));
    }
  }
  return found;
}

describe('the OpenAPI document', () => {
  it('describes every property of every schema and every parameter', () => {
    const missing = allUndescribed();
    expect(
      missing,
      'give these fields a description: `.openapi({ description })` in the schema, then `npm run openapi`',
    ).toEqual([]);
  });

  it('finds an undescribed property, in a nested object and behind a nullable reference', () => {
    const schema: Schema = {
      properties: {
        a: { description: 'ok' },
        b: { properties: { c: {} } },
        d: { allOf: [{ $ref: '#/components/schemas/NoSuchSchema' }, { type: 'null' } as Schema] },
      },
    };
    expect(undescribed(schema, 'X')).toEqual(['X.b', 'X.b.c', 'X.d']);
  });

  it('documents the crew template syntax on the template request and the steps', () => {
    const request = doc.components.schemas.CrewTemplateRequest!;
    for (const text of ['{{name}}', '{{steps.<id>.output}}', '__proto__', 'JSON text', '16 KiB'])
      expect(request.description).toContain(text);
    const step = doc.components.schemas.CrewStep!;
    for (const kind of ['`render`', '`http`', '`llm`', '`wait`']) expect(step.description).toContain(kind);
    expect(step.description).toContain('CREW_HTTP_ALLOWED_HOSTS');
    // every kind the schema accepts is documented
    const kinds = (step.oneOf ?? []).map((variant) => variant.properties?.kind as { enum?: string[] });
    expect(kinds.length).toBeGreaterThan(0);
    for (const kind of kinds) expect(step.description).toContain(`\`${kind.enum?.[0]}\``);
  });
});

describe('the example crew template', () => {
  const parsed = () => {
    const result = validateSource(TemplateRequest, structuredClone(EXAMPLE_TEMPLATE), 'body');
    if (!result.success) throw new Error(`the example is refused: ${JSON.stringify(result.issues)}`);
    return TemplateRequest.parse(result.data);
  };

  it('is the example of the template request in the OpenAPI document', () => {
    expect(doc.components.schemas.CrewTemplateRequest!.example).toEqual(EXAMPLE_TEMPLATE);
  });

  it('passes the request schema and the declaration rules', () => {
    expect(declarationIssues(parsed())).toEqual([]);
  });

  it('is render → http → llm and uses both kinds of placeholder', () => {
    const template = parsed();
    expect(template.steps.map((s) => s.kind)).toEqual(['render', 'http', 'llm']);
    const refs = references(JSON.stringify(template.steps));
    expect(refs.some((r) => r.kind === 'variable')).toBe(true);
    expect(refs.some((r) => r.kind === 'step')).toBe(true);
  });

  it('runs with the values docs/crews.md shows, every placeholder resolved', () => {
    const template = parsed();
    const values = resolveValues(template.variables, { order_id: 1042, customer: 'Ana' });
    expect(values).toEqual({ order_id: 1042, customer: 'Ana', tone: 'friendly' });
    const outputs: Record<string, unknown> = {
      brief: 'brief text',
      order: { status: 200, body: { id: 1042, state: 'shipped' } },
    };
    for (const step of template.steps) {
      const rendered = render(JSON.stringify(step), { values, outputs });
      expect(rendered, `step ${step.id}`).not.toMatch(/\{\{/);
    }
  });

  it("is the JSON of docs/crews.md's crew templates section", () => {
    const guide = readFileSync(new URL('../../docs/crews.md', import.meta.url), 'utf8');
    const start = guide.indexOf('\n### Crew templates\n');
    expect(start, 'docs/crews.md has a "### Crew templates" section').toBeGreaterThan(-1);
    const rest = guide.slice(start + 1);
    const end = rest.search(/\n##+ /);
    const section = end === -1 ? rest : rest.slice(0, end);
    const block = /```json\n([\s\S]*?)\n```/.exec(section);
    expect(block, 'the section shows the example as a ```json block').not.toBeNull();
    expect(JSON.parse(block![1]!)).toEqual(EXAMPLE_TEMPLATE);
    expect(section).toContain('/api/crew-templates');
    expect(section).toMatch(/\/api\/crew-templates\/\$TEMPLATE\/run/);
    expect(section).toMatch(/\/api\/events\/\$CORRELATION_ID\?start=0/);
  });
});
