import { z } from '@hono/zod-openapi';
import { swaggerUI } from '@hono/swagger-ui';
import { createServiceApp, type ServiceApp } from '../../shared/http/app.js';

export const HealthResponse = z
  .object({ status: z.literal('ok'), version: z.string(), build_number: z.string() })
  .openapi('HealthResponse');

/**
 * The Swagger UI the /docs page loads from the CDN, pinned (an unpinned URL would follow
 * every new major). Kept equal to the `swagger-ui-dist` devDependency the docs test serves.
 */
export const SWAGGER_UI_VERSION = '5.35.0';

export interface PlatformDeps {
  readonly version: string;
  readonly buildNumber: string;
  /** The OpenAPI document of every group (built live locally, generated for Lambda). */
  readonly document: () => unknown;
}

/** Health, the OpenAPI document and the HTML reference: the only open endpoints. */
export function createPlatformApp({ version, buildNumber, document }: PlatformDeps): ServiceApp {
  const app = createServiceApp(undefined)
    .endpoint(
      {
        name: 'ping',
        method: 'get',
        path: '/api/health/ping',
        summary: 'Liveness and version',
        tags: ['platform'],
        access: 'public',
        success: { status: 200, description: 'The service is up', schema: HealthResponse },
      },
      (c) => c.json({ status: 'ok' as const, version, build_number: buildNumber }, 200),
    )
    .endpoint(
      {
        name: 'openapi',
        method: 'get',
        path: '/openapi.json',
        summary: 'OpenAPI 3.1 document of every endpoint',
        tags: ['platform'],
        access: 'public',
        success: { status: 200, description: 'The OpenAPI document' },
      },
      (c) => c.json(document() as object, 200),
    );
  app.openAPIRegistry.registerPath({
    method: 'get',
    path: '/docs',
    operationId: 'docs_docs_get',
    summary: 'HTML API reference (Swagger UI) rendered from /openapi.json',
    tags: ['platform'],
    responses: { 200: { description: 'HTML page', content: { 'text/html': { schema: z.string() } } } },
  });
  app.get(
    '/docs',
    swaggerUI({ url: '/openapi.json', title: 'Data Platform Management Service', version: SWAGGER_UI_VERSION }),
  );
  return app;
}
