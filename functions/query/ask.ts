import { quoteIdentifier } from '../../shared/sql.js';
import { type DomainTable, mentions } from './questions.js';
import type { Suggestion } from './schemas.js';

/*
 * POST /api/query/ask (docs/sdk.md): which of E12's suggestions a prompt asks for, and what
 * the model is told when it writes the SQL itself. Pure functions, no I/O.
 */

/** At most this many of the domain's tables are described to the model (those the prompt names first). */
export const MAX_MODEL_TABLES = 50;
/** At most this many columns of a table are described to the model. */
export const MAX_MODEL_COLUMNS = 200;

/** Words too common in questions to tell one suggestion from another. */
const STOPWORDS = new Set(
  (
    'a an and are as at be been by did do does for from give i in is it its list me my of on or our ' +
    'please show tell that the their there these this those to was we were what which who with you your'
  ).split(' '),
);

/** A text's words, lowercase, each also split at `_`; a plural's final `s` dropped. */
function words(text: string): Set<string> {
  const found = new Set<string>();
  for (const token of text.toLowerCase().match(/[a-z0-9_]+/g) ?? []) {
    for (const word of new Set([token, ...token.split('_')])) {
      if (word === '' || STOPWORDS.has(word)) continue;
      found.add(word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word);
    }
  }
  return found;
}

const displayName = (t: DomainTable): string => `${t.schema.catalog}.${t.schema.schema}.${t.schema.table}`;

/**
 * The suggestion the prompt asks for: the one whose tables the prompt names most (by name,
 * singular, or with spaces for underscores), then whose question shares most of the
 * prompt's words (columns, glossary terms, "how many", "total", "recent"...); the first in
 * E12's order among equals, so a prompt that names nothing of the domain gets its first
 * suggestion. Undefined only when there are no suggestions.
 */
export function pickSuggestion(
  prompt: string,
  suggestions: readonly Suggestion[],
  tables: readonly DomainTable[],
): Suggestion | undefined {
  const asked = words(prompt);
  const tableNames = new Map(tables.map((t) => [displayName(t), t.schema.table] as const));
  let best: Suggestion | undefined;
  let bestScore = -1;
  for (const suggestion of suggestions) {
    const named = suggestion.tables.filter((t) => mentions(prompt, tableNames.get(t) ?? t)).length;
    let shared = 0;
    for (const word of words(suggestion.question)) if (asked.has(word)) shared += 1;
    // A named table outweighs any number of shared words.
    const score = named * 10_000 + shared;
    if (score > bestScore) {
      best = suggestion;
      bestScore = score;
    }
  }
  return best;
}

export const ASK_SYSTEM =
  'You write one SQL query (Trino dialect) that answers a question about data. The user message is JSON: ' +
  '{"domain", "question", "tables": [{"name", "description", "columns": [{"name", "type", "description"}]}]}, ' +
  'where each table "name" is already written as SQL ("catalog"."schema"."table"). Use only these tables, ' +
  'written exactly so, and only their columns, double-quoted. Write one read-only SELECT (WITH is allowed), ' +
  'without comments and without a semicolon. Answer only JSON: {"sql": "<the query>"}.';

/**
 * The model's user message: the question and the domain's tables with their columns, those
 * the prompt names first, bounded (MAX_MODEL_TABLES, MAX_MODEL_COLUMNS).
 */
export function askPrompt(domain: string, prompt: string, tables: readonly DomainTable[]): string {
  const named = tables.filter((t) => mentions(prompt, t.schema.table));
  const ordered = [...named, ...tables.filter((t) => !named.includes(t))].slice(0, MAX_MODEL_TABLES);
  return JSON.stringify({
    domain,
    question: prompt,
    tables: ordered.map(({ schema, entity }) => ({
      name: [schema.catalog, schema.schema, schema.table].map(quoteIdentifier).join('.'),
      description: schema.description ?? entity.description ?? null,
      columns: schema.columns.slice(0, MAX_MODEL_COLUMNS).map((c) => ({
        name: c.name,
        type: c.type,
        description: c.description ?? entity.columns.get(c.name)?.description ?? null,
      })),
    })),
  });
}

/** The SQL in the model's reply: `{"sql"}` JSON or the bare query, either in a code fence; undefined when empty. */
export function parseModelSql(reply: string): string | undefined {
  const body = reply
    .trim()
    .replace(/^```[A-Za-z]*\s*/, '')
    .replace(/\s*```$/, '')
    .trim();
  if (body.startsWith('{')) {
    try {
      const sql = (JSON.parse(body) as { sql?: unknown } | null)?.sql;
      return typeof sql === 'string' && sql.trim() !== '' ? sql.trim() : undefined;
    } catch {
      return undefined;
    }
  }
  return body === '' ? undefined : body;
}
