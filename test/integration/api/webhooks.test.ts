import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsBefore, eventsOf } from '../event-feed.js';
import { adminToken, api, token } from '../helpers.js';

/**
 * Webhook endpoints (docs/events-and-webhooks.md) over HTTP: create, read, list, change, rotate, delete, every
 * documented error with its pydantic `loc`/`type`, and the secret shown only at creation and
 * rotation. Deliveries are in webhooks-delivery.test.ts.
 */

let admin: string;
let user: string;
const made: string[] = [];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ENDPOINT_KEYS = [
  'created_at',
  'created_by',
  'description',
  'disabled_reason',
  'enabled',
  'event_types',
  'id',
  'updated_at',
  'url',
];

/** Nothing reaches this (https to a closed port): these tests never wait for a delivery. */
const URL_ = 'https://127.0.0.1:9/crud';

const create = async (body: Record<string, unknown>) => {
  const res = await api('/api/webhooks', { method: 'POST', token: admin, body });
  if (res.status === 201) made.push(res.body.id);
  return res;
};

/** A secret as the contract makes one: `whsec_` + base64 of 32 random bytes. */
function expectSecret(secret: unknown): void {
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(Buffer.from((secret as string).slice(6), 'base64')).toHaveLength(32);
}

beforeAll(async () => {
  admin = await adminToken('webhook-admin');
  user = await token('webhook-user');
});

afterAll(async () => {
  for (const id of made) await api(`/api/webhooks/${id}`, { method: 'DELETE', token: admin });
});

describe('POST /api/webhooks', () => {
  it('creates an endpoint (201) with every field, its defaults and its secret', async () => {
    const res = await create({ url: URL_, event_types: ['webhook.endpoint.disabled'] });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...ENDPOINT_KEYS, 'secret'].sort());
    expect(res.body).toMatchObject({
      url: URL_,
      event_types: ['webhook.endpoint.disabled'],
      description: null,
      enabled: true,
      disabled_reason: null,
      created_by: 'webhook-admin',
    });
    expect(res.body.id).toMatch(UUID);
    expect(res.body.created_at).toMatch(ISO);
    expect(res.body.updated_at).toBe(res.body.created_at);
    expectSecret(res.body.secret);
  });

  it('takes every type by default, and prefixes, `dpm.` and a description; repeats are dropped', async () => {
    const all = await create({ url: URL_, enabled: false });
    expect(all.status).toBe(201);
    expect(all.body.event_types).toEqual(['*']);
    expect(all.body.enabled).toBe(false);
    const some = await create({
      url: 'http://localhost:9/allowed-over-http',
      event_types: ['decision.*', 'dpm.crew.run.succeeded', 'decision.*', 'dpm.psk.*'],
      description: 'catalog sync',
      enabled: false,
    });
    expect(some.status).toBe(201);
    expect(some.body.event_types).toEqual(['decision.*', 'dpm.crew.run.succeeded', 'dpm.psk.*']);
    expect(some.body.description).toBe('catalog sync');
  });

  it('makes a different secret for every endpoint', async () => {
    const [a, b] = await Promise.all([create({ url: URL_, enabled: false }), create({ url: URL_, enabled: false })]);
    expectSecret(a.body.secret);
    expect(a.body.secret).not.toBe(b.body.secret);
  });

  it.each([
    ['no url', {}, ['body', 'url'], 'missing'],
    ['a url that is no URL', { url: 'not a url' }, ['body', 'url'], 'url_parsing'],
    ['a url of another scheme', { url: 'ftp://files.example.com/x' }, ['body', 'url'], 'url_scheme'],
    ['a url too long', { url: `https://example.com/${'a'.repeat(2040)}` }, ['body', 'url'], 'string_too_long'],
    ['a url that is no string', { url: 42 }, ['body', 'url'], 'string_type'],
    ['plain http to a host not allowed', { url: 'http://hooks.example.com/x' }, ['body', 'url'], 'value_error'],
    ['the metadata address', { url: 'https://169.254.169.254/latest/meta-data/' }, ['body', 'url'], 'value_error'],
    ['a link-local address', { url: 'https://169.254.10.20/hook' }, ['body', 'url'], 'value_error'],
    ['a link-local IPv6 address', { url: 'https://[fe80::1]/hook' }, ['body', 'url'], 'value_error'],
    ['an IPv4-mapped metadata address', { url: 'https://[::ffff:169.254.169.254]/' }, ['body', 'url'], 'value_error'],
    ['the unspecified address', { url: 'https://0.0.0.0/hook' }, ['body', 'url'], 'value_error'],
    ['a metadata service name', { url: 'https://metadata.google.internal/x' }, ['body', 'url'], 'value_error'],
    [
      'an unknown event type',
      { url: URL_, event_types: ['decision.*', 'decision.made'] },
      ['body', 'event_types', 1],
      'value_error',
    ],
    ['a prefix of no type', { url: URL_, event_types: ['nothing.*'] }, ['body', 'event_types', 0], 'value_error'],
    ['no event type at all', { url: URL_, event_types: [] }, ['body', 'event_types'], 'too_short'],
    ['event types that are no list', { url: URL_, event_types: 'decision.*' }, ['body', 'event_types'], 'list_type'],
    [
      'a description too long',
      { url: URL_, description: 'x'.repeat(1001) },
      ['body', 'description'],
      'string_too_long',
    ],
    ['enabled that is no boolean', { url: URL_, enabled: 'maybe' }, ['body', 'enabled'], 'bool_parsing'],
    ['an unknown field', { url: URL_, secret: 'whsec_mine' }, ['body', 'secret'], 'extra_forbidden'],
  ])('answers 422 for %s, at its loc with its type', async (_, body, loc, type) => {
    const before = (await api('/api/webhooks?limit=1000', { token: admin })).body.length;
    const res = await create(body);
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc, type, msg: expect.any(String) })]);
    expect((await api('/api/webhooks?limit=1000', { token: admin })).body.length).toBe(before);
  });

  it('names why an address is refused', async () => {
    const metadata = await create({ url: 'https://169.254.169.254/' });
    expect(metadata.body.detail[0].msg).toMatch(/link-local or metadata/);
    const http = await create({ url: 'http://hooks.example.com/x' });
    expect(http.body.detail[0].msg).toMatch(/use https, or list the host in WEBHOOK_ALLOWED_HOSTS/);
    const unknown = await create({ url: URL_, event_types: ['decision.made'] });
    expect(unknown.body.detail[0]).toMatchObject({
      input: 'decision.made',
      ctx: { error: expect.stringContaining("'decision.made'") },
    });
  });

  it('lists every failure of one request together', async () => {
    const res = await create({ url: 'nope', event_types: ['bogus'], enabled: 'x', extra: 1 });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'url'],
        ['body', 'event_types', 0],
        ['body', 'enabled'],
        ['body', 'extra'],
      ]),
    );
  });

  it('answers 422 json_invalid for a malformed body, and for no body', async () => {
    const bad = await api('/api/webhooks', { method: 'POST', token: admin, rawBody: '{"url": ' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'json_invalid' });
    const none = await api('/api/webhooks', { method: 'POST', token: admin });
    expect(none.status).toBe(422);
    expect(none.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body'] });
  });

  it('is for admins: 401 without credentials, 403 for a user', async () => {
    const anonymous = await api('/api/webhooks', { method: 'POST', body: { url: URL_ } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: expect.any(String), code: 401 });
    const plain = await api('/api/webhooks', { method: 'POST', token: user, body: { url: URL_ } });
    expect(plain.status).toBe(403);
    expect(plain.body).toEqual({ error: expect.any(String), code: 403 });
    expect((await api('/api/webhooks', { token: user })).status).toBe(403);
  });
});

describe('reading, changing and deleting an endpoint', () => {
  it('reads it without its secret, in GET and in the list (paged, oldest first)', async () => {
    const created = (await create({ url: URL_, enabled: false, description: 'read me' })).body;
    const { secret, ...endpoint } = created;
    const one = await api(`/api/webhooks/${created.id}`, { token: admin });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(endpoint);
    expect(one.text).not.toContain(secret);
    const items: any[] = [];
    let path = '/api/webhooks?limit=2';
    for (;;) {
      const page = await api(path, { token: admin });
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      expect(page.text).not.toContain('whsec_');
      items.push(...page.body);
      const cursor = page.headers.get('x-next-cursor');
      if (!cursor) break;
      path = `/api/webhooks?limit=2&cursor=${encodeURIComponent(cursor)}`;
    }
    expect(items).toContainEqual(endpoint);
    const created_keys = items.map((i) => `${i.created_at}#${i.id}`);
    expect(created_keys).toEqual([...created_keys].sort());
    for (const item of items) expect(Object.keys(item).sort()).toEqual(ENDPOINT_KEYS);
  });

  it('changes only the fields given (PATCH), and checks them as creation does', async () => {
    const created = (await create({ url: URL_, event_types: ['psk.*'], enabled: false })).body;
    await new Promise((r) => setTimeout(r, 5));
    const res = await api(`/api/webhooks/${created.id}`, {
      method: 'PATCH',
      token: admin,
      body: { description: 'now described', event_types: ['decision.version.approved'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: created.id,
      url: URL_,
      event_types: ['decision.version.approved'],
      description: 'now described',
      enabled: false,
      created_at: created.created_at,
    });
    expect(res.body.updated_at > created.updated_at).toBe(true);
    expect(res.text).not.toContain(created.secret);
    const cleared = await api(`/api/webhooks/${created.id}`, {
      method: 'PATCH',
      token: admin,
      body: { description: null },
    });
    expect(cleared.body.description).toBeNull();
    for (const [body, loc, type] of [
      [{ url: 'https://169.254.169.254/' }, ['body', 'url'], 'value_error'],
      [{ url: 'http://hooks.example.com/' }, ['body', 'url'], 'value_error'],
      [{ event_types: ['decision.made'] }, ['body', 'event_types', 0], 'value_error'],
      [{ enabled: 'perhaps' }, ['body', 'enabled'], 'bool_parsing'],
      [{ id: 'mine' }, ['body', 'id'], 'extra_forbidden'],
    ] as const) {
      const refused = await api(`/api/webhooks/${created.id}`, { method: 'PATCH', token: admin, body });
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(refused.body.detail).toEqual([expect.objectContaining({ loc, type })]);
    }
    expect((await api(`/api/webhooks/${created.id}`, { token: admin })).body.event_types).toEqual([
      'decision.version.approved',
    ]);
  });

  it('disables and enables an endpoint with PATCH enabled', async () => {
    const created = (await create({ url: URL_, event_types: ['psk.*'] })).body;
    const off = await api(`/api/webhooks/${created.id}`, { method: 'PATCH', token: admin, body: { enabled: false } });
    expect(off.body).toMatchObject({ enabled: false, disabled_reason: null });
    const test = await api(`/api/webhooks/${created.id}/test`, { method: 'POST', token: admin });
    expect(test.status).toBe(409);
    expect(test.body).toEqual({ error: expect.stringMatching(/disabled/), code: 409 });
    const on = await api(`/api/webhooks/${created.id}`, { method: 'PATCH', token: admin, body: { enabled: true } });
    expect(on.body).toMatchObject({ enabled: true, disabled_reason: null });
    // Disabling is the endpoint's domain event (the admin's doing); enabling has none.
    const subject = encodeURIComponent(`webhooks/${created.id}`);
    const events = await eventsOf(`webhooks/${created.id}`, 1, admin, { deadlineMs: 10_000 });
    expect(events).toEqual([
      expect.objectContaining({
        type: 'dpm.webhook.endpoint.disabled',
        sequence: 1,
        actor: 'webhook-admin',
        data: off.body,
      }),
    ]);
    // The marker: disabled once more by another admin; its event must be the next, sequence 2.
    const again = await api(`/api/webhooks/${created.id}`, {
      method: 'PATCH',
      token: await adminToken('webhook-marker'),
      body: { enabled: false },
    });
    expect(again.status, again.text).toBe(200);
    const { before } = await eventsBefore(`webhooks/${created.id}`, (e) => e.actor === 'webhook-marker', admin);
    expect(before.map((e) => e.type)).toEqual(['dpm.webhook.endpoint.disabled']);
    expect((await api(`/api/domain-events?subject=${subject}`, { token: admin })).body).toHaveLength(2);
  });

  it('rotates the secret (200, shown once): a new one, never shown again', async () => {
    const created = (await create({ url: URL_, enabled: false })).body;
    const rotated = await api(`/api/webhooks/${created.id}/rotate-secret`, { method: 'POST', token: admin });
    expect(rotated.status).toBe(200);
    expect(Object.keys(rotated.body).sort()).toEqual([...ENDPOINT_KEYS, 'secret'].sort());
    expectSecret(rotated.body.secret);
    expect(rotated.body.secret).not.toBe(created.secret);
    expect(rotated.body.updated_at >= created.updated_at).toBe(true);
    const again = await api(`/api/webhooks/${created.id}`, { token: admin });
    expect(again.text).not.toContain(rotated.body.secret);
    expect(again.text).not.toContain(created.secret);
    expect('secret' in again.body).toBe(false);
  });

  it('deletes it (204); then every route of it answers 404', async () => {
    const created = (await create({ url: URL_, enabled: false })).body;
    const deleted = await api(`/api/webhooks/${created.id}`, { method: 'DELETE', token: admin });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const base = `/api/webhooks/${created.id}`;
    for (const [method, path, body] of [
      ['GET', base],
      ['DELETE', base],
      ['PATCH', base, { description: 'x' }],
      ['POST', `${base}/rotate-secret`],
      ['POST', `${base}/test`],
      ['GET', `${base}/deliveries`],
      ['POST', `${base}/deliveries/${created.id}/redeliver`],
    ] as const) {
      const res = await api(path, { method, token: admin, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String), code: 404 });
    }
  });

  it('answers 404 for an unknown delivery of a known endpoint', async () => {
    const created = (await create({ url: URL_ })).body;
    const res = await api(`/api/webhooks/${created.id}/deliveries/${created.id}/redeliver`, {
      method: 'POST',
      token: admin,
    });
    expect(res.status).toBe(404);
  });

  it('answers 422 for bad list parameters of deliveries', async () => {
    const created = (await create({ url: URL_, enabled: false })).body;
    const base = `/api/webhooks/${created.id}/deliveries`;
    const status = await api(`${base}?status=lost`, { token: admin });
    expect(status.status).toBe(422);
    expect(status.body.detail[0]).toMatchObject({ loc: ['query', 'status'], type: 'enum' });
    const limit = await api(`${base}?limit=0`, { token: admin });
    expect(limit.body.detail[0]).toMatchObject({ loc: ['query', 'limit'], type: 'greater_than_equal' });
    const cursor = await api(`${base}?cursor=bogus`, { token: admin });
    expect(cursor.status).toBe(422);
    expect(cursor.body.detail[0]).toMatchObject({ loc: ['query', 'cursor'], type: 'value_error' });
    const empty = await api(`${base}?status=failed`, { token: admin });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual([]);
  });
});
