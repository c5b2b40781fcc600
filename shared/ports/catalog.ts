/** A catalog definition: a tag, a glossary term or a domain (API.md §6). */
export interface CatalogItem {
  readonly name: string;
  readonly urn: string;
  readonly description: string | null;
}

/** Per-column annotations of an entity (a table's columns). */
export interface ColumnAnnotations {
  readonly description: string | null;
  /** Tag names, sorted. */
  readonly tags: string[];
  /** Glossary term names, sorted. */
  readonly glossary_terms: string[];
}

/** What the catalog holds about one entity (a table or a document). */
export interface EntityAnnotations {
  readonly urn: string;
  readonly description: string | null;
  /** The domain's name. */
  readonly domain: string | null;
  /** Tag names, sorted. */
  readonly tags: string[];
  /** Glossary term names, sorted. */
  readonly glossary_terms: string[];
  readonly columns: Record<string, ColumnAnnotations>;
}

/**
 * Annotations to add to an entity. Tags and terms are added to what the entity (or
 * column) already has, never removed; a description or domain given replaces the old one.
 */
export interface EntityChange {
  readonly description?: string;
  /** A domain name; the domain must exist. */
  readonly domain?: string;
  readonly tags?: readonly string[];
  readonly glossaryTerms?: readonly string[];
  readonly columns?: Readonly<
    Record<
      string,
      { readonly description?: string; readonly tags?: readonly string[]; readonly glossaryTerms?: readonly string[] }
    >
  >;
}

export interface Created {
  readonly item: CatalogItem;
  /** False when it existed already (then `item` is the existing one). */
  readonly created: boolean;
}

/**
 * The metadata catalog (tags, glossary terms, domains and the annotations of tables and
 * documents). Built-in: DynamoDB. DataHub: its GMS GraphQL API. Both use DataHub's urns
 * (`urn:li:tag:<name>`, `urn:li:glossaryTerm:<name>`, `urn:li:domain:<name>`, datasets
 * `urn:li:dataset:(urn:li:dataPlatform:<platform>,<catalog>.<schema>.<table>,PROD)`).
 */
export interface MetadataCatalog {
  /** The urn of a table (the platform is the adapter's: `dpm` built-in, `trino` for DataHub by default). */
  datasetUrn(catalog: string, schema: string, table: string): string;
  /** Sorted by name. */
  listTags(): Promise<CatalogItem[]>;
  /** Sorted by name. */
  listGlossaryTerms(): Promise<CatalogItem[]>;
  /** Sorted by name. */
  listDomains(): Promise<CatalogItem[]>;
  getTag(name: string): Promise<CatalogItem | undefined>;
  getGlossaryTerm(name: string): Promise<CatalogItem | undefined>;
  getDomain(name: string): Promise<CatalogItem | undefined>;
  /** Idempotent: an existing one is returned with `created: false` (its description unchanged). */
  createTag(name: string, description?: string): Promise<Created>;
  createGlossaryTerm(name: string, description?: string): Promise<Created>;
  createDomain(name: string, description?: string): Promise<Created>;
  /** An entity never annotated has empty annotations. */
  getEntity(urn: string): Promise<EntityAnnotations>;
  /**
   * Every entity (tables and, where the catalog holds them, documents) whose domain is
   * `domain`, with its annotations, sorted by urn. Built-in: one paginated Query on the
   * `by_domain` index; DataHub: a search filtered on the domain.
   */
  listDomainEntities(domain: string): Promise<EntityAnnotations[]>;
  /**
   * Adds annotations (see EntityChange). The tags, terms and domain named must exist:
   * the caller creates them first (DataHub refuses unknown ones).
   */
  annotate(urn: string, change: EntityChange): Promise<void>;
}

/** DataHub's urns, shared by both adapters. */
export const tagUrn = (name: string): string => `urn:li:tag:${name}`;
export const glossaryTermUrn = (name: string): string => `urn:li:glossaryTerm:${name}`;
export const domainUrn = (name: string): string => `urn:li:domain:${name}`;
export const documentUrnOf = (id: string): string => `urn:li:document:${id}`;
export const isDocumentUrn = (urn: string): boolean => urn.startsWith('urn:li:document:');
export const datasetUrnOf = (platform: string, catalog: string, schema: string, table: string): string =>
  `urn:li:dataset:(urn:li:dataPlatform:${platform},${catalog}.${schema}.${table},PROD)`;

export const byUrn = (a: { urn: string }, b: { urn: string }): number =>
  a.urn < b.urn ? -1 : a.urn > b.urn ? 1 : 0;

export const byName = (a: { name: string }, b: { name: string }): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

export const emptyAnnotations = (urn: string): EntityAnnotations => ({
  urn,
  description: null,
  domain: null,
  tags: [],
  glossary_terms: [],
  columns: {},
});
