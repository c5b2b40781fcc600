import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
});

import { generatedDocument, OPENAPI_FILE } from '../../functions/platform/generate-openapi.js';

const STALE =
  'functions/platform/openapi.json is out of date with the code: run `npm run openapi` and commit the result';

describe('the committed OpenAPI document', () => {
  const committedText = readFileSync(OPENAPI_FILE, 'utf8');

  it('equals the document generated from the code', () => {
    const committed = JSON.parse(committedText) as unknown;
    // compared as JSON values: what the document says, not how it is encoded
    const fresh = JSON.parse(JSON.stringify(generatedDocument())) as unknown;
    expect(committed, STALE).toEqual(fresh);
  });

  it('is written exactly as `npm run openapi` writes it', () => {
    expect(committedText, STALE).toBe(`${JSON.stringify(generatedDocument(), null, 2)}\n`);
  });

  it("is an OpenAPI 3.1 document that contains E1's operation", () => {
    const doc = JSON.parse(committedText) as {
      openapi: string;
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/api/decisions/{workspace}/{key}/versions/{version}/approve']?.post?.operationId).toBe(
      'approve_version_api_decisions__workspace___key__versions__version__approve_post',
    );
  });
});

describe('the routes the apps serve', () => {
  it('are exactly the operations of the OpenAPI document', async () => {
    const { serviceApps } = await import('../../functions/apps.js');
    const { loadConfig } = await import('../../shared/config.js');
    const { createRuntime } = await import('../../shared/runtime.js');
    const served = new Set<string>();
    for (const app of Object.values(serviceApps(createRuntime(loadConfig({}))))) {
      for (const route of app.routes) {
        // Middleware (`use`) registers ALL routes; an endpoint is one method on one path.
        if (route.method === 'ALL') continue;
        served.add(`${route.method.toLowerCase()} ${route.path.replaceAll(/:(\w+)/g, '{$1}')}`);
      }
    }
    const doc = generatedDocument() as { paths: Record<string, Record<string, unknown>> };
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((m) => ['get', 'put', 'post', 'delete', 'patch'].includes(m))
          .map((m) => `${m} ${path}`),
      ),
    );
    expect(served.size).toBeGreaterThan(30);
    expect(
      [...served].filter((r) => !documented.has(r)),
      'served but not in /openapi.json',
    ).toEqual([]);
    expect(
      [...documented].filter((r) => !served.has(r)),
      'in /openapi.json but not served',
    ).toEqual([]);
  });
});
