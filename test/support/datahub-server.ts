import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that answers as DataHub GMS's GraphQL API (`POST /api/graphql`,
 * `Authorization: Bearer <token>`; datahub-graphql-core's schema) for the operations the
 * DataHub adapter sends. Every request is first validated against the part of DataHub's
 * schema written out below (fields, arguments, variable types, input fields, enum values),
 * as GMS's graphql-java does, and every answer holds exactly the fields the query selected;
 * operations are then run by their root field:
 * - `tag(urn)` / `glossaryTerm(urn)` / `domain(urn)`: a tag that does not exist comes back
 *   as GMS does, with its urn and no `properties`; a missing term or domain is null;
 * - `createTag` / `createGlossaryTerm` / `createDomain` with `{id, name, description}`,
 *   answering the new urn, or a GraphQL error when it exists already (as GMS does);
 * - `searchAcrossEntities(input: {types, query, start, count, orFilters})` over tags,
 *   glossary terms, datasets and documents (filtered on the `domains` field), paged, and
 *   `listDomains(input: {start, count})`;
 * - `dataset(urn)` with editableProperties, tags, glossaryTerms, domain and
 *   editableSchemaMetadata (null for a dataset DataHub does not have);
 * - documents (documents.graphql): `createDocument(input: CreateDocumentInput!)` answering
 *   `urn:li:document:<id>` (an error when that id exists), `document(urn)` (null when
 *   missing), `updateDocumentContents` and `deleteDocument`;
 * - `addTags` / `addTerms` (optionally on a `subResource` of type DATASET_FIELD),
 *   `removeTag` (TagAssociationInput), `setDomain` and `unsetDomain` on a dataset or a document; `updateDescription` on a dataset field only:
 *   like GMS they refuse an entity DataHub does not have, a field not in its schema, tags,
 *   terms or domains that do not exist, and (updateDescription) a document or a dataset
 *   without a sub-resource, which DataHub's UpdateDescriptionResolver does not support;
 * - `updateDataset(urn, input: {editableProperties: {description}})`, a table's description.
 * Datasets must be registered first (`addDataset`), as ingestion would have done.
 * Switches: `down` drops every connection, `failNext` answers the next N requests 500.
 */
export interface FakeDefinition {
  name: string;
  description: string | null;
}

export interface FakeField {
  description: string | null;
  tags: Set<string>;
  terms: Set<string>;
}

export interface FakeDataset {
  fields: Set<string>;
  description: string | null;
  tags: Set<string>;
  terms: Set<string>;
  domain: string | null;
  editedFields: Map<string, FakeField>;
}

/** A Document entity (documents.graphql). */
export interface FakeDocument {
  title: string | null;
  text: string;
  subType: string | null;
  state: 'PUBLISHED' | 'UNPUBLISHED';
  showInGlobalContext: boolean;
  tags: Set<string>;
  terms: Set<string>;
  domain: string | null;
}

export interface RecordedGraphql {
  readonly operation: string | undefined;
  readonly authorization: string | undefined;
  readonly variables: Record<string, unknown>;
}

export interface FakeDataHub {
  readonly url: string;
  readonly token: string;
  /** Keyed by urn. */
  readonly tags: Map<string, FakeDefinition>;
  readonly terms: Map<string, FakeDefinition>;
  readonly domains: Map<string, FakeDefinition>;
  readonly datasets: Map<string, FakeDataset>;
  readonly documents: Map<string, FakeDocument>;
  readonly requests: RecordedGraphql[];
  down: boolean;
  /** The next N requests are answered 500. */
  failNext: number;
  addDataset(urn: string, fields: readonly string[]): void;
  reset(): void;
  stop(): Promise<void>;
}

class GraphqlError extends Error {}

const named = (urn: string, def: FakeDefinition) => ({
  urn,
  name: def.name,
  properties: { name: def.name, description: def.description },
});

export async function startFakeDataHub(options: { token?: string } = {}): Promise<FakeDataHub> {
  const token = options.token ?? 'datahub-pat-0123456789';
  const state = {
    token,
    tags: new Map<string, FakeDefinition>(),
    terms: new Map<string, FakeDefinition>(),
    domains: new Map<string, FakeDefinition>(),
    datasets: new Map<string, FakeDataset>(),
    documents: new Map<string, FakeDocument>(),
    requests: [] as RecordedGraphql[],
    down: false,
    failNext: 0,
    addDataset(urn: string, fields: readonly string[]) {
      state.datasets.set(urn, {
        fields: new Set(fields),
        description: null,
        tags: new Set(),
        terms: new Set(),
        domain: null,
        editedFields: new Map(),
      });
    },
    reset() {
      state.tags.clear();
      state.terms.clear();
      state.domains.clear();
      state.datasets.clear();
      state.documents.clear();
      state.requests.length = 0;
      state.down = false;
      state.failNext = 0;
    },
  };

  const tagsOf = (urns: Set<string>) => ({
    tags: [...urns].map((urn) => ({ tag: named(urn, state.tags.get(urn)!), associatedUrn: urn })),
  });
  const termsOf = (urns: Set<string>) => ({
    terms: [...urns].map((urn) => ({ term: named(urn, state.terms.get(urn)!), associatedUrn: urn })),
  });
  const domainOf = (urn: string | null) => {
    const domain = urn ? state.domains.get(urn) : undefined;
    return domain
      ? { domain: { urn, properties: { name: domain.name, description: domain.description } }, associatedUrn: urn }
      : null;
  };

  const renderDataset = (urn: string, d: FakeDataset) => ({
    __typename: 'Dataset',
    urn,
    type: 'DATASET',
    exists: true,
    editableProperties: d.description === null ? null : { description: d.description },
    tags: d.tags.size ? tagsOf(d.tags) : null,
    glossaryTerms: d.terms.size ? termsOf(d.terms) : null,
    domain: domainOf(d.domain),
    editableSchemaMetadata: d.editedFields.size
      ? {
          editableSchemaFieldInfo: [...d.editedFields].map(([fieldPath, f]) => ({
            fieldPath,
            description: f.description,
            globalTags: f.tags.size ? tagsOf(f.tags) : null,
            glossaryTerms: f.terms.size ? termsOf(f.terms) : null,
          })),
        }
      : null,
  });

  const renderDocument = (urn: string, d: FakeDocument) => ({
    __typename: 'Document',
    urn,
    type: 'DOCUMENT',
    exists: true,
    subType: d.subType,
    info: { title: d.title, status: { state: d.state }, contents: { text: d.text } },
    settings: { showInGlobalContext: d.showInGlobalContext },
    tags: d.tags.size ? tagsOf(d.tags) : null,
    glossaryTerms: d.terms.size ? termsOf(d.terms) : null,
    domain: domainOf(d.domain),
  });

  /** GMS's label validation: the entity (a dataset or a document), the field and every label must exist. */
  const target = (
    input: Record<string, unknown>,
  ): { entity: FakeDataset | FakeDocument; field: FakeField | undefined } => {
    const urn = String(input.resourceUrn);
    const entity = urn.startsWith('urn:li:document:') ? state.documents.get(urn) : state.datasets.get(urn);
    if (!entity) throw new GraphqlError(`Failed to update resource with urn ${urn}. Entity does not exist.`);
    if (input.subResource === undefined || input.subResource === null) return { entity, field: undefined };
    const path = String(input.subResource);
    if (input.subResourceType !== 'DATASET_FIELD' || !('fields' in entity))
      throw new GraphqlError(`Unsupported sub resource type ${String(input.subResourceType)} for ${urn}`);
    if (!entity.fields.has(path))
      throw new GraphqlError(`Failed to update resource with urn ${urn}. Field ${path} does not exist.`);
    let field = entity.editedFields.get(path);
    if (!field) entity.editedFields.set(path, (field = { description: null, tags: new Set(), terms: new Set() }));
    return { entity, field };
  };

  const create = (store: Map<string, FakeDefinition>, prefix: string, kind: string, input: Record<string, unknown>) => {
    const id = typeof input.id === 'string' && input.id ? input.id : crypto.randomUUID();
    const urn = `${prefix}${id}`;
    if (store.has(urn)) throw new GraphqlError(`This ${kind} already exists!`);
    const description = typeof input.description === 'string' ? input.description : null;
    store.set(urn, { name: String(input.name ?? id), description });
    return urn;
  };

  const page = <T>(all: T[], input: Record<string, unknown>) => {
    const start = Number(input.start ?? 0);
    const count = Number(input.count ?? 10);
    const slice = all.slice(start, start + count);
    return { start, count: slice.length, total: all.length, slice };
  };

  type Args = Record<string, unknown>;
  /** Root fields, each given its arguments (variables already bound). */
  const resolvers: Record<string, (args: Args) => unknown> = {
    tag: ({ urn }) => {
      const def = state.tags.get(String(urn));
      // GMS answers a tag it does not have with the urn alone.
      return def ? named(String(urn), def) : { urn, name: String(urn).slice(11), properties: null };
    },
    glossaryTerm: ({ urn }) => {
      const def = state.terms.get(String(urn));
      return def ? named(String(urn), def) : null;
    },
    domain: ({ urn }) => {
      const def = state.domains.get(String(urn));
      return def ? { urn, properties: { name: def.name, description: def.description } } : null;
    },
    createTag: ({ input }) => create(state.tags, 'urn:li:tag:', 'Tag', input as Args),
    createGlossaryTerm: ({ input }) => create(state.terms, 'urn:li:glossaryTerm:', 'Glossary Term', input as Args),
    createDomain: ({ input }) => create(state.domains, 'urn:li:domain:', 'Domain', input as Args),
    searchAcrossEntities: ({ input }) => {
      const i = input as { types?: string[]; orFilters?: { and: { field: string; values?: string[] }[] }[] } & Args;
      // GMS: a result matches when every criterion of one of the `orFilters` holds.
      const matches = (domain: string | null) =>
        !i.orFilters?.length ||
        i.orFilters.some((f) =>
          f.and.every((c) => {
            if (c.field !== 'domains') throw new GraphqlError(`unsupported filter field ${c.field}`);
            return domain !== null && (c.values ?? []).includes(domain);
          }),
        );
      const all: Record<string, unknown>[] = [];
      const types = i.types ?? ['TAG', 'GLOSSARY_TERM', 'DATASET', 'DOCUMENT'];
      const filtered = Boolean(i.orFilters?.length);
      if (types.includes('TAG') && !filtered)
        for (const [urn, def] of state.tags) all.push({ ...named(urn, def), __typename: 'Tag', type: 'TAG' });
      if (types.includes('GLOSSARY_TERM') && !filtered)
        for (const [urn, def] of state.terms)
          all.push({ ...named(urn, def), __typename: 'GlossaryTerm', type: 'GLOSSARY_TERM' });
      if (types.includes('DATASET'))
        for (const [urn, d] of state.datasets) if (matches(d.domain)) all.push(renderDataset(urn, d));
      if (types.includes('DOCUMENT'))
        for (const [urn, d] of state.documents) if (matches(d.domain)) all.push(renderDocument(urn, d));
      const { slice, ...rest } = page(all, i);
      return { ...rest, searchResults: slice.map((entity) => ({ entity, matchedFields: [] })) };
    },
    listDomains: ({ input }) => {
      const all = [...state.domains].map(([urn, def]) => ({
        urn,
        properties: { name: def.name, description: def.description },
      }));
      const { slice, ...rest } = page(all, input as Args);
      return { ...rest, domains: slice };
    },
    dataset: ({ urn }) => {
      const d = state.datasets.get(String(urn));
      return d ? renderDataset(String(urn), d) : null;
    },
    document: ({ urn }) => {
      const d = state.documents.get(String(urn));
      return d ? renderDocument(String(urn), d) : null;
    },
    createDocument: ({ input }) => {
      const i = input as {
        id?: string;
        title?: string;
        subType?: string;
        state?: 'PUBLISHED' | 'UNPUBLISHED';
        contents: { text: string };
        settings?: { showInGlobalContext?: boolean };
      };
      const id = i.id || crypto.randomUUID();
      const urn = `urn:li:document:${id}`;
      // CreateDocumentResolver wraps DocumentService's refusal.
      if (state.documents.has(urn))
        throw new GraphqlError(`Failed to create Document: Document with ID ${id} already exists`);
      state.documents.set(urn, {
        title: i.title ?? null,
        text: i.contents.text,
        subType: i.subType ?? null,
        state: i.state ?? 'UNPUBLISHED',
        showInGlobalContext: i.settings?.showInGlobalContext ?? true,
        tags: new Set(),
        terms: new Set(),
        domain: null,
      });
      return urn;
    },
    updateDocumentContents: ({ input }) => {
      const i = input as { urn: string; title?: string; contents?: { text: string }; subType?: string };
      const doc = state.documents.get(i.urn);
      if (!doc) throw new GraphqlError(`Failed to update document contents: Document with URN ${i.urn} does not exist`);
      if (i.contents) doc.text = i.contents.text;
      if (i.title !== undefined && i.title !== null) doc.title = i.title;
      if (i.subType !== undefined && i.subType !== null) doc.subType = i.subType;
      return true;
    },
    deleteDocument: ({ urn }) => {
      if (!state.documents.delete(String(urn)))
        throw new GraphqlError(`Failed to delete Document: Document with URN ${String(urn)} does not exist`);
      return true;
    },
    addTags: ({ input }) => {
      const i = input as { tagUrns: string[] } & Args;
      for (const urn of i.tagUrns)
        if (!state.tags.has(urn)) throw new GraphqlError(`Failed to add Tag ${urn}: it does not exist.`);
      const { entity, field } = target(i);
      for (const urn of i.tagUrns) (field ?? entity).tags.add(urn);
      return true;
    },
    addTerms: ({ input }) => {
      const i = input as { termUrns: string[] } & Args;
      for (const urn of i.termUrns)
        if (!state.terms.has(urn)) throw new GraphqlError(`Failed to add Glossary Term ${urn}: it does not exist.`);
      const { entity, field } = target(i);
      for (const urn of i.termUrns) (field ?? entity).terms.add(urn);
      return true;
    },
    updateDescription: ({ input }) => {
      const i = input as { description: string } & Args;
      const urn = String(i.resourceUrn);
      // UpdateDescriptionResolver switches on the entity type: no case for documents.
      if (urn.startsWith('urn:li:document:'))
        throw new GraphqlError(`Failed to update description. Unsupported resource type ${urn} provided.`);
      // ... and for a dataset only on a field: "Update description without subresource is not currently supported".
      if (i.subResourceType === undefined || i.subResourceType === null)
        throw new GraphqlError('Update description without subresource is not currently supported');
      const { field } = target(i);
      field!.description = i.description;
      return true;
    },
    // The dataset's editable properties (what DataHub's UI sends to change a description).
    updateDataset: ({ urn, input }) => {
      const dataset = state.datasets.get(String(urn));
      if (!dataset) throw new GraphqlError(`Failed to update resource with urn ${String(urn)}. Entity does not exist.`);
      const i = input as { editableProperties?: { description: string } };
      if (i.editableProperties) dataset.description = i.editableProperties.description;
      return renderDataset(String(urn), dataset);
    },
    setDomain: ({ domainUrn, entityUrn }) => {
      if (!state.domains.has(String(domainUrn)))
        throw new GraphqlError(
          `Failed to set Domain for resource with urn ${String(entityUrn)}. Domain does not exist.`,
        );
      const { entity } = target({ resourceUrn: entityUrn });
      entity.domain = String(domainUrn);
      return true;
    },
    // RemoveTagResolver: the resource must exist; a tag it does not carry is no change.
    removeTag: ({ input }) => {
      const i = input as { tagUrn: string } & Args;
      const { entity, field } = target(i);
      (field ?? entity).tags.delete(i.tagUrn);
      return true;
    },
    unsetDomain: ({ entityUrn }) => {
      const { entity } = target({ resourceUrn: entityUrn });
      entity.domain = null;
      return true;
    },
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.statusCode = status;
    res.setHeader('content-type', typeof body === 'string' ? 'text/plain' : 'application/json');
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };

  function handle(req: IncomingMessage, res: ServerResponse, raw: string) {
    let body: { query?: unknown; variables?: unknown } = {};
    try {
      body = raw ? (JSON.parse(raw) as typeof body) : {};
    } catch {
      // answered below
    }
    const query = typeof body.query === 'string' ? body.query : '';
    const operation = /^\s*(?:query|mutation)\s+(\w+)/.exec(query)?.[1];
    const variables =
      body.variables && typeof body.variables === 'object' ? (body.variables as Record<string, unknown>) : {};
    state.requests.push({ operation, authorization: req.headers.authorization, variables });

    if (state.failNext > 0) {
      state.failNext -= 1;
      return send(res, 500, 'Internal Server Error');
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/api/graphql' || req.method !== 'POST') return send(res, 404, 'Not Found');
    if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, 'Unauthorized to perform this action.');
    let parsed: ParsedOperation;
    try {
      parsed = parseOperation(query);
      validateOperation(parsed, variables);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      return send(res, 200, {
        errors: [{ message: err.message, locations: [], extensions: { classification: 'ValidationError' } }],
      });
    }
    const data: Record<string, unknown> = {};
    const rootType = parsed.kind === 'query' ? 'Query' : 'Mutation';
    for (const selection of parsed.selections) {
      const args = Object.fromEntries([...selection.args].map(([arg, v]) => [arg, variables[v]]));
      try {
        const value = resolvers[selection.name]!(args);
        data[selection.name] = project(value, selection.selections, namedType(OUTPUT[rootType]![selection.name]!));
      } catch (err) {
        if (!(err instanceof GraphqlError)) throw err;
        return send(res, 200, {
          errors: [
            {
              message: err.message,
              locations: [{ line: 1, column: 1 }],
              path: [selection.name],
              extensions: { code: 400, type: 'BAD_REQUEST', classification: 'DataFetchingException' },
            },
          ],
          data: { ...data, [selection.name]: null },
        });
      }
    }
    return send(res, 200, { data });
  }

  const server: Server = createServer((req, res) => {
    if (state.down) {
      req.socket.destroy();
      return;
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      try {
        handle(req, res, raw);
      } catch (err) {
        send(res, 500, String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return Object.assign(state, {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

// ---------------------------------------------------------------------------------------
// The part of DataHub's GraphQL schema (datahub-graphql-core/src/main/resources: entity.graphql,
// search.graphql, documents.graphql) that the adapter's operations touch. Like GMS
// (graphql-java), the server validates every request against it before running it: an
// unknown operation, field, argument or input field, a variable of the wrong type, a missing
// required input field or an enum value DataHub does not have is a ValidationError, and an
// answer holds exactly the fields the query selected.
// ---------------------------------------------------------------------------------------

/** Output types: field → type (`[T!]`, `T!` markers kept only for reading). */
const OUTPUT: Record<string, Record<string, string>> = {
  Query: {
    tag: 'Tag',
    glossaryTerm: 'GlossaryTerm',
    domain: 'Domain',
    dataset: 'Dataset',
    document: 'Document',
    searchAcrossEntities: 'SearchResults',
    listDomains: 'ListDomainsResult',
  },
  Mutation: {
    createTag: 'String',
    createGlossaryTerm: 'String',
    createDomain: 'String',
    addTags: 'Boolean',
    addTerms: 'Boolean',
    updateDescription: 'Boolean',
    setDomain: 'Boolean',
    removeTag: 'Boolean',
    unsetDomain: 'Boolean',
    createDocument: 'String!',
    deleteDocument: 'Boolean!',
    updateDocumentContents: 'Boolean!',
    updateDataset: 'Dataset',
  },
  Tag: { urn: 'String!', type: 'EntityType!', name: 'String!', description: 'String', properties: 'TagProperties' },
  TagProperties: { name: 'String!', description: 'String', colorHex: 'String' },
  GlossaryTerm: {
    urn: 'String!',
    type: 'EntityType!',
    name: 'String!',
    hierarchicalName: 'String!',
    properties: 'GlossaryTermProperties',
  },
  GlossaryTermProperties: { name: 'String!', description: 'String', definition: 'String!', termSource: 'String!' },
  Domain: { urn: 'String!', type: 'EntityType!', id: 'String!', properties: 'DomainProperties' },
  DomainProperties: { name: 'String!', description: 'String' },
  Dataset: {
    urn: 'String!',
    type: 'EntityType!',
    name: 'String!',
    exists: 'Boolean',
    editableProperties: 'DatasetEditableProperties',
    tags: 'GlobalTags',
    glossaryTerms: 'GlossaryTerms',
    domain: 'DomainAssociation',
    editableSchemaMetadata: 'EditableSchemaMetadata',
  },
  DatasetEditableProperties: { description: 'String', name: 'String' },
  GlobalTags: { tags: '[TagAssociation!]' },
  TagAssociation: { tag: 'Tag!', associatedUrn: 'String!' },
  GlossaryTerms: { terms: '[GlossaryTermAssociation!]' },
  GlossaryTermAssociation: { term: 'GlossaryTerm!', associatedUrn: 'String!' },
  DomainAssociation: { domain: 'Domain!', associatedUrn: 'String!' },
  EditableSchemaMetadata: { editableSchemaFieldInfo: '[EditableSchemaFieldInfo!]!' },
  EditableSchemaFieldInfo: {
    fieldPath: 'String!',
    description: 'String',
    globalTags: 'GlobalTags',
    glossaryTerms: 'GlossaryTerms',
  },
  // documents.graphql: `type Document implements Entity` (no description field: its
  // editable text is `info.contents.text`).
  Document: {
    urn: 'String!',
    type: 'EntityType!',
    lastIngested: 'Long',
    info: 'DocumentInfo',
    settings: 'DocumentSettings',
    subType: 'String',
    tags: 'GlobalTags',
    glossaryTerms: 'GlossaryTerms',
    domain: 'DomainAssociation',
    exists: 'Boolean',
  },
  DocumentInfo: { title: 'String', status: 'DocumentStatus', contents: 'DocumentContent!' },
  DocumentStatus: { state: 'DocumentState!' },
  DocumentContent: { text: 'String!' },
  DocumentSettings: { showInGlobalContext: 'Boolean!' },
  SearchResults: { start: 'Int!', count: 'Int!', total: 'Int!', searchResults: '[SearchResult!]!' },
  SearchResult: { entity: 'Entity!', matchedFields: '[MatchedField!]!' },
  MatchedField: { name: 'String!', value: 'String!' },
  ListDomainsResult: { start: 'Int!', count: 'Int!', total: 'Int!', domains: '[Domain!]!' },
  Entity: { urn: 'String!', type: 'EntityType!' },
};

/** Interfaces and the types that implement them (for `... on T`). */
const IMPLEMENTATIONS: Record<string, readonly string[]> = {
  Entity: ['Tag', 'GlossaryTerm', 'Domain', 'Dataset', 'Document'],
};

const ENUMS: Record<string, readonly string[]> = {
  EntityType: ['DATASET', 'DOCUMENT', 'TAG', 'GLOSSARY_TERM', 'DOMAIN', 'CONTAINER', 'DASHBOARD', 'CHART'],
  DocumentState: ['PUBLISHED', 'UNPUBLISHED'],
  SubResourceType: ['DATASET_FIELD'],
  FilterOperator: ['EQUAL', 'CONTAIN', 'IN', 'EXISTS', 'GREATER_THAN', 'LESS_THAN', 'START_WITH', 'END_WITH'],
};

const SCALARS = new Set(['String', 'Boolean', 'Int', 'Long', 'Float', 'ID']);

/** Input types: field → type (`!` required, `[T]` a list). */
const INPUT: Record<string, Record<string, string>> = {
  CreateTagInput: { id: 'String', name: 'String!', description: 'String' },
  CreateGlossaryEntityInput: { id: 'String', name: 'String!', description: 'String', parentNode: 'String' },
  CreateDomainInput: { id: 'String', name: 'String!', description: 'String', parentDomain: 'String' },
  SearchAcrossEntitiesInput: {
    types: '[EntityType!]',
    query: 'String!',
    start: 'Int',
    count: 'Int',
    filters: '[FacetFilterInput!]',
    orFilters: '[AndFilterInput!]',
    viewUrn: 'String',
  },
  AndFilterInput: { and: '[FacetFilterInput!]' },
  FacetFilterInput: {
    field: 'String!',
    value: 'String',
    values: '[String!]',
    negated: 'Boolean',
    condition: 'FilterOperator',
  },
  ListDomainsInput: { start: 'Int', count: 'Int', query: 'String', parentDomain: 'String' },
  AddTagsInput: {
    tagUrns: '[String!]!',
    resourceUrn: 'String!',
    subResourceType: 'SubResourceType',
    subResource: 'String',
  },
  AddTermsInput: {
    termUrns: '[String!]!',
    resourceUrn: 'String!',
    subResourceType: 'SubResourceType',
    subResource: 'String',
  },
  TagAssociationInput: {
    tagUrn: 'String!',
    resourceUrn: 'String!',
    subResourceType: 'SubResourceType',
    subResource: 'String',
  },
  DescriptionUpdateInput: {
    description: 'String!',
    resourceUrn: 'String!',
    subResourceType: 'SubResourceType',
    subResource: 'String',
  },
  DatasetUpdateInput: {
    editableProperties: 'DatasetEditablePropertiesUpdate',
    tags: 'GlobalTagsUpdate',
    globalTags: 'GlobalTagsUpdate',
  },
  DatasetEditablePropertiesUpdate: { description: 'String!' },
  GlobalTagsUpdate: { tags: '[TagAssociationUpdate!]' },
  TagAssociationUpdate: { tag: 'TagUpdateInput!' },
  TagUpdateInput: { urn: 'String!', name: 'String!', description: 'String' },
  // documents.graphql
  CreateDocumentInput: {
    id: 'String',
    subType: 'String',
    title: 'String',
    state: 'DocumentState',
    contents: 'DocumentContentInput!',
    owners: '[OwnerInput!]',
    parentDocument: 'String',
    relatedAssets: '[String!]',
    relatedDocuments: '[String!]',
    settings: 'DocumentSettingsInput',
  },
  DocumentContentInput: { text: 'String!' },
  DocumentSettingsInput: { showInGlobalContext: 'Boolean' },
  OwnerInput: { ownerUrn: 'String!', ownerEntityType: 'String!', type: 'String', ownershipTypeUrn: 'String' },
  UpdateDocumentContentsInput: {
    urn: 'String!',
    title: 'String',
    contents: 'DocumentContentInput',
    subType: 'String',
  },
};

/** The arguments of the root fields: name → type. */
const ARGS: Record<string, Record<string, string>> = {
  tag: { urn: 'String!' },
  glossaryTerm: { urn: 'String!' },
  domain: { urn: 'String!' },
  dataset: { urn: 'String!' },
  document: { urn: 'String!' },
  searchAcrossEntities: { input: 'SearchAcrossEntitiesInput!' },
  listDomains: { input: 'ListDomainsInput!' },
  createTag: { input: 'CreateTagInput!' },
  createGlossaryTerm: { input: 'CreateGlossaryEntityInput!' },
  createDomain: { input: 'CreateDomainInput!' },
  addTags: { input: 'AddTagsInput!' },
  addTerms: { input: 'AddTermsInput!' },
  updateDescription: { input: 'DescriptionUpdateInput!' },
  setDomain: { entityUrn: 'String!', domainUrn: 'String!' },
  removeTag: { input: 'TagAssociationInput!' },
  unsetDomain: { entityUrn: 'String!' },
  createDocument: { input: 'CreateDocumentInput!' },
  deleteDocument: { urn: 'String!' },
  updateDocumentContents: { input: 'UpdateDocumentContentsInput!' },
  updateDataset: { urn: 'String!', input: 'DatasetUpdateInput!' },
};

const namedType = (type: string): string => type.replace(/[[\]!]/g, '');

class ValidationError extends Error {}

/** One selected field (or an inline fragment when `on` is set). */
interface Selection {
  readonly name: string;
  readonly on?: string;
  readonly args: Map<string, string>;
  readonly selections: Selection[];
}

interface ParsedOperation {
  readonly kind: 'query' | 'mutation';
  readonly name: string;
  /** `$name` → declared type. */
  readonly variables: Map<string, string>;
  readonly selections: Selection[];
}

/** Parses the subset of GraphQL the adapter writes: one named operation, fields, arguments bound to variables, inline fragments. */
function parseOperation(text: string): ParsedOperation {
  const tokens =
    text.match(/\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\$[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*"|-?\d+|[{}()[\]:!,=]/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const next = () => {
    const t = tokens[i++];
    if (t === undefined) throw new ValidationError('Invalid Syntax : unexpected end of document');
    return t;
  };
  const expect = (t: string) => {
    const got = next();
    if (got !== t) throw new ValidationError(`Invalid Syntax : expected '${t}' but found '${got}'`);
  };
  const typeRef = (): string => {
    let t = '';
    if (peek() === '[') {
      next();
      t = `[${typeRef()}]`;
      expect(']');
    } else t = next();
    if (peek() === '!') t += next();
    return t;
  };
  const kind = next();
  if (kind !== 'query' && kind !== 'mutation') throw new ValidationError(`Invalid Syntax : unexpected '${kind}'`);
  const name = peek() !== '(' && peek() !== '{' ? next() : '';
  const variables = new Map<string, string>();
  if (peek() === '(') {
    next();
    while (peek() !== ')') {
      const v = next();
      if (!v.startsWith('$')) throw new ValidationError(`Invalid Syntax : expected a variable, found '${v}'`);
      expect(':');
      variables.set(v.slice(1), typeRef());
      if (peek() === ',') next();
    }
    next();
  }
  const selectionSet = (): Selection[] => {
    expect('{');
    const out: Selection[] = [];
    while (peek() !== '}') {
      if (peek() === '...') {
        next();
        expect('on');
        const on = next();
        out.push({ name: '', on, args: new Map(), selections: selectionSet() });
        continue;
      }
      const field = next();
      const args = new Map<string, string>();
      if (peek() === '(') {
        next();
        while (peek() !== ')') {
          const arg = next();
          expect(':');
          const value = next();
          if (!value.startsWith('$'))
            throw new ValidationError(`the fake accepts only variables as arguments (${field}.${arg})`);
          args.set(arg, value.slice(1));
          if (peek() === ',') next();
        }
        next();
      }
      out.push({ name: field, args, selections: peek() === '{' ? selectionSet() : [] });
      if (peek() === ',') next();
    }
    next();
    return out;
  };
  const selections = selectionSet();
  if (i !== tokens.length) throw new ValidationError('Invalid Syntax : more than one operation');
  return { kind, name, variables, selections };
}

/** graphql-java's checks of a parsed operation against the schema above. */
function validateOperation(op: ParsedOperation, variables: Record<string, unknown>): void {
  const used = new Set<string>();
  const fields = (type: string, selections: Selection[], path: string) => {
    const def = OUTPUT[type];
    if (!def) throw new ValidationError(`Validation error (UnknownType) : Unknown type '${type}'`);
    for (const s of selections) {
      if (s.on) {
        const ok = s.on === type || (IMPLEMENTATIONS[type] ?? []).includes(s.on);
        if (!ok || !OUTPUT[s.on])
          throw new ValidationError(
            `Validation error (InlineFragmentTypeConditionInvalid@[${path}]) : Inline fragment type condition is invalid, must be on Object/Interface/Union`,
          );
        fields(s.on, s.selections, path);
        continue;
      }
      const where = path ? `${path}/${s.name}` : s.name;
      const fieldType = def[s.name];
      if (fieldType === undefined)
        throw new ValidationError(
          `Validation error (FieldUndefined@[${where}]) : Field '${s.name}' in type '${type}' is undefined`,
        );
      const args = type === 'Query' || type === 'Mutation' ? (ARGS[s.name] ?? {}) : {};
      for (const [arg, variable] of s.args) {
        const argType = args[arg];
        if (argType === undefined)
          throw new ValidationError(`Validation error (UnknownArgument@[${where}]) : Unknown field argument '${arg}'`);
        const declared = op.variables.get(variable);
        if (declared === undefined)
          throw new ValidationError(
            `Validation error (UndefinedVariable@[${where}]) : Undefined variable '${variable}'`,
          );
        if (declared !== argType)
          throw new ValidationError(
            `Validation error (VariableTypeMismatch@[${where}]) : Variable type '${declared}' does not match expected type '${argType}'`,
          );
        used.add(variable);
      }
      for (const [arg, argType] of Object.entries(args))
        if (argType.endsWith('!') && !s.args.has(arg))
          throw new ValidationError(
            `Validation error (MissingFieldArgument@[${where}]) : Missing field argument '${arg}'`,
          );
      const leaf = SCALARS.has(namedType(fieldType)) || ENUMS[namedType(fieldType)] !== undefined;
      if (leaf && s.selections.length)
        throw new ValidationError(
          `Validation error (SubselectionNotAllowed@[${where}]) : Subselection not allowed on leaf type '${namedType(fieldType)}' of field '${s.name}'`,
        );
      if (!leaf && !s.selections.length)
        throw new ValidationError(
          `Validation error (SubselectionRequired@[${where}]) : Subselection required for type '${namedType(fieldType)}' of field '${s.name}'`,
        );
      if (!leaf) fields(namedType(fieldType), s.selections, where);
    }
  };
  fields(op.kind === 'query' ? 'Query' : 'Mutation', op.selections, '');
  for (const [variable, type] of op.variables) {
    if (!used.has(variable))
      throw new ValidationError(`Validation error (UnusedVariable) : Unused variable '${variable}'`);
    coerce(variable, type, variables[variable], variable);
  }
}

/** A variable's value checked against its input type, as graphql-java coerces it. */
function coerce(variable: string, type: string, value: unknown, path: string): void {
  const invalid = (why: string) => new ValidationError(`Variable '${variable}' has an invalid value: ${why}`);
  if (value === undefined || value === null) {
    if (type.endsWith('!')) throw invalid(`Variable '${path}' has coerced Null value for NonNull type '${type}'`);
    return;
  }
  const inner = type.endsWith('!') ? type.slice(0, -1) : type;
  if (inner.startsWith('[')) {
    const item = inner.slice(1, -1);
    for (const [n, v] of (Array.isArray(value) ? value : [value]).entries()) coerce(variable, item, v, `${path}[${n}]`);
    return;
  }
  if (inner === 'String' || inner === 'ID') {
    if (typeof value !== 'string') throw invalid(`Expected type 'String' but was '${typeof value}' at '${path}'`);
  } else if (inner === 'Int' || inner === 'Long') {
    if (!Number.isInteger(value)) throw invalid(`Expected type '${inner}' but was '${typeof value}' at '${path}'`);
  } else if (inner === 'Boolean') {
    if (typeof value !== 'boolean') throw invalid(`Expected type 'Boolean' but was '${typeof value}' at '${path}'`);
  } else if (ENUMS[inner]) {
    if (typeof value !== 'string' || !ENUMS[inner].includes(value))
      throw invalid(`Invalid input for enum '${inner}'. No value found for name '${String(value)}'`);
  } else if (INPUT[inner]) {
    if (typeof value !== 'object' || Array.isArray(value)) throw invalid(`Expected type '${inner}' at '${path}'`);
    const def = INPUT[inner];
    for (const key of Object.keys(value))
      if (!Object.hasOwn(def, key))
        throw invalid(`Input field '${key}' is not defined for type '${inner}' (at '${path}')`);
    for (const [key, fieldType] of Object.entries(def))
      coerce(variable, fieldType, (value as Record<string, unknown>)[key], `${path}.${key}`);
  } else throw invalid(`Unknown type '${inner}'`);
}

/** The answer cut to what the query selected (a missing field is null), as GraphQL answers. */
function project(value: unknown, selections: Selection[], type: string): unknown {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map((v) => project(v, selections, type));
  if (!selections.length) return value;
  const obj = value as Record<string, unknown>;
  const concrete = typeof obj.__typename === 'string' ? obj.__typename : type;
  const out: Record<string, unknown> = {};
  for (const s of selections) {
    if (s.on) {
      if (s.on === concrete) Object.assign(out, project(obj, s.selections, s.on));
      continue;
    }
    const fieldType = OUTPUT[concrete]?.[s.name] ?? OUTPUT[type]?.[s.name] ?? 'String';
    out[s.name] = project(obj[s.name], s.selections, namedType(fieldType));
  }
  return out;
}
