/**
 * URLs as they may appear in a message, an event or a log line: credentials carried in a
 * URL (`user:password@`, `?api_key=...`, `#access_token=...`) are replaced by `***`, so
 * `https://ada:pw@host/path?api_key=k` is shown as `https://***@host/path?***`.
 */

const HIDDEN = '***';

/** `scheme://` and the rest of a URL, up to white space or a quote (as URLs sit in text). */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]*/gi;

/** One URL, redacted; a URL without credentials is returned as it is. */
export function redactUrl(url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    return redactByShape(url);
  }
  if (!parsed.host) return redactByShape(url);
  const userinfo = parsed.username !== '' || parsed.password !== '';
  if (!userinfo && !/[?#]/.test(url)) return url;
  const query = parsed.search || url.includes('?') ? `?${HIDDEN}` : '';
  const fragment = !query && (parsed.hash || url.includes('#')) ? `#${HIDDEN}` : '';
  return `${parsed.protocol}//${userinfo ? `${HIDDEN}@` : ''}${parsed.host}${parsed.pathname}${query}${fragment}`;
}

/** `text` with every occurrence of a known secret (a password, an API key) replaced. */
export function redactSecret(text: string, secret: string | null | undefined): string {
  return secret ? text.split(secret).join(HIDDEN) : text;
}

/** Every `scheme://...` URL in free text, redacted; the rest of the text is kept. */
export function redactUrls(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(URL_IN_TEXT, (url) => redactUrl(url));
}

/**
 * Text that does not parse as a URL, redacted by its shape, erring on the safe side:
 * everything up to its last `@` may be userinfo (a password may hold `/`, `?` or `#`),
 * and whatever follows the first `?` or `#` after that is query or fragment.
 */
function redactByShape(url: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? '';
  let rest = url.slice(scheme.length);
  const at = rest.lastIndexOf('@');
  const userinfo = at !== -1;
  if (userinfo) rest = rest.slice(at + 1);
  const cut = rest.search(/[?#]/);
  const tail = cut === -1 ? '' : `${rest[cut]}${HIDDEN}`;
  if (cut !== -1) rest = rest.slice(0, cut);
  return `${scheme}${userinfo ? `${HIDDEN}@` : ''}${rest}${tail}`;
}
