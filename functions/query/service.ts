import { createHash } from 'node:crypto';
import { NotFound } from '../../shared/http/errors.js';
import type { EntityAnnotations, MetadataCatalog } from '../../shared/ports/catalog.js';
import type { ColumnSchema, Metastore, TableSchema } from '../../shared/ports/metastore.js';
import type { Suggestion } from './schemas.js';

/**
 * How many metastore tables one E12 call looks at to find a domain's tables.
 *
 * Current limitation: the catalog has no reverse lookup (domain → tables), and the
 * built-in metastore's table records do not carry the domain. So E12 walks the metastore
 * (catalogs → schemas → tables, sorted) and keeps the tables whose catalog entity names
 * the domain, looking at no more than this many tables and caching nothing. A domain
 * index (written when a table is registered) is future work; until then a domain's
 * tables beyond the first MAX_SCANNED_TABLES of the metastore are not suggested.
 */
export const MAX_SCANNED_TABLES = 2000;
/** At most this many join questions per answer (one per pair of tables sharing a key). */
export const MAX_JOINS = 50;

/** The question kinds, in the order they are listed for a table. */
const KINDS = ['row_count', 'recent_rows', 'top_values', 'sum', 'join'] as const;
type Kind = (typeof KINDS)[number];

/** A table of the domain: its schema (real columns) and its catalog annotations. */
export interface DomainTable {
  readonly schema: TableSchema;
  readonly entity: EntityAnnotations;
}

/** A double-quoted SQL identifier (a `"` inside is doubled). */
export const quoteIdentifier = (name: string): string => `"${name.replaceAll('"', '""')}"`;

const qualifiedName = (t: TableSchema): string => [t.catalog, t.schema, t.table].map(quoteIdentifier).join('.');
const displayName = (t: TableSchema): string => `${t.catalog}.${t.schema}.${t.table}`;

/** The base type, lowercase, without parameters: `decimal(10,2)` → `decimal`. */
const baseType = (column: ColumnSchema): string => column.type.toLowerCase().split('(')[0]!.trim();

export const isKeyLike = (column: ColumnSchema): boolean => {
  const name = column.name.toLowerCase();
  return name === 'id' || name.endsWith('_id');
};
export const isTimestampLike = (column: ColumnSchema): boolean => {
  const type = column.type.toLowerCase();
  const name = column.name.toLowerCase();
  return (
    type.includes('timestamp') ||
    type.includes('date') ||
    name.endsWith('_at') ||
    name.endsWith('_date') ||
    name.endsWith('_time')
  );
};
export const isText = (column: ColumnSchema): boolean => /(char|string|text)/.test(baseType(column));
export const isNumeric = (column: ColumnSchema): boolean =>
  /^((tiny|small|big)?int(eger)?|int\d+|double( precision)?|decimal|numeric|real|float\d*)$/.test(baseType(column));

/** A UUID-shaped id from the sha256 of the domain and the SQL: the same inputs give the same id. */
export function suggestionId(domain: string, sql: string): string {
  const hex = createHash('sha256').update(`${domain}\n${sql}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byTable = (a: DomainTable, b: DomainTable): number =>
  compareStrings(a.schema.table, b.schema.table) ||
  compareStrings(a.schema.catalog, b.schema.catalog) ||
  compareStrings(a.schema.schema, b.schema.schema);

/** " (glossary term: X)" when the table's entity has a glossary term. */
const termNote = (entity: EntityAnnotations): string => {
  const term = entity.glossary_terms[0];
  return term ? ` (glossary term: ${term})` : '';
};

/** Prefer columns that are not keys (summing or ranking ids says little), else none. */
const firstNonKey = (columns: ColumnSchema[], test: (c: ColumnSchema) => boolean): ColumnSchema | undefined =>
  columns.find((c) => test(c) && !isKeyLike(c));

interface Draft {
  readonly kind: Kind;
  readonly question: string;
  readonly sql: string;
  readonly tables: string[];
}

function tableQuestions({ schema: t, entity }: DomainTable): Draft[] {
  const from = qualifiedName(t);
  const name = t.table;
  const note = termNote(entity);
  const tables = [displayName(t)];
  const drafts: Draft[] = [
    {
      kind: 'row_count',
      question: `How many rows does the ${name} table hold${note}?`,
      sql: `SELECT COUNT(*) AS row_count FROM ${from}`,
      tables,
    },
  ];
  const timestamp = t.columns.find(isTimestampLike);
  if (timestamp) {
    drafts.push({
      kind: 'recent_rows',
      question: `What are the 10 most recent rows of ${name} by ${timestamp.name}${note}?`,
      sql: `SELECT * FROM ${from} ORDER BY ${quoteIdentifier(timestamp.name)} DESC LIMIT 10`,
      tables,
    });
  }
  const text = firstNonKey(t.columns, (c) => isText(c) && !isTimestampLike(c));
  if (text) {
    const col = quoteIdentifier(text.name);
    drafts.push({
      kind: 'top_values',
      question: `What are the 10 most common values of ${text.name} in ${name}${note}?`,
      sql: `SELECT ${col}, COUNT(*) AS row_count FROM ${from} GROUP BY ${col} ORDER BY COUNT(*) DESC LIMIT 10`,
      tables,
    });
  }
  const numeric = firstNonKey(t.columns, (c) => isNumeric(c) && !isTimestampLike(c));
  if (numeric) {
    drafts.push({
      kind: 'sum',
      question: `What is the total ${numeric.name} across all rows of ${name}${note}?`,
      sql: `SELECT SUM(${quoteIdentifier(numeric.name)}) AS total FROM ${from}`,
      tables,
    });
  }
  return drafts;
}

/** A join question for two tables sharing a key-like column name (the first such name, sorted). */
function joinQuestion(a: DomainTable, b: DomainTable): Draft | undefined {
  const keysOfB = new Set(b.schema.columns.filter(isKeyLike).map((c) => c.name));
  const shared = a.schema.columns
    .filter((c) => isKeyLike(c) && keysOfB.has(c.name))
    .map((c) => c.name)
    .sort(compareStrings);
  const key = shared[0];
  if (key === undefined) return undefined;
  const k = quoteIdentifier(key);
  return {
    kind: 'join',
    question: `Which ${key} values have the most matching rows between ${a.schema.table} and ${b.schema.table}${termNote(a.entity)}?`,
    sql:
      `SELECT a.${k}, COUNT(*) AS row_count FROM ${qualifiedName(a.schema)} AS a ` +
      `JOIN ${qualifiedName(b.schema)} AS b ON a.${k} = b.${k} ` +
      `GROUP BY a.${k} ORDER BY COUNT(*) DESC LIMIT 10`,
    tables: [displayName(a.schema), displayName(b.schema)],
  };
}

/**
 * The deterministic suggestions for a domain's tables: per table (sorted by name) its
 * questions in kind order, a join question listed under the first table of its pair.
 */
export function suggestionsFor(domain: string, tables: readonly DomainTable[]): Suggestion[] {
  const sorted = [...tables].sort(byTable);
  const suggestions: Suggestion[] = [];
  let joins = 0;
  sorted.forEach((table, i) => {
    const drafts = tableQuestions(table);
    for (const other of sorted.slice(i + 1)) {
      if (joins >= MAX_JOINS) break;
      const join = joinQuestion(table, other);
      if (join) {
        drafts.push(join);
        joins += 1;
      }
    }
    drafts.sort((x, y) => KINDS.indexOf(x.kind) - KINDS.indexOf(y.kind));
    for (const d of drafts) {
      suggestions.push({
        suggestion_id: suggestionId(domain, d.sql),
        domain,
        question: d.question,
        sql: d.sql,
        tables: d.tables,
      });
    }
  });
  return suggestions;
}

/** E12: suggested questions over a domain's tables (API.md §12). */
export class QueryService {
  constructor(
    private readonly metastore: Metastore,
    private readonly catalog: MetadataCatalog,
  ) {}

  async suggest(domain: string): Promise<Suggestion[]> {
    if (!(await this.catalog.getDomain(domain))) throw new NotFound(`No domain ${domain}`);
    return suggestionsFor(domain, await this.domainTables(domain));
  }

  /** The domain's tables: see MAX_SCANNED_TABLES for how they are found and the limit. */
  async domainTables(domain: string): Promise<DomainTable[]> {
    const found: DomainTable[] = [];
    let budget = MAX_SCANNED_TABLES;
    for (const catalog of await this.metastore.listCatalogs()) {
      for (const schema of (await this.metastore.listSchemas(catalog)) ?? []) {
        if (budget <= 0) return found;
        const names = ((await this.metastore.listTables(catalog, schema)) ?? []).slice(0, budget);
        budget -= names.length;
        const matches = await Promise.all(
          names.map(async (table) => {
            const entity = await this.catalog.getEntity(this.catalog.datasetUrn(catalog, schema, table));
            if (entity.domain !== domain) return undefined;
            const tableSchema = await this.metastore.getTable(catalog, schema, table);
            return tableSchema ? { schema: tableSchema, entity } : undefined;
          }),
        );
        for (const m of matches) if (m) found.push(m);
      }
      if (budget <= 0) return found;
    }
    return found;
  }
}
