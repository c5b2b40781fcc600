import { Unavailable } from '../http/errors.js';
import { jsonOrUndefined, networkReason } from './answers.js';
import { logger } from '../logger.js';
import {
  byName,
  byUrn,
  datasetUrnOf,
  domainUrn,
  emptyAnnotations,
  glossaryTermUrn,
  tagUrn,
  type CatalogItem,
  type ColumnAnnotations,
  type Created,
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
export class DataHubError extends Error {
  constructor(message: string) {
    super(message);
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

const NAMED = 'urn name properties { name description }';
const DOMAIN_FIELDS = 'urn properties { name description }';
const TAGS = `tags { tag { ${NAMED} } }`;
const TERMS = `terms { term { ${NAMED} } }`;
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
  domainDatasets: `query DomainDatasets($input: SearchAcrossEntitiesInput!) { searchAcrossEntities(input: $input) { start count total searchResults { entity { urn type ... on Dataset { ${DATASET_FIELDS} } } } } }`,
  addTags: `mutation AddTags($input: AddTagsInput!) { addTags(input: $input) }`,
  addTerms: `mutation AddTerms($input: AddTermsInput!) { addTerms(input: $input) }`,
  updateDescription: `mutation UpdateDescription($input: DescriptionUpdateInput!) { updateDescription(input: $input) }`,
  setDomain: `mutation SetDomain($domainUrn: String!, $entityUrn: String!) { setDomain(domainUrn: $domainUrn, entityUrn: $entityUrn) }`,
} as const;

/**
 * DataHub through GMS's GraphQL API (`POST {gms}/api/graphql`, bearer token). Tags,
 * glossary terms and domains get the caller's name as their id, so their urns are
 * `urn:li:tag:<name>`, `urn:li:glossaryTerm:<name>` and `urn:li:domain:<name>`. Table and
 * column annotations are DataHub's editable ones (addTags / addTerms / updateDescription
 * with `subResourceType: DATASET_FIELD` for a column, setDomain for the table).
 * DataHub not answering, answering 5xx or refusing the token is `Unavailable`; a GraphQL
 * error (an unknown tag, a missing dataset...) is a DataHubError with DataHub's message.
 */
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
    const data = await this.graphql<{ dataset: DatasetAnswer | null }>(Q.getDataset, { urn });
    return data.dataset ? datasetAnnotations(urn, data.dataset) : emptyAnnotations(urn);
  }

  /** The datasets DataHub's search finds in the domain (the `domains` filter), page by page. */
  async listDomainEntities(domain: string): Promise<EntityAnnotations[]> {
    const filter = [{ and: [{ field: 'domains', condition: 'EQUAL', values: [domainUrn(domain)] }] }];
    const found = await this.searchAll<DatasetAnswer>(Q.domainDatasets, { types: ['DATASET'], orFilters: filter });
    // The search index may lag a setDomain: keep only what the entity itself says.
    return found
      .map((entity) => datasetAnnotations(entity.urn, entity))
      .filter((e) => e.domain === domain)
      .sort(byUrn);
  }

  /**
   * DataHub keeps each annotation in its own aspect entry and has no per-entity limit that
   * a change within the API's 1 MiB request body could reach: nothing to refuse up front.
   */
  async checkAnnotation(): Promise<void> {}

  async annotate(urn: string, change: EntityChange): Promise<void> {
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
      if (part.description !== undefined)
        await this.mutate(Q.updateDescription, 'updateDescription', {
          input: { description: part.description, ...target(column) },
        });
    };
    await write(undefined, change);
    if (change.domain !== undefined)
      await this.mutate(Q.setDomain, 'setDomain', { domainUrn: domainUrn(change.domain), entityUrn: urn });
    for (const [column, part] of change.columns ?? []) await write(column, part);
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

function tagNames(tags: TagAssociations | null | undefined): string[] {
  return (tags?.tags ?? []).map(({ tag }) => toItem(tag, 'urn:li:tag:').name).sort();
}

function termNames(terms: TermAssociations | null | undefined): string[] {
  return (terms?.terms ?? []).map(({ term }) => toItem(term, 'urn:li:glossaryTerm:').name).sort();
}
