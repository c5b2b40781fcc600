import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
});

import {
  type AccessMap,
  API_REFERENCE_FILE,
  apiReference,
  committedDocument,
  declaredAccess,
} from '../../infra/docs-api.js';

/**
 * docs/api.md is what `npm run openapi` writes (infra/docs-api.ts) from the committed OpenAPI
 * document and the endpoints' declared access: a route added, changed or removed without
 * regenerating it fails here (and the document itself is held to the code by openapi.test.ts).
 */

const STALE = 'docs/api.md is out of date: run `npm run openapi` and commit the result';
const HTTP_METHODS = ['get', 'put', 'post', 'patch', 'delete'];

let access: AccessMap;
beforeAll(async () => {
  access = await declaredAccess();
});

describe('docs/api.md', () => {
  it('is exactly what the generator writes from the current OpenAPI document', () => {
    expect(readFileSync(API_REFERENCE_FILE, 'utf8'), STALE).toBe(apiReference(committedDocument(), access));
  });

  it('has a section for every operation of the document, with who may call it and its answers', () => {
    const page = readFileSync(API_REFERENCE_FILE, 'utf8');
    const document = committedDocument() as { paths: Record<string, Record<string, { responses: object }>> };
    const missing: string[] = [];
    for (const [path, item] of Object.entries(document.paths))
      for (const method of Object.keys(item).filter((m) => HTTP_METHODS.includes(m))) {
        const heading = `### \`${method.toUpperCase()} ${path}\``;
        const at = page.indexOf(`${heading}\n`);
        if (at < 0) {
          missing.push(heading);
          continue;
        }
        const section = page.slice(at, page.indexOf('\n### ', at + 1));
        expect(section, heading).toContain('**Who may call:**');
        for (const status of Object.keys(item[method]!.responses)) expect(section, heading).toContain(`| ${status} |`);
      }
    expect(missing, STALE).toEqual([]);
    // Every endpoint the apps serve, even before the document is regenerated.
    const served = [...access.keys()].map((key) => {
      const [method, path] = key.split(' ') as [string, string];
      return `### \`${method.toUpperCase()} ${path}\``;
    });
    expect(served.length).toBeGreaterThan(30);
    expect(
      served.filter((heading) => !page.includes(`${heading}\n`)),
      STALE,
    ).toEqual([]);
  });

  it('fails the generator on an operation whose security contradicts its declared access', () => {
    const document = committedDocument();
    const approve = '/api/decisions/{workspace}/{key}/versions/{version}/approve';
    const changed = structuredClone(document);
    // E1 needs a session: a document that also accepts a key for it is refused.
    changed.paths[approve].post.security = [{ OAuth2AuthorizationCodeBearer: [] }, { APIKeyHeader: [] }];
    expect(() => apiReference(changed, access)).toThrow(/approve/);
  });
});
