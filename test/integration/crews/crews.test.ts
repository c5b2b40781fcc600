import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createCrewsApp } from '../../../functions/crews/app.js';
import { plainRunService } from '../../../functions/crews/compose.js';
import { MAX_ERROR_BYTES, MAX_OUTPUT_BYTES } from '../../../functions/crews/limits.js';
import { jsonBytes } from '../../../shared/json.js';
import { RunService } from '../../../functions/crews/runs/run-service.js';
import { TemplateService } from '../../../functions/crews/templates/template-service.js';
import { DynamoRunStore } from '../../../functions/crews/runs/run-store.js';
import { DynamoTemplateStore } from '../../../functions/crews/templates/template-store.js';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { documentClient } from '../../../shared/aws/clients.js';
import { loadConfig } from '../../../shared/config.js';
import { createRuntime } from '../../../functions/composition.js';
import { eventually, notYet } from '../../support/eventually.js';
import { adminPsk, adminToken, api, slug, token, serviceLog } from '../helpers.js';
import { provided } from '../provided.js';

let admin: string;
let alice: string;
let bob: string;

beforeAll(async () => {
  admin = await adminToken('crew-admin');
  alice = await token('alice');
  bob = await token('bob');
});

const threeSteps = {
  name: 'greeting',
  description: 'says hello',
  variables: [
    { name: 'who', type: 'string', required: true, description: 'whom to greet' },
    { name: 'times', type: 'integer', default: 2 },
    { name: 'loud', type: 'boolean', default: false },
    { name: 'extra' },
  ],
  steps: [
    { id: 'hello', kind: 'render', template: 'Hello {{who}} x{{times}} loud={{loud}} extra={{extra}}' },
    { id: 'pause', kind: 'wait', seconds: 0.05 },
    { id: 'echo', kind: 'render', template: 'said: {{steps.hello.output}}' },
  ],
};

async function createTemplate(body: unknown = threeSteps) {
  const res = await api('/api/crew-templates', { method: 'POST', token: admin, body });
  expect(res.status).toBe(201);
  return res.body as { id: string; [k: string]: unknown };
}

interface Event {
  index: number;
  type: string;
  step_id?: string;
  data?: Record<string, unknown>;
  correlation_id: string;
  timestamp: string;
  message: string;
}

/** Polls E13 as a client would, keeping `start` across polls, until a terminal event. */
async function pollUntilDone(correlationId: string, t: string, timeoutMs = 20_000): Promise<Event[]> {
  const all: Event[] = [];
  return eventually(
    async () => {
      const res = await api<Event[]>(`/api/events/${correlationId}?start=${all.length}`, { token: t });
      expect(res.status).toBe(200);
      all.push(...res.body);
      const done = all.some((e) => e.type === 'run.completed' || e.type === 'run.failed');
      return done ? all : notYet(all.map((e) => e.type));
    },
    timeoutMs,
    `run ${correlationId} finished`,
    50,
  );
}

/** A pending run as stored by E2 (run.queued written, nothing started), for tests that write runs directly. */
const pendingRun = <T extends { template_id: string; values: Record<string, unknown>; steps: never[] }>(
  correlation_id: string,
  now: string,
  fields: T,
) => ({
  correlation_id,
  status: 'pending' as const,
  created_by: 'alice',
  created_at: now,
  started_at: null,
  finished_at: null,
  event_count: 1,
  error: null,
  expires_at: Math.floor(Date.now() / 1000) + 3600,
  ...fields,
});

const run = (templateId: string, values: unknown, t = alice) =>
  api(`/api/crew-templates/${templateId}/run`, { method: 'POST', token: t, body: { values } });

describe('crew templates', () => {
  it('creates a template with defaults filled in, readable by any user', async () => {
    const created = await createTemplate();
    expect(created).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'greeting',
      description: 'says hello',
      created_by: 'crew-admin',
      steps: threeSteps.steps,
    });
    expect(created.variables).toEqual([
      { name: 'who', type: 'string', required: true, description: 'whom to greet' },
      { name: 'times', type: 'integer', required: false, default: 2 },
      { name: 'loud', type: 'boolean', required: false, default: false },
      { name: 'extra', type: 'string', required: false },
    ]);
    expect(created.created_at).toBe(created.updated_at);
    const read = await api(`/api/crew-templates/${created.id}`, { token: alice });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created);
  });

  it('lets only admins write, with a pre-shared key too', async () => {
    expect((await api('/api/crew-templates', { method: 'POST', body: threeSteps })).status).toBe(401);
    expect((await api('/api/crew-templates', { method: 'POST', token: alice, body: threeSteps })).status).toBe(403);
    const viaPsk = await api('/api/crew-templates', { method: 'POST', psk: adminPsk(), body: threeSteps });
    expect(viaPsk.status).toBe(201);
    const id = viaPsk.body.id;
    expect((await api(`/api/crew-templates/${id}`, { method: 'PUT', token: alice, body: threeSteps })).status).toBe(
      403,
    );
    expect((await api(`/api/crew-templates/${id}`, { method: 'DELETE', token: alice })).status).toBe(403);
    expect((await api(`/api/crew-templates/${id}`)).status).toBe(401);
  });

  it('lists templates, paginated by cursor', async () => {
    const ids = [(await createTemplate()).id, (await createTemplate()).id, (await createTemplate()).id];
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<typeof api<{ id: string }[]>>> = await api(
        `/api/crew-templates?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        { token: alice },
      );
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.map((t) => t.id));
      cursor = page.headers.get('x-next-cursor');
      pages++;
    } while (cursor && pages < 500);
    expect(seen).toEqual(expect.arrayContaining(ids));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.indexOf(ids[0]!)).toBeLessThan(seen.indexOf(ids[2]!));
  });

  it('replaces and deletes; 404 for unknown templates', async () => {
    const created = await createTemplate();
    const replaced = await api(`/api/crew-templates/${created.id}`, {
      method: 'PUT',
      token: admin,
      body: { name: 'renamed', steps: [{ id: 'only', kind: 'render', template: 'x' }] },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      id: created.id,
      name: 'renamed',
      variables: [],
      description: null,
      created_at: created.created_at,
    });
    expect(Date.parse(replaced.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.created_at as string));
    expect((await api(`/api/crew-templates/${created.id}`, { token: alice })).body.name).toBe('renamed');
    const del = await api(`/api/crew-templates/${created.id}`, { method: 'DELETE', token: admin });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await api(`/api/crew-templates/${created.id}`, { token: alice })).status).toBe(404);
    expect((await api(`/api/crew-templates/${created.id}`, { method: 'DELETE', token: admin })).status).toBe(404);
    const putMissing = await api(`/api/crew-templates/${created.id}`, {
      method: 'PUT',
      token: admin,
      body: threeSteps,
    });
    expect(putMissing.status).toBe(404);
    expect(putMissing.body).toEqual({ error: expect.any(String), code: 404 });
  });

  it('rejects bad declarations with the offending loc', async () => {
    const bad = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: {
        name: 'bad',
        variables: [
          { name: 'a', type: 'integer', default: 'ten' },
          { name: 'a' },
          { name: '9lives' },
          { name: 'b', type: 'date' },
        ],
        steps: [
          { id: 'one', kind: 'render', template: '{{missing}} {{steps.two.output}}' },
          { id: 'two', kind: 'render', template: '{{steps.ghost.output}}' },
          { id: 'one', kind: 'wait', seconds: 1 },
        ],
      },
    });
    expect(bad.status).toBe(422);
    // Shape errors come first, in one answer; declaration rules need a well-formed body.
    expect(bad.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['body', 'variables', 2, 'name'], 'string_pattern_mismatch'],
      [['body', 'variables', 3, 'type'], 'enum'],
    ]);

    const rules = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: {
        name: 'rules',
        variables: [{ name: 'a', type: 'integer', default: 'ten' }, { name: 'a' }],
        steps: [
          { id: 'one', kind: 'render', template: '{{missing}} {{steps.two.output}}' },
          { id: 'two', kind: 'http', method: 'GET', url: 'http://127.0.0.1/{{steps.ghost.output}}' },
          { id: 'one', kind: 'wait', seconds: 1 },
        ],
      },
    });
    expect(rules.status).toBe(422);
    expect(rules.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['body', 'variables', 0, 'default'], 'int_type'],
      [['body', 'variables', 1, 'name'], 'value_error'],
      [['body', 'steps', 0, 'template'], 'value_error'],
      [['body', 'steps', 0, 'template'], 'value_error'],
      [['body', 'steps', 1, 'url'], 'value_error'],
      [['body', 'steps', 2, 'id'], 'value_error'],
    ]);
    expect(rules.body.detail[3].msg).toMatch(/later step 'two'/);
    expect(rules.body.detail[4].msg).toMatch(/unknown step 'ghost'/);
  });

  it('validates shapes: required fields, step kinds and limits, unknown fields', async () => {
    const res = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: { description: 5, steps: [], colour: 'red' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'missing', loc: ['body', 'name'] }),
        expect.objectContaining({ type: 'string_type', loc: ['body', 'description'] }),
        expect.objectContaining({ type: 'too_short', loc: ['body', 'steps'] }),
        expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'colour'] }),
      ]),
    );
    const wait = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: {
        name: 'w',
        steps: [
          { id: 'w', kind: 'wait', seconds: 61 },
          { id: 'Bad Id', kind: 'render', template: '' },
        ],
      },
    });
    expect(wait.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['body', 'steps', 0, 'seconds'], 'less_than_equal'],
      [['body', 'steps', 1, 'id'], 'string_pattern_mismatch'],
    ]);
    const kind = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: { name: 'k', steps: [{ id: 'k', kind: 'shell', command: 'rm -rf /' }] },
    });
    expect(kind.status).toBe(422);
    expect(kind.body.detail).toEqual([
      {
        type: 'union_tag_invalid',
        loc: ['body', 'steps', 0],
        msg: "Input tag 'shell' found using 'kind' does not match any of the expected tags: 'render', 'http', 'llm', 'wait', 'approval'",
        input: { id: 'k', kind: 'shell', command: 'rm -rf /' },
        ctx: { discriminator: "'kind'", tag: 'shell', expected_tags: "'render', 'http', 'llm', 'wait', 'approval'" },
      },
    ]);
    const untagged = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: { name: 'k', steps: [{ id: 'k' }] },
    });
    expect(untagged.body.detail).toEqual([
      expect.objectContaining({ type: 'union_tag_not_found', loc: ['body', 'steps', 0] }),
    ]);
  });
});

describe('E2 run and E13 events', () => {
  it('runs with defaults filled and polls from 0 to run.completed with outputs', async () => {
    const template = await createTemplate();
    const started = await run(template.id, { who: 'world' });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({
      correlation_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'pending',
      message: expect.any(String),
    });
    const id = started.body.correlation_id;

    const first = await api<Event[]>(`/api/events/${id}`, { token: alice });
    expect(first.status).toBe(200);
    expect(first.body[0]).toMatchObject({ index: 0, type: 'run.queued', correlation_id: id });

    const events = await pollUntilDone(id, alice);
    expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => [e.type, e.step_id ?? null])).toEqual([
      ['run.queued', null],
      ['run.started', null],
      ['step.started', 'hello'],
      ['step.completed', 'hello'],
      ['step.started', 'pause'],
      ['step.completed', 'pause'],
      ['step.started', 'echo'],
      ['step.completed', 'echo'],
      ['run.completed', null],
    ]);
    expect(events.at(-1)!.data).toEqual({
      outputs: {
        hello: 'Hello world x2 loud=false extra=',
        pause: null,
        echo: 'said: Hello world x2 loud=false extra=',
      },
    });
    for (const e of events) expect(e.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const status = await api(`/api/crew-runs/${id}`, { token: alice });
    expect(status.status).toBe(200);
    expect(status.body).toEqual({
      correlation_id: id,
      template_id: template.id,
      status: 'succeeded',
      values: { who: 'world', times: 2, loud: false, extra: null },
      created_by: 'alice',
      created_at: expect.any(String),
      started_at: expect.any(String),
      finished_at: expect.any(String),
      event_count: events.length,
      error: null,
      progress: { completed_steps: 3, total_steps: 3, current_step: null },
      step_ids: ['hello', 'pause', 'echo'],
      rerun_of: null,
      schedule_id: null,
    });

    const later = await api<Event[]>(`/api/events/${id}?start=5`, { token: alice });
    expect(later.body.map((e) => e.index)).toEqual([5, 6, 7, 8]);
    const alias = await api<Event[]>(`/api/events/${id}?start_index=7`, { token: alice });
    expect(alias.body.map((e) => e.index)).toEqual([7, 8]);
    const past = await api(`/api/events/${id}?start=100`, { token: alice });
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
  });

  it('validates values against the declaration, all problems together', async () => {
    const template = await createTemplate();
    const res = await run(template.id, { times: 1.5, loud: 'maybe', stranger: 1 });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: 'missing',
        loc: ['body', 'values', 'who'],
        msg: 'Field required',
        input: { times: 1.5, loud: 'maybe', stranger: 1 },
      },
      expect.objectContaining({ type: 'int_from_float', loc: ['body', 'values', 'times'], input: 1.5 }),
      expect.objectContaining({ type: 'bool_parsing', loc: ['body', 'values', 'loud'], input: 'maybe' }),
      expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'values', 'stranger'], input: 1 }),
    ]);
    // pydantic's lax mode: "3" is 3, "yes" is true; "ten" cannot be read as an integer.
    const lax = await run(template.id, { who: 'lax', times: '3', loud: 'yes' });
    expect(lax.status).toBe(202);
    const stored = await api(`/api/crew-runs/${lax.body.correlation_id}`, { token: alice });
    expect(stored.body.values).toMatchObject({ who: 'lax', times: 3, loud: true });
    const ten = await run(template.id, { who: 'lax', times: 'ten' });
    expect(ten.body.detail).toEqual([
      expect.objectContaining({ type: 'int_parsing', loc: ['body', 'values', 'times'], input: 'ten' }),
    ]);
    const typed = await run(template.id, { who: 5 });
    expect(typed.body.detail).toEqual([
      expect.objectContaining({ type: 'string_type', loc: ['body', 'values', 'who'] }),
    ]);
    const notObject = await run(template.id, ['x']);
    expect(notObject.body.detail).toEqual([expect.objectContaining({ type: 'dict_type', loc: ['body', 'values'] })]);
    const noBody = await api(`/api/crew-templates/${template.id}/run`, { method: 'POST', token: alice });
    expect(noBody.body.detail).toEqual([expect.objectContaining({ type: 'missing', loc: ['body'] })]);
  });

  it('answers 404 for an unknown template and 401 without credentials', async () => {
    const res = await run('00000000-0000-4000-8000-00000000beef', {});
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: 404 });
    expect((await api(`/api/crew-templates/x/run`, { method: 'POST', body: { values: {} } })).status).toBe(401);
  });

  it('validates E13 parameters', async () => {
    const id = '123e4567-e89b-42d3-a456-426614174000';
    const negative = await api(`/api/events/${id}?start=-1`, { token: alice });
    expect(negative.status).toBe(422);
    expect(negative.body.detail).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['query', 'start'],
        msg: 'Input should be greater than or equal to 0',
        input: '-1',
        ctx: { ge: 0 },
      },
    ]);
    const word = await api(`/api/events/${id}?start=abc`, { token: alice });
    expect(word.body.detail[0]).toMatchObject({ type: 'int_parsing', loc: ['query', 'start'] });
    const short = await api(`/api/events/${id.slice(1)}`, { token: alice });
    expect(short.status).toBe(422);
    expect(short.body.detail).toEqual([
      {
        type: 'string_too_short',
        loc: ['path', 'correlation_id'],
        msg: 'String should have at least 36 characters',
        input: id.slice(1),
        ctx: { min_length: 36 },
      },
    ]);
    const long = await api(`/api/events/${id}a`, { token: alice });
    expect(long.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_long', loc: ['path', 'correlation_id'], ctx: { max_length: 36 } }),
    ]);
    expect((await api(`/api/crew-runs/${id}a`, { token: alice })).status).toBe(422);
    expect((await api(`/api/events/${id}?start=-1`)).status).toBe(401);
  });

  it("answers 404 for an unknown run and 403 for someone else's, admins excepted", async () => {
    const unknown = '123e4567-e89b-42d3-a456-426614174999';
    expect((await api(`/api/events/${unknown}`, { token: alice })).status).toBe(404);
    expect((await api(`/api/crew-runs/${unknown}`, { token: alice })).status).toBe(404);
    const template = await createTemplate();
    const id = (await run(template.id, { who: 'x' })).body.correlation_id;
    const other = await api(`/api/events/${id}`, { token: bob });
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ error: expect.any(String), code: 403 });
    expect((await api(`/api/crew-runs/${id}`, { token: bob })).status).toBe(403);
    expect((await api(`/api/events/${id}`, { token: admin })).status).toBe(200);
    expect((await api(`/api/crew-runs/${id}`, { psk: adminPsk() })).status).toBe(200);
  });

  it('completes 20 concurrent runs with gap-free, unique indices', async () => {
    const template = await createTemplate();
    const handles = await Promise.all(
      Array.from({ length: 20 }, (_, i) => run(template.id, { who: `p${i}`, times: i })),
    );
    expect(handles.map((h) => h.status)).toEqual(Array(20).fill(202));
    const runs = await Promise.all(handles.map((h) => pollUntilDone(h.body.correlation_id, alice, 60_000)));
    runs.forEach((events, i) => {
      expect(events.map((e) => e.index)).toEqual(events.map((_, j) => j));
      expect(events.filter((e) => e.type === 'run.completed')).toHaveLength(1);
      expect(events.at(-1)!.data!.outputs).toMatchObject({ hello: `Hello p${i} x${i} loud=false extra=` });
    });
  });

  it('fails the run and answers 503 when the queue does not answer', async () => {
    const db = documentClient({
      region: 'us-east-1',
      endpoints: { dynamodb: provided('dynamodbEndpoint'), sqs: undefined, s3: undefined },
    });
    const stage = provided('stage');
    const sent: string[] = [];
    const service = new RunService(
      new TemplateService(
        new DynamoTemplateStore(db, physicalTableName(stage, TABLES.crewTemplates), {
          tableName: physicalTableName(stage, TABLES.domainEvents),
          ttlDays: 30,
          source: `dpm/${stage}`,
        }),
      ),
      new DynamoRunStore(db, physicalTableName(stage, TABLES.crewRuns), physicalTableName(stage, TABLES.runLog), {
        tableName: physicalTableName(stage, TABLES.domainEvents),
        ttlDays: 30,
        source: `dpm/${stage}`,
      }),
      {
        send: async (id) => {
          sent.push(id);
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        },
      },
      { eventsTtlDays: 30 },
    );
    const app = createCrewsApp({
      authenticator: {
        authenticate: async () => ({
          principal: '["https://issuer.test","sub-alice"]',
          name: 'alice',
          roles: new Set<string>(),
          via: 'bearer' as const,
        }),
      } as never,
      // no schedule route is called here
      schedules: {} as never,
      templates: {} as never,
      runLog: {} as never,
      sdk: {} as never,
      runs: service,
    });
    const template = await createTemplate();
    const res = await app.request(`/api/crew-templates/${template.id}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
      body: JSON.stringify({ values: { who: slug() } }),
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: expect.any(String), code: 503 });
    expect(sent).toHaveLength(1);
    // Read as an admin: the stub above authenticates no real principal.
    const status = await api(`/api/crew-runs/${sent[0]}`, { token: admin });
    expect(status.body).toMatchObject({ status: 'failed', error: expect.stringContaining('queued'), event_count: 2 });
    const events = await api<Event[]>(`/api/events/${sent[0]}`, { token: admin });
    expect(events.body.map((e) => e.type)).toEqual(['run.queued', 'run.failed']);
  });
});

/** A runtime of its own on the local platform's DynamoDB and queue. */
const platformRuntime = () =>
  createRuntime(
    loadConfig({
      STAGE: provided('stage'),
      DYNAMODB_ENDPOINT: provided('dynamodbEndpoint'),
      SQS_ENDPOINT: provided('sqsEndpoint'),
      CREW_RUN_QUEUE_URL: provided('crewRunQueueUrl'),
    }),
  );

/** A pending run written directly to the store with its run.queued event, as E2 leaves it. */
async function storePendingRun(
  fields: { template_id: string; values: Record<string, unknown>; steps: never[] } = {
    template_id: randomUUID(),
    values: {},
    steps: [],
  },
) {
  const runtime = platformRuntime();
  const store = new DynamoRunStore(
    runtime.db,
    runtime.tableName('crewRuns'),
    runtime.tableName('runLog'),
    runtime.eventsTable,
  );
  const id = randomUUID();
  const now = new Date().toISOString();
  const item = pendingRun(id, now, fields);
  await store.create(
    item,
    { index: 0, correlation_id: id, type: 'run.queued', timestamp: now, message: 'queued' },
    { type: 'crew.run.queued', actor: 'test', at: now },
  );
  return { runtime, store, id, now, item };
}

describe('unfinished runs', () => {
  it('are queued again (as the local platform does at start-up) and finish', async () => {
    const template = await createTemplate();
    // A run whose message was lost: stored with its first event, never queued.
    const { runtime, id } = await storePendingRun({
      template_id: template.id,
      values: { who: 'lost', times: 1, loud: true, extra: null },
      steps: threeSteps.steps as never,
    });
    await new Promise((r) => setTimeout(r, 300));
    // Read as an admin: the run was stored directly, with a starter's name only.
    expect((await api(`/api/crew-runs/${id}`, { token: admin })).body.status).toBe('pending');
    expect(await plainRunService(runtime).requeueOpenRuns()).toBeGreaterThanOrEqual(1);
    const events = await pollUntilDone(id, admin);
    expect(events.at(-1)!.type).toBe('run.completed');
    expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
  });
});

describe('what a template or run can hold', () => {
  it('answers 422, not 500, for a template or values too large to store, and any JSON value round-trips', async () => {
    const big = await api('/api/crew-templates', {
      method: 'POST',
      token: admin,
      body: {
        name: 'big',
        steps: Array.from({ length: 5 }, (_, i) => ({ id: `s${i}`, kind: 'render', template: 'x'.repeat(100_000) })),
      },
    });
    expect(big.status).toBe(422);
    expect(big.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body'] });

    const template = await createTemplate({
      name: 'json',
      variables: [
        { name: 's', default: 'x' },
        { name: 'o', type: 'object', default: { '': 'empty key', n: 1e300 } },
        { name: 'n', type: 'integer', default: 2 ** 60 },
      ],
      steps: [{ id: 'a', kind: 'render', template: '{{o}} {{n}}' }],
    });
    expect((await api(`/api/crew-templates/${template.id}`, { token: alice })).body.variables[1].default).toEqual({
      '': 'empty key',
      n: 1e300,
    });
    const tooMuch = await run(template.id, { s: 'x'.repeat(420_000) });
    expect(tooMuch.status).toBe(422);
    const fine = await run(template.id, { o: { '': [[[[1]]]], big: 1e300 } });
    expect(fine.status).toBe(202);
    const events = await pollUntilDone(fine.body.correlation_id, alice);
    expect(events.at(-1)!.data).toEqual({ outputs: { a: `{"":[[[[1]]]],"big":1e+300} ${2 ** 60}` } });
    expect(events[0]!.data).toMatchObject({ values: { o: { '': [[[[1]]]], big: 1e300 }, n: 2 ** 60 } });
  });
});

// ---------------------------------------------------------------------------------------
// Sizes (issue 12, item 8): what a run writes is bounded as JSON, where a control character
// takes six bytes (\u0001), and so is every E13 answer.
// ---------------------------------------------------------------------------------------

/** 0x00-0x1f, over and over: most take six bytes in JSON. */
const controlCharacters = (length: number) => Array.from({ length }, (_, i) => String.fromCharCode(i % 32)).join('');

const MiB = 1024 * 1024;

let peer: Server;
let peerPort: number;
beforeAll(async () => {
  peer = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/noise')) {
        res.setHeader('content-type', 'text/plain; charset=utf-8');
        res.end(controlCharacters(MAX_OUTPUT_BYTES));
      } else if (req.url?.startsWith('/fail')) {
        res.statusCode = 500;
        res.end('failed');
      } else {
        res.end('ok');
      }
    });
  });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
  peerPort = (peer.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => peer.close(() => resolve())));

/** Every event from `start` on, page by page as a client reads them; checks each page's size. */
async function readPages(id: string, t: string): Promise<{ events: Event[]; pages: number[] }> {
  const events: Event[] = [];
  const pages: number[] = [];
  for (;;) {
    const res = await api<Event[]>(`/api/events/${id}?start=${events.length}`, { token: t });
    expect(res.status).toBe(200);
    expect(Buffer.byteLength(res.text, 'utf8')).toBeLessThanOrEqual(MiB);
    if (res.body.length === 0) return { events, pages };
    expect(res.body[0]!.index).toBe(events.length);
    pages.push(res.body.length);
    events.push(...res.body);
  }
}

async function finishedRun(
  id: string,
  t: string,
  timeoutMs = 25_000,
): Promise<{ status: string; error: string | null }> {
  return eventually(
    async () => {
      const res = await api(`/api/crew-runs/${id}`, { token: t });
      expect(res.status).toBe(200);
      return res.body.status === 'succeeded' || res.body.status === 'failed' ? res.body : notYet(res.body.status);
    },
    timeoutMs,
    `run ${id} finished`,
  );
}

describe('step outputs of control characters (bounded as JSON)', () => {
  it('a run whose render and http steps each output 16 KiB of control characters completes with run.completed', async () => {
    const renders = Array.from({ length: 6 }, (_, i) => ({ id: `noise-${i}`, kind: 'render', template: '{{noise}}' }));
    const template = await createTemplate({
      name: slug('control-characters'),
      variables: [{ name: 'noise', required: true }],
      steps: [
        ...renders,
        { id: 'fetch', kind: 'http', method: 'GET', url: `http://127.0.0.1:${peerPort}/noise` },
        { id: 'both', kind: 'render', template: '{{steps.noise-0.output}}{{steps.fetch.output}}' },
      ],
    });
    const noise = controlCharacters(MAX_OUTPUT_BYTES);
    const started = await run(template.id, { noise });
    expect(started.status).toBe(202);
    const id = started.body.correlation_id as string;

    const run_ = await finishedRun(id, alice);
    expect(run_).toMatchObject({ status: 'succeeded', error: null });
    const { events } = await readPages(id, alice);
    expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
    const completed = events.filter((e) => e.type === 'step.completed');
    expect(completed.map((e) => e.step_id)).toEqual([...renders.map((r) => r.id), 'fetch', 'both']);
    for (const step of completed) {
      const output = step.data!.output as string;
      expect(jsonBytes(output)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
      expect(output).toMatch(/…\[truncated: \d+ bytes as JSON, over the limit of 16384\]$/);
    }
    // A render step keeps the start of its text; the http step's output is its answer's JSON.
    expect(noise.startsWith((completed[0]!.data!.output as string).split('…')[0]!)).toBe(true);
    expect(completed[6]!.data!.output as string).toMatch(/^\{"status":200,"body":"\\u0000\\u0001/);

    const last = events.at(-1)!;
    expect(last.type).toBe('run.completed');
    expect(Object.keys((last.data as { outputs: object }).outputs)).toEqual(completed.map((e) => e.step_id));
    expect((last.data as { outputs: Record<string, unknown> }).outputs).toEqual(
      Object.fromEntries(completed.map((e) => [e.step_id, e.data!.output])),
    );
  });

  it('E13 pages stay within 1 MiB of JSON for a run with many large events, and continue without gaps', async () => {
    const steps = Array.from({ length: 20 }, (_, i) => ({ id: `s${i}`, kind: 'render', template: '{{noise}}' }));
    const template = await createTemplate({
      name: slug('large-events'),
      variables: [
        { name: 'noise', required: true },
        { name: 'filler', required: true },
      ],
      steps,
    });
    // run.queued carries the values (~395 KB of JSON, close to what a run item holds), 20
    // step.completed 16 KiB each, run.completed all of them: more than 1 MiB of events.
    const started = await run(template.id, { noise: controlCharacters(4_000), filler: 'f'.repeat(373_000) });
    expect(started.status).toBe(202);
    const id = started.body.correlation_id as string;
    expect(await finishedRun(id, alice)).toMatchObject({ status: 'succeeded' });

    const { events, pages } = await readPages(id, alice);
    expect(events).toHaveLength(2 + 2 * steps.length + 1);
    expect(events.map((e) => e.index)).toEqual(events.map((_, i) => i));
    expect(events.at(-1)!.type).toBe('run.completed');
    expect(jsonBytes(events)).toBeGreaterThan(MiB);
    expect(pages.length).toBeGreaterThan(1);
  });

  it('E13 splits stored events larger than a page allows, one event at least per answer', async () => {
    // Events as a service without these bounds wrote them: messages that are 6x larger as
    // JSON than as stored (control characters), one of them over 1 MiB on its own.
    const { store, id, now, item } = await storePendingRun();
    const sizes = [30_000, 30_000, 30_000, 30_000, 30_000, 30_000, 30_000, 200_000, 10, 30_000, 30_000];
    for (const [i, size] of sizes.entries()) {
      const ok = await store.append(item, {
        index: i + 1,
        correlation_id: id,
        type: 'step.failed',
        step_id: `s${i}`,
        timestamp: now,
        message: controlCharacters(size),
        data: { error: 'x' },
      });
      expect(ok).toBe(true);
    }
    const read: Event[] = [];
    const answers: { count: number; bytes: number }[] = [];
    for (;;) {
      const res = await api<Event[]>(`/api/events/${id}?start=${read.length}`, { token: admin });
      expect(res.status).toBe(200);
      if (res.body.length === 0) break;
      const bytes = Buffer.byteLength(res.text, 'utf8');
      // Over 1 MiB only when one event alone is larger, so that the client still advances.
      if (bytes > MiB) expect(res.body).toHaveLength(1);
      answers.push({ count: res.body.length, bytes });
      read.push(...res.body);
    }
    expect(read.map((e) => e.index)).toEqual(Array.from({ length: sizes.length + 1 }, (_, i) => i));
    expect(read.slice(1).map((e) => e.message.length)).toEqual(sizes);
    expect(answers.filter((a) => a.bytes > MiB)).toEqual([{ count: 1, bytes: expect.any(Number) }]);
    expect(answers.length).toBeGreaterThanOrEqual(4);
    expect(answers.every((a) => a.count >= 1)).toBe(true);
  });

  it('E13 answers at most 1000 events, and the next start continues without gaps', async () => {
    const { store, id, now, item } = await storePendingRun();
    const total = 1205;
    for (let index = 1; index < total; index++) {
      const ok = await store.append(item, {
        index,
        correlation_id: id,
        type: 'step.started',
        step_id: `s${index}`,
        timestamp: now,
        message: 'started',
      });
      expect(ok).toBe(true);
    }
    const first = await api<Event[]>(`/api/events/${id}`, { token: admin });
    expect(first.status).toBe(200);
    expect(first.body.map((e) => e.index)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    const rest = await api<Event[]>(`/api/events/${id}?start=1000`, { token: admin });
    expect(rest.body.map((e) => e.index)).toEqual(Array.from({ length: total - 1000 }, (_, i) => 1000 + i));
    expect((await api<Event[]>(`/api/events/${id}?start=${total}`, { token: admin })).body).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------
// Credentials in http step URLs (issue 12, item 9): never in an event, the run, or the log.
// ---------------------------------------------------------------------------------------

describe('credentials in the URL of an http step', () => {
  /** A port nothing listens on: a server's, closed again. */
  async function refusedPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }

  it.each([
    [
      'a host outside the allow-list',
      () => 'not-allowed.example',
      /not-allowed\.example is not in CREW_HTTP_ALLOWED_HOSTS/,
    ],
    ['an allowed host that refuses the connection', async () => `127.0.0.1:${await refusedPort()}`, /ECONNREFUSED/],
    [
      'an allowed host that answers 500',
      async () => `127.0.0.1:${peerPort}`,
      /^HTTP 500 from http:\/\/\*\*\*@127\.0\.0\.1:\d+\/fail\/x\?\*\*\*$/,
    ],
    [
      'a URL that does not parse',
      async () => '127.0.0.1:99999',
      /^not a URL: http:\/\/\*\*\*@127\.0\.0\.1:99999\/fail\/x\?\*\*\*$/,
    ],
  ])('%s: events, the run and the log show neither the password nor the api key', async (_case, host, error) => {
    const password = `pw-${randomUUID()}`;
    const apiKey = `key-${randomUUID()}`;
    const template = await createTemplate({
      name: slug('credentials'),
      steps: [
        {
          id: 'call',
          kind: 'http',
          method: 'GET',
          url: `http://ada:${password}@${await host()}/fail/x?api_key=${apiKey}&page=1`,
        },
      ],
    });
    const started = await run(template.id, {});
    expect(started.status).toBe(202);
    const id = started.body.correlation_id as string;
    const finished = await finishedRun(id, alice);
    expect(finished.status).toBe('failed');

    const { events } = await readPages(id, alice);
    expect(events.map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
      'step.failed',
      'run.failed',
    ]);
    const failed = events[3]!;
    expect(failed.data!.error).toMatch(error);
    expect(jsonBytes(failed.data!.error)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
    expect(events[4]!.data).toEqual({ error: failed.data!.error });
    expect(finished.error).toBe(failed.data!.error);
    for (const text of [JSON.stringify(events), JSON.stringify(finished)]) {
      expect(text).not.toContain(password);
      expect(text).not.toContain(apiKey);
    }

    // The worker logged the failure (with the run's correlation id) before writing step.failed.
    const log = await serviceLog();
    const lines = log.split('\n').filter((line) => line.includes(id));
    expect(lines.some((line) => line.includes('crew step failed'))).toBe(true);
    expect(log).not.toContain(password);
    expect(log).not.toContain(apiKey);
  });
});
