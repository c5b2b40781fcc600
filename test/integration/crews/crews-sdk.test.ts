/**
 * The NX1 SDK's crews over HTTP (docs/sdk.md): crew types are crew templates by name
 * (`GET /api/crews/types`), `POST /api/crews/run` is E2 by name with `task_input` as the
 * values, `GET /api/crews/results/{id}` reads a run's outputs; and the four built-in
 * templates, made at start-up, run against the suite's OpenAI-compatible server.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_AUTHOR, BUILT_IN_TEMPLATES } from '../../../functions/crews/templates/built-in-templates.js';
import { RunService } from '../../../functions/crews/runs/run-service.js';
import { CrewsSdk } from '../../../functions/crews/sdk-service.js';
import { TemplateService } from '../../../functions/crews/templates/template-service.js';
import { DynamoRunStore } from '../../../functions/crews/runs/run-store.js';
import { DynamoTemplateStore } from '../../../functions/crews/templates/template-store.js';
import { ensureTables } from '../../../infra/local/provision.js';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import type { Caller } from '../../../shared/auth/caller.js';
import { emulatorOptions } from '../../../shared/aws/client-options.js';
import { eventually, notYet } from '../../support/eventually.js';
import { storeUnqueuedRun, storeWaitingRun } from '../../support/pending-run.js';
import { countingClient } from '../crew-support.js';
import { eventsOf } from '../event-feed.js';
import {
  adminPsk,
  adminToken,
  api,
  type ApiResponse,
  approverToken,
  db,
  eventsTable,
  principalOf,
  slug,
  table,
  token,
} from '../helpers.js';
import { provided } from '../provided.js';

let admin: string;
let user: string;
let other: string;
let approver: string;
const USER = `crews-sdk-user-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  admin = await adminToken(`crews-sdk-admin-${randomUUID().slice(0, 8)}`);
  user = await token(USER);
  other = await token(`crews-sdk-other-${randomUUID().slice(0, 8)}`);
  approver = await approverToken(`crews-sdk-approver-${randomUUID().slice(0, 8)}`);
});

const GREETING = {
  description: 'says hello',
  variables: [
    { name: 'who', type: 'string', required: true },
    { name: 'times', type: 'integer', default: 2 },
  ],
  steps: [
    { id: 'hello', kind: 'render', template: 'Hello {{who}} x{{times}}' },
    { id: 'echo', kind: 'render', template: 'said: {{steps.hello.output}}' },
  ],
};

/** A template of `name` (default: a name no other template has); answers its id and name. */
async function template(name = slug('crew-sdk'), body: object = GREETING): Promise<{ id: string; name: string }> {
  const res = await api('/api/crew-templates', { method: 'POST', token: admin, body: { ...body, name } });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, name };
}

const runCrew = (body: unknown, as = user) => api('/api/crews/run', { method: 'POST', token: as, body });

/** Every crew type, following `X-Next-Cursor` (the shared platform holds every test's templates). */
async function allCrewTypes(): Promise<any[]> {
  const items: any[] = [];
  let path = '/api/crews/types?limit=1000';
  for (let page = 0; page < 100; page++) {
    const res = await api<any[]>(path, { token: user });
    expect(res.status, res.text).toBe(200);
    items.push(...res.body);
    const cursor = res.headers.get('x-next-cursor');
    if (!cursor) return items;
    path = `/api/crews/types?limit=1000&cursor=${encodeURIComponent(cursor)}`;
  }
  throw new Error('more than 100 pages of crew types');
}

const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

/** The run's result once it finished (bounded: 30 s). */
const finishedResult = (id: string, as = user): Promise<ApiResponse> =>
  eventually(
    async () => {
      const res = await api(`/api/crews/results/${id}`, { token: as });
      expect(res.status, res.text).toBe(200);
      return FINISHED.has(res.body.status) ? res : notYet(res.body.status);
    },
    30_000,
    `crew run ${id} finished`,
  );

describe('GET /api/crews/types', () => {
  it('lists the four built-in templates, made at start-up, with their inputs', async () => {
    // read as templates first: the platform made them when it started, before any crews call
    for (const builtIn of BUILT_IN_TEMPLATES) {
      const stored = await api(`/api/crew-templates/${builtIn.id}`, { token: user });
      expect(stored.status, builtIn.name).toBe(200);
      expect(stored.body).toMatchObject({ name: builtIn.name, created_by: BUILT_IN_AUTHOR, steps: builtIn.steps });
    }
    const types = await allCrewTypes();
    for (const builtIn of BUILT_IN_TEMPLATES) {
      expect(types, builtIn.name).toContainEqual({
        crew_type: builtIn.name,
        template_id: builtIn.id,
        description: builtIn.description,
        inputs: builtIn.variables.map((v) => v.name),
        // The suite's platform answers llm steps with its OpenAI-compatible test model.
        model: { provider: 'openai', model: 'test-model' },
      });
    }
    expect(BUILT_IN_TEMPLATES.map((t) => t.name)).toEqual([
      'ask',
      'data_engineering',
      'data_suggestion',
      'semantic_model',
    ]);
  });

  it('each built-in template was created with its domain event, by no caller', async () => {
    for (const builtIn of BUILT_IN_TEMPLATES) {
      const events = await eventsOf(`crew-templates/${builtIn.id}`, 1, admin, { deadlineMs: 10_000 });
      expect(events[0], builtIn.name).toMatchObject({
        type: 'dpm.crew.template.created',
        actor: null,
        sequence: 1,
        data: { id: builtIn.id, name: builtIn.name },
      });
    }
  });

  it('a new template is a crew type of its name, for any user and for a key', async () => {
    const created = await template();
    const types = await allCrewTypes();
    expect(types).toContainEqual({
      crew_type: created.name,
      template_id: created.id,
      description: 'says hello',
      inputs: ['who', 'times'],
      model: { provider: 'openai', model: 'test-model' },
    });
    const byKey = await api('/api/crews/types', { psk: adminPsk() });
    expect(byKey.status).toBe(200);
  });

  it('401 without credentials; 422 for a bad limit', async () => {
    const anonymous = await api('/api/crews/types');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: expect.any(String), code: 401 });
    const bad = await api('/api/crews/types?limit=0', { token: user });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([expect.objectContaining({ type: 'greater_than_equal', loc: ['query', 'limit'] })]);
  });
});

describe('POST /api/crews/run', () => {
  it('runs the template of that name with task_input as its values: the E2 handle, then its result', async () => {
    const created = await template();
    const res = await runCrew({ crew_type: created.name, task_input: { who: 'Ana', times: '3' } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      correlation_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'pending',
      message: expect.any(String),
    });
    const run = await api(`/api/crew-runs/${res.body.correlation_id}`, { token: user });
    expect(run.body).toMatchObject({ template_id: created.id, values: { who: 'Ana', times: 3 } });
    const result = await finishedResult(res.body.correlation_id);
    expect(result.body).toEqual({
      correlation_id: res.body.correlation_id,
      status: 'succeeded',
      result: 'said: Hello Ana x3',
      outputs: { hello: 'Hello Ana x3', echo: 'said: Hello Ana x3' },
      error: null,
    });
  });

  it('task_input defaults to {} (a template without required variables)', async () => {
    const created = await template(undefined, {
      steps: [{ id: 'only', kind: 'render', template: 'done' }],
    });
    const res = await runCrew({ crew_type: created.name }, other);
    expect(res.status, res.text).toBe(202);
    expect((await finishedResult(res.body.correlation_id, other)).body.result).toBe('done');
  });

  it('404 for a crew type no template has', async () => {
    const res = await runCrew({ crew_type: slug('no-such-crew'), task_input: {} });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.stringContaining('no crew template has that name'), code: 404 });
  });

  it('409 for a name that several templates have, naming them; one left, it runs', async () => {
    const name = slug('twice');
    const first = await template(name);
    const second = await template(name);
    const res = await runCrew({ crew_type: name, task_input: { who: 'x' } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe(409);
    expect(res.body.error).toContain('ambiguous');
    expect(res.body.error).toContain(first.id);
    expect(res.body.error).toContain(second.id);
    expect((await api(`/api/crew-templates/${second.id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    const again = await runCrew({ crew_type: name, task_input: { who: 'x' } });
    expect(again.status, again.text).toBe(202);
    expect((await api(`/api/crew-runs/${again.body.correlation_id}`, { token: user })).body.template_id).toBe(first.id);
  });

  it('422: the values are checked as E2 checks them, located under task_input, all at once', async () => {
    const created = await template();
    const res = await runCrew({ crew_type: created.name, task_input: { times: 'ten', nope: 1 } });
    expect(res.status).toBe(422);
    // as E2 reports them: the declared variables in order, then the undeclared names
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: 'missing', loc: ['body', 'task_input', 'who'] }),
      expect.objectContaining({ type: 'int_parsing', loc: ['body', 'task_input', 'times'], input: 'ten' }),
      expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'task_input', 'nope'], input: 1 }),
    ]);
  });

  it('422 for the body: missing crew_type, empty crew_type, task_input not an object, unknown field', async () => {
    const missing = await runCrew({ task_input: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toEqual([expect.objectContaining({ type: 'missing', loc: ['body', 'crew_type'] })]);
    const empty = await runCrew({ crew_type: '', task_input: {} });
    expect(empty.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_short', loc: ['body', 'crew_type'], ctx: { min_length: 1 } }),
    ]);
    const notObject = await runCrew({ crew_type: 'ask', task_input: ['a'] });
    expect(notObject.status).toBe(422);
    expect(notObject.body.detail).toEqual([
      expect.objectContaining({ type: 'dict_type', loc: ['body', 'task_input'] }),
    ]);
    const extra = await runCrew({ crew_type: 'ask', task_input: {}, values: {} });
    expect(extra.status).toBe(422);
    expect(extra.body.detail).toEqual([expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'values'] })]);
    const none = await api('/api/crews/run', { method: 'POST', token: user });
    expect(none.status).toBe(422);
  });

  it('401 without credentials, before the body is read', async () => {
    const res = await api('/api/crews/run', { method: 'POST', body: { crew_type: 'ask' } });
    expect(res.status).toBe(401);
    const bad = await api('/api/crews/run', { method: 'POST', body: { nonsense: true } });
    expect(bad.status).toBe(401);
  });
});

describe('GET /api/crews/results/{correlation_id}', () => {
  it("a failed run: the outputs of the steps that completed, no result, the run's error", async () => {
    const created = await template(undefined, {
      steps: [
        { id: 'first', kind: 'render', template: 'one' },
        { id: 'call', kind: 'http', method: 'GET', url: 'http://not-allowed.example/x' },
        { id: 'never', kind: 'render', template: 'unreachable' },
      ],
    });
    const res = await runCrew({ crew_type: created.name, task_input: {} });
    expect(res.status).toBe(202);
    const result = await finishedResult(res.body.correlation_id);
    expect(result.body).toEqual({
      correlation_id: res.body.correlation_id,
      status: 'failed',
      result: null,
      outputs: { first: 'one' },
      error: expect.stringContaining('not-allowed.example'),
    });
  });

  it('a run not started yet: pending, no outputs', async () => {
    const id = await storeUnqueuedRun(
      db(),
      { crewRuns: table('crewRuns'), runLog: table('runLog') },
      {
        name: USER,
        principal: principalOf(USER),
      },
    );
    const res = await api(`/api/crews/results/${id}`, { token: user });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ correlation_id: id, status: 'pending', result: null, outputs: {}, error: null });
  });

  it("403 for another user; the starter, an admin and the waiting step's approver read it", async () => {
    const id = await storeWaitingRun(
      db(),
      { crewRuns: table('crewRuns'), runLog: table('runLog') },
      {
        name: USER,
        principal: principalOf(USER),
      },
    );
    expect((await api(`/api/crews/results/${id}`, { token: other })).status).toBe(403);
    for (const reader of [user, admin, approver]) {
      const res = await api(`/api/crews/results/${id}`, { token: reader });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'waiting', result: null, outputs: {} });
    }
  });

  it('404 for an unknown run; 422 for an id that is not 36 characters; 401 without credentials', async () => {
    const unknown = await api(`/api/crews/results/${randomUUID()}`, { token: user });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: expect.any(String), code: 404 });
    const short = await api('/api/crews/results/abc', { token: user });
    expect(short.status).toBe(422);
    expect(short.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_short', loc: ['path', 'correlation_id'] }),
    ]);
    expect((await api(`/api/crews/results/${randomUUID()}`)).status).toBe(401);
  });

  it("a succeeded run's result costs two DynamoDB calls: the run, and its last event (run.completed)", async () => {
    const created = await template();
    const res = await runCrew({ crew_type: created.name, task_input: { who: 'Bo' } });
    await finishedResult(res.body.correlation_id);
    const { db: doc, calls, destroy } = countingClient();
    const templates = new TemplateService(new DynamoTemplateStore(doc, table('crewTemplates'), eventsTable()));
    const runs = new DynamoRunStore(doc, table('crewRuns'), table('runLog'));
    const service = new CrewsSdk(
      templates,
      new RunService(templates, runs, { send: async () => {} }, { eventsTtlDays: 1 }),
      runs,
    );
    const starter: Caller = { principal: principalOf(USER), name: USER, roles: new Set(), via: 'bearer' };
    const result = await service.crewResult(res.body.correlation_id, starter);
    destroy();
    expect(calls).toEqual(['GetItemCommand', 'QueryCommand']);
    expect(result.result).toBe('said: Hello Bo x2');
  });
});

describe('the built-in templates with the local OpenAI-compatible model', () => {
  const INPUTS: Record<string, { input: Record<string, unknown>; brief: string }> = {
    ask: {
      input: { question: 'How many orders shipped last week?', domain: 'sales' },
      brief: 'Question: How many orders shipped last week?\nData domain: sales\nTables that may be used: []',
    },
    data_engineering: {
      input: { task: 'a daily table of orders without duplicates', tables: ['lake.sales.orders'] },
      brief: 'Task: a daily table of orders without duplicates\nSource tables: ["lake.sales.orders"]\nTarget table: ',
    },
    data_suggestion: {
      input: { domain: 'sales', count: 3 },
      brief: 'Data domain: sales\nTables: []\nNumber of suggestions: 3',
    },
    semantic_model: {
      input: { domain: 'sales', tables: ['lake.sales.orders', 'lake.sales.customers'] },
      brief: 'Data domain: sales\nTables: ["lake.sales.orders","lake.sales.customers"]\nNotes: ',
    },
  };

  for (const builtIn of BUILT_IN_TEMPLATES) {
    it(`${builtIn.name}: the model answers the rendered brief under the template's instructions`, async () => {
      const { input, brief } = INPUTS[builtIn.name]!;
      const res = await runCrew({ crew_type: builtIn.name, task_input: input });
      expect(res.status, res.text).toBe(202);
      const result = await finishedResult(res.body.correlation_id);
      const llm = builtIn.steps.find((s) => s.kind === 'llm');
      expect(llm?.kind).toBe('llm');
      const system = llm?.kind === 'llm' ? llm.system : undefined;
      // The suite's model replies "[<model>](<system>) <prompt>".
      expect(result.body).toEqual({
        correlation_id: res.body.correlation_id,
        status: 'succeeded',
        result: `[test-model](${system}) ${brief}`,
        outputs: { brief, [llm!.id]: `[test-model](${system}) ${brief}` },
        error: null,
      });
    });
  }

  it('a missing required input is 422 at its task_input location', async () => {
    const res = await runCrew({ crew_type: 'ask', task_input: {} });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: 'missing', loc: ['body', 'task_input', 'question'] }),
    ]);
  });
});

describe('making the built-in templates (start-up)', () => {
  /** A service over a templates table of a stage of its own: the suite's built-ins stay as they are. */
  async function freshService(
    builtInsOnFirstUse = false,
  ): Promise<{ service: TemplateService; sdk: CrewsSdk; templates: DynamoTemplateStore }> {
    const stage = `crews${randomUUID().slice(0, 8)}`;
    const client = new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') }));
    await ensureTables(client, stage, { crewTemplates: TABLES.crewTemplates, domainEvents: TABLES.domainEvents });
    client.destroy();
    const templates = new DynamoTemplateStore(db(), physicalTableName(stage, TABLES.crewTemplates), {
      ...eventsTable(),
      tableName: physicalTableName(stage, TABLES.domainEvents),
    });
    const service = new TemplateService(templates, { builtInsOnFirstUse });
    const runs = new DynamoRunStore(
      db(),
      physicalTableName(stage, TABLES.crewRuns),
      physicalTableName(stage, TABLES.runLog),
    );
    const sdk = new CrewsSdk(
      service,
      new RunService(service, runs, { send: async () => {} }, { eventsTtlDays: 1 }),
      runs,
    );
    return { service, sdk, templates };
  }
  const dana: Caller = { principal: 'test:dana', name: 'dana', roles: new Set(['admin']), via: 'bearer' };

  it('processes starting at once make one of each', async () => {
    const { service, templates } = await freshService();
    const created = await Promise.all([1, 2, 3, 4].map(() => service.ensureBuiltInTemplates()));
    expect(created.flat().sort()).toEqual(['ask', 'data_engineering', 'data_suggestion', 'semantic_model']);
    for (const builtIn of BUILT_IN_TEMPLATES) {
      const named = await templates.named(builtIn.name, 10);
      expect(named.map((t) => t.id)).toEqual([builtIn.id]);
    }
    expect(await service.ensureBuiltInTemplates()).toEqual([]);
  });

  it('a process that did not make them at its start (a Lambda) makes them before its first crew-types call', async () => {
    // the local platform's service leaves it to the start
    expect((await (await freshService()).sdk.crewTypes(100, undefined)).items).toEqual([]);
    const { service, sdk } = await freshService(true);
    const page = await sdk.crewTypes(100, undefined);
    expect(page.items.map((t) => t.crew_type).sort()).toEqual([
      'ask',
      'data_engineering',
      'data_suggestion',
      'semantic_model',
    ]);
    // once per process: a deleted one is not made again by the same process
    await service.deleteTemplate(BUILT_IN_TEMPLATES[0]!.id, dana);
    expect((await sdk.crewTypes(100, undefined)).items).toHaveLength(3);
  });

  it('a replaced, renamed or superseded one is never made again; a deleted one comes back', async () => {
    const { service, templates } = await freshService();
    await service.ensureBuiltInTemplates();
    const [ask, engineering, suggestion, model] = BUILT_IN_TEMPLATES;
    // replaced in place
    const replacement = {
      name: 'ask',
      description: 'ours',
      variables: [],
      steps: [{ id: 'x', kind: 'render' as const, template: 'ours' }],
    };
    await service.replaceTemplate(ask!.id, replacement, dana);
    // replaced under another name
    await service.replaceTemplate(engineering!.id, { ...replacement, name: 'our_engineering' }, dana);
    // deleted, and an admin's own template of its name instead
    await service.deleteTemplate(suggestion!.id, dana);
    const own = await service.createTemplate({ ...replacement, name: 'data_suggestion' }, dana);
    // deleted, nothing instead
    await service.deleteTemplate(model!.id, dana);

    expect(await service.ensureBuiltInTemplates()).toEqual(['semantic_model']);
    expect((await templates.get(ask!.id))?.description).toBe('ours');
    expect((await templates.get(engineering!.id))?.name).toBe('our_engineering');
    expect(await templates.named('data_engineering', 10)).toEqual([]);
    expect((await templates.named('data_suggestion', 10)).map((t) => t.id)).toEqual([own.id]);
    expect(await templates.get(suggestion!.id)).toBeUndefined();
    expect((await templates.get(model!.id))?.steps).toEqual(model!.steps);
  });
});
