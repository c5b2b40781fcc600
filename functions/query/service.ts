import { Conflict, NotFound } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import { isDocumentUrn, parseDatasetUrn, type MetadataCatalog } from '../../shared/ports/catalog.js';
import type { ChatModel } from '../../shared/ports/llm.js';
import type { Metastore, TableRef } from '../../shared/ports/metastore.js';
import {
  type DomainDocument,
  type DomainTable,
  MAX_DOMAIN_TABLES,
  parseRephrasing,
  REPHRASE_SYSTEM,
  suggestionsFor,
} from './questions.js';
import { ASK_SYSTEM, askPrompt, parseModelSql, pickSuggestion } from './ask.js';
import { checkReadOnlySql } from './read-only-sql.js';
import type { AskAnswer, Suggestion } from './schemas.js';

/** At most this many questions go to the model for rephrasing (the rest keep their wording). */
export const MAX_REPHRASED = 100;
/** A model slower than this is not waited for: the deterministic wording is answered. */
export const REPHRASE_TIMEOUT_MS = 4_000;
/**
 * A model slower than this at writing the SQL of an ask is not waited for: the catalog's SQL
 * is answered. Under the 10 s within which a dependency that does not answer must be told.
 */
export const ASK_TIMEOUT_MS = 8_000;

const refKey = (r: TableRef): string => JSON.stringify([r.catalog, r.schema, r.table]);

/** What E12 reads: the domain's entities from the catalog, their schemas from the metastore. */
export type QueryCatalog = Pick<MetadataCatalog, 'getDomain' | 'listDomainEntities' | 'datasetUrn'>;
export type QueryMetastore = Pick<Metastore, 'getTables'>;

/** E12: suggested questions over a domain's tables (docs/data-and-catalog.md); the SDK's ask (docs/sdk.md). */
export class QueryService {
  constructor(
    private readonly metastore: QueryMetastore,
    private readonly catalog: QueryCatalog,
    /** With a model, questions are rephrased by it (their SQL and ids unchanged), and asks' SQL written by it. */
    private readonly model?: ChatModel,
    private readonly askTimeoutMs: number = ASK_TIMEOUT_MS,
  ) {}

  async suggest(domain: string): Promise<Suggestion[]> {
    if (!(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domain}`);
    const { tables, documents } = await this.domainContents(domain);
    const suggestions = suggestionsFor(domain, tables, documents);
    return this.model ? this.rephrase(domain, suggestions, this.model) : suggestions;
  }

  /**
   * SQL that answers `prompt` over the domain's tables (docs/sdk.md). With a model, the model
   * writes it from the tables and their columns; SQL that is not one read-only SELECT over
   * those tables only, a failure or a timeout is not answered: the catalog's SQL is, as
   * without a model. The catalog's SQL is E12's suggestion that the prompt asks for (see
   * `pickSuggestion`), with its `suggestion_id`; the model's carries one only when it is
   * exactly a suggestion's SQL. `answer` is null: the SQL is written, never run here.
   */
  async ask(domain: string, prompt: string): Promise<AskAnswer> {
    if (!(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domain}`);
    const { tables, documents } = await this.domainContents(domain);
    if (tables.length === 0) throw new Conflict(`Domain ${domain} has no tables to ask about`);
    const suggestions = suggestionsFor(domain, tables, documents);
    const written = this.model ? await this.modelSql(domain, prompt, tables, this.model) : undefined;
    if (written) {
      const same = suggestions.find((s) => s.sql === written.sql);
      return {
        domain,
        prompt,
        sql: written.sql,
        tables: written.tables,
        answer: null,
        ...(same ? { suggestion_id: same.suggestion_id } : {}),
      };
    }
    // Every table has at least its row-count suggestion.
    const picked = pickSuggestion(prompt, suggestions, tables)!;
    return {
      domain,
      prompt,
      sql: picked.sql,
      tables: picked.tables,
      answer: null,
      suggestion_id: picked.suggestion_id,
    };
  }

  /**
   * The domain's E12 suggestion with that id, or undefined (a data product made from it:
   * docs/identity-and-keys.md). Its id and SQL come from the catalog alone: no model is asked.
   */
  async suggestion(domain: string, suggestionId: string): Promise<Suggestion | undefined> {
    const { tables, documents } = await this.domainContents(domain);
    return suggestionsFor(domain, tables, documents).find((s) => s.suggestion_id === suggestionId);
  }

  /** The domain's tables that the metastore has: what a data product of the domain may read. */
  async domainTables(domain: string): Promise<TableRef[]> {
    const { tables } = await this.domainContents(domain);
    return tables.map((t) => ({ catalog: t.schema.catalog, schema: t.schema.schema, table: t.schema.table }));
  }

  /** The model's SQL for `prompt`, once checked; undefined when it failed, was late or was refused. */
  private async modelSql(
    domain: string,
    prompt: string,
    tables: DomainTable[],
    model: ChatModel,
  ): Promise<{ sql: string; tables: string[] } | undefined> {
    const started = performance.now();
    try {
      const reply = await model.complete(
        { system: ASK_SYSTEM, prompt: askPrompt(domain, prompt, tables) },
        AbortSignal.timeout(this.askTimeoutMs),
      );
      const sql = parseModelSql(reply.text);
      const schemas = tables.map((t) => t.schema);
      const checked = sql === undefined ? { error: 'the reply holds no SQL' } : checkReadOnlySql(sql, schemas);
      const duration_ms = Math.round(performance.now() - started);
      if ('error' in checked) {
        // Neither the prompt nor the SQL is logged: either may quote data.
        logger.warn("the model's SQL was refused; answering the catalog's", {
          domain,
          reason: checked.error,
          duration_ms,
        });
        return undefined;
      }
      logger.info('the model wrote the SQL of an ask', { domain, tables: checked.tables.length, duration_ms });
      return checked;
    } catch (err) {
      logger.warn("the model did not write the SQL of an ask; answering the catalog's", {
        domain,
        error: err as Error,
      });
      return undefined;
    }
  }

  /**
   * What the catalog files under the domain: its tables (looked up in the metastore in
   * one batch; an entity whose table the metastore no longer has is skipped) and its
   * documents with a summary.
   */
  async domainContents(domain: string): Promise<{ tables: DomainTable[]; documents: DomainDocument[] }> {
    const entities = await this.catalog.listDomainEntities(domain);
    const documents = entities.flatMap((e) =>
      isDocumentUrn(e.urn) && e.description?.trim() ? [{ urn: e.urn, summary: e.description }] : [],
    );
    const datasets = entities.filter((e) => !isDocumentUrn(e.urn));
    if (datasets.length > MAX_DOMAIN_TABLES)
      logger.warn('domain has more tables than E12 suggests on', {
        domain,
        tables: datasets.length,
        MAX_DOMAIN_TABLES,
      });
    // Each urn names one table (names are escaped in it); one of another platform is not ours.
    const candidates = datasets.slice(0, MAX_DOMAIN_TABLES).flatMap((entity) => {
      const parsed = parseDatasetUrn(entity.urn);
      if (!parsed || this.catalog.datasetUrn(parsed.catalog, parsed.schema, parsed.table) !== entity.urn) return [];
      return [{ ref: { catalog: parsed.catalog, schema: parsed.schema, table: parsed.table }, entity }];
    });
    const schemas = new Map(
      (await this.metastore.getTables(candidates.map((c) => c.ref))).map((t) => [refKey(t), t] as const),
    );
    const tables = new Map<string, DomainTable>();
    for (const { ref, entity } of candidates) {
      const schema = schemas.get(refKey(ref));
      if (schema && !tables.has(entity.urn)) tables.set(entity.urn, { schema, entity });
    }
    return { tables: [...tables.values()], documents };
  }

  /** The model's wording for the first MAX_REPHRASED questions; on any failure, the deterministic one. */
  private async rephrase(domain: string, suggestions: Suggestion[], model: ChatModel): Promise<Suggestion[]> {
    const asked = suggestions.slice(0, MAX_REPHRASED);
    if (asked.length === 0) return suggestions;
    const started = performance.now();
    try {
      const reply = await model.complete(
        {
          system: REPHRASE_SYSTEM,
          prompt: JSON.stringify({ domain, questions: asked.map((s, i) => ({ i, question: s.question, sql: s.sql })) }),
        },
        AbortSignal.timeout(REPHRASE_TIMEOUT_MS),
      );
      const wordings = parseRephrasing(reply.text, asked.length);
      logger.info('suggestions rephrased', {
        domain,
        asked: asked.length,
        rephrased: wordings.size,
        duration_ms: Math.round(performance.now() - started),
      });
      return suggestions.map((s, i) => {
        const question = wordings.get(i);
        return question ? { ...s, question } : s;
      });
    } catch (err) {
      logger.warn('the model did not rephrase the suggestions; answering the deterministic wording', {
        domain,
        error: err as Error,
      });
      return suggestions;
    }
  }
}
