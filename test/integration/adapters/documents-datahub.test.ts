import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDocumentsApp } from '../../../functions/documents/app.js';
import { DocumentService } from '../../../functions/documents/service.js';
import { DynamoDocumentStore } from '../../../functions/documents/store.js';
import { TABLES, physicalTableName } from '../../../infra/tables.js';
import { DataHubCatalog } from '../../../shared/adapters/datahub.js';
import type { RequestAuthenticator } from '../../../shared/auth/authenticator.js';
import type { Caller } from '../../../shared/auth/caller.js';
import { documentUrnOf } from '../../../shared/ports/catalog.js';
import { startFakeDataHub, type FakeDataHub } from '../../support/datahub-server.js';
import { rejection } from '../../support/rejection.js';
import { db } from '../helpers.js';
import { provided } from '../provided.js';

/**
 * Documents with CATALOG=datahub: the documents app over HTTP, its items in the suite's
 * DynamoDB, its catalog the DataHub adapter talking to the local DataHub-protocol server.
 * Registration creates the document's DataHub entity, so E6 can annotate it.
 */

let datahub: FakeDataHub;
let server: ServerType;
let base: string;
/** Each run's callers are new principals, so their document lists start empty. */
const run = randomUUID().slice(0, 8);
const callers: Record<string, Caller> = {
  alice: { principal: `alice-${run}`, name: `alice-${run}`, roles: new Set(), via: 'bearer' },
  admin: { principal: `admin-${run}`, name: `admin-${run}`, roles: new Set(['admin']), via: 'bearer' },
};
const authenticator: RequestAuthenticator = {
  authenticate: async (headers: { authorization?: string }) => {
    const caller = callers[(headers.authorization ?? '').replace(/^Bearer /, '')];
    if (!caller) throw new Error('unknown test caller');
    return caller;
  },
};

const store = () => new DynamoDocumentStore(db(), physicalTableName(provided('stage'), TABLES.documents));
const catalog = () => new DataHubCatalog({ gmsUrl: datahub.url, token: datahub.token }, { timeoutMs: 2_000 });

beforeAll(async () => {
  datahub = await startFakeDataHub();
  const app = createDocumentsApp({ authenticator, service: new DocumentService(store(), catalog()) });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await datahub.stop();
});

beforeEach(() => datahub.reset());

const call = async (method: string, path: string, who: keyof typeof callers, body?: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${who}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

const FILE = { filename: 'q3-invoices.pdf', mime_type: 'application/pdf', size_bytes: 2048, subtype: 'invoice' };

describe('documents with CATALOG=datahub', () => {
  it('registration creates the DataHub document, and E6 annotates it end to end', async () => {
    const created = await call('POST', '/api/documents', 'alice', FILE);
    expect(created.status).toBe(201);
    const { id, catalog_urn } = created.body as { id: string; catalog_urn: string };
    expect(catalog_urn).toBe(documentUrnOf(id));
    expect(datahub.documents.get(catalog_urn)).toMatchObject({
      title: 'q3-invoices.pdf',
      subType: 'invoice',
      text: '',
    });

    datahub.tags.set('urn:li:tag:Finance', { name: 'Finance', description: null });
    datahub.domains.set('urn:li:domain:Sales', { name: 'Sales', description: null });
    const suggested = await call('PUT', `/api/documents/${id}/suggestions`, 'admin', {
      suggested_summary: 'Invoices of the third quarter',
      suggested_tags: ['Finance', 'Quarterly'],
      suggested_glossary_terms: ['Invoice'],
      suggested_domain: 'Sales',
    });
    expect(suggested.status).toBe(200);
    expect(suggested.body.enrichment_status).toBe('awaiting_review');

    const confirmed = await call('PATCH', `/api/documents/${id}/enrichment`, 'alice', {
      accepted_tags: ['Finance'],
      new_tags: ['Quarterly'],
      new_glossary_terms: ['Invoice'],
      domain: 'Sales',
    });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body).toMatchObject({
      enrichment_status: 'confirmed',
      suggested_summary: 'Invoices of the third quarter',
      suggested_domain: { name: 'Sales', is_existing: true, urn: 'urn:li:domain:Sales' },
    });

    // What DataHub holds now, read back through the adapter's document query.
    expect(await catalog().getEntity(catalog_urn)).toEqual({
      urn: catalog_urn,
      description: 'Invoices of the third quarter',
      domain: 'Sales',
      tags: ['Finance', 'Quarterly'],
      glossary_terms: ['Invoice'],
      columns: new Map(),
    });
    expect(datahub.requests.some((r) => r.operation === 'GetDataset')).toBe(false);
  });

  it('DataHub down: registration answers 503 and leaves neither a document nor an entity', async () => {
    const before = await call('GET', '/api/documents', 'alice');
    datahub.down = true;
    const res = await call('POST', '/api/documents', 'alice', FILE);
    datahub.down = false;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: expect.any(String), code: 503 });
    expect(datahub.documents.size).toBe(0);
    const listed = await call('GET', '/api/documents', 'alice');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual(before.body);
  });

  it('a document item that cannot be written takes its new DataHub entity away again', async () => {
    const failing = Object.assign(Object.create(store()) as DynamoDocumentStore, {
      create: async () => {
        throw new Error('DynamoDB refused the write');
      },
    });
    const service = new DocumentService(failing, catalog());
    const err = await rejection(
      service.create({ ...FILE, objstore_key: null } as Parameters<DocumentService['create']>[0], callers.alice!),
    );
    expect(err.message).toBe('DynamoDB refused the write');
    expect(datahub.requests.map((r) => r.operation)).toEqual(['CreateDocument', 'DocumentExists', 'DeleteDocument']);
    expect(datahub.documents.size).toBe(0);
  });
});
