import { mapLimit } from '../concurrency.js';
import { Unavailable } from '../errors.js';
import { jsonOrUndefined, networkReason } from './answers.js';
import { logger } from '../logger.js';
import {
  byName,
  byUrn,
  datasetUrnOf,
  domainUrn,
  emptyAnnotations,
  glossaryTermUrn,
  isDocumentUrn,
  tagUrn,
  type CatalogItem,
  type ColumnAnnotations,
  type Created,
  type DocumentEntity,
  type EntityAnnotations,
  type EntityChange,
  type MetadataCatalog,
} from '../ports/catalog.js';

export interface DataHubSettings {
  /** GMS's base URL (`/api/graphql` is appended). */
  readonly gmsUrl: string;
  /** A DataHub personal access token, sent as `Authorization: Bearer`. */
  readonly token: string;
  /** The data platform of table urns (default `trino`). */
  readonly platform?: string;
}

export interface DataHubOptions {
  /** Per request (default 5 s): a slow DataHub becomes a 503 within the API's 10 s. */
  readonly timeoutMs?: number;
}

/** A GraphQL error: DataHub answered, and refused the operation. */
/**
 * DataHub answered, but refused or did not apply a change: for the caller, the catalog
 * failed (503 with DataHub's message), never a 500.
 */
export class DataHubError extends Unavailable {
  constructor(message: string) {
    super(`DataHub refused the request: ${message}`);
    this.name = 'DataHubError';
  }
}

const PAGE = 100;

interface Named {
  urn: string;
  name?: string | null;
  properties?: { name?: string | null; description?: string | null } | null;
}

interface TagAssociations {
  tags?: { tag: Named }[] | null;
}

interface TermAssociations {
  terms?: { term: Named }[] | null;
}

interface DatasetAnswer {
  urn: string;
  editableProperties?: { description?: string | null } | null;
  tags?: TagAssociations | null;
  glossaryTerms?: TermAssociations | null;
  domain?: { domain?: Named | null } | null;
  editableSchemaMetadata?: {
    editableSchemaFieldInfo?:
      | {
          fieldPath: string;
          description?: string | null;
          globalTags?: TagAssociations | null;
          glossaryTerms?: TermAssociations | null;
        }[]
      | null;
  } | null;
}

/** A document as `document(urn)` answers it (documents.graphql's `Document`). */
interface DocumentAnswer {
  urn: string;
  exists?: boolean | null;
  info?: { title?: string | null; contents?: { text?: string | null } | null } | null;
  tags?: TagAssociations | null;
  glossaryTerms?: TermAssociations | null;
  domain?: { domain?: Named | null } | null;
}

const NAMED = 'urn name properties { name description }';
const DOMAIN_FIELDS = 'urn properties { name description }';
const TAGS = `tags { tag { ${NAMED} } }`;
const TERMS = `terms { term { ${NAMED} } }`;
/** A document's annotations: its text holds the summary (DataHub's updateDescription has no document case). */
const DOCUMENT_FIELDS = `urn exists info { title contents { text } } tags { ${TAGS} } glossaryTerms { ${TERMS} } domain { domain { ${DOMAIN_FIELDS} } }`;
const DATASET_FIELDS = `urn editableProperties { description } tags { ${TAGS} } glossaryTerms { ${TERMS} } domain { domain { ${DOMAIN_FIELDS} } } editableSchemaMetadata { editableSchemaFieldInfo { fieldPath description globalTags { ${TAGS} } glossaryTerms { ${TERMS} } } }`;

const Q = {
  getTag: `query GetTag($urn: String!) { tag(urn: $urn) { ${NAMED} } }`,
  getGlossaryTerm: `query GetGlossaryTerm($urn: String!) { glossaryTerm(urn: $urn) { ${NAMED} } }`,
  getDomain: `query GetDomain($urn: String!) { domain(urn: $urn) { ${DOMAIN_FIELDS} } }`,
  createTag: `mutation CreateTag($input: CreateTagInput!) { createTag(input: $input) }`,
  createGlossaryTerm: `mutation CreateGlossaryTerm($input: CreateGlossaryEntityInput!) { createGlossaryTerm(input: $input) }`,
  createDomain: `mutation CreateDomain($input: CreateDomainInput!) { createDomain(input: $input) }`,
  search: `query SearchEntities($input: SearchAcrossEntitiesInput!) { searchAcrossEntities(input: $input) { start count total searchResults { entity { urn type ... on Tag { name properties { name description } } ... on GlossaryTerm { name properties { name description } } } } } }`,
  listDomains: `query ListDomains($input: ListDomainsInput!) { listDomains(input: $input) { start count total domains { ${DOMAIN_FIELDS} } } }`,
  getDataset: `query GetDataset($urn: String!) { dataset(urn: $urn) { ${DATASET_FIELDS} } }`,
  domainEntities: `query DomainEntities($input: SearchAcrossEntitiesInput!) { searchAcrossEntities(input: $input) { start count total searchResults { entity { urn type ... on Dataset { ${DATASET_FIELDS} } ... on Document { ${DOCUMENT_FIELDS} } } } } }`,
  getDocument: `query GetDocument($urn: String!) { document(urn: $urn) { ${DOCUMENT_FIELDS} } }`,
  createDocument: `mutation CreateDocument($input: CreateDocumentInput!) { createDocument(input: $input) }`,
  deleteDocument: `mutation DeleteDocument($urn: String!) { deleteDocument(urn: $urn) }`,
  updateDocumentContents: `mutation UpdateDocumentContents($input: UpdateDocumentContentsInput!) { updateDocumentContents(input: $input) }`,
  addTags: `mutation AddTags($input: AddTagsInput!) { addTags(input: $input) }`,
  addTerms: `mutation AddTerms($input: AddTermsInput!) { addTerms(input: $input) }`,
  updateDescription: `mutation UpdateDescription($input: DescriptionUpdateInput!) { updateDescription(input: $input) }`,
  updateDataset: `mutation UpdateDataset($urn: String!, $input: DatasetUpdateInput!) { updateDataset(urn: $urn, input: $input) { urn } }`,
  setDomain: `mutation SetDomain($domainUrn: String!, $entityUrn: String!) { setDomain(domainUrn: $domainUrn, entityUrn: $entityUrn) }`,
  removeTag: `mutation RemoveTag($input: TagAssociationInput!) { removeTag(input: $input) }`,
  unsetDomain: `mutation UnsetDomain($entityUrn: String!) { unsetDomain(entityUrn: $entityUrn) }`,
} as const;

/**
 * DataHub through GMS's GraphQL API (`POST {gms}/api/graphql`, bearer token). Tags,
 * glossary terms and domains get the caller's name as their id, so their urns are
 * `urn:li:tag:<name>`, `urn:li:glossaryTerm:<name>` and `urn:li:domain:<name>`. Table and
 * column annotations are DataHub's editable ones (addTags / addTerms / updateDescription
 * with `subResourceType: DATASET_FIELD` for a column, updateDataset's editableProperties
 * for the table's description, setDomain for the table). Documents
 * are DataHub Document entities (documents.graphql): created by registerDocument
 * (`createDocument` with the document's id), read with `document(urn)`, tagged, termed and
 * put in a domain like any entity, their summary written as the document's text
 * (`updateDocumentContents`).
 * DataHub not answering, answering 5xx or refusing the token is `Unavailable`; a GraphQL
 * error (an unknown tag, a missing dataset...) is a DataHubError with DataHub's message.
 */
/** Entity reads sent to DataHub at once by getEntities. */
const ENTITY_READS_IN_FLIGHT = 8;

export class DataHubCatalog implements MetadataCatalog {
  private readonly endpoint: string;
  private readonly platform: string;
  private readonly timeoutMs: number;

  constructor(
    private readonly settings: DataHubSettings,
    options: DataHubOptions = {},
  ) {
    this.endpoint = `${settings.gmsUrl.replace(/\/+$/, '').replace(/\/api\/graphql$/, '')}/api/graphql`;
    this.platform = settings.platform ?? 'trino';
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  datasetUrn(catalog: string, schema: string, table: string): string {
    return datasetUrnOf(this.platform, catalog, schema, table);
  }

  listTags(): Promise<CatalogItem[]> {
    return this.search('TAG');
  }

  listGlossaryTerms(): Promise<CatalogItem[]> {
    return this.search('GLOSSARY_TERM');
  }

  async listDomains(): Promise<CatalogItem[]> {
    const items: CatalogItem[] = [];
    for (let start = 0; ;) {
      const data = await this.graphql<{
        listDomains: { start: number; count: number; total: number; domains: Named[] } | null;
      }>(Q.listDomains, { input: { start, count: PAGE, query: '*' } });
      const page = data.listDomains;
      if (!page) break;
      for (const domain of page.domains) items.push(toItem(domain, 'urn:li:domain:'));
      start += page.domains.length;
      if (page.domains.length === 0 || start >= page.total) break;
    }
    return items.sort(byName);
  }

  async getTag(name: string): Promise<CatalogItem | undefined> {
    const data = await this.graphql<{ tag: Named | null }>(Q.getTag, { urn: tagUrn(name) });
    return existing(data.tag, 'urn:li:tag:');
  }

  async getGlossaryTerm(name: string): Promise<CatalogItem | undefined> {
    const data = await this.graphql<{ glossaryTerm: Named | null }>(Q.getGlossaryTerm, {
      urn: glossaryTermUrn(name),
    });
    return existing(data.glossaryTerm, 'urn:li:glossaryTerm:');
  }

  async getDomain(name: string): Promise<CatalogItem | undefined> {
    const data = await this.graphql<{ domain: Named | null }>(Q.getDomain, { urn: domainUrn(name) });
    return existing(data.domain, 'urn:li:domain:');
  }

  createTag(name: string, description?: string): Promise<Created> {
    return this.create(name, description, () => this.getTag(name), Q.createTag, 'createTag', tagUrn(name));
  }

  createGlossaryTerm(name: string, description?: string): Promise<Created> {
    return this.create(
      name,
      description,
      () => this.getGlossaryTerm(name),
      Q.createGlossaryTerm,
      'createGlossaryTerm',
      glossaryTermUrn(name),
    );
  }

  createDomain(name: string, description?: string): Promise<Created> {
    return this.create(name, description, () => this.getDomain(name), Q.createDomain, 'createDomain', domainUrn(name));
  }

  async getEntity(urn: string): Promise<EntityAnnotations> {
    if (isDocumentUrn(urn)) {
      const doc = await this.graphql<{ document: DocumentAnswer | null }>(Q.getDocument, { urn });
      return doc.document && doc.document.exists !== false
        ? documentAnnotations(urn, doc.document)
        : emptyAnnotations(urn);
    }
    const data = await this.graphql<{ dataset: DatasetAnswer | null }>(Q.getDataset, { urn });
    return data.dataset ? datasetAnnotations(urn, data.dataset) : emptyAnnotations(urn);
  }

  /** One GraphQL request an entity, a few at a time (what getEntity asks, for each). */
  getEntities(urns: readonly string[]): Promise<EntityAnnotations[]> {
    return mapLimit(urns, ENTITY_READS_IN_FLIGHT, (urn) => this.getEntity(urn));
  }

  /** The datasets and documents DataHub's search finds in the domain (the `domains` filter), page by page. */
  async listDomainEntities(domain: string): Promise<EntityAnnotations[]> {
    const filter = [{ and: [{ field: 'domains', condition: 'EQUAL', values: [domainUrn(domain)] }] }];
    const found = await this.searchAll<(DatasetAnswer | DocumentAnswer) & { type?: string }>(Q.domainEntities, {
      types: ['DATASET', 'DOCUMENT'],
      orFilters: filter,
    });
    // The search index may lag a setDomain: keep only what the entity itself says.
    return found
      .map((entity) =>
        entity.type === 'DOCUMENT' || isDocumentUrn(entity.urn)
          ? documentAnnotations(entity.urn, entity as DocumentAnswer)
          : datasetAnnotations(entity.urn, entity as DatasetAnswer),
      )
      .filter((e) => e.domain === domain)
      .sort(byUrn);
  }

  /**
   * DataHub keeps each annotation in its own aspect entry and has no per-entity limit that
   * a change within the API's 1 MiB request body could reach: nothing to refuse up front.
   */
  async checkAnnotation(): Promise<void> {}

  /**
   * `createDocument` (documents.graphql) with the document's id, so its urn is
   * `urn:li:document:<id>`; its title is the file name and its text starts empty (E6 writes
   * the summary there). Not shown in DataHub's global context: the entity is this service's
   * record of an uploaded file, found through its domain, tags and terms. An entity that
   * exists already (a retried registration) is accepted.
   */
  async registerDocument(document: DocumentEntity): Promise<void> {
    let data: { createDocument: string | null };
    try {
      data = await this.graphql<{ createDocument: string | null }>(Q.createDocument, {
        input: {
          id: document.id,
          title: document.title,
          contents: { text: '' },
          ...(document.subtype ? { subType: document.subtype } : {}),
          settings: { showInGlobalContext: false },
        },
      });
    } catch (err) {
      if (err instanceof DataHubError && /already exists/i.test(err.message)) return;
      throw err;
    }
    if (data.createDocument !== document.urn)
      throw new DataHubError(`DataHub created ${String(data.createDocument)} instead of ${document.urn}`);
  }

  async unregisterDocument(urn: string): Promise<void> {
    const data = await this.graphql<{ document: { urn: string; exists?: boolean | null } | null }>(
      `query DocumentExists($urn: String!) { document(urn: $urn) { urn exists } }`,
      { urn },
    );
    if (!data.document || data.document.exists === false) return;
    await this.mutate(Q.deleteDocument, 'deleteDocument', { urn });
  }

  async annotate(urn: string, change: EntityChange): Promise<void> {
    if (isDocumentUrn(urn)) return this.annotateDocument(urn, change);
    const target = (column?: string) =>
      column === undefined
        ? { resourceUrn: urn }
        : { resourceUrn: urn, subResource: column, subResourceType: 'DATASET_FIELD' };
    const write = async (column: string | undefined, part: Omit<EntityChange, 'columns' | 'domain'>) => {
      if (part.tags?.length)
        await this.mutate(Q.addTags, 'addTags', { input: { tagUrns: part.tags.map(tagUrn), ...target(column) } });
      if (part.glossaryTerms?.length)
        await this.mutate(Q.addTerms, 'addTerms', {
          input: { termUrns: part.glossaryTerms.map(glossaryTermUrn), ...target(column) },
        });
      if (part.description !== undefined && column !== undefined)
        await this.mutate(Q.updateDescription, 'updateDescription', {
          input: { description: part.description, ...target(column) },
        });
      // DataHub's updateDescription takes a dataset only with a sub-resource (a column); the
      // table's own editable description is written as DataHub's UI does, with updateDataset.
      if (part.description !== undefined && column === undefined) {
        const data = await this.graphql<{ updateDataset: { urn: string } | null }>(Q.updateDataset, {
          urn,
          input: { editableProperties: { description: part.description } },
        });
        if (data.updateDataset?.urn !== urn) throw new DataHubError(`DataHub did not apply updateDataset to ${urn}`);
      }
    };
    await write(undefined, change);
    if (change.domain !== undefined)
      await this.mutate(Q.setDomain, 'setDomain', { domainUrn: domainUrn(change.domain), entityUrn: urn });
    for (const [column, part] of change.columns ?? []) await write(column, part);
    await this.removeAnnotations(urn, change);
  }

  /** `removeTag` per tag, and `unsetDomain` when the entity is in the domain to leave (DataHub has no conditional form). */
  private async removeAnnotations(urn: string, change: EntityChange): Promise<void> {
    for (const tag of change.removeTags ?? [])
      await this.mutate(Q.removeTag, 'removeTag', { input: { tagUrn: tagUrn(tag), resourceUrn: urn } });
    if (change.removeDomain !== undefined && (await this.getEntity(urn)).domain === change.removeDomain)
      await this.mutate(Q.unsetDomain, 'unsetDomain', { entityUrn: urn });
  }

  /**
   * A document's tags and terms through addTags / addTerms and its domain through setDomain
   * (generic mutations that take any entity DataHub has); its summary through
   * updateDocumentContents, since updateDescription has no document case in DataHub.
   */
  private async annotateDocument(urn: string, change: EntityChange): Promise<void> {
    if (change.columns?.size) throw new DataHubError(`A document has no columns to annotate (${urn})`);
    if (change.tags?.length)
      await this.mutate(Q.addTags, 'addTags', { input: { tagUrns: change.tags.map(tagUrn), resourceUrn: urn } });
    if (change.glossaryTerms?.length)
      await this.mutate(Q.addTerms, 'addTerms', {
        input: { termUrns: change.glossaryTerms.map(glossaryTermUrn), resourceUrn: urn },
      });
    if (change.description !== undefined)
      await this.mutate(Q.updateDocumentContents, 'updateDocumentContents', {
        input: { urn, contents: { text: change.description } },
      });
    if (change.domain !== undefined)
      await this.mutate(Q.setDomain, 'setDomain', { domainUrn: domainUrn(change.domain), entityUrn: urn });
    await this.removeAnnotations(urn, change);
  }

  private async create(
    name: string,
    description: string | undefined,
    find: () => Promise<CatalogItem | undefined>,
    mutation: string,
    field: string,
    urn: string,
  ): Promise<Created> {
    const found = await find();
    if (found) return { item: found, created: false };
    let data: Record<string, string | null>;
    try {
      data = await this.graphql<Record<string, string | null>>(mutation, {
        input: { id: name, name, ...(description !== undefined ? { description } : {}) },
      });
    } catch (err) {
      // Created by someone else between our check and our create.
      const raced = err instanceof DataHubError && /already exists/i.test(err.message) ? await find() : undefined;
      if (raced) return { item: raced, created: false };
      throw err;
    }
    return { item: { name, urn: data[field] ?? urn, description: description ?? null }, created: true };
  }

  private async search(type: 'TAG' | 'GLOSSARY_TERM'): Promise<CatalogItem[]> {
    const prefix = type === 'TAG' ? 'urn:li:tag:' : 'urn:li:glossaryTerm:';
    const found = await this.searchAll<Named>(Q.search, { types: [type] });
    return found.map((entity) => toItem(entity, prefix)).sort(byName);
  }

  /** Every entity a `searchAcrossEntities` query finds (query `*`), following its pages. */
  private async searchAll<T>(query: string, input: Record<string, unknown>): Promise<T[]> {
    const entities: T[] = [];
    for (let start = 0; ;) {
      const data = await this.graphql<{
        searchAcrossEntities: { start: number; count: number; total: number; searchResults: { entity: T }[] } | null;
      }>(query, { input: { ...input, query: '*', start, count: PAGE } });
      const page = data.searchAcrossEntities;
      if (!page) break;
      for (const { entity } of page.searchResults) entities.push(entity);
      start += page.searchResults.length;
      if (page.searchResults.length === 0 || start >= page.total) break;
    }
    return entities;
  }

  private async mutate(query: string, field: string, variables: Record<string, unknown>): Promise<void> {
    const data = await this.graphql<Record<string, unknown>>(query, variables);
    if (data[field] !== true)
      throw new DataHubError(`DataHub did not apply ${field} (it answered ${String(data[field])})`);
  }

  /** One GraphQL call: `data`, or a DataHubError with the GraphQL errors' messages. */
  async graphql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
    const operation = /^\s*(?:query|mutation)\s+(\w+)/.exec(query)?.[1] ?? 'anonymous';
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.endpoint, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: {
          authorization: `Bearer ${this.settings.token}`,
          accept: 'application/json',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ query, variables, operationName: operation }),
      });
      text = await res.text();
    } catch (err) {
      const timedOut = (err as Error)?.name === 'TimeoutError';
      logger.warn('DataHub did not answer', {
        operation,
        origin: new URL(this.endpoint).origin,
        error: networkReason(err),
      });
      throw new Unavailable(
        timedOut ? `DataHub did not answer within ${this.timeoutMs / 1000} s` : 'DataHub is not reachable', // where: in the log, not in the answer
      );
    }
    if (res.status === 401 || res.status === 403) {
      logger.error('DataHub refused the configured token', { operation, status: res.status });
      throw new Unavailable(`DataHub refused the configured token (HTTP ${res.status}): check DATAHUB_TOKEN`);
    }
    const body = jsonOrUndefined(text) as { data?: T | null; errors?: { message?: string }[] } | undefined;
    if (res.status >= 500 || !body || typeof body !== 'object') {
      logger.warn('unexpected answer from DataHub', { operation, status: res.status });
      throw new Unavailable(
        res.status >= 500
          ? `DataHub failed (HTTP ${res.status}) on ${operation}`
          : `DataHub answered HTTP ${res.status} without a GraphQL result to ${operation}`,
      );
    }
    if (Array.isArray(body.errors) && body.errors.length > 0) {
      const message = body.errors.map((e) => e.message ?? 'unknown error').join('; ');
      logger.warn('DataHub refused a GraphQL operation', { operation, error: message });
      throw new DataHubError(`DataHub refused ${operation}: ${message}`);
    }
    if (res.status !== 200 || !body.data) {
      throw new Unavailable(`DataHub answered HTTP ${res.status} without data to ${operation}`);
    }
    return body.data;
  }
}

/** A definition DataHub knows: a missing one comes back null (or, for some types, without properties). */
function existing(entity: Named | null | undefined, prefix: string): CatalogItem | undefined {
  if (!entity || !entity.properties) return undefined;
  return toItem(entity, prefix);
}

function toItem(entity: Named, prefix: string): CatalogItem {
  const id = entity.urn.startsWith(prefix) ? entity.urn.slice(prefix.length) : entity.urn;
  return {
    name: entity.properties?.name || entity.name || id,
    urn: entity.urn,
    description: entity.properties?.description ?? null,
  };
}

/** A dataset's editable annotations as the port's (columns sorted by field path). */
function datasetAnnotations(urn: string, dataset: DatasetAnswer): EntityAnnotations {
  // Field paths are column names: Map keys, never plain-object keys.
  const columns = new Map<string, ColumnAnnotations>();
  const fields = [...(dataset.editableSchemaMetadata?.editableSchemaFieldInfo ?? [])].sort((a, b) =>
    a.fieldPath < b.fieldPath ? -1 : a.fieldPath > b.fieldPath ? 1 : 0,
  );
  for (const field of fields) {
    columns.set(field.fieldPath, {
      description: field.description ?? null,
      tags: tagNames(field.globalTags),
      glossary_terms: termNames(field.glossaryTerms),
    });
  }
  const domain = dataset.domain?.domain;
  return {
    urn,
    description: dataset.editableProperties?.description ?? null,
    domain: domain ? toItem(domain, 'urn:li:domain:').name : null,
    tags: tagNames(dataset.tags),
    glossary_terms: termNames(dataset.glossaryTerms),
    columns,
  };
}

/** A document's annotations: its text is its description (empty until E6 writes the summary). */
function documentAnnotations(urn: string, doc: DocumentAnswer): EntityAnnotations {
  const domain = doc.domain?.domain;
  return {
    urn,
    description: doc.info?.contents?.text || null,
    domain: domain ? toItem(domain, 'urn:li:domain:').name : null,
    tags: tagNames(doc.tags),
    glossary_terms: termNames(doc.glossaryTerms),
    columns: new Map(),
  };
}

function tagNames(tags: TagAssociations | null | undefined): string[] {
  return (tags?.tags ?? []).map(({ tag }) => toItem(tag, 'urn:li:tag:').name).sort();
}

function termNames(terms: TermAssociations | null | undefined): string[] {
  return (terms?.terms ?? []).map(({ term }) => toItem(term, 'urn:li:glossaryTerm:').name).sort();
}
