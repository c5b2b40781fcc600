// Runs alone (ALONE in vitest.config.ts), after the files that run side by side: it counts exact DynamoDB calls on a platform of its own.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_TEMPLATES } from '../../../functions/crews/templates/built-in-templates.js';
import { startPlatform, type RunningPlatform } from '../../../infra/local/platform.js';
import { loadConfig } from '../../../shared/config.js';
import { KeyStore } from '../../../shared/auth/key-store.js';
import { randomSecret, sha256Hex } from '../../../shared/crypto.js';
import { eventually } from '../../support/eventually.js';
import { WebhookReceiver } from '../../support/webhook-receiver.js';
import { adminToken, approverToken, principalOf, token } from '../helpers.js';
import { provided } from '../provided.js';

/*
 * What each operation costs in DynamoDB calls (issue 30), counted on the one document client
 * every local Lambda of a platform shares (API, crew worker, events publisher and dispatcher,
 * webhook workers), with the whole platform running: a change that adds a call fails here.
 * The platform is this file's own (a stage of its own on the suite's emulators), so no other
 * file's traffic is counted; the test reads what it waits for through a client of its own.
 */

/** `<command> <table>` of each call (a transaction: its tables, in order). */
type Call = string;
let platform: RunningPlatform;
let dataDir: string;
let recording: Call[] | undefined;
let stage: string;
const adminPsk = `call-counts-admin-${randomSecret()}`;

const short = (name: unknown) => String(name).replace(`dpm-${stage}-`, '');
function describeCall(command: string, input: Record<string, any>): Call {
  const name = command.replace(/Command$/, '');
  if (input.TransactItems)
    return `${name} ${(input.TransactItems as Record<string, { TableName: string }>[])
      .map((t) => `${Object.keys(t)[0]}:${short(Object.values(t)[0]!.TableName)}`)
      .join(',')}`;
  if (input.RequestItems) return `${name} ${Object.keys(input.RequestItems).map(short).join(',')}`;
  return `${name} ${short(input.TableName)}`;
}

const call = async (
  path: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) => {
  const res = await fetch(`${platform.baseUrl}${path}`, {
    method: options.method ?? 'GET',
    headers: { ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** Every call the platform made so far. */
let allCalls = 0;
/** Whether the dispatcher read the webhook endpoints yet (once for the file: endpointsFreshMs). */
let endpointsRead = false;

/** Until the platform made no call for QUIET_MS (what earlier operations left the pipeline is done); bounded. */
async function quiet(): Promise<void> {
  for (let i = 0, seen = -1; i < 50 && seen !== allCalls; i++) {
    seen = allCalls;
    await new Promise((r) => setTimeout(r, QUIET_MS));
  }
}
const QUIET_MS = 400;

/** The calls the platform makes from `work` on, until `done` and the platform is quiet again. */
async function callsOf(work: () => Promise<void>, done: () => Promise<boolean>): Promise<Call[]> {
  await quiet();
  recording = [];
  try {
    await work();
    await eventually(done, 20_000, 'the operation to finish');
    // whatever the pipeline still does for it (publisher, dispatcher, deliveries)
    await quiet();
    return recording;
  } finally {
    recording = undefined;
  }
}

/** The test's own client (the helpers' is the one the platform shares: its reads would count). */
const own = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: 'us-east-1',
    endpoint: provided('dynamodbEndpoint'),
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  }),
);

/** Whether the events table holds `subject`'s event of `sequence` (read through the test's own client). */
const recorded = async (subject: string, sequence: number) =>
  Boolean(
    (
      await own.send(
        new GetCommand({
          TableName: `dpm-${stage}-domain-events`,
          Key: { subject, sequence },
          ConsistentRead: true,
        }),
      )
    ).Item,
  );

beforeAll(async () => {
  stage = `calls${randomUUID().slice(0, 6)}`;
  dataDir = mkdtempSync(join(tmpdir(), 'dpm-call-counts-'));
  platform = await startPlatform(
    loadConfig({
      STAGE: stage,
      PORT: '0',
      HOST: '127.0.0.1',
      DPM_DATA_DIR: dataDir,
      DPM_ADMIN_PSK: adminPsk,
      AUTH_ISSUER: provided('issuer'),
      AUTH_AUDIENCE: provided('audience'),
      DYNAMODB_ENDPOINT: provided('dynamodbEndpoint'),
      SQS_ENDPOINT: provided('sqsEndpoint'),
      S3_ENDPOINT: provided('s3Endpoint'),
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    }),
    // The dispatcher keeps the webhook endpoints for the whole file (the platform's writes of
    // them are still seen at once): its re-read once per ENDPOINTS_FRESH_MS would otherwise
    // fall in some measurement's window. Without the cache it reads them per batch, and the
    // exact lists below fail.
    { inMemory: true, retryDelaySeconds: 1, endpointsFreshMs: 3_600_000 },
  );
  platform.runtime.db.middlewareStack.add(
    (next, context) => async (args) => {
      allCalls++;
      const made = describeCall(context.commandName ?? '?', args.input as Record<string, any>);
      if (made === 'Query webhooks') endpointsRead = true;
      recording?.push(made);
      return next(args);
    },
    { step: 'initialize', name: `callCounts-${stage}` },
  );
  // What the start wrote (the built-in crew templates) is published and dispatched before the
  // first measurement: on a loaded machine the stream poller finds those records late, and
  // their events (and the dispatcher's first read of the endpoints) fell in the first window.
  await eventually(
    async () =>
      (
        await own.send(
          new ScanCommand({
            TableName: `dpm-${stage}-domain-events`,
            Select: 'COUNT',
            FilterExpression: '#type = :created',
            ExpressionAttributeNames: { '#type': 'type' },
            ExpressionAttributeValues: { ':created': 'dpm.crew.template.created' },
            ConsistentRead: true,
          }),
        )
      ).Count! >= BUILT_IN_TEMPLATES.length,
    60_000,
    "the built-in templates' events",
  );
  await eventually(async () => endpointsRead, 60_000, 'the dispatcher to read the webhook endpoints once');
  await quiet();
}, 120_000);

afterAll(async () => {
  platform?.runtime.db.middlewareStack.remove(`callCounts-${stage}`);
  own.destroy();
  await platform?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A submitted decision version of its own (created and submitted by `author`): answers its path. */
async function submittedVersion(author: string): Promise<string> {
  const key = `k${randomUUID().slice(0, 8)}`;
  const created = await call(`/api/decisions/calls/${key}/versions`, {
    method: 'POST',
    headers: bearer(author),
    body: { content: { rule: key } },
  });
  expect(created.status).toBe(201);
  const submitted = await call(`/api/decisions/calls/${key}/versions/1/submit`, {
    method: 'POST',
    headers: bearer(author),
    body: {},
  });
  expect(submitted.status).toBe(200);
  return `decisions/calls/${key}/versions/1`;
}

describe('DynamoDB calls per operation, the whole platform running', () => {
  let author: string;
  let approver: string;
  let admin: string;
  beforeAll(async () => {
    [author, approver, admin] = await Promise.all([
      token('calls-author'),
      approverToken('calls-approver'),
      adminToken('calls-admin'),
    ]);
  });

  it('a GET with a Bearer token: 1 call (the item)', async () => {
    const path = await submittedVersion(author);
    await call(`/api/${path}`, { headers: bearer(author) });
    const calls = await callsOf(
      async () => expect((await call(`/api/${path}`, { headers: bearer(author) })).status).toBe(200),
      async () => true,
    );
    expect(calls).toEqual(['GetItem decisions']);
  });

  it('a GET with a stored pre-shared key: 1 call in the steady state (the key is kept 3 s)', async () => {
    const path = await submittedVersion(author);
    // a user's key, stored as the key endpoints store one
    const secret = `calls_${randomSecret()}`;
    await new KeyStore(own, `dpm-${stage}-keys`).createIfAbsent({
      key_hash: sha256Hex(secret),
      psk: randomUUID(),
      dataproduct_id: 'calls-product',
      description: 'call counts',
      roles: [],
      created_by: 'calls-author',
      created_by_principal: principalOf('calls-author'),
      created_at: new Date().toISOString(),
      valid_until_ms: Date.now() + 3_600_000,
    });
    const psk = { 'authorization-psk': secret };
    expect((await call(`/api/${path}`, { headers: psk })).status).toBe(200);
    const calls = await callsOf(
      async () => expect((await call(`/api/${path}`, { headers: psk })).status).toBe(200),
      async () => true,
    );
    expect(calls).toEqual(['GetItem decisions']);
  });

  it('E1 approve: 2 calls in all (the version, and its event recorded by the publisher); none by the dispatcher', async () => {
    const path = await submittedVersion(author);
    await eventually(() => recorded(path, 2), 20_000, 'the submitted event');
    const calls = await callsOf(
      async () =>
        expect(
          (await call(`/api/${path}/approve`, { method: 'POST', headers: bearer(approver), body: {} })).status,
        ).toBe(200),
      () => recorded(path, 3),
    );
    expect(calls).toEqual(['UpdateItem decisions', 'PutItem domain-events']);
  });

  it('a 3-render-step run, E2 to run.completed: 3 calls with the event pipeline (at most 6)', async () => {
    const template = await call('/api/crew-templates', {
      method: 'POST',
      headers: bearer(admin),
      body: {
        name: `calls-${randomUUID().slice(0, 6)}`,
        variables: [{ name: 'who', required: true }],
        steps: [
          { id: 'a', kind: 'render', template: 'Hello {{who}}' },
          { id: 'b', kind: 'render', template: '{{steps.a.output}}!' },
          { id: 'c', kind: 'render', template: '{{steps.b.output}}?' },
        ],
      },
    });
    expect(template.status).toBe(201);
    let id = '';
    const calls = await callsOf(
      async () => {
        const res = await call(`/api/crew-templates/${template.body.id}/run`, {
          method: 'POST',
          headers: bearer(author),
          body: { values: { who: 'calls' } },
        });
        expect(res.status).toBe(202);
        id = res.body.correlation_id;
      },
      () => recorded(`crew-runs/${id}`, 3),
    );
    expect(calls).toEqual([
      // E2: the template, then the run, its run.queued and its crew.run.queued event
      'GetItem crew-templates',
      'TransactWriteItems Put:crew-runs,Put:events,Put:domain-events',
      // the worker (the message carries the run): every entry, both events and the run at once
      `TransactWriteItems ${[...Array(8)].map(() => 'Put:events').join(',')},Put:domain-events,Put:domain-events,Update:crew-runs`,
    ]);
    expect(calls.length).toBeLessThanOrEqual(6);
    const events = await own.send(
      new QueryCommand({
        TableName: `dpm-${stage}-domain-events`,
        KeyConditionExpression: 'subject = :s',
        ExpressionAttributeValues: { ':s': `crew-runs/${id}` },
        ConsistentRead: true,
      }),
    );
    expect(events.Items!.map((e) => [e.sequence, e.type])).toEqual([
      [1, 'dpm.crew.run.queued'],
      [2, 'dpm.crew.run.started'],
      [3, 'dpm.crew.run.succeeded'],
    ]);
  });

  it('an MCP server created: 2 calls (the server, and its event recorded by the publisher)', async () => {
    let id = '';
    const calls = await callsOf(
      async () => {
        const res = await call('/api/mcps', {
          method: 'POST',
          headers: bearer(admin),
          body: { name: `calls-${randomUUID().slice(0, 6)}`, command: 'npx', args: ['calls'] },
        });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        id = res.body.id;
      },
      () => recorded(`mcps/${id}`, 1),
    );
    expect(calls).toEqual(['PutItem mcp-servers', 'PutItem domain-events']);
  });

  it('with a webhook endpoint: an event it does not take costs no read of the endpoints; one it takes, its delivery', async () => {
    const receiver = await new WebhookReceiver().start();
    try {
      const created = await call('/api/webhooks', {
        method: 'POST',
        headers: bearer(admin),
        body: { url: receiver.url('/calls'), event_types: ['decision.version.approved'] },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      // An event of a type it does not take: the event's one call, as without the endpoint.
      const other = await submittedVersion(author);
      const notTaken = await callsOf(
        async () => {
          const res = await call(`/api/${other}/reject`, { method: 'POST', headers: bearer(approver), body: {} });
          expect(res.status).toBe(200);
        },
        () => recorded(other, 3),
      );
      expect(notTaken).toEqual(['UpdateItem decisions', 'PutItem domain-events']);

      const path = await submittedVersion(author);
      await eventually(() => recorded(path, 2), 20_000, 'the submitted event');
      const taken = await callsOf(
        async () => {
          const res = await call(`/api/${path}/approve`, { method: 'POST', headers: bearer(approver), body: {} });
          expect(res.status).toBe(200);
        },
        async () => receiver.received.some((r) => r.body.includes(path)),
      );
      expect(taken.slice(0, 2)).toEqual(['UpdateItem decisions', 'PutItem domain-events']);
      // The rest is the delivery's own (9 calls as measured when this was written): recorded by
      // the fan-out, then the endpoint read, claimed in its endpoint's line and settled by its
      // worker. No read of the endpoint list: the fan-out keeps it.
      const delivery = taken.slice(2);
      expect(delivery.every((c) => c.includes('webhook-deliveries') || c === 'GetItem webhooks')).toBe(true);
      expect(delivery.filter((c) => c.startsWith('Query webhooks'))).toEqual([]);
      expect(delivery.length).toBeLessThanOrEqual(9);
    } finally {
      await receiver.stop();
    }
  });
});
