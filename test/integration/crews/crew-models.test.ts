import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningPlatform, startPlatform } from '../../../infra/local/platform.js';
import { STAND_IN_LABEL, STAND_IN_MODEL } from '../../../infra/local/stand-in-model.js';
import { loadConfig } from '../../../shared/config.js';
import { type FakeBedrock, startBedrockServer } from '../../support/bedrock-server.js';
import { type FakeModel, startFakeModel } from '../../support/openai-server.js';
import { provided } from '../provided.js';

/**
 * The model providers of the API reference's crews (LLM_PROVIDER) over HTTP, each on a platform of its
 * own sharing the suite's emulators: the local stand-in (npm start's default), Amazon
 * Bedrock's Converse API (a loopback server that verifies each request's SigV4 signature
 * against the credentials the process holds) and an OpenAI-compatible endpoint. At the step
 * (E13 events) and at `ask`: success, throttling then success, access denied, an unknown
 * model and a timeout; never a key or a credential in what the API answers.
 */

const ADMIN_PSK = `models-admin-${randomUUID()}`;
const REGION = 'us-east-1';
const BEDROCK_MODEL = 'anthropic.claude-3-haiku-20240307-v1:0';
/** What the process signs Bedrock calls with (the SDK's default chain: the environment, as a role's on Lambda). */
const CREDENTIALS = {
  accessKeyId: `AKIA${randomBytes(8).toString('hex').toUpperCase()}`,
  secretAccessKey: randomBytes(20).toString('base64'),
  sessionToken: `session-${randomBytes(24).toString('hex')}`,
};
const OPENAI_KEY = `sk-models-${randomUUID()}`;
/** Every secret of this file: none may appear in an answer. */
const SECRETS = [CREDENTIALS.accessKeyId, CREDENTIALS.secretAccessKey, CREDENTIALS.sessionToken, OPENAI_KEY, ADMIN_PSK];

let local: RunningPlatform;
let bedrock: RunningPlatform;
let openai: RunningPlatform;
let bedrockServer: FakeBedrock;
let openaiServer: FakeModel;
const savedEnv = { ...process.env };

/** What the platforms of this file logged (stdout and stderr of this process), checked for secrets at the end. */
let logged = '';
const realWrite = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
const capture =
  (write: typeof realWrite.out) =>
  (chunk: unknown, ...rest: unknown[]): boolean => {
    logged += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  };

function platformOn(name: string, env: Record<string, string>): Promise<RunningPlatform> {
  return startPlatform(
    loadConfig({
      STAGE: `${name}${randomUUID().slice(0, 6)}`,
      PORT: '0',
      HOST: '127.0.0.1',
      DPM_DATA_DIR: mkdtempSync(join(tmpdir(), `dpm-models-${name}-`)),
      DPM_ADMIN_PSK: ADMIN_PSK,
      DYNAMODB_ENDPOINT: provided('dynamodbEndpoint'),
      SQS_ENDPOINT: provided('sqsEndpoint'),
      S3_ENDPOINT: provided('s3Endpoint'),
      ...env,
    }),
    { inMemory: true, retryDelaySeconds: 1 },
  );
}

beforeAll(async () => {
  process.stdout.write = capture(realWrite.out) as typeof process.stdout.write;
  process.stderr.write = capture(realWrite.err) as typeof process.stderr.write;
  [bedrockServer, openaiServer] = await Promise.all([
    startBedrockServer({
      region: REGION,
      credentials: CREDENTIALS,
      models: [BEDROCK_MODEL],
      // An ask's request (its system prompt says so): the count of the first table it is given.
      reply: ({ system, prompt }) => {
        if (!system?.startsWith('You write one SQL query')) return undefined;
        const { tables } = JSON.parse(prompt) as { tables: { name: string }[] };
        return '```json\n' + JSON.stringify({ sql: `SELECT COUNT(*) AS answer FROM ${tables[0]!.name}` }) + '\n```';
      },
    }),
    startFakeModel(),
  ]);
  // The Bedrock adapter signs with the SDK's default chain, as on Lambda (its role's credentials in the environment).
  process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
  process.env.AWS_SESSION_TOKEN = CREDENTIALS.sessionToken;
  [local, bedrock, openai] = await Promise.all([
    platformOn('mlocal', { LLM_PROVIDER: 'local' }),
    platformOn('mbedrock', {
      LLM_PROVIDER: 'bedrock',
      LLM_MODEL: BEDROCK_MODEL,
      LLM_BASE_URL: bedrockServer.endpoint,
      AWS_REGION: REGION,
      LLM_TIMEOUT_SECONDS: '3',
    }),
    platformOn('mopenai', {
      LLM_BASE_URL: openaiServer.baseUrl,
      LLM_MODEL: 'test-model',
      LLM_API_KEY: OPENAI_KEY,
      LLM_TIMEOUT_SECONDS: '3',
    }),
  ]);
}, 120_000);

afterAll(async () => {
  process.stdout.write = realWrite.out;
  process.stderr.write = realWrite.err;
  await Promise.all([local?.stop(), bedrock?.stop(), openai?.stop()]);
  await Promise.all([bedrockServer?.stop(), openaiServer?.stop()]);
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']) {
    if (savedEnv[name] === undefined) delete process.env[name];
    else process.env[name] = savedEnv[name];
  }
}, 60_000);

interface Answer {
  status: number;
  text: string;
  body: any;
}

async function call(platform: RunningPlatform, path: string, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${platform.baseUrl}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      'authorization-psk': ADMIN_PSK,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  const answer: Answer = { status: res.status, text, body: text ? JSON.parse(text) : undefined };
  for (const secret of SECRETS.slice(0, 4)) expect(text, `${path} answers a secret`).not.toContain(secret);
  return answer;
}

/** Runs crew type `crewType` with `input` and answers its events once it has ended. */
async function runCrew(platform: RunningPlatform, crewType: string, input: Record<string, unknown>) {
  const started = await call(platform, '/api/crews/run', {
    method: 'POST',
    body: { crew_type: crewType, task_input: input },
  });
  expect(started.status, started.text).toBe(202);
  const id = started.body.correlation_id as string;
  const events: { type: string; step_id?: string; data?: Record<string, any>; message: string }[] = [];
  // Long polls (E13) until the run ends; each answers at once when there is news.
  for (let polls = 0; polls < 60; polls++) {
    const page = await call(platform, `/api/events/${id}?start=${events.length}&wait=20`);
    expect(page.status, page.text).toBe(200);
    events.push(...page.body);
    if (events.some((e) => ['run.completed', 'run.failed', 'run.cancelled'].includes(e.type))) break;
  }
  const run = await call(platform, `/api/crew-runs/${id}`);
  return { id, run: run.body, events, step: (type: string) => events.find((e) => e.type === type) };
}

/** A new catalog domain holding one table, askcat.sales.orders, on `platform`: what `ask` answers about. */
async function domainWithOrders(platform: RunningPlatform): Promise<string> {
  const domain = `ask-${randomUUID().slice(0, 8)}`;
  expect((await call(platform, '/api/catalog/domains', { method: 'POST', body: { name: domain } })).status).toBe(201);
  const put = await call(platform, '/api/metastore/catalogs/askcat/schemas/sales/tables/orders', {
    method: 'PUT',
    body: {
      domain,
      columns: [
        { name: 'order_id', type: 'bigint' },
        { name: 'status', type: 'varchar(20)' },
      ],
    },
  });
  expect(put.status, put.text).toBe(200);
  return domain;
}

const BUILT_IN_RUNS = [
  ['ask', { question: 'How many orders shipped last week?\nBy region, please.' }, 'answer'],
  ['data_engineering', { task: 'a daily table of orders without duplicates' }, 'plan'],
  ['data_suggestion', { domain: 'sales' }, 'suggestions'],
  ['semantic_model', { domain: 'sales', notes: 'for the finance team' }, 'model'],
] as const;

describe('LLM_PROVIDER=local: the stand-in model', () => {
  it('names itself as the model of every crew type', async () => {
    const types = await call(local, '/api/crews/types?limit=100');
    expect(types.status).toBe(200);
    const builtIns = types.body.filter((t: { crew_type: string }) =>
      BUILT_IN_RUNS.some(([name]) => name === t.crew_type),
    );
    expect(builtIns).toHaveLength(BUILT_IN_RUNS.length);
    for (const t of builtIns) expect(t.model).toEqual({ provider: 'local', model: STAND_IN_MODEL });
  });

  it.each(BUILT_IN_RUNS)(
    'runs the built-in crew %s to success with its labelled answer',
    async (crewType, input, llmStep) => {
      const { run, events, step } = await runCrew(local, crewType, input);
      expect(run.status, JSON.stringify(events.at(-1))).toBe('succeeded');
      const completed = events.find((e) => e.type === 'step.completed' && e.step_id === llmStep);
      expect(completed?.data).toMatchObject({
        provider: 'local',
        model: STAND_IN_MODEL,
        usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
      });
      const brief = events.find((e) => e.type === 'step.completed' && e.step_id === 'brief')!.data!.output as string;
      const reply = completed!.data!.output as string;
      // It states what it received: the brief's length and first line.
      expect(reply.startsWith(STAND_IN_LABEL)).toBe(true);
      expect(reply).toContain(`a message of ${[...brief].length} characters`);
      expect(reply).toContain(`first line is "${brief.split('\n')[0]}"`);
      // step.started shows what the llm step sent: the rendered brief and its system prompt.
      const sent = events.find((e) => e.type === 'step.started' && e.step_id === llmStep);
      expect(sent?.data?.input).toEqual({ text: brief, system: expect.stringMatching(/\S/) });
      expect(step('run.completed')?.data?.outputs[llmStep]).toBe(reply);
    },
  );

  it("keeps ask's deterministic catalog path: the stand-in writes no SQL", async () => {
    const domain = await domainWithOrders(local);
    const res = await call(local, '/api/query/ask', {
      method: 'POST',
      body: { domain, prompt: 'How many orders are there?' },
    });
    expect(res.status, res.text).toBe(200);
    // The catalog's suggestion (its id says so), never the stand-in's text as SQL.
    expect(res.body.suggestion_id).toEqual(expect.any(String));
    expect(res.text).not.toContain(STAND_IN_LABEL);
  });
});

describe('LLM_PROVIDER=bedrock: the Converse API, signed by the process credentials', () => {
  const llmTemplate = async (platform: RunningPlatform, prompt: string): Promise<string> => {
    const created = await call(platform, '/api/crew-templates', {
      method: 'POST',
      body: {
        name: `models-${randomUUID().slice(0, 8)}`,
        steps: [{ id: 'q', kind: 'llm', system: 'Be brief.', prompt }],
      },
    });
    expect(created.status, created.text).toBe(201);
    return created.body.name as string;
  };
  const runPrompt = async (platform: RunningPlatform, prompt: string) =>
    runCrew(platform, await llmTemplate(platform, prompt), {});

  it('answers with the model, its usage, and a request signed by the credentials of the process', async () => {
    const before = bedrockServer.requests.length;
    const { run, step } = await runPrompt(bedrock, 'What is a fact table?');
    expect(run.status).toBe('succeeded');
    expect(step('step.completed')?.data).toEqual({
      output: `Bedrock ${BEDROCK_MODEL} answers: What is a fact table? (system: Be brief.)`,
      provider: 'bedrock',
      model: BEDROCK_MODEL,
      usage: { input_tokens: 7, output_tokens: 11 },
    });
    const sent = bedrockServer.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ modelId: BEDROCK_MODEL, accessKeyId: CREDENTIALS.accessKeyId, verified: true });
    expect(sent[0]!.body).toMatchObject({
      messages: [{ role: 'user', content: [{ text: 'What is a fact table?' }] }],
      system: [{ text: 'Be brief.' }],
    });
    const types = await call(bedrock, '/api/crews/types?limit=1');
    expect(types.body[0].model).toEqual({ provider: 'bedrock', model: BEDROCK_MODEL });
  });

  it('tries a throttled call again within the step and succeeds', async () => {
    const before = bedrockServer.requests.length;
    const { run } = await runPrompt(bedrock, 'THROTTLE2 then answer');
    expect(run.status).toBe('succeeded');
    expect(bedrockServer.requests.slice(before).map((r) => r.status)).toEqual([429, 429, 200]);
  });

  it.each([
    ['access denied', 'DENY this', /^Bedrock refused the call \(AccessDeniedException\): .*not authorized/],
    ['a validation error', 'INVALID input', /^Bedrock refused the call \(ValidationException\): /],
    ['a message quoting credentials', 'LEAK them', /^Bedrock refused the call \(ValidationException\): /],
  ])("fails the step at once on %s with Bedrock's message", async (_, prompt, error) => {
    const before = bedrockServer.requests.length;
    const { run, step } = await runPrompt(bedrock, prompt);
    expect(run.status).toBe('failed');
    expect(step('step.failed')?.data?.error).toMatch(error);
    expect(bedrockServer.requests.length - before).toBe(1);
  });

  it("fails the step on an unknown model with Bedrock's message", async () => {
    bedrockServer.models.delete(BEDROCK_MODEL);
    try {
      const { run, step } = await runPrompt(bedrock, 'Hello');
      expect(run.status).toBe('failed');
      expect(step('step.failed')?.data?.error).toMatch(/^Bedrock refused the call \(ResourceNotFoundException\): /);
    } finally {
      bedrockServer.models.add(BEDROCK_MODEL);
    }
  });

  it('fails the step "timed out" when Bedrock does not answer within LLM_TIMEOUT_SECONDS', async () => {
    const { run, step } = await runPrompt(bedrock, 'SLOW please');
    expect(run.status).toBe('failed');
    expect(step('step.failed')?.data?.error).toBe('timed out');
  });
});

describe('LLM_PROVIDER=openai (the default with LLM_BASE_URL)', () => {
  const runPrompt = async (prompt: string) => {
    const created = await call(openai, '/api/crew-templates', {
      method: 'POST',
      body: { name: `models-${randomUUID().slice(0, 8)}`, steps: [{ id: 'q', kind: 'llm', prompt }] },
    });
    expect(created.status, created.text).toBe(201);
    return runCrew(openai, created.body.name, {});
  };

  it('answers with the model that replied and its usage', async () => {
    const { run, step } = await runPrompt('Hello there');
    expect(run.status).toBe('succeeded');
    expect(step('step.completed')?.data).toEqual({
      output: '[test-model] Hello there',
      provider: 'openai',
      model: 'test-model',
      usage: { input_tokens: 1, output_tokens: 1 },
    });
  });

  it('tries a rate-limited call again and succeeds', async () => {
    const { run } = await runPrompt('THROTTLE2 me');
    expect(run.status).toBe('succeeded');
  });

  it('fails the step on access denied without the key the endpoint quoted', async () => {
    const { run, step } = await runPrompt('DENY me');
    expect(run.status).toBe('failed');
    expect(step('step.failed')?.data?.error).toBe('model endpoint answered 403: Access denied for key ***');
  });

  it("fails the step on an unknown model with the endpoint's message", async () => {
    const { run, step } = await runPrompt('NOMODEL');
    expect(run.status).toBe('failed');
    expect(step('step.failed')?.data?.error).toMatch(
      /^model endpoint answered 404: The model `no-such-model` does not exist/,
    );
  });

  it('fails the step "timed out" when the endpoint does not answer within LLM_TIMEOUT_SECONDS', async () => {
    const { run, step } = await runPrompt('SLOW');
    expect(run.status).toBe('failed');
    expect(step('step.failed')?.data?.error).toBe('timed out');
  });
});

describe('POST /api/query/ask with Bedrock', () => {
  let domain: string;
  const table = () => `"askcat"."sales"."orders"`;
  beforeAll(async () => {
    domain = await domainWithOrders(bedrock);
  });
  const ask = async (prompt: string) => {
    const res = await call(bedrock, '/api/query/ask', { method: 'POST', body: { domain, prompt } });
    expect(res.status, res.text).toBe(200);
    return res.body as { sql: string; suggestion_id?: string };
  };

  it("answers the model's SQL, also after throttling", async () => {
    for (const prompt of ['How many orders are there?', 'THROTTLE1 How many orders are there?']) {
      const answer = await ask(prompt);
      expect(answer.sql).toBe(`SELECT COUNT(*) AS answer FROM ${table()}`);
      expect(answer.suggestion_id).toBeUndefined();
    }
  });

  it.each(['DENY How many orders are there?', 'INVALID How many orders are there?'])(
    "answers the catalog's SQL when Bedrock refuses (%s)",
    async (prompt) => {
      const answer = await ask(prompt);
      expect(answer.suggestion_id).toEqual(expect.any(String));
    },
  );

  it("answers the catalog's SQL for an unknown model", async () => {
    bedrockServer.models.delete(BEDROCK_MODEL);
    try {
      expect((await ask('How many orders are there?')).suggestion_id).toEqual(expect.any(String));
    } finally {
      bedrockServer.models.add(BEDROCK_MODEL);
    }
  });
});

describe('what the platforms logged', () => {
  it('holds no API key and no AWS credential', () => {
    // The failures above were logged (the step failures, the asks answered from the catalog).
    expect(logged).toMatch(/Bedrock refused the call/);
    for (const secret of SECRETS.slice(0, 4)) expect(logged.includes(secret), 'a secret in the log').toBe(false);
  });
});
