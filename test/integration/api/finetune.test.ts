import { randomUUID } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { createFinetuneApp } from '../../../functions/finetune/app.js';
import { ArtifactStore } from '../../../functions/finetune/artifacts.js';
import { FinetuneService } from '../../../functions/finetune/service.js';
import { DynamoFinetuneJobStore } from '../../../functions/finetune/store.js';
import { DynamoDocumentStore } from '../../../functions/documents/store.js';
import { freePort } from '../../../infra/local/emulators.js';
import { s3Access, s3With } from '../../../shared/aws/s3.js';
import { loadConfig } from '../../../shared/config.js';
import { createRuntime } from '../../../functions/composition.js';
import { WWW_AUTHENTICATE } from '../../support/tokens.js';
import { adminPsk, adminToken, api, slug, token } from '../helpers.js';
import { provided } from '../provided.js';

const BASE = '/api/finetune/datasets';

let admin: string;
let alice: string;
let bob: string;
let s3: S3Client;
let bucket: string;

beforeAll(async () => {
  admin = await adminToken('finetune-admin');
  alice = await token('ft-alice');
  bob = await token('ft-bob');
  bucket = provided('artifactsBucket');
  s3 = new S3Client({
    region: 'us-east-1',
    endpoint: provided('s3Endpoint'),
    forcePathStyle: true,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
});

interface Job {
  id: string;
  name: string;
  owner: string;
  status: string;
  format: string;
  source_documents: string[];
  created_at: string;
}

async function createJob(t: string, body: unknown = { name: slug('dataset') }): Promise<Job> {
  const res = await api<Job>(BASE, { method: 'POST', token: t, body });
  expect(res.status).toBe(201);
  return res.body;
}

/** A new document owned by the caller of token `t`; its id. */
async function documentOf(t: string): Promise<string> {
  const res = await api<{ id: string }>('/api/documents', {
    method: 'POST',
    token: t,
    body: { filename: 'source.txt', mime_type: 'text/plain', size_bytes: 1 },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** Every key under a job's prefix in the artifacts bucket. */
async function keysOf(jobId: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `finetune/${jobId}/` }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

async function putObject(key: string, body = 'x'): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
}

async function readManifest(jobId: string): Promise<unknown> {
  const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `finetune/${jobId}/manifest.json` }));
  return JSON.parse(await out.Body!.transformToString());
}

/** Follows `X-Next-Cursor` through every page of a list. */
async function listAll(t: string, limit = 1000): Promise<{ items: Job[]; pages: number }> {
  const items: Job[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: Awaited<ReturnType<typeof api<Job[]>>> = await api(
      `${BASE}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token: t },
    );
    expect(res.status).toBe(200);
    expect(res.body.length).toBeLessThanOrEqual(limit);
    items.push(...res.body);
    cursor = res.headers.get('x-next-cursor');
    pages++;
  } while (cursor && pages < 1000);
  return { items, pages };
}

const locTypes = (body: { detail: { loc: unknown[]; type: string }[] }) => body.detail.map((d) => [d.loc, d.type]);

describe('creating a dataset job', () => {
  it('answers 201 with the pending job, defaults filled in, and writes its manifest', async () => {
    const name = slug('dataset');
    const res = await api<Job>(BASE, { method: 'POST', token: alice, body: { name } });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      name,
      owner: 'ft-alice',
      status: 'pending',
      format: 'jsonl',
      source_documents: [],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(await keysOf(res.body.id)).toEqual([`finetune/${res.body.id}/manifest.json`]);
    expect(await readManifest(res.body.id)).toEqual(res.body);

    const read = await api<Job>(`${BASE}/${res.body.id}`, { token: alice });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('keeps the source documents and format it was given', async () => {
    const docs = [await documentOf(bob), await documentOf(bob)];
    const job = await createJob(bob, { name: 'from documents', source_documents: docs, format: 'csv' });
    expect(job).toMatchObject({ name: 'from documents', owner: 'ft-bob', format: 'csv', source_documents: docs });
    expect(await readManifest(job.id)).toEqual(job);
  });

  it('works with a pre-shared key, owned by the key', async () => {
    const psk = adminPsk();
    const created = await api<Job>(BASE, { method: 'POST', psk, body: { name: 'via key' } });
    expect(created.status).toBe(201);
    const job = created.body;
    const read = await api<Job>(`${BASE}/${job.id}`, { psk });
    expect(read.status).toBe(200);
    expect(read.body.owner).toBe(job.owner);
  });
});

describe('authentication', () => {
  it('answers 401 without credentials on every endpoint, before validation', async () => {
    const job = await createJob(alice);
    const calls = [
      api(BASE, { method: 'POST', body: { name: 'x' } }),
      api(BASE, { method: 'POST', body: { bad: true } }),
      api(BASE),
      api(`${BASE}?limit=0`),
      api(`${BASE}/${job.id}`),
      api(`${BASE}/${job.id}`, { method: 'DELETE' }),
      api(`${BASE}/${job.id}`, { method: 'DELETE', token: 'not-a-jwt' }),
      api(`${BASE}/${'x'.repeat(65)}`, { method: 'DELETE', psk: 'not-a-known-key' }),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 401 });
      expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
    }
    expect((await api(`${BASE}/${job.id}`, { token: alice })).status).toBe(200);
  });
});

describe('reading jobs', () => {
  it('lets only the owner or an admin read a job; 404 comes before 403', async () => {
    const job = await createJob(alice);
    const other = await api(`${BASE}/${job.id}`, { token: bob });
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ error: expect.any(String), code: 403 });
    const byAdmin = await api<Job>(`${BASE}/${job.id}`, { token: admin });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toEqual(job);
    const unknown = await api(`${BASE}/${randomUUID()}`, { token: bob });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: expect.any(String), code: 404 });
  });

  it("lists the caller's own jobs; an admin sees everyone's", async () => {
    const owner = slug('owner');
    const ownerToken = await token(owner);
    const mine = [await createJob(ownerToken), await createJob(ownerToken)];
    const theirs = await createJob(bob);

    const own = await listAll(ownerToken);
    expect(own.items).toEqual(mine);
    expect((await listAll(await token(slug('nobody')))).items).toEqual([]);

    const all = (await listAll(admin)).items.map((j) => j.id);
    expect(all).toEqual(expect.arrayContaining([...mine.map((j) => j.id), theirs.id]));
    expect(new Set(all).size).toBe(all.length);
  });

  it('pages by limit and cursor, oldest first', async () => {
    const owner = await token(slug('pager'));
    const jobs: Job[] = [];
    for (let i = 0; i < 5; i++) jobs.push(await createJob(owner, { name: `job ${i}` }));

    const first = await api<Job[]>(`${BASE}?limit=2`, { token: owner });
    expect(first.status).toBe(200);
    expect(first.body).toEqual(jobs.slice(0, 2));
    expect(first.headers.get('x-next-cursor')).toBeTruthy();

    const paged = await listAll(owner, 2);
    expect(paged.items).toEqual(jobs);
    expect(paged.pages).toBeGreaterThanOrEqual(3);

    const adminPaged = (await listAll(admin, 3)).items.map((j) => j.id);
    expect(adminPaged).toEqual(expect.arrayContaining(jobs.map((j) => j.id)));
    expect(adminPaged.indexOf(jobs[0]!.id)).toBeLessThan(adminPaged.indexOf(jobs[4]!.id));
  });

  it('rejects bad list parameters and foreign cursors', async () => {
    const bad = await api(`${BASE}?limit=0`, { token: alice });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['query', 'limit'],
        msg: 'Input should be greater than or equal to 1',
        input: '0',
        ctx: { ge: 1 },
      },
    ]);
    expect(locTypes((await api(`${BASE}?limit=abc`, { token: alice })).body)).toEqual([
      [['query', 'limit'], 'int_parsing'],
    ]);
    expect(locTypes((await api(`${BASE}?limit=1001`, { token: alice })).body)).toEqual([
      [['query', 'limit'], 'less_than_equal'],
    ]);

    const owner = await token(slug('cursor'));
    await createJob(owner);
    await createJob(owner);
    const ownCursor = (await api(`${BASE}?limit=1`, { token: owner })).headers.get('x-next-cursor');
    expect(ownCursor).toBeTruthy();
    // A cursor from one owner's list does not continue another's (or the admin list).
    for (const t of [bob, admin]) {
      const foreign = await api(`${BASE}?cursor=${encodeURIComponent(ownCursor!)}`, { token: t });
      expect(foreign.status).toBe(422);
      expect(locTypes(foreign.body)).toEqual([[['query', 'cursor'], 'value_error']]);
    }
    const garbage = await api(`${BASE}?cursor=not-a-cursor`, { token: alice });
    expect(locTypes(garbage.body)).toEqual([[['query', 'cursor'], 'value_error']]);
  });
});

describe('validation', () => {
  const post = (body: unknown, rawBody?: string) =>
    api(BASE, { method: 'POST', token: alice, ...(rawBody === undefined ? { body } : { rawBody }) });

  it('requires a name of 1 to 200 characters', async () => {
    const missing = await post({ format: 'csv' });
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({
      detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: { format: 'csv' } }],
    });
    expect((await post({ name: '' })).body.detail).toEqual([
      {
        type: 'string_too_short',
        loc: ['body', 'name'],
        msg: 'String should have at least 1 character',
        input: '',
        ctx: { min_length: 1 },
      },
    ]);
    expect((await post({ name: 'n'.repeat(201) })).body.detail).toMatchObject([
      { type: 'string_too_long', loc: ['body', 'name'], ctx: { max_length: 200 } },
    ]);
    expect(locTypes((await post({ name: 42 })).body)).toEqual([[['body', 'name'], 'string_type']]);
    expect((await post({ name: 'n'.repeat(200) })).status).toBe(201);
  });

  it('requires each source document to be a UUID', async () => {
    const good = randomUUID();
    const res = await post({ name: 'docs', source_documents: [good, 'not-a-uuid', good, 7] });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: 'uuid_parsing',
        loc: ['body', 'source_documents', 1],
        msg: 'Input should be a valid UUID',
        input: 'not-a-uuid',
      },
      { type: 'string_type', loc: ['body', 'source_documents', 3], msg: 'Input should be a valid string', input: 7 },
    ]);
    expect(locTypes((await post({ name: 'docs', source_documents: good })).body)).toEqual([
      [['body', 'source_documents'], 'list_type'],
    ]);
  });

  it('accepts only the jsonl and csv formats', async () => {
    const res = await post({ name: 'fmt', format: 'parquet' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: 'enum',
        loc: ['body', 'format'],
        msg: "Input should be 'jsonl' or 'csv'",
        input: 'parquet',
        ctx: { expected: "'jsonl' or 'csv'" },
      },
    ]);
  });

  it('rejects unknown fields', async () => {
    const res = await post({ name: 'extra', owner: 'mallory' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'owner'], msg: 'Extra inputs are not permitted', input: 'mallory' },
    ]);
  });

  it('rejects malformed JSON and a missing body', async () => {
    const res = await post(undefined, '{"name": "x",');
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: 'json_invalid',
        loc: ['body', 13],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: expect.any(String) },
      },
    ]);
    const empty = await post(undefined, '');
    expect(empty.body.detail).toEqual([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);
    expect(locTypes((await post(['name'])).body)).toEqual([[['body'], 'dict_type']]);
  });

  it('lists every failure of one request together', async () => {
    const res = await post({ source_documents: ['nope'], format: 'xml', colour: 'red' });
    expect(res.status).toBe(422);
    expect(locTypes(res.body)).toEqual(
      expect.arrayContaining([
        [['body', 'name'], 'missing'],
        [['body', 'source_documents', 0], 'uuid_parsing'],
        [['body', 'format'], 'enum'],
        [['body', 'colour'], 'extra_forbidden'],
      ]),
    );
    expect(res.body.detail).toHaveLength(4);
  });

  it('checks the path before looking the job up (422 before 404)', async () => {
    const long = 'x'.repeat(65);
    for (const method of ['GET', 'DELETE']) {
      const res = await api(`${BASE}/${long}`, { method, token: alice });
      expect(res.status).toBe(422);
      expect(res.body.detail).toMatchObject([
        { type: 'string_too_long', loc: ['path', 'job_id'], ctx: { max_length: 64 } },
      ]);
    }
  });
});

describe('deleting a dataset job (E11)', () => {
  it('removes every object under the job prefix and then the job; other jobs keep theirs', async () => {
    const job = await createJob(alice);
    const neighbour = await createJob(alice);
    await putObject(`finetune/${job.id}/dataset.jsonl`, '{"prompt":"a","completion":"b"}\n');
    await putObject(`finetune/${job.id}/parts/part-0001.jsonl`);
    await putObject(`finetune/${neighbour.id}/dataset.jsonl`);
    expect(await keysOf(job.id)).toHaveLength(3);

    const res = await api(`${BASE}/${job.id}`, { method: 'DELETE', token: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: job.id, deleted: true });

    expect(await keysOf(job.id)).toEqual([]);
    expect(await keysOf(neighbour.id)).toEqual([
      `finetune/${neighbour.id}/dataset.jsonl`,
      `finetune/${neighbour.id}/manifest.json`,
    ]);
    expect((await api(`${BASE}/${job.id}`, { token: alice })).status).toBe(404);
    expect((await listAll(alice)).items.map((j) => j.id)).not.toContain(job.id);
    expect((await api(`${BASE}/${neighbour.id}`, { token: alice })).status).toBe(200);
  });

  it('answers 404 for an unknown job and for a second delete', async () => {
    const unknown = await api(`${BASE}/${randomUUID()}`, { method: 'DELETE', token: alice });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: expect.any(String), code: 404 });

    const job = await createJob(alice);
    expect((await api(`${BASE}/${job.id}`, { method: 'DELETE', token: alice })).status).toBe(200);
    const again = await api(`${BASE}/${job.id}`, { method: 'DELETE', token: alice });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: expect.any(String), code: 404 });
    // An admin gets 404 as well: nothing is left to delete.
    expect((await api(`${BASE}/${job.id}`, { method: 'DELETE', token: admin })).status).toBe(404);
  });

  it("refuses someone else's job (403) and leaves it whole; an admin may delete it", async () => {
    const job = await createJob(alice);
    await putObject(`finetune/${job.id}/dataset.jsonl`);
    const denied = await api(`${BASE}/${job.id}`, { method: 'DELETE', token: bob });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: expect.any(String), code: 403 });
    expect(await keysOf(job.id)).toHaveLength(2);
    expect((await api(`${BASE}/${job.id}`, { token: alice })).status).toBe(200);

    const byAdmin = await api(`${BASE}/${job.id}`, { method: 'DELETE', token: admin });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toEqual({ id: job.id, deleted: true });
    expect(await keysOf(job.id)).toEqual([]);
    expect((await api(`${BASE}/${job.id}`, { token: alice })).status).toBe(404);
  });

  it('deletes a job whose artifacts were already gone', async () => {
    const job = await createJob(alice);
    const store = new ArtifactStore(s3With(s3), bucket);
    expect(await store.deleteAll(job.id)).toBe(1);
    const res = await api(`${BASE}/${job.id}`, { method: 'DELETE', token: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: job.id, deleted: true });
  });

  it('follows the listing across pages of the artifact store', async () => {
    const jobId = randomUUID();
    const keys = Array.from({ length: 7 }, (_, i) => `finetune/${jobId}/part-${i}.jsonl`);
    for (const key of keys) await putObject(key);
    await putObject(`finetune/${jobId}x/other.jsonl`);
    // Two keys a page: four List calls and four DeleteObjects calls.
    expect(await new ArtifactStore(s3With(s3), bucket, 2).deleteAll(jobId)).toBe(7);
    expect(await keysOf(jobId)).toEqual([]);
    expect(await keysOf(`${jobId}x`)).toEqual([`finetune/${jobId}x/other.jsonl`]);
  });
});

describe('artifact store outage', () => {
  /** The group's app in-process: the suite's DynamoDB and issuer, S3 on a dead port. */
  async function appWithDeadS3() {
    const deadPort = await freePort();
    const runtime = createRuntime(
      loadConfig({
        STAGE: provided('stage'),
        AUTH_ISSUER: provided('issuer'),
        AUTH_AUDIENCE: provided('audience'),
        DYNAMODB_ENDPOINT: provided('dynamodbEndpoint'),
      }),
    );
    const deadS3 = s3Access({
      region: 'us-east-1',
      endpoints: { ...runtime.config.endpoints, s3: `http://127.0.0.1:${deadPort}` },
    });
    const service = new FinetuneService(
      new DynamoFinetuneJobStore(runtime.db, runtime.tableName('finetuneJobs'), runtime.eventsTable),
      new ArtifactStore(deadS3, bucket),
      new DynamoDocumentStore(runtime.db, runtime.tableName('documents')),
    );
    return createFinetuneApp({ authenticator: runtime.authenticator, service });
  }

  it('answers 503 on delete and keeps the job, so a retry can finish it', async () => {
    const app = await appWithDeadS3();
    const job = await createJob(alice);
    await putObject(`finetune/${job.id}/dataset.jsonl`);

    const res = await app.request(`${BASE}/${job.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: expect.any(String), code: 503 });
    expect(res.headers.get('retry-after')).toBe('1');

    const still = await api<Job>(`${BASE}/${job.id}`, { token: alice });
    expect(still.status).toBe(200);
    expect(still.body).toEqual(job);
    expect(await keysOf(job.id)).toHaveLength(2);

    const retry = await api(`${BASE}/${job.id}`, { method: 'DELETE', token: alice });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ id: job.id, deleted: true });
    expect(await keysOf(job.id)).toEqual([]);
  });

  it('answers 503 on create and stores no job', async () => {
    const app = await appWithDeadS3();
    const owner = slug('outage');
    const ownerToken = await token(owner);
    const res = await app.request(BASE, {
      method: 'POST',
      headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'during the outage' }),
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: expect.any(String), code: 503 });
    expect((await listAll(ownerToken)).items).toEqual([]);
  });

  it('still checks 401, 422, 404 and 403 without touching the artifact store', async () => {
    const app = await appWithDeadS3();
    const job = await createJob(alice);
    const call = (path: string, init: RequestInit = {}) => app.request(path, init);
    expect((await call(`${BASE}/${job.id}`, { method: 'DELETE' })).status).toBe(401);
    const auth = (t: string) => ({ authorization: `Bearer ${t}` });
    expect((await call(`${BASE}/${'x'.repeat(65)}`, { method: 'DELETE', headers: auth(alice) })).status).toBe(422);
    expect((await call(`${BASE}/${randomUUID()}`, { method: 'DELETE', headers: auth(alice) })).status).toBe(404);
    expect((await call(`${BASE}/${job.id}`, { method: 'DELETE', headers: auth(bob) })).status).toBe(403);
    expect((await call(`${BASE}/${job.id}`, { headers: auth(alice) })).status).toBe(200);
  });
});
