import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type ClientRequest, request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { api, type ApiResponse, baseUrl, slug, token } from '../helpers.js';

/** The platform endpoints and the behaviour every response shares (the API conventions, docs/api.md). */

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

const E1_OPERATION_ID = 'approve_version_api_decisions__workspace___key__versions__version__approve_post';
const PLATFORM_PATHS = [
  '/openapi.json',
  '/asyncapi.json',
  '/docs',
  '/docs/{asset}',
  '/console',
  '/console/',
  '/console/{asset}',
];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const MIB = 1024 * 1024;

function expectErrorResponse(res: ApiResponse, status: number): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error: expect.any(String), code: status });
}

interface Operation {
  operationId?: string;
  responses?: Record<string, unknown>;
}

async function openApi() {
  const res = await api<{
    openapi: string;
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
  }>('/openapi.json');
  expect(res.status, res.text).toBe(200);
  return res.body;
}

function operations(doc: Awaited<ReturnType<typeof openApi>>) {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );
}

describe('GET /api/health/ping', () => {
  it('answers status, package version and build number without credentials', async () => {
    const res = await api('/api/health/ping');
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ status: 'ok', version: pkg.version, build_number: 'local' });
  });
});

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document, open to anyone', async () => {
    const doc = await openApi();
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(Object.keys(doc.paths).length).toBeGreaterThan(0);
  });

  it('has E1 with the exact FastAPI operationId and its error answers', async () => {
    const doc = await openApi();
    const approve = doc.paths['/api/decisions/{workspace}/{key}/versions/{version}/approve']?.post;
    expect(approve?.operationId).toBe(E1_OPERATION_ID);
    expect(Object.keys(approve?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '401', '403', '404', '409', '422']),
    );
  });

  it('gives every operation a unique operationId built the FastAPI way', async () => {
    const ops = operations(await openApi());
    expect(ops.length).toBeGreaterThan(5);
    const ids = ops.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, op } of ops) {
      expect(op.operationId, `${method} ${path}`).toMatch(/^\w+$/);
      expect(
        op.operationId!.endsWith(`${path.replaceAll(/\W/g, '_')}_${method}`),
        `${op.operationId} for ${method} ${path}`,
      ).toBe(true);
    }
  });

  it('lists only paths under /api and the platform paths', async () => {
    for (const path of Object.keys((await openApi()).paths)) {
      expect(path.startsWith('/api/') || PLATFORM_PATHS.includes(path), path).toBe(true);
    }
  });

  it('has the ErrorResponse and HTTPValidationError components', async () => {
    const { components } = await openApi();
    expect(components.schemas.ErrorResponse?.properties).toEqual(
      expect.objectContaining({ error: expect.anything(), code: expect.anything() }),
    );
    expect(components.schemas.HTTPValidationError?.properties).toEqual(
      expect.objectContaining({ detail: expect.anything() }),
    );
  });
});

describe('GET /docs', () => {
  it('is an HTML page rendered from /openapi.json, open to anyone', async () => {
    const res = await api('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toMatch(/<html/i);
    expect(res.text).toContain('/openapi.json');
  });

  it('serves its Swagger UI files itself (no CDN), the same bytes as swagger-ui-dist; other names are 404', async () => {
    const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    for (const [file, type] of [
      ['swagger-ui-bundle.js', 'application/javascript'],
      ['swagger-ui.css', 'text/css'],
      ['oauth2-redirect.html', 'text/html'],
      ['oauth2-redirect.js', 'application/javascript'],
      ['favicon-32x32.png', 'image/png'],
    ] as const) {
      const res = await fetch(`${baseUrl()}/docs/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get('content-type'), file).toMatch(new RegExp(`^${type}`));
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(dist, file))), file).toBe(true);
    }
    const page = (await api('/docs')).text;
    expect(page).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost)/);
    expect(page).toContain('/docs/swagger-ui-bundle.js');
    expect(page).toContain('"clientId":"dpm-docs"');
    for (const name of ['index.html', 'package.json', '..%2Fpackage.json', 'swagger-ui.js.map', 'constructor']) {
      expectErrorResponse(await api(`/docs/${name}`), 404);
    }
  });
});

describe('unknown routes and wrong methods', () => {
  it.each([
    ['an unknown /api path', () => `/api/${slug('nothing')}`],
    ['an unknown path outside /api', () => `/${slug('nothing')}`],
    ['an unknown path inside a group', () => `/api/decisions/${slug('ws')}/${slug('k')}/${slug('nothing')}`],
    ['an unknown path below the health group', () => `/api/health/${slug('nothing')}`],
  ])('%s answers 404 ErrorResponse', async (_what, path) => {
    expectErrorResponse(await api(path()), 404);
    expectErrorResponse(await api(path(), { method: 'POST', body: {} }), 404);
  });

  it('an unknown route answers 404 also to an authenticated caller', async () => {
    expectErrorResponse(
      await api(`/api/decisions/${slug('ws')}/${slug('nothing')}`, { token: await token(slug('u')) }),
      404,
    );
  });

  it('DELETE /api/health/ping answers 405 with Allow: GET', async () => {
    const res = await api('/api/health/ping', { method: 'DELETE' });
    expectErrorResponse(res, 405);
    expect(res.headers.get('allow')?.split(/,\s*/)).toContain('GET');
    expect(res.headers.get('allow')).not.toMatch(/DELETE/);
  });

  it('GET on the approve action answers 405 with Allow: POST', async () => {
    const res = await api(`/api/decisions/${slug('ws')}/${slug('k')}/versions/1/approve`);
    expectErrorResponse(res, 405);
    expect(res.headers.get('allow')?.split(/,\s*/)).toEqual(['POST']);
  });

  it('a wrong method on the versions collection names both methods it has', async () => {
    const res = await api(`/api/decisions/${slug('ws')}/${slug('k')}/versions`, { method: 'PUT', body: {} });
    expectErrorResponse(res, 405);
    expect(res.headers.get('allow')?.split(/,\s*/).sort()).toEqual(['GET', 'POST']);
  });

  it.each([
    ['GET', '/api/health/ping/'],
    ['DELETE', '/api/health/ping/'],
    ['GET', '/api/mcps/'],
    ['GET', '/api/crew-templates/'],
    ['GET', '/api/migration/connections/'],
    ['POST', '/api/decisions/ws/k/versions/'],
    ['GET', '/api/decisions/ws/k/versions/1/'],
    ['GET', '/openapi.json/'],
  ])('%s %s (a trailing slash) answers 404 ErrorResponse, not 405', async (method, path) => {
    const res = await api(path, { method, token: await token(slug('u')), ...(method === 'POST' ? { body: {} } : {}) });
    expectErrorResponse(res, 404);
    expect(res.headers.get('allow')).toBeNull();
  });

  it('POST /openapi.json answers 405', async () => {
    const res = await api('/openapi.json', { method: 'POST', body: {} });
    expectErrorResponse(res, 405);
    expect(res.headers.get('allow')).toMatch(/GET/);
  });
});

describe('X-Request-Id', () => {
  it('is on every response: success, 401, 404, 405, 422', async () => {
    const t = await token(slug('u'));
    const responses = await Promise.all([
      api('/api/health/ping'),
      api('/openapi.json'),
      api('/docs'),
      api(`/api/decisions/${slug('ws')}/${slug('k')}/versions`),
      api(`/api/${slug('nothing')}`),
      api('/api/health/ping', { method: 'DELETE' }),
      api('/api/decisions/BAD/k/versions', { token: t }),
      api(`/api/decisions/${slug('ws')}/${slug('k')}/versions`, { token: t }),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 401, 404, 405, 422, 404]);
    for (const res of responses) expect(res.headers.get('x-request-id'), `status ${res.status}`).toMatch(/^\S{1,128}$/);
  });

  it('differs between requests that sent none', async () => {
    const [a, b] = await Promise.all([api('/api/health/ping'), api('/api/health/ping')]);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });

  it('echoes a sane incoming id', async () => {
    for (const id of [slug('req'), 'Trace.ID_01:ab-cd', 'a'.repeat(128)]) {
      const res = await api('/api/health/ping', { headers: { 'x-request-id': id } });
      expect(res.headers.get('x-request-id')).toBe(id);
    }
  });

  it('echoes the incoming id on an error answer too', async () => {
    const id = slug('req');
    const res = await api(`/api/decisions/${slug('ws')}/${slug('k')}/versions`, { headers: { 'x-request-id': id } });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBe(id);
  });

  it.each([
    ['300 characters', 'r'.repeat(300)],
    ['spaces', 'has spaces inside'],
    ['a quote and angle brackets', '"><script>'],
  ])('replaces a malformed incoming id (%s)', async (_what, id) => {
    const res = await api('/api/health/ping', { headers: { 'x-request-id': id } });
    expect(res.status).toBe(200);
    const answered = res.headers.get('x-request-id');
    expect(answered).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    expect(answered).not.toBe(id);
  });
});

/**
 * POSTs a large body over a connection of its own (node:http, no keep-alive pool): the
 * server answers 413 before reading the body and then drops the connection, which would
 * break the next request that reused a pooled connection. `write` gets a function that
 * tells whether the answer has arrived, so a streaming writer can stop early.
 */
function postOwnConnection(
  path: string,
  headers: Record<string, string>,
  write: (req: ClientRequest, answered: () => boolean) => void,
): Promise<{ status: number; body: string; requestId: string | undefined }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      new URL(`${baseUrl()}${path}`),
      { method: 'POST', agent: false, headers: { connection: 'close', ...headers } },
      (res) => {
        answered = true;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, requestId: res.headers['x-request-id'] as string | undefined }),
        );
      },
    );
    // writing may fail once the server has answered and closed: only an error before the answer counts
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    write(req, () => answered);
  });
}

describe('request body size', () => {
  it('a body over 1 MiB answers 413 ErrorResponse and stores nothing', async () => {
    const t = await token(slug('big'));
    const path = `/api/decisions/${slug('ws')}/${slug('k')}/versions`;
    const body = JSON.stringify({ content: 'x'.repeat(MIB) });
    expect(Buffer.byteLength(body)).toBeGreaterThan(MIB);
    const answer = await postOwnConnection(
      path,
      {
        authorization: `Bearer ${t}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
      (req) => req.end(body),
    );
    expect(answer.status, answer.body).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({ error: expect.any(String), code: 413 });
    expect(answer.requestId).toMatch(/^\S{1,128}$/);
    expect((await api(path, { token: t })).status).toBe(404);
  });

  it('a body over 1 MiB sent without Content-Length (chunked) answers 413', async () => {
    const t = await token(slug('big'));
    const path = `/api/decisions/${slug('ws')}/${slug('k')}/versions`;
    const chunk = 'x'.repeat(64 * 1024);
    const answer = await postOwnConnection(
      path,
      { authorization: `Bearer ${t}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      (req, answered) => {
        req.write('{"content":"');
        let sent = 0;
        const next = () => {
          if (answered() || sent > MIB + chunk.length) {
            req.end('"}');
            return;
          }
          sent += chunk.length;
          req.write(chunk, () => setImmediate(next));
        };
        next();
      },
    );
    expect(answer.status, answer.body).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({ error: expect.any(String), code: 413 });
    expect((await api(path, { token: t })).status).toBe(404);
  });

  it('a body under 1 MiB is not refused for its size', async () => {
    const t = await token(slug('small'));
    const res = await api(`/api/decisions/${slug('ws')}/${slug('k')}/versions`, {
      method: 'POST',
      token: t,
      body: { content: 'x'.repeat(100 * 1024) },
    });
    expect(res.status, res.text).toBe(201);
  });
});
