import { randomUUID } from 'node:crypto';
import type { PskVerifier } from '../../shared/auth/psk.js';
import type { Caller } from '../../shared/auth/caller.js';
import { DEFAULT_DATAPRODUCT_ID } from '../../shared/auth/key-store.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import type { Change } from '../../shared/events/types.js';
import { Conflict, Invalid, NotFound, type ValidationIssue, valueError } from '../../shared/errors.js';
import { domainUrn, type MetadataCatalog } from '../../shared/ports/catalog.js';
import { checkReadOnlySql } from '../query/read-only-sql.js';
import type { QueryService } from '../query/service.js';
import type { CreateProductRequest, DataProduct } from './schemas.js';
import { type DataProductRecord, type DataProductStore, toDataProduct } from './store.js';

/** A domain urn's prefix: the rest is the domain's name. */
const DOMAIN_URN_PREFIX = domainUrn('');

/** What data products read of the catalog: whether their domain exists. */
export type ProductCatalog = Pick<MetadataCatalog, 'getDomain'>;
/** What data products read of E12: a suggestion's SQL, and the tables a domain's product may read. */
export type ProductQueries = Pick<QueryService, 'suggestion' | 'domainTables'>;

/**
 * Data products (docs/sdk.md): named, role-scoped views over the catalog, made from a query,
 * an E12 suggestion or neither (a role-scoped owner of keys), and the owners of pre-shared
 * keys. Deleting one stops its keys.
 */
export class DataProductService {
  constructor(
    private readonly store: DataProductStore,
    private readonly catalog: ProductCatalog,
    private readonly queries: ProductQueries,
    private readonly verifier: Pick<PskVerifier, 'forgetProduct'>,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * A new product. Its SQL is `query`, checked to be one read-only SELECT (over its
   * domain's tables when it has a domain), or the SQL of the domain's suggestion
   * `suggestion_id`; given neither, it has none (`query` null): the NX1 SDK's
   * `data_products.create(name, role_name)` makes such a product to own a role's keys
   * (docs/sdk.md makes `query` optional). Rules across fields are 422s, an unknown domain or
   * suggestion 404, a taken name 409.
   */
  async create(req: CreateProductRequest, caller: Caller): Promise<DataProduct> {
    const query = req.query ?? undefined;
    const suggestionId = req.suggestion_id ?? undefined;
    const domainUrn = req.domain_urn ?? null;
    const issues: ValidationIssue[] = [];
    if (req.query_id != null) {
      issues.push(
        valueError(
          ['body', 'query_id'],
          'this service keeps no saved queries: give the SQL in `query`, or an E12 `suggestion_id`',
          req.query_id,
        ),
      );
    }
    if (query !== undefined && suggestionId !== undefined) {
      issues.push(valueError(['body'], 'give `query` or `suggestion_id`, not both', req));
    }
    if (suggestionId !== undefined && domainUrn === null) {
      issues.push(
        valueError(
          ['body', 'domain_urn'],
          "a suggestion is one of its domain's: `suggestion_id` needs `domain_urn`",
          null,
        ),
      );
    }
    if (issues.length > 0) throw new Invalid(issues);

    const domain = domainUrn === null ? undefined : domainUrn.slice(DOMAIN_URN_PREFIX.length);
    if (domain !== undefined && !(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domainUrn}`);
    let sql: string | null = null;
    if (suggestionId !== undefined) {
      const suggestion = await this.queries.suggestion(domain!, suggestionId);
      if (!suggestion) throw new NotFound(`No suggestion ${suggestionId} in domain ${domain}`);
      sql = suggestion.sql;
    } else if (query !== undefined) {
      const tables = domain === undefined ? undefined : await this.queries.domainTables(domain);
      const checked = checkReadOnlySql(query, tables);
      if ('error' in checked) {
        throw new Invalid([valueError(['body', 'query'], `not a read-only query: ${checked.error}`, query)]);
      }
      sql = checked.sql;
    }
    const record: DataProductRecord = {
      id: randomUUID(),
      name: req.name,
      role_name: req.role_name,
      domain_urn: domainUrn,
      query: sql,
      is_view: req.is_view ?? false,
      created_by: caller.name,
      created_by_principal: caller.principal,
      created_at: this.clock.iso(),
    };
    const change: Change = { type: 'dataproduct.created', actor: caller.name, at: record.created_at };
    if (!(await this.store.create(record, change))) throw new Conflict(`A data product named ${req.name} exists`);
    return toDataProduct(record);
  }

  /** Live products by name; with `roles`, only those of these roles. */
  async list(
    roles: readonly string[] | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<DataProduct>> {
    const page = await this.store.list(roles, limit, cursor);
    return { items: page.items.map(toDataProduct), nextCursor: page.nextCursor };
  }

  /**
   * Deletes a product: it leaves the lists, its name is free again, and its keys are refused
   * from the next request in this process and within seconds everywhere (shared/auth/psk.ts).
   * `default` always exists (409).
   */
  async delete(id: string, caller: Caller): Promise<void> {
    if (id === DEFAULT_DATAPRODUCT_ID) {
      throw new Conflict('The data product `default` always exists: it cannot be deleted');
    }
    const product = await this.store.get(id);
    if (!product || product.deleted_at) throw new NotFound(`No data product ${id}`);
    const change: Change = { type: 'dataproduct.deleted', actor: caller.name, at: this.clock.iso() };
    if (!(await this.store.markDeleted(product, change))) throw new NotFound(`No data product ${id}`);
    this.verifier.forgetProduct(id);
  }
}
