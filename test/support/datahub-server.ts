import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that answers as DataHub GMS's GraphQL API (`POST /api/graphql`,
 * `Authorization: Bearer <token>`; datahub-graphql-core's schema) for exactly the
 * operations the DataHub adapter sends, told apart by the operation name in the query
 * text (`query GetTag(...)`, `mutation AddTags(...)`) and read from `variables`:
 * - `tag(urn)` / `glossaryTerm(urn)` / `domain(urn)`: a tag that does not exist comes back
 *   as GMS does, with its urn and no `properties`; a missing term or domain is null;
 * - `createTag` / `createGlossaryTerm` / `createDomain` with `{id, name, description}`,
 *   answering the new urn, or a GraphQL error when it exists already (as GMS does);
 * - `searchAcrossEntities(input: {types, query, start, count})` for TAG / GLOSSARY_TERM and
 *   `listDomains(input: {start, count})`, paged; for DATASET (operation DomainDatasets)
 *   with `orFilters` on the `domains` field, the datasets inlined (`... on Dataset`);
 * - `dataset(urn)` with editableProperties, tags, glossaryTerms, domain and
 *   editableSchemaMetadata (null for a dataset DataHub does not have);
 * - `addTags` / `addTerms` / `updateDescription` (optionally on a `subResource` of type
 *   DATASET_FIELD) and `setDomain`: like GMS they refuse an entity DataHub does not have,
 *   a field not in its schema, and tags, terms or domains that do not exist.
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
      state.requests.length = 0;
      state.down = false;
      state.failNext = 0;
    },
  };

  const tagsOf = (urns: Set<string>) => ({
    tags: [...urns].map((urn) => ({ tag: named(urn, state.tags.get(urn)!) })),
  });
  const termsOf = (urns: Set<string>) => ({
    terms: [...urns].map((urn) => ({ term: named(urn, state.terms.get(urn)!) })),
  });

  const renderDataset = (urn: string, d: FakeDataset) => {
    const domain = d.domain ? state.domains.get(d.domain) : undefined;
    return {
      urn,
      editableProperties: d.description === null ? null : { description: d.description },
      tags: d.tags.size ? tagsOf(d.tags) : null,
      glossaryTerms: d.terms.size ? termsOf(d.terms) : null,
      domain: domain
        ? { domain: { urn: d.domain, properties: { name: domain.name, description: domain.description } } }
        : null,
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
    };
  };

  /** GMS's label validation: the entity, the field and every label must exist. */
  const target = (input: Record<string, unknown>): { dataset: FakeDataset; field: FakeField | undefined } => {
    const urn = String(input.resourceUrn);
    const dataset = state.datasets.get(urn);
    if (!dataset) throw new GraphqlError(`Failed to update resource with urn ${urn}. Entity does not exist.`);
    if (input.subResource === undefined || input.subResource === null) return { dataset, field: undefined };
    const path = String(input.subResource);
    if (input.subResourceType !== 'DATASET_FIELD')
      throw new GraphqlError(`Unsupported sub resource type ${String(input.subResourceType)}`);
    if (!dataset.fields.has(path))
      throw new GraphqlError(`Failed to update resource with urn ${urn}. Field ${path} does not exist.`);
    let field = dataset.editedFields.get(path);
    if (!field) dataset.editedFields.set(path, (field = { description: null, tags: new Set(), terms: new Set() }));
    return { dataset, field };
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

  const operations: Record<string, (v: Record<string, unknown>) => Record<string, unknown>> = {
    GetTag: ({ urn }) => {
      const def = state.tags.get(String(urn));
      // GMS answers a tag it does not have with the urn alone.
      return { tag: def ? named(String(urn), def) : { urn, name: String(urn).slice(11), properties: null } };
    },
    GetGlossaryTerm: ({ urn }) => {
      const def = state.terms.get(String(urn));
      return { glossaryTerm: def ? named(String(urn), def) : null };
    },
    GetDomain: ({ urn }) => {
      const def = state.domains.get(String(urn));
      return { domain: def ? { urn, properties: { name: def.name, description: def.description } } : null };
    },
    CreateTag: ({ input }) => ({
      createTag: create(state.tags, 'urn:li:tag:', 'Tag', input as Record<string, unknown>),
    }),
    CreateGlossaryTerm: ({ input }) => ({
      createGlossaryTerm: create(
        state.terms,
        'urn:li:glossaryTerm:',
        'Glossary Term',
        input as Record<string, unknown>,
      ),
    }),
    CreateDomain: ({ input }) => ({
      createDomain: create(state.domains, 'urn:li:domain:', 'Domain', input as Record<string, unknown>),
    }),
    SearchEntities: ({ input }) => {
      const i = input as { types?: string[] } & Record<string, unknown>;
      const all: Record<string, unknown>[] = [];
      if (i.types?.includes('TAG')) for (const [urn, def] of state.tags) all.push({ ...named(urn, def), type: 'TAG' });
      if (i.types?.includes('GLOSSARY_TERM'))
        for (const [urn, def] of state.terms) all.push({ ...named(urn, def), type: 'GLOSSARY_TERM' });
      const { slice, ...rest } = page(all, i);
      return {
        searchAcrossEntities: { ...rest, searchResults: slice.map((entity) => ({ entity, matchedFields: [] })) },
      };
    },
    ListDomains: ({ input }) => {
      const all = [...state.domains].map(([urn, def]) => ({
        urn,
        properties: { name: def.name, description: def.description },
      }));
      const { slice, ...rest } = page(all, input as Record<string, unknown>);
      return { listDomains: { ...rest, domains: slice } };
    },
    GetDataset: ({ urn }) => {
      const d = state.datasets.get(String(urn));
      return { dataset: d ? renderDataset(String(urn), d) : null };
    },
    DomainDatasets: ({ input }) => {
      const i = input as { types?: string[]; orFilters?: { and: { field: string; values: string[] }[] }[] } & Record<
        string,
        unknown
      >;
      if (!i.types?.includes('DATASET')) throw new GraphqlError('DomainDatasets: expected types [DATASET]');
      // GMS: a result matches when every criterion of one of the `orFilters` holds.
      const matches = (d: FakeDataset) =>
        !i.orFilters?.length ||
        i.orFilters.some((f) =>
          f.and.every((c) => {
            if (c.field !== 'domains') throw new GraphqlError(`unsupported filter field ${c.field}`);
            return d.domain !== null && c.values.includes(d.domain);
          }),
        );
      const all = [...state.datasets]
        .filter(([, d]) => matches(d))
        .map(([urn, d]) => ({ ...renderDataset(urn, d), type: 'DATASET' }));
      const { slice, ...rest } = page(all, i);
      return {
        searchAcrossEntities: { ...rest, searchResults: slice.map((entity) => ({ entity, matchedFields: [] })) },
      };
    },
    AddTags: ({ input }) => {
      const i = input as { tagUrns: string[] } & Record<string, unknown>;
      for (const urn of i.tagUrns)
        if (!state.tags.has(urn)) throw new GraphqlError(`Failed to add Tag ${urn}: it does not exist.`);
      const { dataset, field } = target(i);
      for (const urn of i.tagUrns) (field ?? dataset).tags.add(urn);
      return { addTags: true };
    },
    AddTerms: ({ input }) => {
      const i = input as { termUrns: string[] } & Record<string, unknown>;
      for (const urn of i.termUrns)
        if (!state.terms.has(urn)) throw new GraphqlError(`Failed to add Glossary Term ${urn}: it does not exist.`);
      const { dataset, field } = target(i);
      for (const urn of i.termUrns) (field ?? dataset).terms.add(urn);
      return { addTerms: true };
    },
    UpdateDescription: ({ input }) => {
      const i = input as { description: string } & Record<string, unknown>;
      const { dataset, field } = target(i);
      (field ?? dataset).description = i.description;
      return { updateDescription: true };
    },
    SetDomain: ({ domainUrn, entityUrn }) => {
      if (!state.domains.has(String(domainUrn)))
        throw new GraphqlError(
          `Failed to set Domain for resource with urn ${String(entityUrn)}. Domain does not exist.`,
        );
      const { dataset } = target({ resourceUrn: entityUrn });
      dataset.domain = String(domainUrn);
      return { setDomain: true };
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
    // An operation name is the client's text: only the server's own operations count.
    const run = operation && Object.hasOwn(operations, operation) ? operations[operation] : undefined;
    if (!run)
      return send(res, 200, {
        errors: [
          { message: `Unknown operation ${operation ?? '(none)'}`, extensions: { classification: 'ValidationError' } },
        ],
      });
    try {
      return send(res, 200, { data: run(variables) });
    } catch (err) {
      if (!(err instanceof GraphqlError)) throw err;
      const field = /\{\s*(\w+)/.exec(query.slice(query.indexOf(')') + 1))?.[1];
      return send(res, 200, {
        errors: [
          {
            message: err.message,
            locations: [{ line: 1, column: 1 }],
            path: field ? [field] : [],
            extensions: { code: 400, type: 'BAD_REQUEST', classification: 'DataFetchingException' },
          },
        ],
        data: field ? { [field]: null } : null,
      });
    }
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
