import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { logger } from '../../shared/logger.js';
import { redactUrl, redactUrls } from '../../shared/redact.js';

describe('redactUrl()', () => {
  it.each([
    ['https://ada:pw-1@host.test/path?api_key=k-1', 'https://***@host.test/path?***'],
    ['http://ada@host.test:8080/', 'http://***@host.test:8080/'],
    ['http://:pw-1@host.test/', 'http://***@host.test/'],
    ['https://host.test/cb#access_token=t-1', 'https://host.test/cb#***'],
    ['https://host.test/x?a=1#b', 'https://host.test/x?***'],
    ['http://h.test/?', 'http://h.test/?***'],
    ['postgres://app:pw-1@db.test:5432/main?sslmode=require', 'postgres://***@db.test:5432/main?***'],
    ['http://[::1]:8/x?token=t-1', 'http://[::1]:8/x?***'],
  ])('%s → %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('returns a URL without credentials exactly as given', () => {
    for (const url of [
      'http://127.0.0.1:8080/fail/x',
      'http://host.test',
      'HTTPS://Host.test/A%20b',
      'file:///etc/hosts',
    ])
      expect(redactUrl(url)).toBe(url);
  });

  it('redacts text that does not parse as a URL by its shape, up to the last @', () => {
    expect(redactUrl('http://ada:p@ss:w?rd@host.test/x?api_key=k-1')).toBe('http://***@host.test/x?***');
    expect(redactUrl('http://ada:pw 1@host.test:99999/x')).toBe('http://***@host.test:99999/x');
    expect(redactUrl('ada:pw-1@host.test/x?k=1')).toBe('***@host.test/x?***');
    expect(redactUrl('not a url')).toBe('not a url');
  });

  it('property: neither the password nor the query value survives', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=%-]{6,20}$/);
    fc.assert(
      fc.property(secret, secret, (password, key) => {
        fc.pre(
          !'https://host.test/v1/items?api_key='.includes(password) && !'https://host.test/v1/items'.includes(key),
        );
        const shown = redactUrl(`https://ada:${password}@host.test/v1/items?api_key=${key}`);
        expect(shown).not.toContain(password);
        expect(shown).not.toContain(key);
      }),
    );
  });
});

describe('redactUrls()', () => {
  it('redacts every URL in free text and keeps the rest', () => {
    expect(
      redactUrls(
        'HTTP 500 from http://u:pw-1@127.0.0.1:9/x?api_key=k-1 (then "https://h.test/p?t=t-2") and http://ok.test/a',
      ),
    ).toBe('HTTP 500 from http://***@127.0.0.1:9/x?*** (then "https://h.test/p?***") and http://ok.test/a');
    expect(redactUrls('no url here: user@example.com')).toBe('no url here: user@example.com');
  });
});

describe('the logger', () => {
  afterEach(() => vi.restoreAllMocks());

  it('redacts URLs in messages, attributes and errors, whatever put them there', () => {
    const lines: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    const url = 'https://ada:pw-log@host.test/x?api_key=key-log';
    logger.warn(`calling ${url}`, { target: url, error: new TypeError(`Request cannot be constructed: ${url}`) });
    logger.createChild({ persistentKeys: { correlation_id: 'c' } }).error('failed', { nested: { why: `from ${url}` } });
    const text = lines.join('');
    expect(text).toContain('https://***@host.test/x?***');
    expect(text.match(/"level"/g)).toHaveLength(2);
    expect(text).not.toContain('pw-log');
    expect(text).not.toContain('key-log');
  });
});
