import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { crewTemplate } from '../crew-support.js';
import { eventsOf } from '../event-feed.js';
import { adminPsk, adminToken, api, type ApiResponse, db, slug, table, token } from '../helpers.js';

/**
 * `Idempotency-Key` (docs/identity-and-keys.md, idempotency keys): a repeat answers the stored answer with
 * `Idempotent-Replayed: true` and changes nothing; another request with the key is 422
 * `idempotency_key_reused`; a repeat while the first is under way is 409; failures store
 * nothing; keys are the caller's own; answers holding a secret are stored sealed.
 */

let admin: string;
let user: string;
let other: string;
let templateId: string;
let requiredTemplateId: string;

const run = (templateId_: string, key: string | undefined, as = user, values: Record<string, unknown> = {}) =>
  api(`/api/crew-templates/${templateId_}/run`, {
    method: 'POST',
    token: as,
    body: { values },
    ...(key !== undefined ? { headers: { 'idempotency-key': key } } : {}),
  });

const ownRuns = async (as: string) =>
  (await api(`/api/crew-runs?template_id=${templateId}&limit=1000`, { token: as })).body;

beforeAll(async () => {
  admin = await adminToken('idem-admin');
  user = await token(slug('idem-user'));
  other = await token(slug('idem-other'));
  templateId = await crewTemplate(admin, [{ id: 'hello', kind: 'render', template: 'hi' }], 'idem');
  const res = await api('/api/crew-templates', {
    method: 'POST',
    token: admin,
    body: {
      name: slug('idem-required'),
      variables: [{ name: 'customer', required: true }],
      steps: [{ id: 'hello', kind: 'render', template: 'hi {{customer}}' }],
    },
  });
  expect(res.status, res.text).toBe(201);
  requiredTemplateId = res.body.id;
});

describe('E2 with an Idempotency-Key', () => {
  it('a repeat answers the stored answer, replayed, and starts no second run', async () => {
    const key = `ci-job-${slug()}`;
    const first = await run(templateId, key);
    expect(first.status, first.text).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await run(templateId, key);
    expect(again.status, again.text).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);
    expect(again.body).toEqual(first.body);
    const runs = (await ownRuns(user)).filter((r: any) => r.correlation_id === first.body.correlation_id);
    expect(runs).toHaveLength(1);
    // One run of this caller for this key: the list of the caller's runs of the template grew by one.
    const events = await api(`/api/events/${first.body.correlation_id}?start=0`, { token: user });
    expect(events.body.filter((e: any) => e.type === 'run.queued')).toHaveLength(1);
  });

  it('without a key every request starts a run', async () => {
    const a = await run(templateId, undefined);
    const b = await run(templateId, undefined);
    expect(a.body.correlation_id).not.toBe(b.body.correlation_id);
  });

  it('the same key with another body, path or method is 422 idempotency_key_reused', async () => {
    const key = slug('reuse');
    expect((await run(requiredTemplateId, key, user, { customer: 'acme' })).status).toBe(202);
    const otherBody = await run(requiredTemplateId, key, user, { customer: 'globex' });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.detail).toEqual([
      {
        type: 'idempotency_key_reused',
        loc: ['header', 'Idempotency-Key'],
        msg: 'This Idempotency-Key was used for a different request (method, path or body); use a new key',
        input: key,
      },
    ]);
    const otherPath = await run(templateId, key, user, { customer: 'acme' });
    expect(otherPath.status).toBe(422);
    expect(otherPath.body.detail[0].type).toBe('idempotency_key_reused');
  });

  it('bodies equal as JSON (key order, spacing) are the same request', async () => {
    const key = slug('canonical');
    const first = await api(`/api/crew-templates/${requiredTemplateId}/run`, {
      method: 'POST',
      token: user,
      rawBody: '{"values": {"customer": "acme"}}',
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(202);
    const again = await api(`/api/crew-templates/${requiredTemplateId}/run`, {
      method: 'POST',
      token: user,
      rawBody: '{ "values":{"customer":"acme"} }',
      headers: { 'idempotency-key': key },
    });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.correlation_id).toBe(first.body.correlation_id);
  });

  it('keys are the caller’s own: another principal with the same key starts its own run', async () => {
    const key = slug('shared-key');
    const mine = await run(templateId, key, user);
    const theirs = await run(templateId, key, other);
    expect(theirs.status).toBe(202);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.correlation_id).not.toBe(mine.body.correlation_id);
  });

  it('a request that failed stores nothing: the key may be used again', async () => {
    const key = slug('after-422');
    const refused = await run(requiredTemplateId, key, user, {});
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'values', 'customer'] });
    const missing = await api(`/api/crew-templates/00000000-0000-4000-8000-000000000000/run`, {
      method: 'POST',
      token: user,
      body: { values: {} },
      headers: { 'idempotency-key': key },
    });
    expect(missing.status).toBe(404);
    const accepted = await run(requiredTemplateId, key, user, { customer: 'acme' });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('idempotent-replayed')).toBeNull();
  });

  it('concurrent first requests with one key: exactly one is processed, the others 409 or the replay', async () => {
    const key = slug('race');
    const answers = await Promise.all(Array.from({ length: 8 }, () => run(templateId, key)));
    const fresh = answers.filter((a) => a.status === 202 && a.headers.get('idempotent-replayed') === null);
    const replays = answers.filter((a) => a.headers.get('idempotent-replayed') === 'true');
    const busy = answers.filter((a) => a.status === 409);
    expect(fresh).toHaveLength(1);
    expect(replays.length + busy.length).toBe(answers.length - 1);
    for (const r of replays) expect(r.body).toEqual(fresh[0]!.body);
    for (const b of busy) expect(b.body.code).toBe(409);
    const again = await run(templateId, key);
    expect(again.body.correlation_id).toBe(fresh[0]!.body.correlation_id);
  });

  it('a key that is not 1–255 printable ASCII characters is 422, listed with the other issues', async () => {
    const long = await run(templateId, 'k'.repeat(256));
    expect(long.status).toBe(422);
    expect(long.body.detail).toEqual([
      {
        type: 'string_too_long',
        loc: ['header', 'Idempotency-Key'],
        msg: 'String should have at most 255 characters',
        input: 'k'.repeat(256),
        ctx: { max_length: 255 },
      },
    ]);
    const both = await api(`/api/crew-templates/${templateId}/run`, {
      method: 'POST',
      token: user,
      body: { values: {}, colour: 'red' },
      headers: { 'idempotency-key': 'caf\u00e9' },
    });
    expect(both.status).toBe(422);
    expect(both.body.detail.map((d: any) => [d.type, d.loc])).toEqual([
      ['string_pattern_mismatch', ['header', 'Idempotency-Key']],
      ['extra_forbidden', ['body', 'colour']],
    ]);
  });
});

/** Every creating POST takes a key: a repeat answers the same resource, replayed. */
describe('every creating POST', () => {
  const cases: { name: string; path: () => string; body: () => unknown; status: number; as?: 'admin' | 'user' }[] = [
    {
      name: 'crew template',
      path: () => '/api/crew-templates',
      body: () => ({ name: slug('idem-t'), steps: [{ id: 'one', kind: 'render', template: 'x' }] }),
      status: 201,
    },
    {
      name: 'E2',
      path: () => `/api/crew-templates/${templateId}/run`,
      body: () => ({ values: {} }),
      status: 202,
      as: 'user',
    },
    {
      // The answer holds the run's webhook secret (port 9: nothing listens, nothing is sent before the run's events).
      name: 'E2 with its own webhook',
      path: () => `/api/crew-templates/${templateId}/run`,
      body: () => ({ values: {}, webhook_url: 'http://127.0.0.1:9/idem-run' }),
      status: 202,
      as: 'user',
    },
    {
      name: 'decision version',
      path: () => `/api/decisions/${slug('idem')}/limits/versions`,
      body: () => ({ content: [1, 2] }),
      status: 201,
      as: 'user',
    },
    {
      name: 'data product',
      path: () => '/api/dataproduct',
      body: () => ({ name: slug('idem-product'), role_name: 'idem', query: 'SELECT 1 FROM idem.core.orders' }),
      status: 201,
    },
    {
      name: 'key',
      path: () => '/api/dataproduct/default/psk',
      body: () => ({ description: 'idem', validity_days: 1 }),
      status: 201,
      as: 'user',
    },
    { name: 'data share', path: () => '/api/data_shares', body: () => ({ name: slug('idem-share') }), status: 201 },
    {
      name: 'document',
      path: () => '/api/documents',
      body: () => ({ filename: 'idem.pdf', mime_type: 'application/pdf', size_bytes: 42 }),
      status: 201,
      as: 'user',
    },
    {
      name: 'fine-tuning dataset',
      path: () => '/api/finetune/datasets',
      body: () => ({ name: slug('idem') }),
      status: 201,
      as: 'user',
    },
    {
      name: 'MCP server',
      path: () => '/api/mcps',
      body: () => ({ name: slug('idem mcp'), command: 'mcp-server' }),
      status: 201,
    },
    {
      name: 'webhook',
      path: () => '/api/webhooks',
      body: () => ({ url: 'https://127.0.0.1:9/idem', event_types: ['webhook.endpoint.disabled'] }),
      status: 201,
    },
    {
      name: 'catalog domain',
      path: () => '/api/catalog/domains',
      body: () => ({ name: slug('idem-domain') }),
      status: 201,
    },
    {
      name: 'metastore catalog',
      path: () => '/api/metastore/catalogs',
      body: () => ({ catalog: slug('idemddl').replace('-', ''), catalog_type: 'memory' }),
      status: 201,
    },
  ];
  const answers = new Map<string, ApiResponse>();

  for (const c of cases) {
    it(`${c.name}: a repeat answers the same resource, replayed`, async () => {
      const as = c.as === 'user' ? user : admin;
      const key = slug('each');
      const [path, body] = [c.path(), c.body()];
      const first = await api(path, { method: 'POST', token: as, body, headers: { 'idempotency-key': key } });
      expect(first.status, first.text).toBe(c.status);
      const again = await api(path, { method: 'POST', token: as, body, headers: { 'idempotency-key': key } });
      expect(again.status, again.text).toBe(c.status);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      answers.set(c.name, first);
    });
  }

  it('a replay records no second domain event', async () => {
    const id = answers.get('MCP server')!.body.id;
    const events = await eventsOf(`mcps/${id}`, 2, admin, { deadlineMs: 1500 });
    expect(events.map((e) => e.type)).toEqual(['dpm.mcp.server.created']);
  });

  it('answers that hold a secret are stored sealed: no secret is in the idempotency table', async () => {
    const secrets = [
      answers.get('key')?.body?.key,
      answers.get('webhook')?.body?.secret,
      answers.get('data share')?.body?.secret,
      answers.get('E2 with its own webhook')?.body?.webhook_secret,
    ];
    expect(
      secrets.every((s) => typeof s === 'string' && s.length > 8),
      JSON.stringify(secrets),
    ).toBe(true);
    const items: unknown[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await db().send(new ScanCommand({ TableName: table('idempotency'), ExclusiveStartKey: start }));
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    expect(items.length).toBeGreaterThan(0);
    const stored = JSON.stringify(items);
    for (const secret of secrets) expect(stored).not.toContain(secret);
    // A plain answer is stored as it is (readable for an operator).
    expect(stored).toContain(answers.get('MCP server')!.body.id);
  });
});

/**
 * Keys are scoped to the credential (docs/identity-and-keys.md, principals): a Bearer caller's are its principal's, a PSK
 * caller's are that key's own. Every key below shares a principal with the credential whose
 * answer it replays (made by its session, through one of its keys, for its data product, or
 * by the bootstrap key), and none receives that answer or the secret in it: the same
 * Idempotency-Key from another credential is a new request.
 */
describe('no replay crosses credentials', () => {
  let session: string;
  let templateForHook: string;
  /** Keys of the session's principal: made by the session, through one of them, and for a data product. */
  const replayers: Record<string, string> = {};
  /** Keys the bootstrap key made: they share its reserved principal. */
  const bootstrapMade: string[] = [];

  const makeKey = async (credential: { token?: string; psk?: string }, product = 'default', days = 1) => {
    const res = await api(`/api/dataproduct/${product}/psk`, {
      method: 'POST',
      ...credential,
      body: { description: 'replayer', validity_days: days },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.key as string;
  };

  beforeAll(async () => {
    session = await adminToken(slug('idem-session'));
    templateForHook = await crewTemplate(session, [{ id: 'hello', kind: 'render', template: 'hi' }], 'idem-x');
    const oneDay = await makeKey({ token: session });
    replayers['a key the session made'] = oneDay;
    replayers['a key made through that key'] = await makeKey({ psk: oneDay });
    replayers['a sibling key of the same owner'] = await makeKey({ token: session }, 'default', 3650);
    const product = await api('/api/dataproduct', {
      method: 'POST',
      token: session,
      body: { name: slug('idem-dp'), role_name: 'idem', query: 'SELECT 1 FROM idem.core.orders' },
    });
    expect(product.status, product.text).toBe(201);
    replayers["a data product's key"] = await makeKey({ token: session }, product.body.id);
    bootstrapMade.push(await makeKey({ psk: adminPsk() }), await makeKey({ psk: adminPsk() }));
  });

  /** Each secret-showing request: where, what, and where its secret is in the answer. */
  const creations: {
    name: string;
    request: () => Promise<{ path: string; body?: unknown }>;
    secret: string;
    /** The path names what it changes (so every credential's answer names it too). */
    sameTarget?: boolean;
  }[] = [
    {
      name: 'a key (E7 create)',
      request: async () => ({ path: '/api/dataproduct/default/psk', body: { description: 'x', validity_days: 3650 } }),
      secret: 'key',
    },
    {
      name: 'a webhook',
      request: async () => ({
        path: '/api/webhooks',
        body: { url: 'https://127.0.0.1:9/idem-cross', event_types: ['webhook.endpoint.disabled'] },
      }),
      secret: 'secret',
    },
    {
      name: "a webhook's rotation",
      request: async () => {
        const hook = await api('/api/webhooks', {
          method: 'POST',
          token: session,
          body: { url: 'https://127.0.0.1:9/idem-rotate', event_types: ['webhook.endpoint.disabled'] },
        });
        expect(hook.status, hook.text).toBe(201);
        return { path: `/api/webhooks/${hook.body.id}/rotate-secret` };
      },
      secret: 'secret',
      sameTarget: true,
    },
    {
      name: 'a data share',
      request: async () => ({ path: '/api/data_shares', body: { name: slug('idem-cross') } }),
      secret: 'secret',
    },
    {
      name: 'E2 with its own webhook',
      request: async () => ({
        path: `/api/crew-templates/${templateForHook}/run`,
        body: { values: {}, webhook_url: 'http://127.0.0.1:9/idem-cross-run' },
      }),
      secret: 'webhook_secret',
    },
  ];

  /** The answers to `credential`'s repeat of `first` (sent with `key`) by each of `others`. */
  const expectNoCrossing = async (
    first: ApiResponse,
    secretField: string,
    send: (credential: { token?: string; psk?: string }) => Promise<ApiResponse>,
    others: Record<string, { token?: string; psk?: string }>,
    sameTarget = false,
  ) => {
    const secret = first.body[secretField];
    expect(typeof secret === 'string' && secret.length > 8, first.text).toBe(true);
    for (const [who, credential] of Object.entries(others)) {
      const answer = await send(credential);
      expect(answer.headers.get('idempotent-replayed'), `${who}: ${answer.text}`).toBeNull();
      expect(answer.text, who).not.toContain(secret);
      // A rotation names its webhook in the path: another credential rotates the same one again.
      if (answer.status < 300 && first.body.id && !sameTarget) expect(answer.body.id, who).not.toBe(first.body.id);
      if (answer.status < 300 && first.body.psk) expect(answer.body.psk, who).not.toBe(first.body.psk);
      if (answer.status < 300 && first.body.correlation_id)
        expect(answer.body.correlation_id, who).not.toBe(first.body.correlation_id);
    }
  };

  for (const creation of creations) {
    it(`${creation.name}: a session's answer is replayed to the session alone, never to its keys`, async () => {
      const { path, body } = await creation.request();
      const key = `ci-job-${slug()}`;
      const send = (credential: { token?: string; psk?: string }) =>
        api(path, { method: 'POST', ...credential, body, headers: { 'idempotency-key': key } });
      const first = await send({ token: session });
      expect(first.status, first.text).toBeLessThan(300);
      const others = Object.fromEntries(Object.entries(replayers).map(([who, psk]) => [who, { psk }]));
      await expectNoCrossing(
        first,
        creation.secret,
        send,
        { ...others, 'a bootstrap-made key': { psk: bootstrapMade[0]! } },
        creation.sameTarget,
      );
      // The session itself still gets its kept answer (the rotation keeps none: it takes no key).
      const again = await send({ token: session });
      if (creation.name !== "a webhook's rotation") {
        expect(again.headers.get('idempotent-replayed'), again.text).toBe('true');
        expect(again.body[creation.secret]).toBe(first.body[creation.secret]);
      }
    });

    it(`${creation.name}: a key's answer is its own, not its owner's session's, its child's or the bootstrap key's`, async () => {
      const { path, body } = await creation.request();
      const key = `ci-job-${slug()}`;
      const send = (credential: { token?: string; psk?: string }) =>
        api(path, { method: 'POST', ...credential, body, headers: { 'idempotency-key': key } });
      const owner = replayers['a sibling key of the same owner']!;
      const first = await send({ psk: owner });
      expect(first.status, first.text).toBeLessThan(300);
      const child = await makeKey({ psk: owner });
      await expectNoCrossing(
        first,
        creation.secret,
        send,
        {
          'the session that made the key': { token: session },
          'a key made through it': { psk: child },
          'its sibling': { psk: replayers['a key the session made']! },
        },
        creation.sameTarget,
      );
    });

    it(`${creation.name}: the keys the bootstrap key made do not share answers`, async () => {
      const { path, body } = await creation.request();
      const key = `ci-job-${slug()}`;
      const send = (credential: { token?: string; psk?: string }) =>
        api(path, { method: 'POST', ...credential, body, headers: { 'idempotency-key': key } });
      const first = await send({ psk: bootstrapMade[0]! });
      expect(first.status, first.text).toBeLessThan(300);
      await expectNoCrossing(
        first,
        creation.secret,
        send,
        {
          'another key the bootstrap key made': { psk: bootstrapMade[1]! },
          'the bootstrap key itself': { psk: adminPsk() },
        },
        creation.sameTarget,
      );
    });
  }

  it("a 1-day key replaying a session's 10-year key creation makes its own key, which ends with it", async () => {
    // The finding: a 1-day key replayed a session's key creation, got the 10-year key, and that
    // key outlived the 1-day key's deletion. Now the replay makes a key through the 1-day key.
    const key = `ci-job-${slug()}`;
    const body = { description: 'ten years', validity_days: 3650 };
    const send = (credential: { token?: string; psk?: string }) =>
      api('/api/dataproduct/default/psk', { method: 'POST', ...credential, body, headers: { 'idempotency-key': key } });
    const tenYears = await send({ token: session });
    expect(tenYears.status).toBe(201);
    const oneDay = await api('/api/dataproduct/default/psk', {
      method: 'POST',
      token: session,
      body: { description: 'one day', validity_days: 1 },
    });
    expect(oneDay.status, oneDay.text).toBe(201);
    const replay = await send({ psk: oneDay.body.key });
    expect(replay.status, replay.text).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBeNull();
    expect(replay.body.key).not.toBe(tenYears.body.key);
    // Made through the 1-day key, it ends with it; the session's 10-year key is untouched.
    expect(Date.parse(replay.body.valid_until)).toBeLessThanOrEqual(Date.parse(oneDay.body.valid_until));
    const deleted = await api(`/api/dataproduct/psk/${oneDay.body.psk}`, { method: 'DELETE', token: session });
    expect(deleted.status).toBe(204);
    expect((await api('/api/me', { psk: replay.body.key })).status).toBe(401);
    expect((await api('/api/me', { psk: tenYears.body.key })).status).toBe(200);
  });
});
