import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import type { IdempotencyKeys } from '../../shared/http/idempotency.js';
import { PageQuery } from '../../shared/params.js';
import {
  Document,
  DocumentParams,
  DocumentRequest,
  EnrichmentConfirmation,
  StatusUpdate,
  SuggestionsRequest,
} from './schemas.js';
import type { DocumentService } from './service.js';

export interface DocumentsDeps {
  readonly authenticator: RequestAuthenticator;
  /** Where `Idempotency-Key` answers are kept (docs/identity-and-keys.md, idempotency keys). */
  readonly idempotency?: IdempotencyKeys;
  readonly service: DocumentService;
}

const TAGS = ['documents'];
const BASE = '/api/documents';
const ADMIN = { anyRole: ['admin'] } as const;

export function createDocumentsApp({ authenticator, idempotency, service }: DocumentsDeps): ServiceApp {
  return createServiceApp(authenticator, idempotency)
    .endpoint(
      {
        name: 'create_document',
        method: 'post',
        path: BASE,
        summary: 'Register a document (the caller becomes its owner)',
        tags: TAGS,
        access: 'user',
        idempotent: true,
        request: { body: DocumentRequest, bodyRequired: true },
        success: { status: 201, description: 'The new document, uploading', schema: Document },
      },
      async (c, { body, caller }) => c.json(await service.create(body, caller), 201),
    )
    .endpoint(
      {
        name: 'list_documents',
        method: 'get',
        path: BASE,
        summary: "List the caller's documents (an admin's list holds all), oldest first",
        tags: TAGS,
        access: 'user',
        request: { query: PageQuery },
        success: { status: 200, description: 'Documents; more in `X-Next-Cursor`', schema: z.array(Document) },
      },
      async (c, { query, caller }) => pageJson(c, await service.list(caller, query.limit, query.cursor)),
    )
    .endpoint(
      {
        name: 'get_document',
        method: 'get',
        path: `${BASE}/{document_id}`,
        summary: 'Read a document (its owner or an admin)',
        tags: TAGS,
        access: 'user',
        request: { params: DocumentParams },
        success: { status: 200, description: 'The document', schema: Document },
        errors: [403, 404],
      },
      async (c, { params, caller }) => c.json(await service.get(params.document_id, caller), 200),
    )
    .endpoint(
      {
        name: 'update_document_status',
        method: 'post',
        path: `${BASE}/{document_id}/status`,
        summary: "Move a document's status forward (the ingestion pipeline)",
        tags: TAGS,
        access: ADMIN,
        request: { params: DocumentParams, body: StatusUpdate, bodyRequired: true },
        success: { status: 200, description: 'The document', schema: Document },
        errors: [404, 409],
      },
      async (c, { params, body, caller }) => c.json(await service.setStatus(params.document_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'put_document_suggestions',
        method: 'put',
        path: `${BASE}/{document_id}/suggestions`,
        summary: 'Store enrichment suggestions for review (the enrichment pipeline)',
        tags: TAGS,
        access: ADMIN,
        request: { params: DocumentParams, body: SuggestionsRequest, bodyRequired: true },
        success: { status: 200, description: 'The document, awaiting review', schema: Document },
        errors: [404, 409],
      },
      async (c, { params, body, caller }) =>
        c.json(await service.setSuggestions(params.document_id, body, caller), 200),
    )
    .endpoint(
      {
        name: 'confirm_enrichment',
        method: 'patch',
        path: `${BASE}/{document_id}/enrichment`,
        summary: 'Confirm document enrichment (E6; its owner or an admin)',
        tags: TAGS,
        access: 'user',
        request: { params: DocumentParams, body: EnrichmentConfirmation, bodyRequired: true },
        success: { status: 200, description: 'The document, confirmed', schema: Document },
        errors: [403, 404, 409],
      },
      async (c, { params, body, caller }) => c.json(await service.confirm(params.document_id, body, caller), 200),
    );
}
