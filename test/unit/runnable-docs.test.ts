import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { jsonValues, outputMismatches, runnableBlocks, substituted } from '../support/runnable-docs.js';

/**
 * The runnable-docs harness checks itself (test/integration/docs/runnable-docs.test.ts runs
 * the documents): blocks are found, addresses replaced, the loose matcher fails on a missing
 * key and on a missing status (the bash session is checked with the documents it runs).
 */

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

describe('finding runnable blocks', () => {
  it('takes `sh runnable` blocks in order, each with the `output` block right after it', () => {
    const blocks = runnableBlocks(
      [
        '# A guide',
        '```sh',
        'npm start   # not runnable',
        '```',
        '```sh runnable',
        'A=1',
        '```',
        'Some prose.',
        '',
        '```output',
        '200',
        '```',
        '````sh runnable',
        'cat <<EOF',
        '```',
        'EOF',
        '````',
        '```json',
        '{}',
        '```',
      ].join('\n'),
    );
    expect(blocks).toEqual([
      { index: 1, line: 5, code: 'A=1', shown: '200' },
      { index: 2, line: 13, code: 'cat <<EOF\n```\nEOF', shown: undefined },
    ]);
  });

  it('finds blocks in the harness fixture, in README.md and in docs/getting-started.md', () => {
    for (const doc of ['test/fixtures/runnable-docs.md', 'README.md', 'docs/getting-started.md'])
      expect(runnableBlocks(readFileSync(root(doc), 'utf8')).length, doc).toBeGreaterThan(0);
  });
});

describe('substituting the addresses', () => {
  it("replaces the documented addresses and `.data/` with the test platform's", () => {
    const to = { baseUrl: 'http://127.0.0.1:41000', httpsBaseUrl: 'https://127.0.0.1:41001', dataDir: '/tmp/d/' };
    expect(
      substituted(
        [
          'BASE=http://127.0.0.1:3000',
          'curl http://localhost:3000/api/me https://127.0.0.1:3443/x',
          'curl --cacert .data/tls-cert.pem REQUESTS_CA_BUNDLE=.data/tls-cert.pem x/.data/y',
          'echo 127.0.0.1:30000',
        ].join('\n'),
        to,
      ),
    ).toBe(
      [
        'BASE=http://127.0.0.1:41000',
        'curl http://127.0.0.1:41000/api/me https://127.0.0.1:41001/x',
        'curl --cacert /tmp/d/tls-cert.pem REQUESTS_CA_BUNDLE=/tmp/d/tls-cert.pem x/.data/y',
        'echo 127.0.0.1:30000',
      ].join('\n'),
    );
  });
});

describe('the loose output matcher', () => {
  const real = [
    '{"workspace":"finance","key":"credit-limit","version":1,"status":"draft","created_by":"alice"}',
    '201',
    '[local stand-in model] I received [a message]',
    '[',
    '  {"name": "a", "roles": ["x"]},',
    '  {"name": "b", "roles": []}',
    ']',
    '200',
  ].join('\n');

  it('passes when every shown status line and every shown key is there', () => {
    const shown = [
      '{"workspace": "finance", "key": "...", "version": 1, ...}',
      '201',
      '[local stand-in model] I received [a message]',
      '[{"name": "...", "roles": [...]}, ...]',
      '200',
    ].join('\n');
    expect(outputMismatches(shown, real)).toEqual([]);
  });

  it('fails on a key the real JSON does not have', () => {
    expect(outputMismatches('{"workspace": "finance", "approved_by": "bob"}\n201', real)).toEqual([
      'JSON value 1: .approved_by is missing',
    ]);
    expect(outputMismatches('{}\n[{"name": "a", "email": "..."}]', real)).toEqual([
      'JSON value 2: [0].email is missing',
    ]);
  });

  it('fails on a status line that is not printed, or printed out of order', () => {
    expect(outputMismatches('403', real)).toEqual(['the line 403 is missing (after what came before it)']);
    expect(outputMismatches('200\n201', real)).toEqual(['the line 201 is missing (after what came before it)']);
  });

  it('fails when fewer JSON values are printed than shown, or of another kind', () => {
    expect(outputMismatches('{}\n[]\n{"a": 1}', real)).toEqual(['JSON value 3 is missing: only 2 printed']);
    expect(outputMismatches('[]', real)).toEqual([
      expect.stringMatching(/^JSON value 1: the value is not an array but \{"workspace"/),
    ]);
  });

  it('reads JSON over several lines, and elisions only in what is shown', () => {
    expect(jsonValues('x\n{\n  "a": [1,\n 2]\n}\n{"b": 1}')).toEqual([{ a: [1, 2] }, { b: 1 }]);
    expect(jsonValues('{"a": ..., "b": {...}, "c": [1, ...]}', true)).toEqual([{ a: null, b: {}, c: [1] }]);
    expect(jsonValues('{"a": ...}')).toEqual([]);
  });
});
