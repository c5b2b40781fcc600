import { createHash } from 'node:crypto';
import type { EntityAnnotations } from '../../shared/ports/catalog.js';
import type { ColumnSchema, TableSchema } from '../../shared/ports/metastore.js';
import type { Suggestion } from './schemas.js';
import { quoteIdentifier } from '../../shared/sql.js';

/*
 * E12's questions and their SQL, generated from a domain's tables and documents: pure
 * functions, no I/O (the service reads the catalog and metastore, and asks the model).
 */

/**
 * At most this many tables of a domain are suggested on (the first by urn), which keeps
 * the answer (about 4 questions a table) well under a Lambda's 6 MB response.
 */
export const MAX_DOMAIN_TABLES = 1000;
/** At most this many join questions per answer (one per pair of tables sharing a key). */
export const MAX_JOINS = 50;
/** How much of a document summary a question quotes. */
const EXCERPT_LENGTH = 160;

/** The question kinds, in the order they are listed for a table. */
const KINDS = ['row_count', 'overview', 'recent_rows', 'top_values', 'sum', 'join'] as const;
type Kind = (typeof KINDS)[number];

/** A table of the domain: its schema (real columns) and its catalog annotations. */
export interface DomainTable {
  readonly schema: TableSchema;
  readonly entity: EntityAnnotations;
}

/** A document of the domain with the summary its enrichment confirmed. */
export interface DomainDocument {
  readonly urn: string;
  readonly summary: string;
}

/** A double-quoted SQL identifier (a `"` inside is doubled). */

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

/** " (glossary term: X)" for the column's first glossary term, else the table's, else "". */
const termNote = (entity: EntityAnnotations, column?: string): string => {
  const term =
    (column !== undefined ? entity.columns.get(column)?.glossary_terms[0] : undefined) ?? entity.glossary_terms[0];
  return term ? ` (glossary term: ${term})` : '';
};

/**
 * The first column passing `test` that is not a key (summing or ranking ids says little),
 * preferring one the catalog gives a glossary term.
 */
const pickColumn = (table: DomainTable, test: (c: ColumnSchema) => boolean): ColumnSchema | undefined => {
  const candidates = table.schema.columns.filter((c) => test(c) && !isKeyLike(c));
  return candidates.find((c) => (table.entity.columns.get(c.name)?.glossary_terms.length ?? 0) > 0) ?? candidates[0];
};

/** The first sentence of a summary, at most EXCERPT_LENGTH characters, without double quotes. */
export function excerpt(summary: string): string {
  const text = summary.replace(/\s+/g, ' ').trim().replaceAll('"', "'");
  const sentence = /^.*?[.!?](?=\s|$)/.exec(text)?.[0] ?? text;
  if (sentence.length <= EXCERPT_LENGTH) return sentence;
  const cut = sentence.slice(0, EXCERPT_LENGTH - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > EXCERPT_LENGTH / 2 ? cut.slice(0, space) : cut}…`;
}

/** Whether a summary names the table: its name, singular, or with spaces for underscores, as whole words. */
export function mentions(summary: string, table: string): boolean {
  const name = table.toLowerCase();
  const forms = new Set([name, name.replaceAll('_', ' ')]);
  for (const form of [...forms]) if (form.length > 3 && form.endsWith('s')) forms.add(form.slice(0, -1));
  const text = summary.toLowerCase();
  return [...forms].some((form) => {
    for (let at = text.indexOf(form); at !== -1; at = text.indexOf(form, at + 1)) {
      const before = text[at - 1];
      const after = text[at + form.length];
      if ((before === undefined || !/[a-z0-9_]/.test(before)) && (after === undefined || !/[a-z0-9_]/.test(after)))
        return true;
    }
    return false;
  });
}

interface Draft {
  readonly kind: Kind;
  readonly question: string;
  readonly sql: string;
  readonly tables: string[];
}

function tableQuestions(table: DomainTable, document: DomainDocument | undefined): Draft[] {
  const { schema: t, entity } = table;
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
  const key = t.columns.find(isKeyLike);
  if (document && (timestamp || key)) {
    // A document of the domain describes this table: its overview quotes the summary.
    const measures = [
      'COUNT(*) AS row_count',
      ...(timestamp
        ? [`MIN(${quoteIdentifier(timestamp.name)}) AS earliest`, `MAX(${quoteIdentifier(timestamp.name)}) AS latest`]
        : [`COUNT(DISTINCT ${quoteIdentifier(key!.name)}) AS distinct_keys`]),
    ];
    const scope = timestamp ? `over what period of ${timestamp.name}` : `for how many distinct ${key!.name} values`;
    drafts.push({
      kind: 'overview',
      question: `A document of the domain says: "${excerpt(document.summary)}" How many ${name} rows are there, and ${scope}?`,
      sql: `SELECT ${measures.join(', ')} FROM ${from}`,
      tables,
    });
  }
  if (timestamp) {
    drafts.push({
      kind: 'recent_rows',
      question: `What are the 10 most recent rows of ${name} by ${timestamp.name}${note}?`,
      sql: `SELECT * FROM ${from} ORDER BY ${quoteIdentifier(timestamp.name)} DESC LIMIT 10`,
      tables,
    });
  }
  const text = pickColumn(table, (c) => isText(c) && !isTimestampLike(c));
  if (text) {
    const col = quoteIdentifier(text.name);
    drafts.push({
      kind: 'top_values',
      question: `What are the 10 most common values of ${text.name} in ${name}${termNote(entity, text.name)}?`,
      sql: `SELECT ${col}, COUNT(*) AS row_count FROM ${from} GROUP BY ${col} ORDER BY COUNT(*) DESC LIMIT 10`,
      tables,
    });
  }
  const numeric = pickColumn(table, (c) => isNumeric(c) && !isTimestampLike(c));
  if (numeric) {
    drafts.push({
      kind: 'sum',
      question: `What is the total ${numeric.name} across all rows of ${name}${termNote(entity, numeric.name)}?`,
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
 * questions in kind order, a join question listed under the first table of its pair. A
 * table that a document summary of the domain names (the first such document by urn)
 * gets an overview question quoting that summary.
 */
export function suggestionsFor(
  domain: string,
  tables: readonly DomainTable[],
  documents: readonly DomainDocument[] = [],
): Suggestion[] {
  const sorted = [...tables].sort(byTable);
  const suggestions: Suggestion[] = [];
  let joins = 0;
  sorted.forEach((table, i) => {
    const document = documents.find((d) => mentions(d.summary, table.schema.table));
    const drafts = tableQuestions(table, document);
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

export const REPHRASE_SYSTEM =
  'You rephrase suggested questions about data for business users. The user message is JSON: ' +
  '{"domain", "questions": [{"i", "question", "sql"}]}. Rewrite each question in clear, natural English ' +
  'so that its SQL still answers it exactly; keep table and column names recognisable. Answer only JSON: ' +
  '{"questions": [{"i": <the same i>, "question": "<the new wording>"}]}.';

/** The model's answer: new wordings by index; anything unusable is left out. */
export function parseRephrasing(reply: string, count: number): Map<number, string> {
  const body = reply.replace(/^\s*```(?:json)?\s*/i, '').replace(/\s*```\s*$/, '');
  const wordings = new Map<number, string>();
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return wordings;
  }
  const questions = (parsed as { questions?: unknown } | null)?.questions;
  if (!Array.isArray(questions)) return wordings;
  for (const entry of questions as { i?: unknown; question?: unknown }[]) {
    const i = entry?.i;
    const question = typeof entry?.question === 'string' ? entry.question.replace(/\s+/g, ' ').trim() : '';
    if (
      Number.isInteger(i) &&
      (i as number) >= 0 &&
      (i as number) < count &&
      question.length > 0 &&
      question.length <= 500
    )
      wordings.set(i as number, question);
  }
  return wordings;
}
