import { valueError, type ValidationIssue } from '../errors.js';

/**
 * The offset at which `text` stops being JSON, as Python's decoder reports it (the first
 * unexpected character, or the end of the input). V8's messages often carry no position.
 */
export function jsonErrorPosition(text: string): number {
  let i = 0;
  const fail = (at: number): never => {
    throw at;
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const literal = (word: string) => {
    for (const ch of word) if (text[i++] !== ch) fail(i - 1);
  };
  const string = () => {
    i++;
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === '"') return void i++;
      if (ch < ' ') fail(i);
      if (ch === '\\') {
        const esc = text[i + 1];
        if (esc === undefined) fail(i + 1);
        if (esc === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail(i);
          i += 6;
        } else if ('"\\/bfnrt'.includes(esc!)) i += 2;
        else fail(i);
      } else i++;
    }
    fail(i);
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m || m[0] === '-' || m[0] === '') fail(i);
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail(i);
        string();
        ws();
        if (text[i] !== ':') fail(i);
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail(i);
      }
    }
    if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail(i);
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true');
    if (ch === 'f') return literal('false');
    if (ch === 'n') return literal('null');
    if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) return number();
    fail(i);
  };
  try {
    value();
    ws();
    return i < text.length ? i : 0;
  } catch (at) {
    return typeof at === 'number' ? Math.min(at, text.length) : 0;
  }
}

/** FastAPI's answer to a body that is not JSON: `json_invalid` at the error's position. */
export function jsonInvalid(text: string, _error: unknown): ValidationIssue {
  // Never the parser's own message: V8's quotes the body around the error, and the body
  // may hold write-only values (passwords, secret keys). Python's json says this much.
  const position = jsonErrorPosition(text);
  return {
    type: 'json_invalid',
    loc: ['body', position],
    msg: 'JSON decode error',
    input: {},
    ctx: { error: position >= text.length ? 'Unexpected end of input' : 'Expecting value' },
  };
}

/** How deep a JSON body may nest (arrays and objects); the decisions' `content` uses tens. */
export const MAX_JSON_DEPTH = 256;

/** The deepest nesting of arrays and objects in JSON text (strings skipped), without recursion. */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) max = Math.max(max, ++depth);
    else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return max;
}

/** The answer to a body nested deeper than MAX_JSON_DEPTH (its input is not echoed). */
export function tooDeeplyNested(): ValidationIssue {
  return valueError(['body'], `the body is nested more than ${MAX_JSON_DEPTH} levels deep`, null);
}
