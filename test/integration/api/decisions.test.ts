import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createDecisionsApp } from '../../../functions/decisions/app.js';
import { decisionsDeps } from '../../../functions/decisions/compose.js';
import { loadConfig } from '../../../shared/config.js';
import { createRuntime } from '../../../functions/composition.js';
import { freePort } from '../../../infra/local/emulators.js';
import { adminPsk, adminToken, api, approverToken, insertKey, slug, token } from '../helpers.js';
import { provided } from '../provided.js';

const canonicalSha = (value: unknown): string => {
  const canon = (v: unknown): string =>
    v === null || typeof v !== 'object'
      ? JSON.stringify(v)
      : Array.isArray(v)
        ? `[${v.map(canon).join(',')}]`
        : `{${Object.keys(v as object)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`)
            .join(',')}}`;
  return createHash('sha256').update(canon(value)).digest('hex');
};

let author: string;
let submitter: string;
let approver: string;
let approver2: string;
let plainUser: string;

beforeAll(async () => {
  author = await token('alice');
  submitter = await token('bob');
  approver = await approverToken('carol');
  approver2 = await approverToken('dave');
  plainUser = await token('erin');
});

const base = (ws: string, key: string) => `/api/decisions/${ws}/${key}`;

async function newKey() {
  return { ws: slug('ws'), key: slug('key') };
}

async function createVersion(ws: string, key: string, content: unknown = { limit: 100 }, t = author) {
  const res = await api(`${base(ws, key)}/versions`, { method: 'POST', token: t, body: { content } });
  expect(res.status).toBe(201);
  return res.body;
}

async function submitted(ws: string, key: string) {
  const v = await createVersion(ws, key);
  const res = await api(`${base(ws, key)}/versions/${v.version}/submit`, { method: 'POST', token: submitter });
  expect(res.status).toBe(200);
  return v.version as number;
}

async function approved(ws: string, key: string) {
  const version = await submitted(ws, key);
  const res = await api(`${base(ws, key)}/versions/${version}/approve`, { method: 'POST', token: approver });
  expect(res.status).toBe(200);
  return version;
}

describe('POST /api/decisions/{workspace}/{key}/versions', () => {
  it('creates draft versions with consecutive numbers and the canonical content hash', async () => {
    const { ws, key } = await newKey();
    const content = { z: [1, { b: true, a: null }], a: 'x' };
    const res = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      body: { content, notes: 'first', source_instance: 'prod-eu', source_version: 7 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      workspace: ws,
      key,
      version: 1,
      content_sha: canonicalSha(content),
      status: 'draft',
      notes: 'first',
      created_by: 'alice',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      submitted_by: null,
      submitted_at: null,
      approved_by: null,
      approved_at: null,
      source_instance: 'prod-eu',
      source_version: 7,
      content,
    });
    expect(res.body.content_sha).toBe(canonicalSha({ a: 'x', z: [1, { a: null, b: true }] }));
    const second = await createVersion(ws, key, 'plain string content');
    expect(second.version).toBe(2);
    expect(second.content).toBe('plain string content');
  });

  it('gives concurrent creations distinct consecutive numbers', async () => {
    const { ws, key } = await newKey();
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api(`${base(ws, key)}/versions`, { method: 'POST', token: author, body: { content: i } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(201));
    expect(results.map((r) => r.body.version).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 12 }, (_, i) => i + 1),
    );
  });

  it('accepts a pre-shared key and records its creator as author', async () => {
    const { ws, key } = await newKey();
    const { secret } = await insertKey({ createdBy: 'frank' });
    const res = await api(`${base(ws, key)}/versions`, { method: 'POST', psk: secret, body: { content: {} } });
    expect(res.status).toBe(201);
    expect(res.body.created_by).toBe('frank');
  });

  it('answers 401 without credentials', async () => {
    const { ws, key } = await newKey();
    const res = await api(`${base(ws, key)}/versions`, { method: 'POST', body: { content: 1 } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String), code: 401 });
  });

  it('lists every body problem together with pydantic types and locs', async () => {
    const { ws, key } = await newKey();
    const res = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      body: { notes: 5, source_version: 0, source_instance: ['x'], colour: 'red' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'missing', loc: ['body', 'content'], msg: 'Field required' }),
        expect.objectContaining({ type: 'string_type', loc: ['body', 'notes'], input: 5 }),
        expect.objectContaining({
          type: 'greater_than_equal',
          loc: ['body', 'source_version'],
          ctx: { ge: 1 },
          input: 0,
        }),
        expect.objectContaining({ type: 'string_type', loc: ['body', 'source_instance'] }),
        expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'colour'], input: 'red' }),
      ]),
    );
    expect(res.body.detail).toHaveLength(5);
  });

  it('rejects wrong body types', async () => {
    const { ws, key } = await newKey();
    const asList = await api(`${base(ws, key)}/versions`, { method: 'POST', token: author, body: [1, 2] });
    expect(asList.status).toBe(422);
    expect(asList.body.detail).toEqual([expect.objectContaining({ type: 'dict_type', loc: ['body'] })]);
    const badVersion = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      body: { content: 1, source_version: 'seven' },
    });
    expect(badVersion.body.detail).toEqual([
      {
        type: 'int_parsing',
        loc: ['body', 'source_version'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'seven',
      },
    ]);
    const notANumber = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      body: { content: 1, source_version: [7] },
    });
    expect(notANumber.body.detail).toEqual([
      { type: 'int_type', loc: ['body', 'source_version'], msg: 'Input should be a valid integer', input: [7] },
    ]);
    const fractional = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      body: { content: 1, source_version: 1.5 },
    });
    expect(fractional.body.detail).toEqual([
      expect.objectContaining({ type: 'int_from_float', loc: ['body', 'source_version'] }),
    ]);
  });

  it('answers json_invalid for malformed JSON and missing for an absent body', async () => {
    const { ws, key } = await newKey();
    const malformed = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      rawBody: '{"content": 1,',
    });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail).toEqual([
      expect.objectContaining({ type: 'json_invalid', loc: ['body', expect.any(Number)], msg: 'JSON decode error' }),
    ]);
    const absent = await api(`${base(ws, key)}/versions`, { method: 'POST', token: author });
    expect(absent.status).toBe(422);
    expect(absent.body.detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
  });

  it('lists path and body problems together', async () => {
    const res = await api(`/api/decisions/Bad_WS/${'k'.repeat(65)}/versions`, {
      method: 'POST',
      token: author,
      body: { notes: 'no content' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: 'string_pattern_mismatch',
        loc: ['path', 'workspace'],
        msg: "String should match pattern '^[a-z0-9][a-z0-9-]{0,63}$'",
        input: 'Bad_WS',
        ctx: { pattern: '^[a-z0-9][a-z0-9-]{0,63}$' },
      },
      {
        type: 'string_too_long',
        loc: ['path', 'key'],
        msg: 'String should have at most 64 characters',
        input: 'k'.repeat(65),
        ctx: { max_length: 64 },
      },
      expect.objectContaining({ type: 'missing', loc: ['body', 'content'] }),
    ]);
  });

  it('refuses a key that is a path, not a flat slug', async () => {
    const { ws } = await newKey();
    const res = await api(`/api/decisions/${ws}/a%2Fb/versions`, {
      method: 'POST',
      token: author,
      body: { content: 1 },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['path', 'key'], input: 'a/b' });
  });

  it('answers 422 for content too large to store in a version', async () => {
    const { ws, key } = await newKey();
    const res = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      body: { content: 'x'.repeat(300 * 1024) },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ type: 'value_error', loc: ['body', 'content'] })]);
  });
});

describe('lax integers and non-finite numbers in the body', () => {
  it('reads source_version "3" (and "3.0", true) as pydantic does in lax mode', async () => {
    const { ws, key } = await newKey();
    for (const [given, stored] of [
      ['3', 3],
      [' 3.0 ', 3],
      [true, 1],
    ] as const) {
      const res = await api(`${base(ws, key)}/versions`, {
        method: 'POST',
        token: author,
        body: { content: { n: 1 }, source_version: given },
      });
      expect(res.status, String(given)).toBe(201);
      expect(res.body.source_version).toBe(stored);
    }
    const zero = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      body: { content: 1, source_version: '0' },
    });
    expect(zero.body.detail).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['body', 'source_version'],
        msg: 'Input should be greater than or equal to 1',
        input: '0',
        ctx: { ge: 1 },
      },
    ]);
  });

  it('refuses content 1e309 (it would be stored as null) with finite_number at the value', async () => {
    const { ws, key } = await newKey();
    const top = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      rawBody: '{"content": 1e309}',
    });
    expect(top.status).toBe(422);
    expect(top.body).toEqual({
      detail: [
        { type: 'finite_number', loc: ['body', 'content'], msg: 'Input should be a finite number', input: 'Infinity' },
      ],
    });
    const nested = await api(`${base(ws, key)}/versions`, {
      method: 'POST',
      token: author,
      rawBody: '{"content": {"limits": [1, -1e400], "ok": 1e308}, "source_version": 1e309, "notes": 7}',
    });
    expect(nested.status).toBe(422);
    expect(nested.body.detail).toEqual([
      { type: 'string_type', loc: ['body', 'notes'], msg: 'Input should be a valid string', input: 7 },
      {
        type: 'finite_number',
        loc: ['body', 'source_version'],
        msg: 'Input should be a finite number',
        input: 'Infinity',
      },
      {
        type: 'finite_number',
        loc: ['body', 'content', 'limits', 1],
        msg: 'Input should be a finite number',
        input: '-Infinity',
      },
    ]);
    // nothing was stored
    expect((await api(`${base(ws, key)}/versions`, { token: plainUser })).status).toBe(404);
  });
});

describe('what a version can hold', () => {
  it('stores any JSON content exactly: extreme numbers, empty keys, deep nesting', async () => {
    const { ws, key } = await newKey();
    let deep: unknown = 'bottom';
    for (let i = 0; i < 40; i++) deep = [deep];
    const content = { big: 1e300, tiny: 1.5e-300, unsafe: 2 ** 60, '': 'empty key', deep };
    const created = await createVersion(ws, key, content);
    expect(created.content).toEqual(content);
    const read = await api(`${base(ws, key)}/versions/${created.version}`, { token: plainUser });
    expect(read.body.content).toEqual(content);
    expect(read.body.content_sha).toBe(canonicalSha(content));
  });

  it('answers 409 once a version has had 100 transitions', async () => {
    const { ws, key } = await newKey();
    const v = (await createVersion(ws, key)).version;
    const path = (action: string) => `${base(ws, key)}/versions/${v}/${action}`;
    for (let i = 0; i < 49; i++) {
      expect((await api(path('submit'), { method: 'POST', token: submitter })).status).toBe(200);
      expect((await api(path('reject'), { method: 'POST', token: approver })).status).toBe(200);
    }
    expect((await api(path('submit'), { method: 'POST', token: submitter })).status).toBe(200);
    const full = await api(path('reject'), { method: 'POST', token: approver });
    expect(full.status).toBe(409);
    expect(full.body).toEqual({ error: expect.stringContaining('100 transitions'), code: 409 });
    // the author still hears the four-eyes rule, not the history limit
    const own = await api(path('approve'), { method: 'POST', token: await approverToken('bob') });
    expect(own.status).toBe(403);
    const history = await api(path('history'), { token: plainUser });
    expect(history.body).toHaveLength(100);
  });
});

describe('reading versions', () => {
  it('lists versions ascending without content, paginated by cursor', async () => {
    const { ws, key } = await newKey();
    for (let i = 0; i < 5; i++) await createVersion(ws, key, { i });
    const all = await api(`${base(ws, key)}/versions`, { token: plainUser });
    expect(all.status).toBe(200);
    expect(all.body.map((v: { version: number }) => v.version)).toEqual([1, 2, 3, 4, 5]);
    expect(all.body[0]).not.toHaveProperty('content');
    expect(all.headers.get('x-next-cursor')).toBeNull();

    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof api<{ version: number }[]>>> = await api(
        `${base(ws, key)}/versions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        { token: plainUser },
      );
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.map((v) => v.version));
      cursor = page.headers.get('x-next-cursor');
    } while (cursor);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });

  it('sends X-Next-Cursor only when more remain, not after an exactly full last page', async () => {
    const { ws, key } = await newKey();
    for (let i = 0; i < 4; i++) await createVersion(ws, key, { i });
    const whole = await api(`${base(ws, key)}/versions?limit=4`, { token: plainUser });
    expect(whole.body).toHaveLength(4);
    expect(whole.headers.get('x-next-cursor')).toBeNull();
    const first = await api(`${base(ws, key)}/versions?limit=2`, { token: plainUser });
    expect(first.body.map((v: { version: number }) => v.version)).toEqual([1, 2]);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toBeTruthy();
    const second = await api(`${base(ws, key)}/versions?limit=2&cursor=${cursor}`, { token: plainUser });
    expect(second.body.map((v: { version: number }) => v.version)).toEqual([3, 4]);
    expect(second.headers.get('x-next-cursor')).toBeNull();
    // A version added after the cursor was handed out is on the page it leads to.
    await createVersion(ws, key, { i: 4 });
    const more = await api(`${base(ws, key)}/versions?limit=2&cursor=${cursor}`, { token: plainUser });
    expect(more.body.map((v: { version: number }) => v.version)).toEqual([3, 4]);
    const last = await api(`${base(ws, key)}/versions?limit=2&cursor=${more.headers.get('x-next-cursor')}`, {
      token: plainUser,
    });
    expect(last.body.map((v: { version: number }) => v.version)).toEqual([5]);
    expect(last.headers.get('x-next-cursor')).toBeNull();
  });

  it('answers 404 for a key without versions and 422 for bad paging', async () => {
    const { ws, key } = await newKey();
    expect((await api(`${base(ws, key)}/versions`, { token: plainUser })).status).toBe(404);
    const bad = await api(`${base(ws, key)}/versions?limit=0`, { token: plainUser });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      expect.objectContaining({ type: 'greater_than_equal', loc: ['query', 'limit'], ctx: { ge: 1 } }),
    ]);
    const tooMany = await api(`${base(ws, key)}/versions?limit=1001`, { token: plainUser });
    expect(tooMany.body.detail).toEqual([
      expect.objectContaining({ type: 'less_than_equal', loc: ['query', 'limit'], ctx: { le: 1000 } }),
    ]);
    await createVersion(ws, key);
    const badCursor = await api(`${base(ws, key)}/versions?cursor=%25%25notacursor`, { token: plainUser });
    expect(badCursor.status).toBe(422);
    expect(badCursor.body.detail[0].loc).toEqual(['query', 'cursor']);
    const foreign = Buffer.from(JSON.stringify({ pk: 'D#other#key', sk: 'V#0000000001' })).toString('base64url');
    const foreignCursor = await api(`${base(ws, key)}/versions?cursor=${foreign}`, { token: plainUser });
    expect(foreignCursor.status).toBe(422);
  });

  it('reads one version with its content; 404 and 422 for bad versions', async () => {
    const { ws, key } = await newKey();
    await createVersion(ws, key, { rule: 'a' });
    const one = await api(`${base(ws, key)}/versions/1`, { token: plainUser });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ version: 1, status: 'draft', content: { rule: 'a' } });
    expect((await api(`${base(ws, key)}/versions/2`, { token: plainUser })).status).toBe(404);
    const zero = await api(`${base(ws, key)}/versions/0`, { token: plainUser });
    expect(zero.status).toBe(422);
    expect(zero.body.detail).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['path', 'version'],
        msg: 'Input should be greater than or equal to 1',
        input: '0',
        ctx: { ge: 1 },
      },
    ]);
    const abc = await api(`${base(ws, key)}/versions/abc`, { token: plainUser });
    expect(abc.body.detail).toEqual([
      {
        type: 'int_parsing',
        loc: ['path', 'version'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'abc',
      },
    ]);
  });

  it('publishes the newest approved version and forgets retired ones', async () => {
    const { ws, key } = await newKey();
    expect((await api(`${base(ws, key)}/published`, { token: plainUser })).status).toBe(404);
    const v1 = await approved(ws, key);
    const v2 = await approved(ws, key);
    await createVersion(ws, key, 'draft only');
    const published = await api(`${base(ws, key)}/published`, { token: plainUser });
    expect(published.status).toBe(200);
    expect(published.body).toMatchObject({ version: v2, status: 'approved', content: { limit: 100 } });
    expect((await api(`${base(ws, key)}/versions/${v2}/retire`, { method: 'POST', token: approver })).status).toBe(200);
    expect((await api(`${base(ws, key)}/published`, { token: plainUser })).body.version).toBe(v1);
    expect((await api(`${base(ws, key)}/versions/${v1}/retire`, { method: 'POST', token: approver })).status).toBe(200);
    expect((await api(`${base(ws, key)}/published`, { token: plainUser })).status).toBe(404);
  });

  it('keeps the history of every transition, oldest first', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    await api(`${base(ws, key)}/versions/${v}/reject`, {
      method: 'POST',
      token: approver,
      body: { notes: 'needs work' },
    });
    await api(`${base(ws, key)}/versions/${v}/submit`, { method: 'POST', token: submitter, body: null });
    await api(`${base(ws, key)}/versions/${v}/approve`, { method: 'POST', token: approver2, body: { notes: 'ok' } });
    await api(`${base(ws, key)}/versions/${v}/retire`, { method: 'POST', token: approver });
    const history = await api(`${base(ws, key)}/versions/${v}/history`, { token: plainUser });
    expect(history.status).toBe(200);
    expect(
      history.body.map((h: { action: string; from: string | null; to: string; by: string; notes: string | null }) => [
        h.action,
        h.from,
        h.to,
        h.by,
        h.notes,
      ]),
    ).toEqual([
      ['create', null, 'draft', 'alice', null],
      ['submit', 'draft', 'submitted', 'bob', null],
      ['reject', 'submitted', 'draft', 'carol', 'needs work'],
      ['submit', 'draft', 'submitted', 'bob', null],
      ['approve', 'submitted', 'approved', 'dave', 'ok'],
      ['retire', 'approved', 'retired', 'carol', null],
    ]);
    const times = history.body.map((h: { at: string }) => Date.parse(h.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect((await api(`${base(ws, key)}/versions/99/history`, { token: plainUser })).status).toBe(404);
  });
});

describe('submit', () => {
  it('moves a draft to submitted and records the submitter; accepts no body, null or notes', async () => {
    const { ws, key } = await newKey();
    await createVersion(ws, key);
    await createVersion(ws, key);
    await createVersion(ws, key);
    const none = await api(`${base(ws, key)}/versions/1/submit`, { method: 'POST', token: submitter });
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ status: 'submitted', submitted_by: 'bob', submitted_at: expect.any(String) });
    expect(none.body).not.toHaveProperty('content');
    const nul = await api(`${base(ws, key)}/versions/2/submit`, { method: 'POST', token: submitter, body: null });
    expect(nul.status).toBe(200);
    const notes = await api(`${base(ws, key)}/versions/3/submit`, {
      method: 'POST',
      token: author,
      body: { notes: 'please review' },
    });
    expect(notes.status).toBe(200);
    expect(notes.body).toMatchObject({ submitted_by: 'alice', notes: 'please review' });
  });

  it('answers 409 unless draft, 404 for unknown versions, 422 for bad bodies', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    const again = await api(`${base(ws, key)}/versions/${v}/submit`, { method: 'POST', token: submitter });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: expect.stringContaining('submitted'), code: 409 });
    expect((await api(`${base(ws, key)}/versions/${v + 1}/submit`, { method: 'POST', token: submitter })).status).toBe(
      404,
    );
    const bad = await api(`${base(ws, key)}/versions/${v}/submit`, {
      method: 'POST',
      token: submitter,
      body: { notes: 1, extra: true },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      expect.objectContaining({ type: 'string_type', loc: ['body', 'notes'] }),
      expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'extra'] }),
    ]);
    const str = await api(`${base(ws, key)}/versions/${v}/submit`, { method: 'POST', token: submitter, body: 'text' });
    expect(str.body.detail).toEqual([expect.objectContaining({ type: 'dict_type', loc: ['body'] })]);
  });
});

describe('E1 approve', () => {
  const approve = (ws: string, key: string, v: number | string, t?: string, body?: unknown) =>
    api(`${base(ws, key)}/versions/${v}/approve`, {
      method: 'POST',
      ...(t ? { token: t } : {}),
      ...(body !== undefined ? { body } : {}),
    });

  it('approves a submitted version by a second person and records it', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    const res = await approve(ws, key, v, approver, { notes: 'looks right' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      workspace: ws,
      key,
      version: v,
      status: 'approved',
      approved_by: 'carol',
      approved_at: expect.stringMatching(/Z$/),
      notes: 'looks right',
      created_by: 'alice',
      submitted_by: 'bob',
    });
    expect(res.body).not.toHaveProperty('content');
  });

  it('accepts a null body', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    expect((await approve(ws, key, v, approver, null)).status).toBe(200);
  });

  it('answers 401 without credentials, before anything else', async () => {
    expect((await approve('BAD', 'k', 0)).status).toBe(401);
  });

  it('answers 403 without the approver role, or with a pre-shared key, before validating', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    const noRole = await approve(ws, key, v, plainUser);
    expect(noRole.status).toBe(403);
    expect(noRole.body).toEqual({ error: expect.stringContaining('approver'), code: 403 });
    expect((await approve('BAD', 'k', 0, plainUser)).status).toBe(403);
    const admin = await adminToken('root');
    expect((await approve(ws, key, v, admin)).status).toBe(403);
    const { secret } = await insertKey({ createdBy: 'carol', roles: ['approver'] });
    const viaPsk = await api(`${base(ws, key)}/versions/${v}/approve`, { method: 'POST', psk: secret });
    expect(viaPsk.status).toBe(403);
    expect(viaPsk.body.error).toMatch(/session/);
    expect((await api(`${base(ws, key)}/versions/${v}`, { token: plainUser })).body.status).toBe('submitted');
  });

  it('validates the path and body after authorization', async () => {
    const res = await approve('BAD', 'k', 0, approver);
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['path', 'workspace'], 'string_pattern_mismatch'],
      [['path', 'version'], 'greater_than_equal'],
    ]);
    const { ws, key } = await newKey();
    const abc = await approve(ws, key, 'abc', approver);
    expect(abc.body.detail[0]).toMatchObject({ type: 'int_parsing', loc: ['path', 'version'] });
    const body = await approve(ws, key, 1, approver, { notes: ['x'] });
    expect(body.body.detail[0]).toMatchObject({ type: 'string_type', loc: ['body', 'notes'] });
    const malformed = await api(`${base(ws, key)}/versions/1/approve`, {
      method: 'POST',
      token: approver,
      rawBody: '{notes',
    });
    expect(malformed.body.detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body', 1] });
  });

  it('answers 404 for an unknown version, then 409 for the wrong state', async () => {
    const { ws, key } = await newKey();
    const missing = await approve(ws, key, 1, approver);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: expect.any(String), code: 404 });
    await createVersion(ws, key);
    const draft = await approve(ws, key, 1, approver);
    expect(draft.status).toBe(409);
    expect(draft.body).toEqual({ error: expect.stringContaining('draft'), code: 409 });
  });

  it('checks the state before the four-eyes rule', async () => {
    const { ws, key } = await newKey();
    const authorApprover = await approverToken('alice');
    await createVersion(ws, key);
    expect((await approve(ws, key, 1, authorApprover)).status).toBe(409);
  });

  it('refuses the author and the submitter (four-eyes rule)', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    const asAuthor = await approve(ws, key, v, await approverToken('alice'));
    expect(asAuthor.status).toBe(403);
    expect(asAuthor.body.error).toMatch(/four-eyes/i);
    const asSubmitter = await approve(ws, key, v, await approverToken('bob'));
    expect(asSubmitter.status).toBe(403);
    const still = await api(`${base(ws, key)}/versions/${v}`, { token: plainUser });
    expect(still.body).toMatchObject({ status: 'submitted', approved_by: null });
  });

  it('lets exactly one of many concurrent approvals win', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    const approvers = await Promise.all(Array.from({ length: 10 }, (_, i) => approverToken(`approver-${i}`)));
    const results = await Promise.all(approvers.map((t) => approve(ws, key, v, t)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, ...Array(9).fill(409)]);
    const winner = results.find((r) => r.status === 200)!;
    const stored = await api(`${base(ws, key)}/versions/${v}/history`, { token: plainUser });
    expect(stored.body.filter((h: { action: string }) => h.action === 'approve')).toEqual([
      expect.objectContaining({ by: winner.body.approved_by }),
    ]);
  });
});

describe('reject and retire', () => {
  it('rejects back to draft, clearing the submitter; only approvers with a session', async () => {
    const { ws, key } = await newKey();
    const v = await submitted(ws, key);
    expect((await api(`${base(ws, key)}/versions/${v}/reject`, { method: 'POST', token: plainUser })).status).toBe(403);
    const { secret } = await insertKey({ createdBy: 'carol', roles: ['approver'] });
    expect((await api(`${base(ws, key)}/versions/${v}/reject`, { method: 'POST', psk: secret })).status).toBe(403);
    const res = await api(`${base(ws, key)}/versions/${v}/reject`, {
      method: 'POST',
      token: approver,
      body: { notes: 'no' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'draft', submitted_by: null, submitted_at: null, notes: 'no' });
    expect((await api(`${base(ws, key)}/versions/${v}/reject`, { method: 'POST', token: approver })).status).toBe(409);
    expect((await api(`${base(ws, key)}/versions/${v + 1}/reject`, { method: 'POST', token: approver })).status).toBe(
      404,
    );
  });

  it('retires approved versions; approvers or admins, a pre-shared key will do', async () => {
    const { ws, key } = await newKey();
    const v1 = await approved(ws, key);
    const v2 = await approved(ws, key);
    expect((await api(`${base(ws, key)}/versions/${v1}/retire`, { method: 'POST', token: plainUser })).status).toBe(
      403,
    );
    const admin = await api(`${base(ws, key)}/versions/${v1}/retire`, { method: 'POST', psk: adminPsk() });
    expect(admin.status).toBe(200);
    expect(admin.body.status).toBe('retired');
    const { secret } = await insertKey({ createdBy: 'carol', roles: ['approver'] });
    expect((await api(`${base(ws, key)}/versions/${v2}/retire`, { method: 'POST', psk: secret })).status).toBe(200);
    expect((await api(`${base(ws, key)}/versions/${v2}/retire`, { method: 'POST', token: approver })).status).toBe(409);
    const draft = await createVersion(ws, key);
    expect(
      (await api(`${base(ws, key)}/versions/${draft.version}/retire`, { method: 'POST', token: approver })).status,
    ).toBe(409);
  });
});

describe('dependency outage', () => {
  it('answers 503 when DynamoDB does not answer, with no internals', async () => {
    const deadPort = await freePort();
    const runtime = createRuntime(
      loadConfig({
        STAGE: provided('stage'),
        AUTH_ISSUER: provided('issuer'),
        AUTH_AUDIENCE: provided('audience'),
        DYNAMODB_ENDPOINT: `http://127.0.0.1:${deadPort}`,
      }),
    );
    const app = createDecisionsApp(decisionsDeps(runtime));
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((r) => server.once('listening', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/decisions/ws/k/versions/1`;
      const res = await fetch(url, { headers: { authorization: `Bearer ${plainUser}` } });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: expect.any(String), code: 503 });
      const approveRes = await fetch(`${url}/approve`, {
        method: 'POST',
        headers: { authorization: `Bearer ${approver}` },
      });
      expect(approveRes.status).toBe(503);
      const viaPsk = await fetch(url, { headers: { 'authorization-psk': 'whatever-key' } });
      expect(viaPsk.status).toBe(503);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
