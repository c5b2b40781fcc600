/**
 * Writes functions/platform/openapi.json and asyncapi.json, which the platform Lambda
 * serves (`npm run openapi`).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pkg from '../../package.json' with { type: 'json' };
import { loadConfig } from '../../shared/config.js';
import { asyncApiDocument } from '../../shared/http/asyncapi.js';
import { createRuntime } from '../composition.js';
import { openApiDocument, serviceApps } from '../apps.js';
import { EVENT_CATALOG, EVENT_SCHEMAS, WEBHOOK_ONLY_EVENTS, WebhookHeaders } from '../domain-events/catalog.js';
import { DomainEventSchema } from '../domain-events/schemas.js';

export function generatedDocument() {
  return openApiDocument(Object.values(serviceApps(createRuntime(loadConfig({})))));
}

/** The AsyncAPI 3.0 document of every domain event type (docs/events-and-webhooks.md). */
export function generatedAsyncApiDocument() {
  return asyncApiDocument(
    {
      title: 'Data Platform Management Service: domain events',
      version: pkg.version,
      description:
        "Every state change the service commits, as a CloudEvents 1.0 envelope: on the stage's EventBridge bus `dpm-<stage>`, to webhooks (Standard Webhooks signatures) and in `GET /api/domain-events`. The HTTP API is described by `/openapi.json`.",
    },
    {
      events: { ...EVENT_CATALOG, ...WEBHOOK_ONLY_EVENTS },
      envelope: DomainEventSchema,
      headers: WebhookHeaders,
      named: EVENT_SCHEMAS,
    },
  );
}

export const OPENAPI_FILE = fileURLToPath(new URL('./openapi.json', import.meta.url));
export const ASYNCAPI_FILE = fileURLToPath(new URL('./asyncapi.json', import.meta.url));

/** A document as the committed file holds it. */
export const fileText = (document: unknown) => `${JSON.stringify(document, null, 2)}\n`;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OPENAPI_FILE, fileText(generatedDocument()));
  console.log(`wrote ${OPENAPI_FILE}`);
  writeFileSync(ASYNCAPI_FILE, fileText(generatedAsyncApiDocument()));
  console.log(`wrote ${ASYNCAPI_FILE}`);
}
