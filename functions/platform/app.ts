import * as z from 'zod/mini';
import type { OAuthEndpoints } from '../../shared/auth/discovery.js';
import { NotFound } from '../../shared/errors.js';
import { createServiceApp, type ServiceApp } from '../../shared/http/service-app.js';
import { OAUTH2_SCHEME } from '../../shared/http/security-schemes.js';
import { component, doc } from '../../shared/schema.js';
import { CONSOLE_ASSETS, type ConsoleAssets, consoleCsp, consolePage } from './console.js';
import { docsPage, SWAGGER_UI_ASSETS, swaggerUiAsset } from './docs.js';

export const HealthResponse = component(
  'HealthResponse',
  z.object({
    status: doc(z.literal('ok'), 'always `ok` while the service answers'),
    version: doc(z.string(), "the service's package version"),
    build_number: doc(z.string(), "the build's git sha (BUILD_NUMBER), or `local`"),
  }),
);

export interface PlatformDeps {
  readonly version: string;
  readonly buildNumber: string;
  /** The OpenAPI document of every group (built live locally, generated for Lambda). */
  readonly document: () => unknown;
  /** The AsyncAPI document of the domain events (generated: functions/platform/asyncapi.json). */
  readonly asyncApiDocument: () => unknown;
  /** The serving stage and its region: the EventBridge server's variables default to them. */
  readonly stage: string;
  readonly region: string;
  /** The configured issuer's endpoints (from its OIDC discovery), when there is an issuer. */
  readonly oauthEndpoints: () => Promise<OAuthEndpoints | undefined>;
  /** The public client /docs signs in with (authorization code + PKCE). */
  readonly docsClientId: string;
  /** The issuer the review console signs in with (its discovery), when there is one. */
  readonly issuer: string | undefined;
  /** The public client /console signs in with (authorization code + PKCE). */
  readonly consoleClientId: string;
  /** The console's built script and style sheet, asked for on first use. */
  readonly consoleAssets: () => Promise<ConsoleAssets>;
}

const TITLE = 'Data Platform Management Service';
const CONSOLE_TITLE = 'DPM console';

/**
 * The document with the issuer's authorization and token URLs in its OAuth 2.0 scheme
 * (the generated document holds the local provider's paths as placeholders).
 */
function withOAuthEndpoints(document: unknown, endpoints: OAuthEndpoints | undefined): unknown {
  if (!endpoints) return document;
  const doc = document as { components?: { securitySchemes?: Record<string, unknown> } };
  const scheme = doc.components?.securitySchemes?.[OAUTH2_SCHEME] as
    { flows?: { authorizationCode?: Record<string, unknown> } } | undefined;
  if (!scheme?.flows?.authorizationCode) return document;
  return {
    ...doc,
    components: {
      ...doc.components,
      securitySchemes: {
        ...doc.components!.securitySchemes,
        [OAUTH2_SCHEME]: {
          ...scheme,
          flows: { authorizationCode: { ...scheme.flows.authorizationCode, ...endpoints } },
        },
      },
    },
  };
}

/** The document with the serving stage and region as its EventBridge server's defaults (`dpm-<stage>`). */
function withStage(document: unknown, stage: string, region: string): unknown {
  const doc = document as { servers?: Record<string, { variables?: Record<string, object> }> };
  const server = doc.servers?.eventbridge;
  if (!server?.variables?.stage || !server.variables.region) return document;
  return {
    ...doc,
    servers: {
      ...doc.servers,
      eventbridge: {
        ...server,
        variables: {
          ...server.variables,
          region: { ...server.variables.region, default: region },
          stage: { ...server.variables.stage, default: stage },
        },
      },
    },
  };
}

/** The OpenAPI operation of a page's own files (`GET <path>`: one of `assets`, by name, or 404). */
function assetOperation(path: string, operationId: string, summary: string, assets: Readonly<Record<string, string>>) {
  return {
    path,
    method: 'get' as const,
    operation: {
      operationId,
      summary,
      tags: ['platform'],
      parameters: [
        {
          name: 'asset',
          in: 'path',
          required: true,
          description: 'a file name',
          schema: { type: 'string', enum: Object.keys(assets), description: 'a file name' },
        },
      ],
      responses: {
        200: {
          description: 'The file',
          content: Object.fromEntries(
            [...new Set(Object.values(assets).map((type) => type.split(';')[0]!))].map((type) => [
              type,
              { schema: { type: 'string', description: 'the file' } },
            ]),
          ),
        },
        404: {
          description: 'No such file',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
        },
      },
    },
  };
}

/** Health, the OpenAPI and AsyncAPI documents and the HTML reference: the only open endpoints. */
export function createPlatformApp(deps: PlatformDeps): ServiceApp {
  const { version, buildNumber, document } = deps;
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
      async (c) => c.json(withOAuthEndpoints(document(), await deps.oauthEndpoints()) as object, 200),
    )
    .endpoint(
      {
        name: 'asyncapi',
        method: 'get',
        path: '/asyncapi.json',
        summary: 'AsyncAPI 3.0 document of every domain event type and its data',
        tags: ['platform'],
        access: 'public',
        success: { status: 200, description: 'The AsyncAPI document' },
      },
      (c) => c.json(withStage(deps.asyncApiDocument(), deps.stage, deps.region) as object, 200),
    );
  app.otherOperations.push(
    ...consoleOperations(),
    {
      path: '/docs',
      method: 'get',
      operation: {
        operationId: 'docs_docs_get',
        summary:
          'HTML API reference (Swagger UI, served by the service) rendered from /openapi.json, with a link to /asyncapi.json',
        tags: ['platform'],
        responses: { 200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } } },
      },
    },
    assetOperation(
      '/docs/{asset}',
      'docs_asset_docs__asset__get',
      "The API reference's own files (Swagger UI's script, style sheet, sign-in redirect page, icon)",
      SWAGGER_UI_ASSETS,
    ),
  );
  const page = docsPage({ title: TITLE, clientId: deps.docsClientId });
  const consoleHtml = consolePage({
    title: CONSOLE_TITLE,
    settings: { issuer: deps.issuer, clientId: deps.consoleClientId },
  });
  app.get('/console', (c) => c.redirect('/console/', 301));
  app.get('/console/', async (c) => {
    const endpoints = await deps.oauthEndpoints();
    const issuerOrigins = [deps.issuer, endpoints?.tokenUrl].flatMap((url) => (url ? [new URL(url).origin] : []));
    return c.html(consoleHtml, 200, {
      'content-security-policy': consoleCsp(issuerOrigins),
      'cache-control': 'no-cache',
    });
  });
  app.get('/console/:asset', async (c) => {
    const name = c.req.param('asset');
    const type = Object.hasOwn(CONSOLE_ASSETS, name) ? CONSOLE_ASSETS[name] : undefined;
    const body = type && (await deps.consoleAssets()).get(name);
    if (!type || !body) throw new NotFound();
    // Fixed names: revalidated on each load, so a new build is never mixed with an old one.
    return c.body(new Uint8Array(body), 200, { 'content-type': type, 'cache-control': 'no-cache' });
  });
  app.get('/docs', (c) => c.html(page));
  app.get('/docs/:asset', (c) => {
    const asset = swaggerUiAsset(c.req.param('asset'));
    if (!asset) throw new NotFound();
    return c.body(new Uint8Array(asset.body), 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=86400',
    });
  });
  return app;
}

/** /console in the OpenAPI document, as /docs is: a page and its files, outside the API. */
function consoleOperations() {
  return [
    {
      path: '/console',
      method: 'get',
      operation: {
        operationId: 'console_redirect_console_get',
        summary: 'Redirects to the review console at /console/',
        tags: ['platform'],
        responses: { 301: { description: 'Moved to /console/' } },
      },
    },
    {
      path: '/console/',
      method: 'get',
      operation: {
        operationId: 'console_console__get',
        summary:
          'The review console (HTML, served by the service): the inbox of what waits for the signed-in person, decision versions with their diff, crew runs with their live run log',
        tags: ['platform'],
        responses: { 200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } } },
      },
    },
    assetOperation(
      '/console/{asset}',
      'console_asset_console__asset__get',
      "The review console's own files (its script and style sheet)",
      CONSOLE_ASSETS,
    ),
  ];
}
