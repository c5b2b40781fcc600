import { Invalid, valueError } from '../../shared/errors.js';
import type { TableRef } from '../../shared/ports/metastore.js';
import { MAX_NAME, NAME_PATTERN } from './schemas.js';

/**
 * `catalog.schema.table` as the NX1 SDK's tag and domain routes name a table (docs/sdk.md):
 * three parts separated by `.`, where a part holding `.` or `"` is a double-quoted SQL
 * identifier (`"sales.eu".core.orders`; `""` inside quotes is one `"`). Undefined for
 * anything else: not three parts, an empty part, an unclosed or stray quote.
 */
export function parseTableReference(text: string): TableRef | undefined {
  const parts: string[] = [];
  let i = 0;
  for (;;) {
    let part = '';
    if (text[i] === '"') {
      for (i++; ; i++) {
        if (i >= text.length) return undefined;
        if (text[i] === '"') {
          if (text[i + 1] !== '"') break;
          i++;
        }
        part += text[i];
      }
      i++;
    } else {
      while (i < text.length && text[i] !== '.') {
        if (text[i] === '"') return undefined;
        part += text[i++];
      }
    }
    if (part === '') return undefined;
    parts.push(part);
    if (i === text.length) break;
    if (text[i] !== '.') return undefined;
    i++;
  }
  if (parts.length !== 3) return undefined;
  const [catalog, schema, table] = parts as [string, string, string];
  return { catalog, schema, table };
}

/**
 * The table a `{table}` path value names, or Invalid (422, `value_error` at
 * `["path", "table"]`): malformed, or a part that is no name this service has (the names of
 * every other metastore route).
 */
export function tableReference(text: string): TableRef {
  const ref = parseTableReference(text);
  const refuse = (error: string) => new Invalid([valueError(['path', 'table'], error, text)]);
  if (!ref) {
    throw refuse('expected catalog.schema.table, a part holding "." or \'"\' double-quoted ("sales.eu".core.orders)');
  }
  for (const [what, part] of [
    ['catalog', ref.catalog],
    ['schema', ref.schema],
    ['table', ref.table],
  ] as const) {
    if (part.length > MAX_NAME || !NAME_PATTERN.test(part)) {
      throw refuse(`the ${what} name '${part}' must be 1–${MAX_NAME} characters matching ${NAME_PATTERN.source}`);
    }
  }
  return ref;
}
