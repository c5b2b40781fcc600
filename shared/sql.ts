/** SQL quoting for names and values read from the metastore (ANSI, as Trino takes it). */

/** A double-quoted identifier (`"we""ird"`). */
export const quoteIdentifier = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** A single-quoted string literal (`'it''s'`). */
export const quoteLiteral = (value: string): string => `'${value.replaceAll("'", "''")}'`;
