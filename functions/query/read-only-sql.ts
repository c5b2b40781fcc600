import type { TableRef } from '../../shared/ports/metastore.js';

/*
 * The check a model's SQL passes before it is answered (POST /api/query/ask): one read-only
 * SELECT (or WITH ... SELECT) that reads only the domain's tables, named in full. Pure: no
 * I/O. It is a conservative reading of Trino's grammar, not a parser: what it cannot place
 * is refused, and the caller answers the catalog's own SQL instead.
 */

/** The longest SQL answered. */
export const MAX_SQL_LENGTH = 10_000;

/** Words that begin a statement that writes, or runs something else: never in an answer. */
const FORBIDDEN = new Set([
  'alter',
  'call',
  'create',
  'delete',
  'deny',
  'drop',
  'execute',
  'grant',
  'insert',
  'merge',
  'revoke',
  'truncate',
  'update',
]);

/** Words that end a FROM clause at their level of nesting. */
const AFTER_FROM = new Set([
  'where',
  'group',
  'having',
  'order',
  'limit',
  'offset',
  'fetch',
  'window',
  'union',
  'intersect',
  'except',
  'select',
]);

type Token =
  | { kind: 'word'; text: string } // an unquoted identifier or keyword
  | { kind: 'quoted'; text: string } // a double-quoted identifier, unescaped
  | { kind: 'literal' } // a string or number
  | { kind: 'punct'; text: string };

class Refused extends Error {}

/** Sticky: matched at `lastIndex` only. */
const WORD = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?/y;

function matchAt(pattern: RegExp, text: string, at: number): string {
  pattern.lastIndex = at;
  return pattern.exec(text)![0];
}

function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    if (/\s/.test(ch)) {
      i += 1;
    } else if (ch === '-' && sql[i + 1] === '-') {
      throw new Refused('comments are not answered');
    } else if (ch === '/' && sql[i + 1] === '*') {
      throw new Refused('comments are not answered');
    } else if (ch === '"' || ch === "'") {
      let j = i + 1;
      let text = '';
      for (;;) {
        if (j >= sql.length) throw new Refused('a quote is not closed');
        if (sql[j] === ch) {
          if (sql[j + 1] !== ch) break;
          text += ch;
          j += 2;
        } else {
          text += sql[j];
          j += 1;
        }
      }
      tokens.push(ch === '"' ? { kind: 'quoted', text } : { kind: 'literal' });
      i = j + 1;
    } else if (/[A-Za-z_]/.test(ch)) {
      const word = matchAt(WORD, sql, i);
      tokens.push({ kind: 'word', text: word.toLowerCase() });
      i += word.length;
    } else if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      const number = matchAt(NUMBER, sql, i);
      tokens.push({ kind: 'literal' });
      i += number.length;
    } else if (ch === ';') {
      throw new Refused('only one statement is answered');
    } else if (ch === '`' || ch === '\\') {
      throw new Refused(`'${ch}' is not Trino SQL`);
    } else {
      tokens.push({ kind: 'punct', text: ch });
      i += 1;
    }
  }
  return tokens;
}

const isWord = (t: Token | undefined, ...words: string[]): boolean =>
  t?.kind === 'word' && (words.length === 0 || words.includes(t.text));
const isPunct = (t: Token | undefined, text: string): boolean => t?.kind === 'punct' && t.text === text;
const isName = (t: Token | undefined): t is Extract<Token, { kind: 'word' | 'quoted' }> =>
  t?.kind === 'word' || t?.kind === 'quoted';

/** Unquoted names are folded to lowercase (as Trino does); a quoted one is taken as written. */
const nameMatches = (t: Extract<Token, { kind: 'word' | 'quoted' }>, name: string): boolean =>
  t.kind === 'quoted' ? t.text === name : t.text === name.toLowerCase();

/** The index after the parenthesis that closes the one at `open`. */
function skipParens(tokens: Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (isPunct(tokens[i], '(')) depth += 1;
    else if (isPunct(tokens[i], ')') && --depth === 0) return i + 1;
  }
  throw new Refused('a parenthesis is not closed');
}

/** The names a leading WITH defines (`WITH [RECURSIVE] name [(columns)] AS (...), ...`), as Trino folds them. */
function withNames(tokens: Token[]): Set<string> {
  const names = new Set<string>();
  if (!isWord(tokens[0], 'with')) return names;
  let i = isWord(tokens[1], 'recursive') ? 2 : 1;
  for (;;) {
    const name = tokens[i];
    if (!isName(name)) throw new Refused('a WITH query has no name');
    names.add(name.text);
    i += 1;
    if (isPunct(tokens[i], '(')) i = skipParens(tokens, i);
    if (!isWord(tokens[i], 'as') || !isPunct(tokens[i + 1], '('))
      throw new Refused('a WITH query is not `name AS (...)`');
    i = skipParens(tokens, i + 1);
    if (!isPunct(tokens[i], ',')) return names;
    i += 1;
  }
}

interface Frame {
  /** A query (or a group of FROM items), whose FROM names tables; or an expression. */
  readonly query: boolean;
  clause: 'from' | 'other';
}

/**
 * The SQL, trimmed and without a final `;`, and the domain's tables it reads (as
 * `catalog.schema.table`, in order of first mention); or why it is refused. Without
 * `domainTables` (a data product of no domain), any table named in full may be read.
 */
export function checkReadOnlySql(
  raw: string,
  domainTables: readonly TableRef[] | undefined,
): { sql: string; tables: string[] } | { error: string } {
  const sql = raw.trim().replace(/;\s*$/, '').trim();
  if (sql.length === 0) return { error: 'no SQL' };
  if (sql.length > MAX_SQL_LENGTH) return { error: `longer than ${MAX_SQL_LENGTH} characters` };
  try {
    const tokens = tokenize(sql);
    if (!isWord(tokens[0], 'select', 'with')) throw new Refused('not a SELECT');
    const forbidden = tokens.find((t) => t.kind === 'word' && FORBIDDEN.has(t.text));
    if (forbidden) throw new Refused(`'${(forbidden as { text: string }).text.toUpperCase()}' is not read-only`);
    const ctes = withNames(tokens);
    const read: string[] = [];
    const stack: Frame[] = [{ query: true, clause: 'other' }];
    /** Reads the FROM item at `i` (a table, a WITH name, or a parenthesized group). */
    const fromItem = (i: number): void => {
      const first = tokens[i];
      if (isPunct(first, '(') || (isWord(first, 'lateral', 'unnest') && isPunct(tokens[i + 1], '('))) return;
      const parts: Extract<Token, { kind: 'word' | 'quoted' }>[] = [];
      for (let j = i; ; j += 2) {
        const part = tokens[j];
        if (!isName(part)) throw new Refused('a FROM item is not a table name');
        parts.push(part);
        if (!isPunct(tokens[j + 1], '.')) {
          if (isPunct(tokens[j + 1], '(')) throw new Refused('table functions are not answered');
          break;
        }
      }
      if (parts.length === 1 && ctes.has(parts[0]!.text)) return;
      if (parts.length !== 3) throw new Refused('a table is not named as catalog.schema.table');
      const table = domainTables
        ? domainTables.find(
            (t) =>
              nameMatches(parts[0]!, t.catalog) && nameMatches(parts[1]!, t.schema) && nameMatches(parts[2]!, t.table),
          )
        : { catalog: parts[0]!.text, schema: parts[1]!.text, table: parts[2]!.text };
      if (!table) throw new Refused("it reads a table that is not one of the domain's");
      const name = `${table.catalog}.${table.schema}.${table.table}`;
      if (!read.includes(name)) read.push(name);
    };
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      const frame = stack.at(-1)!;
      if (isPunct(token, '(')) {
        const next = tokens[i + 1];
        // A parenthesized FROM item (a join group) names tables as a FROM clause does.
        const groupsFromItems = frame.query && frame.clause === 'from' && !isWord(next, 'select', 'with', 'values');
        const previous = tokens[i - 1];
        const isFromGroup = groupsFromItems && (isWord(previous, 'from', 'join') || isPunct(previous, ','));
        stack.push({
          query: isWord(next, 'select', 'with', 'values') || isFromGroup,
          clause: isFromGroup ? 'from' : 'other',
        });
        if (isFromGroup) fromItem(i + 1);
      } else if (isPunct(token, ')')) {
        stack.pop();
        if (stack.length === 0) throw new Refused('a parenthesis is not opened');
      } else if (!frame.query) {
        continue;
      } else if (isWord(token, 'from')) {
        frame.clause = 'from';
        fromItem(i + 1);
      } else if (isWord(token, 'join')) {
        fromItem(i + 1);
      } else if (isPunct(token, ',') && frame.clause === 'from') {
        fromItem(i + 1);
      } else if (token.kind === 'word' && AFTER_FROM.has(token.text)) {
        frame.clause = 'other';
      }
    }
    if (stack.length !== 1) throw new Refused('a parenthesis is not closed');
    if (read.length === 0)
      throw new Refused(domainTables ? "it reads none of the domain's tables" : 'it reads no table');
    return { sql, tables: read };
  } catch (err) {
    if (err instanceof Refused) return { error: err.message };
    throw err;
  }
}
