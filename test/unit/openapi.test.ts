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
