import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { crewTemplate } from '../crew-support.js';
import { eventsOf } from '../event-feed.js';
import { adminToken, api, type ApiResponse, db, slug, table, token } from '../helpers.js';

/**
 * `Idempotency-Key` (API.md §1): a repeat answers the stored answer with
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
