/**
 * Identity and integrity (principals, docs/identity-and-keys.md): callers are principals (issuer + subject),
 * never names; keys have lineage; tokens are checked for what makes them access tokens.
 * Each test replays an attack that once got through and checks that it no longer does.
 */
import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, notYet } from '../../support/eventually.js';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import { adminPsk, adminToken, api, type ApiResponse, db, insertKey, slug, table, token } from '../helpers.js';

const run = randomUUID().slice(0, 8);

const post = (path: string, auth: { token?: string; psk?: string }, body?: unknown) =>
  api(path, { method: 'POST', ...auth, body });

function expectStatus(res: ApiResponse, status: number): void {
  expect(res.status, res.text).toBe(status);
}

async function newKey(auth: { token?: string; psk?: string }, validityDays = 30) {
  const res = await post('/api/dataproduct/default/psk', auth, {
    description: 'identity test',
    validity_days: validityDays,
  });
  expectStatus(res, 201);
  return res.body as { psk: string; key: string; valid_until: string; created_by: string };
}

describe('ownership compares principals, never names', () => {
  let nameAdmin: string;

  beforeAll(async () => {
    // A token of a person who calls themselves "admin": the bootstrap key's creator name.
    nameAdmin = await token(`admin`, { subject: `someone-${run}` });
  });

  it('a token named "admin" reaches nothing the bootstrap admin key owns', async () => {
    const share = await post('/api/data_shares', { psk: adminPsk() }, { name: slug('boot-share') });
    expectStatus(share, 201);
    expect(share.body.owner).toBe('admin');
    const read = await api(`/api/data_shares/${share.body.name}`, { token: nameAdmin });
    expectStatus(read, 403);
    expect(read.text).not.toContain(share.body.secret);
    expectStatus(await post(`/api/data_shares/${share.body.name}/rotate-secret`, { token: nameAdmin }), 403);

    const key = await newKey({ psk: adminPsk() });
    expect(key.created_by).toBe('admin');
    const extend = await post(`/api/dataproduct/psk/${key.psk}/extend`, { token: nameAdmin }, { validity_days: 3650 });
    expectStatus(extend, 403);
    expectStatus(await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE', token: nameAdmin }), 403);
    const listed = await api<{ psk: string }[]>('/api/dataproduct/psk?limit=1000', { token: nameAdmin });
    expectStatus(listed, 200);
    expect(listed.body.map((k) => k.psk)).not.toContain(key.psk);
    const shares = await api<{ name: string }[]>('/api/data_shares?limit=1000', { token: nameAdmin });
    expect(shares.body.map((s) => s.name)).not.toContain(share.body.name);
  });

  it('two subjects that share a name own nothing of each other', async () => {
    const name = `twin-${run}`;
    const first = await token(name, { subject: `first-${run}` });
    const second = await token(name, { subject: `second-${run}` });

    const share = await post('/api/data_shares', { token: first }, { name: slug('twin-share') });
    expectStatus(share, 201);
    expectStatus(await api(`/api/data_shares/${share.body.name}`, { token: second }), 403);
    expectStatus(await api(`/api/data_shares/${share.body.name}`, { token: first }), 200);

    const doc = await post(
      '/api/documents',
      { token: first },
      { filename: 'a.txt', mime_type: 'text/plain', size_bytes: 1 },
    );
    expectStatus(doc, 201);
    expectStatus(await api(`/api/documents/${doc.body.id}`, { token: second }), 403);
    const secondDocs = await api<{ id: string }[]>('/api/documents?limit=1000', { token: second });
    expect(secondDocs.body.map((d) => d.id)).not.toContain(doc.body.id);
    const firstDocs = await api<{ id: string }[]>('/api/documents?limit=1000', { token: first });
    expect(firstDocs.body.map((d) => d.id)).toContain(doc.body.id);

    const key = await newKey({ token: first });
    expectStatus(await post(`/api/dataproduct/psk/${key.psk}/extend`, { token: second }, { validity_days: 1 }), 403);
    const secondKeys = await api<{ psk: string }[]>('/api/dataproduct/psk?limit=1000', { token: second });
    expect(secondKeys.body.map((k) => k.psk)).not.toContain(key.psk);

    const job = await post('/api/finetune/datasets', { token: first }, { name: 'twin job' });
    expectStatus(job, 201);
    expectStatus(await api(`/api/finetune/datasets/${job.body.id}`, { token: second }), 403);
    expectStatus(await api(`/api/finetune/datasets/${job.body.id}`, { method: 'DELETE', token: second }), 403);
    expectStatus(await api(`/api/finetune/datasets/${job.body.id}`, { token: first }), 200);
  });

  it('one subject under another name is still the owner', async () => {
    const subject = `renamed-${run}`;
    const before = await token(`carol-${run}`, { subject });
    const after = await token(`Carol-${run}`, { subject, claims: { email: `carol-${run}@example.com` } });
    const doc = await post(
      '/api/documents',
      { token: before },
      { filename: 'a.txt', mime_type: 'text/plain', size_bytes: 1 },
    );
    expectStatus(doc, 201);
    expectStatus(await api(`/api/documents/${doc.body.id}`, { token: after }), 200);
  });

  it('a key acts as its creator’s principal: the creator’s key reaches the creator’s items, a namesake’s does not', async () => {
    const name = `keyowner-${run}`;
    const owner = await token(name, { subject: `owner-${run}` });
    const doc = await post(
      '/api/documents',
      { token: owner },
      { filename: 'a.txt', mime_type: 'text/plain', size_bytes: 1 },
    );
    expectStatus(doc, 201);
    const ownersKey = await newKey({ token: owner });
    expectStatus(await api(`/api/documents/${doc.body.id}`, { psk: ownersKey.key }), 200);
    const namesake = await newKey({ token: await token(name, { subject: `namesake-${run}` }) });
    expectStatus(await api(`/api/documents/${doc.body.id}`, { psk: namesake.key }), 403);
  });
});

describe('records stored before principals (legacy) are admins’ only', () => {
  it('a document with only an owner name is refused to its named owner and open to admins', async () => {
    const name = `legacy-${run}`;
    const id = randomUUID();
    const at = new Date().toISOString();
    await db().send(
      new PutCommand({
        TableName: table('documents'),
        Item: {
          id,
          filename: 'old.pdf',
          owner: name,
          mime_type: 'application/pdf',
          size_bytes: 1,
          status: 'uploading',
          enrichment_status: 'pending',
          catalog_urn: `urn:li:document:${id}`,
          created_at: at,
          updated_at: at,
          list_pk: 'document',
          created_key: `${at}#${id}`,
        },
      }),
    );
    expectStatus(await api(`/api/documents/${id}`, { token: await token(name) }), 403);
    const mine = await api<{ id: string }[]>('/api/documents?limit=1000', { token: await token(name) });
    expect(mine.body.map((d) => d.id)).not.toContain(id);
    const admin = await api(`/api/documents/${id}`, {
      token: await adminToken(`legacy-admin-${run}`),
    });
    expectStatus(admin, 200);
    expect(admin.body.owner).toBe(name);
  });

  it('a key with only a creator name authenticates but owns only what it makes', async () => {
    const name = `legacy-key-${run}`;
    const doc = await post(
      '/api/documents',
      { token: await token(name) },
      { filename: 'a', mime_type: 'text/plain', size_bytes: 1 },
    );
    const legacy = await insertKey({ createdBy: name, createdByPrincipal: null });
    expectStatus(await api(`/api/documents/${doc.body.id}`, { psk: legacy.secret }), 403);
    const own = await post(
      '/api/documents',
      { psk: legacy.secret },
      { filename: 'b', mime_type: 'text/plain', size_bytes: 1 },
    );
    expectStatus(own, 201);
    expectStatus(await api(`/api/documents/${own.body.id}`, { psk: legacy.secret }), 200);
  });
});

describe('four-eyes compares principals', () => {
  const ws = () => slug('eyes');

  async function submittedBy(author: string): Promise<string> {
    const base = `/api/decisions/${ws()}/rules/versions`;
    const created = await post(base, { token: author }, { content: { limit: 1 } });
    expectStatus(created, 201);
    const path = `${base}/${created.body.version}`;
    expectStatus(await post(`${path}/submit`, { token: author }), 200);
    return path;
  }

  it('the author cannot approve under another name, case, trailing space or the email fallback', async () => {
    const subject = `carol-sub-${run}`;
    const author = await token(`carol-${run}`, { subject });
    const path = await submittedBy(author);
    const disguises = [
      await token(`Carol-${run}`, { subject, roles: ['approver'] }),
      await token(`carol-${run} `, { subject, roles: ['approver'] }),
      await token('', {
        subject,
        roles: ['approver'],
        claims: { preferred_username: undefined, email: `c-${run}@x.test` },
      }),
      await token(`renamed-${run}`, { subject, roles: ['approver'] }),
    ];
    for (const disguise of disguises) {
      const res = await post(`${path}/approve`, { token: disguise });
      expectStatus(res, 403);
      expect(res.body.error).toMatch(/four-eyes/i);
    }
    expect((await api(path, { token: author })).body.status).toBe('submitted');
  });

  it('the submitter cannot approve either, and another person of the same name can', async () => {
    const author = await token(`dave-${run}`, { subject: `dave-sub-${run}` });
    const base = `/api/decisions/${ws()}/rules/versions`;
    const created = await post(base, { token: author }, { content: { limit: 2 } });
    const path = `${base}/${created.body.version}`;
    const submitterSubject = `erin-sub-${run}`;
    expectStatus(
      await post(`${path}/submit`, { token: await token(`erin-${run}`, { subject: submitterSubject }) }),
      200,
    );
    const submitterAsApprover = await token(`ERIN-${run}`, { subject: submitterSubject, roles: ['approver'] });
    expectStatus(await post(`${path}/approve`, { token: submitterAsApprover }), 403);
    // Same display name as the author, another subject: a second person.
    const namesake = await token(`dave-${run}`, { subject: `another-dave-${run}`, roles: ['approver'] });
    const approved = await post(`${path}/approve`, { token: namesake });
    expectStatus(approved, 200);
    expect(approved.body).toMatchObject({ status: 'approved', approved_by: `dave-${run}` });
    expect(approved.body).not.toHaveProperty('approved_by_principal');
  });
});

describe('key lineage', () => {
  it('a key made through a key never outlives it, and stops when it is deleted', async () => {
    const owner = await token(`lineage-${run}`);
    const parent = await newKey({ token: owner }, 10);
    const child = await newKey({ psk: parent.key }, 3650);
    expect(Date.parse(child.valid_until)).toBeLessThanOrEqual(Date.parse(parent.valid_until));
    const grandchild = await newKey({ psk: child.key }, 3650);
    expect(Date.parse(grandchild.valid_until)).toBeLessThanOrEqual(Date.parse(child.valid_until));
    expectStatus(await api('/api/dataproduct/psk', { psk: grandchild.key }), 200);

    expectStatus(await api(`/api/dataproduct/psk/${parent.psk}`, { method: 'DELETE', token: owner }), 204);
    for (const key of [parent, child, grandchild]) {
      const res = await api('/api/dataproduct/psk', { psk: key.key });
      expectStatus(res, 401);
    }
  });

  it('a key stops when a key it was made through has expired', async () => {
    const name = `expired-parent-${run}`;
    const parent = await insertKey({ createdBy: name, validUntil: new Date(Date.now() - 1000).toISOString() });
    const child = await insertKey({ createdBy: name, lineage: [parent.hash] });
    const res = await api('/api/dataproduct/psk', { psk: child.secret });
    expectStatus(res, 401);
    expect(res.body.error).toMatch(/made through a key/);
    const orphan = await insertKey({ createdBy: name, lineage: ['0'.repeat(64)] });
    expectStatus(await api('/api/dataproduct/psk', { psk: orphan.secret }), 401);
  });

  it('a key cannot extend itself, and extending through a key is bounded by it', async () => {
    const owner = await token(`extender-${run}`);
    const key = await newKey({ token: owner }, 5);
    const self = await post(`/api/dataproduct/psk/${key.psk}/extend`, { psk: key.key }, { validity_days: 3650 });
    expectStatus(self, 403);
    expect(self.body.error).toMatch(/cannot extend itself/);

    const sibling = await newKey({ token: owner }, 1);
    const extended = await post(
      `/api/dataproduct/psk/${sibling.psk}/extend`,
      { psk: key.key },
      { validity_days: 3650 },
    );
    expectStatus(extended, 200);
    expect(Date.parse(extended.body.valid_until)).toBeLessThanOrEqual(Date.parse(key.valid_until));
    expect(Date.parse(extended.body.valid_until)).toBeGreaterThan(Date.parse(sibling.valid_until));
    // Past the extending key's end already: refused, nothing changes.
    const longer = await newKey({ token: owner }, 30);
    const refused = await post(`/api/dataproduct/psk/${longer.psk}/extend`, { psk: key.key }, { validity_days: 1 });
    expectStatus(refused, 403);
    const listed = await api<{ psk: string; valid_until: string }[]>('/api/dataproduct/psk?limit=1000', {
      token: owner,
    });
    expect(listed.body.find((k) => k.psk === longer.psk)!.valid_until).toBe(longer.valid_until);

    // The extended key now depends on the key that extended it.
    expectStatus(await api('/api/dataproduct/psk', { psk: sibling.key }), 200);
    expectStatus(await api(`/api/dataproduct/psk/${key.psk}`, { method: 'DELETE', token: owner }), 204);
    expectStatus(await api('/api/dataproduct/psk', { psk: sibling.key }), 401);
  });

  it('concurrent extensions through a key all count, up to its end', async () => {
    const owner = await token(`concurrent-${run}`);
    const extender = await newKey({ token: owner }, 3650);
    const target = await newKey({ token: owner }, 1);
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        post(`/api/dataproduct/psk/${target.psk}/extend`, { psk: extender.key }, { validity_days: 10 }),
      ),
    );
    for (const r of results) expectStatus(r, 200);
    const listed = await api<{ psk: string; valid_until: string }[]>('/api/dataproduct/psk?limit=1000', {
      token: owner,
    });
    const until = Date.parse(listed.body.find((k) => k.psk === target.psk)!.valid_until);
    expect(until - Date.parse(target.valid_until)).toBe(80 * 86_400_000);
  });

  it('a deleted key made through the bootstrap key does not come back, and its children stop', async () => {
    const child = await newKey({ psk: adminPsk() }, 1);
    const grandchild = await newKey({ psk: child.key }, 1);
    await deleteKeyById(child.psk);
    expectStatus(await api('/api/dataproduct/psk', { psk: child.key }), 401);
    expectStatus(await api('/api/dataproduct/psk', { psk: grandchild.key }), 401);
  });
});

async function deleteKeyById(psk: string): Promise<void> {
  expectStatus(await api(`/api/dataproduct/psk/${psk}`, { method: 'DELETE', psk: adminPsk() }), 204);
}

describe('fine-tuning datasets and documents belong to their owners', () => {
  it('a dataset cannot draw on another user’s documents; unknown ones are 422; admins may use any', async () => {
    const alice = await token(`ft-owner-${run}`);
    const mallory = await token(`ft-thief-${run}`);
    const doc = await post(
      '/api/documents',
      { token: alice },
      { filename: 'a', mime_type: 'text/plain', size_bytes: 1 },
    );
    const stolen = await post(
      '/api/finetune/datasets',
      { token: mallory },
      { name: 'steal', source_documents: [doc.body.id] },
    );
    expectStatus(stolen, 403);
    const mine = await api<{ id: string }[]>('/api/finetune/datasets?limit=1000', { token: mallory });
    expect(mine.body).toEqual([]);
    const missing = randomUUID();
    const unknown = await post(
      '/api/finetune/datasets',
      { token: alice },
      { name: 'x', source_documents: [doc.body.id, missing] },
    );
    expectStatus(unknown, 422);
    expect(unknown.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'source_documents', 1],
        msg: `Value error, no document ${missing}`,
        input: missing,
        ctx: { error: `no document ${missing}` },
      },
    ]);
    expectStatus(
      await post('/api/finetune/datasets', { token: alice }, { name: 'ok', source_documents: [doc.body.id] }),
      201,
    );
    expectStatus(
      await post('/api/finetune/datasets', { psk: adminPsk() }, { name: 'admin', source_documents: [doc.body.id] }),
      201,
    );
  });

  it('a user’s object key lives under the document’s prefix; an admin’s is kept', async () => {
    const user = await token(`objkey-${run}`);
    const mine = await post(
      '/api/documents',
      { token: user },
      {
        filename: 'a',
        mime_type: 'text/plain',
        size_bytes: 1,
        objstore_key: '/finetune/someone-elses-job/manifest.json',
      },
    );
    expectStatus(mine, 201);
    expect(mine.body.objstore_key).toBe(`documents/${mine.body.id}/finetune/someone-elses-job/manifest.json`);
    const escape = await post(
      '/api/documents',
      { token: user },
      {
        filename: 'a',
        mime_type: 'text/plain',
        size_bytes: 1,
        objstore_key: 'a/../../other/key',
      },
    );
    expectStatus(escape, 422);
    expect(escape.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'objstore_key'] });
    const pipeline = await post(
      '/api/documents',
      { psk: adminPsk() },
      {
        filename: 'a',
        mime_type: 'text/plain',
        size_bytes: 1,
        objstore_key: 'ingest/2026/a.txt',
      },
    );
    expect(pipeline.body.objstore_key).toBe('ingest/2026/a.txt');
  });
});

describe('only access tokens pass', () => {
  it('refuses a token without exp, with a refresh or ID type, and accepts at+jwt', async () => {
    const name = `jwt-${run}`;
    const check = async (t: string) => api('/api/documents', { token: t });
    const noExp = await check(await token(name, { noExpiry: true }));
    expectStatus(noExp, 401);
    expect(noExp.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    expectStatus(await check(await token(name, { claims: { typ: 'Refresh' } })), 401);
    expectStatus(await check(await token(name, { claims: { typ: 'ID' } })), 401);
    expectStatus(await check(await token(name, { typ: 'JWT+refresh' })), 401);
    expectStatus(await check(await token(name, { claims: { typ: 'Bearer' } })), 200);
    expectStatus(await check(await token(name, { typ: 'at+jwt' })), 200);
    expectStatus(await check(await token(name, { typ: null })), 200);
  });
});

describe('user JSON keys that are Object.prototype names are data', () => {
  it('stores and answers env keys constructor, toString and hasOwnProperty (MCP servers)', async () => {
    const env = { constructor: 'a', toString: 'b', hasOwnProperty: 'c', valueOf: 'd' };
    const created = await post('/api/mcps', { psk: adminPsk() }, { name: 'proto-env', command: 'x', env });
    expectStatus(created, 201);
    expect(created.body.env).toEqual(env);
    const read = await api(`/api/mcps/${created.body.id}`, { psk: adminPsk() });
    expect(read.body.env).toEqual(env);
  });

  it('refuses a __proto__ key with 422 rather than storing the value without it', async () => {
    const res = await api('/api/mcps', {
      method: 'POST',
      psk: adminPsk(),
      rawBody: '{"name": "proto-env", "command": "x", "env": {"__proto__": "lost", "A": "kept"}}',
    });
    expectStatus(res, 422);
    expect(res.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'env', '__proto__'],
        msg: 'Value error, an object key named __proto__ cannot be stored',
        input: 'lost',
        ctx: { error: 'an object key named __proto__ cannot be stored' },
      },
    ]);
    // Free-form values too: decision content keeps every key it is given, or is refused.
    const content = await api(`/api/decisions/${slug('proto')}/k/versions`, {
      method: 'POST',
      psk: adminPsk(),
      rawBody: '{"content": {"a": [{"__proto__": {"admin": true}}]}}',
    });
    expectStatus(content, 422);
    expect(content.body.detail[0].loc).toEqual(['body', 'content', 'a', 0, '__proto__']);
  });

  it('runs a crew whose object value holds a constructor key', async () => {
    const template = await post(
      '/api/crew-templates',
      { psk: adminPsk() },
      {
        name: slug('proto'),
        variables: [{ name: 'config', type: 'object', required: true }],
        steps: [{ id: 'constructor', kind: 'render', template: 'got {{config}}' }],
      },
    );
    expectStatus(template, 201);
    const started = await post(
      `/api/crew-templates/${template.body.id}/run`,
      { psk: adminPsk() },
      {
        values: { config: { constructor: 1, toString: 'x' } },
      },
    );
    expectStatus(started, 202);
    type Seen = { type: string; data?: { outputs?: Record<string, unknown> } };
    const events = await eventually(
      async () => {
        const seen: Seen[] = (await api(`/api/events/${started.body.correlation_id}`, { psk: adminPsk() })).body;
        const ended = seen.some(
          (e) => e.type.startsWith('run.') && e.type !== 'run.queued' && e.type !== 'run.started',
        );
        return ended ? seen : notYet(seen.map((e) => e.type));
      },
      10_000,
      'the run ended',
    );
    const done = events.at(-1)!;
    expect(done.type).toBe('run.completed');
    expect(Object.keys(done.data!.outputs!)).toEqual(['constructor']);
  });
});

describe('template names that could never be stored', () => {
  it('refuses a variable or step named __proto__ with the loc of each', async () => {
    const res = await post(
      '/api/crew-templates',
      { psk: adminPsk() },
      {
        name: slug('proto'),
        variables: [{ name: '__proto__' }],
        steps: [{ id: '__proto__', kind: 'render', template: 'x' }],
      },
    );
    expectStatus(res, 422);
    expect(res.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['body', 'variables', 0, 'name'], 'value_error'],
      [['body', 'steps', 0, 'id'], 'value_error'],
    ]);
  });
});
