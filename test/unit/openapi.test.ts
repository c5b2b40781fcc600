import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

vi.hoisted(() => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
});

import { generatedDocument, OPENAPI_FILE } from '../../functions/platform/generate-openapi.js';
import type { ServiceApp } from '../../shared/http/service-app.js';
import { WWW_AUTHENTICATE } from '../support/tokens.js';

/**
 * What /openapi.json must say (the API reference), checked against what the served routes do
 * rather than against the generator: the routes are read from the apps' routers and
 * probed with requests; the expectations (FastAPI's operationId rule, the open endpoints,
 * who gets 401 and 403, which body fields are required or refused) come from the API reference.
 */

const STALE =
  'functions/platform/openapi.json is out of date with the code: run `npm run openapi` and commit the result';

type Json = Record<string, any>;
const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as {
  openapi: string;
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json>; securitySchemes: Record<string, Json> };
};
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => HTTP_METHODS.includes(method))
    .map(([method, op]) => ({ method, path, op, key: `${method} ${path}` })),
);
const deref = (schema: Json): Json =>
  schema?.$ref ? doc.components.schemas[String(schema.$ref).replace('#/components/schemas/', '')]! : schema;

/** The API conventions: the only endpoints open to anyone (with /docs' own static assets), and /console (docs/reviewing.md). */
const OPEN = new Set([
  'get /api/health/ping',
  'get /openapi.json',
  'get /asyncapi.json',
  'get /docs',
  'get /docs/{asset}',
  // The review console's page and files (docs/reviewing.md): the page signs in by itself
  'get /console',
  'get /console/',
  'get /console/{asset}',
]);
const E1 = 'post /api/decisions/{workspace}/{key}/versions/{version}/approve';

/** FastAPI's generate_unique_id: `re.sub(r"\W", "_", name + path) + "_" + method`. */
const fastApiSuffix = (method: string, path: string) => `${path.replace(/\W/g, '_')}_${method}`;

describe('the committed OpenAPI document', () => {
  it('is the document `npm run openapi` writes from the code', () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8'), STALE).toBe(`${JSON.stringify(generatedDocument(), null, 2)}\n`);
  });

  it('is OpenAPI 3.1 with every operationId built the FastAPI way, E1’s exactly, none twice', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/api/decisions/{workspace}/{key}/versions/{version}/approve']?.post?.operationId).toBe(
      'approve_version_api_decisions__workspace___key__versions__version__approve_post',
    );
    const wrong = operations.filter(({ method, path, op }) => {
      const id = String(op.operationId ?? '');
      const suffix = fastApiSuffix(method, path);
      const fn = id.endsWith(suffix) ? id.slice(0, -suffix.length) : '';
      // A Python function name: snake case, not ending in `_` (the path adds its own).
      return !/^[a-z][a-z0-9_]*[a-z0-9]$/.test(fn);
    });
    expect(wrong.map((o) => `${o.key}: ${o.op.operationId}`)).toEqual([]);
    const ids = operations.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('declares the two security schemes: oauth2 authorization code and the PSK header', () => {
    const schemes = Object.values(doc.components.securitySchemes);
    expect(schemes).toHaveLength(2);
    const oauth2 = schemes.find((s) => s.type === 'oauth2');
    expect(Object.keys(oauth2?.flows ?? {})).toEqual(['authorizationCode']);
    expect(oauth2!.flows.authorizationCode).toMatchObject({
      authorizationUrl: expect.any(String),
      tokenUrl: expect.any(String),
      scopes: {},
    });
    expect(schemes.find((s) => s.type === 'apiKey')).toMatchObject({ in: 'header', name: 'Authorization-PSK' });
  });

  it('every operation but the open ones requires a scheme that exists, and documents 401 and 503', () => {
    const names = Object.keys(doc.components.securitySchemes);
    for (const { key, op } of operations) {
      const security = (op.security ?? []) as Record<string, unknown>[];
      if (OPEN.has(key)) {
        expect(
          security.flatMap((s) => Object.keys(s)),
          key,
        ).toEqual([]);
        continue;
      }
      expect(security.length, key).toBeGreaterThan(0);
      for (const requirement of security)
        for (const name of Object.keys(requirement)) expect(names, key).toContain(name);
      expect(Object.keys(op.responses), key).toEqual(expect.arrayContaining(['401', '503']));
    }
  });

  it('documents 422 exactly where a request has something to validate, and every error’s body', () => {
    for (const { key, op } of operations) {
      // The open /docs assets answer 404 for an unknown file: static files, nothing validated.
      const validates = !OPEN.has(key) && (Boolean(op.requestBody) || (op.parameters ?? []).length > 0);
      expect('422' in op.responses, key).toBe(validates);
      for (const [code, response] of Object.entries(op.responses as Record<string, Json>)) {
        const status = Number(code);
        if (status < 400) continue;
        const schema = response.content?.['application/json']?.schema?.$ref;
        expect(schema, `${key} ${code}`).toBe(
          status === 422 ? '#/components/schemas/HTTPValidationError' : '#/components/schemas/ErrorResponse',
        );
      }
    }
  });

  it('every request body is an object that refuses unknown fields', () => {
    for (const { key, op } of operations.filter((o) => o.op.requestBody)) {
      const schema = deref(op.requestBody.content['application/json'].schema);
      // An object; E1's family also takes null (docs/reviewing.md: "LifecycleActionRequest or null or none").
      expect([schema.type].flat(), key).toContain('object');
      expect(
        [schema.type].flat().filter((t) => t !== 'object' && t !== 'null'),
        key,
      ).toEqual([]);
      expect(schema.additionalProperties, key).toBe(false);
    }
  });
});

describe('the routes the apps serve', () => {
  type Probe = 'none' | 'user' | 'all' | 'psk';
  /** Who each probe is: no credentials (the real authenticator answers), a plain user, every role by session or by key. */
  const callers = {
    user: { principal: 'probe-user', name: 'probe-user', roles: new Set<string>(), via: 'bearer' },
    all: { principal: 'probe-all', name: 'probe-all', roles: new Set(['admin', 'approver']), via: 'bearer' },
    psk: { principal: 'probe-psk', name: 'probe-psk', roles: new Set(['admin', 'approver']), via: 'psk' },
  } as const;
  const routeOf = new Map<string, ServiceApp>();

  beforeAll(async () => {
    const { serviceApps } = await import('../../functions/apps.js');
    const { loadConfig } = await import('../../shared/config.js');
    const { createRuntime } = await import('../../functions/composition.js');
    // No database: a probe that got past validation fails at once instead of reaching out.
    const noDb = {
      send: async () => {
        throw new Error('no database in this test');
      },
    } as unknown as DynamoDBDocumentClient;
    const runtime = createRuntime(loadConfig({}), noDb);
    const authenticator = {
      authenticate: async (headers: { authorization?: string; psk?: string }) => {
        if (headers.psk === 'probe') return callers.psk;
        if (headers.authorization === 'Bearer probe-user') return callers.user;
        if (headers.authorization === 'Bearer probe-all') return callers.all;
        return runtime.authenticator.authenticate(headers);
      },
    };
    for (const app of Object.values(serviceApps({ ...runtime, authenticator } as typeof runtime))) {
      for (const route of app.routes) {
        // Middleware (`use`) registers ALL routes; an endpoint is one method on one path.
        if (route.method === 'ALL') continue;
        routeOf.set(`${route.method.toLowerCase()} ${route.path.replaceAll(/:(\w+)/g, '{$1}')}`, app);
      }
    }
  });

  const probe = async (key: string, who: Probe, body?: string) => {
    const [method, path] = key.split(' ') as [string, string];
    const url = path.replaceAll(/\{(\w+)\}/g, (_, name: string) =>
      name === 'version' ? '1' : name.endsWith('_id') ? randomUUID() : 'probe',
    );
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (who === 'user' || who === 'all') headers.authorization = `Bearer probe-${who}`;
    if (who === 'psk') headers['authorization-psk'] = 'probe';
    const res = await routeOf.get(key)!.request(url, { method: method.toUpperCase(), headers, body });
    return { status: res.status, headers: res.headers, body: (await res.text()) || 'null' };
  };

  it('are exactly the operations of the OpenAPI document', () => {
    expect(routeOf.size).toBeGreaterThan(30);
    const documented = new Set(operations.map((o) => o.key));
    expect(
      [...routeOf.keys()].filter((r) => !documented.has(r)),
      'served but not in /openapi.json',
    ).toEqual([]);
    expect(
      [...documented].filter((r) => !routeOf.has(r)),
      'in /openapi.json but not served',
    ).toEqual([]);
  });

  it('answer a request without credentials 401 with WWW-Authenticate, except the open ones', async () => {
    for (const { key } of operations) {
      const res = await probe(key, 'none');
      if (OPEN.has(key)) expect(res.status, key).not.toBe(401);
      else {
        expect(res.status, key).toBe(401);
        expect(res.headers.get('www-authenticate'), key).toBe(WWW_AUTHENTICATE);
      }
    }
  });

  it('answer 403 only where the document says so: a plain user, and a key where a session is needed', async () => {
    const answered403 = { user: [] as string[], psk: [] as string[] };
    const sessionOnly: string[] = [];
    for (const { key, op } of operations.filter((o) => !OPEN.has(o.key))) {
      // A malformed body fails validation after the role checks, before any handler runs.
      const body = op.requestBody ? '{' : undefined;
      if ((await probe(key, 'user', body)).status === 403) answered403.user.push(key);
      if (!op.requestBody) continue;
      if ((await probe(key, 'psk', body)).status === 403) answered403.psk.push(key);
      const schemes = (op.security as Record<string, unknown>[]).flatMap((s) => Object.keys(s));
      if (!schemes.some((name) => doc.components.securitySchemes[name]!.type === 'apiKey')) sessionOnly.push(key);
    }
    const documents403 = (key: string) => '403' in doc.paths[key.split(' ')[1]!]![key.split(' ')[0]!]!.responses;
    expect(
      answered403.user.filter((key) => !documents403(key)),
      'answers 403 undocumented',
    ).toEqual([]);
    expect(answered403.user.length).toBeGreaterThan(5);
    // E1 (and reject) need a session: a key is refused, and the document lists no key for them.
    expect(answered403.psk.sort()).toEqual(sessionOnly.sort());
    expect(sessionOnly).toContain(E1);
  });

  it('validate bodies with the documented schemas: required fields missing and unknown fields refused', async () => {
    for (const { key, op } of operations.filter((o) => o.op.requestBody)) {
      const schema = deref(op.requestBody.content['application/json'].schema);
      const res = await probe(key, 'all', JSON.stringify({ __unknown__: 1 }));
      expect(res.status, `${key}: ${res.body}`).toBe(422);
      const issues = (JSON.parse(res.body) as { detail: { type: string; loc: (string | number)[] }[] }).detail.filter(
        (d) => d.loc[0] === 'body',
      );
      expect(
        issues
          .filter((d) => d.type === 'missing')
          .map((d) => d.loc.slice(1).join('.'))
          .sort(),
        key,
      ).toEqual([...((schema.required as string[] | undefined) ?? [])].sort());
      expect(
        issues.filter((d) => d.type === 'extra_forbidden').map((d) => d.loc.slice(1)),
        key,
      ).toEqual([['__unknown__']]);
    }
  });
});
