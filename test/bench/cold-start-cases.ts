import { type ChildAnswer, type ColdStartCase, type ColdStartTargets, seed } from './cold-start.js';

/**
 * Each HTTP group's main request (its E-numbered endpoint where it has one) for the cold-start
 * rows, and the bare handler making the same AWS calls. Every request carries a Bearer token of
 * the bench's test issuer (a session, which E1 requires; admin where the endpoint wants it).
 */

const j = JSON.stringify;

/** A bare handler's module: Hono, the `sdk` clients, the `app`, and the Lambda entry. */
const bareModule = (sdk: string, app: string) => `
import { Hono } from 'hono';
import { handle } from 'hono/aws-lambda';
${sdk}
${app}
export const handler = handle(app);
`;

/** The DynamoDB document client, as a minimal Lambda makes it (region and credentials from the environment). */
const dynamo = (...commands: string[]) => `
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ${commands.join(', ')} } from '@aws-sdk/lib-dynamodb';
const db = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: process.env.DYNAMODB_ENDPOINT }));
`;

/** Until the crew run a cold start queued has finished in the platform's worker (at most 10 s). */
async function runFinished(t: ColdStartTargets, token: string, answer: ChildAnswer): Promise<void> {
  const { correlation_id } = JSON.parse(answer.body) as { correlation_id: string };
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    const run = await seed<{ status: string }>(
      t,
      { method: 'GET', path: `/api/crew-runs/${correlation_id}`, token },
      200,
    );
    if (!['pending', 'running'].includes(run.status)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Submitted versions in the approvals cold start's inbox: more than the page of 100 it answers. */
const INBOX_WAITING = 101;

const cases: ColdStartCase<any>[] = [
  {
    group: 'platform',
    what: 'GET /api/health/ping (no AWS call)',
    status: 200,
    prepare: async () => ({}),
    request: async () => ({ method: 'GET', path: '/api/health/ping' }),
    bare: () => bareModule('', `const app = new Hono().get('/api/health/ping', (c) => c.json({ status: 'ok' }));`),
  },
  {
    group: 'decisions',
    what: 'E1 POST /api/decisions/{ws}/{key}/versions/{v}/approve',
    status: 200,
    prepare: async (t) => ({
      author: await t.token('cold-author'),
      approver: await t.token('cold-approver', ['approver']),
    }),
    request: async (t, s, run) => {
      const base = '/api/decisions/coldstart/e1/versions';
      const { version } = await seed<{ version: number }>(
        t,
        { method: 'POST', path: base, token: s.author, body: { content: { rule: `run ${run}` } } },
        201,
      );
      await seed(t, { method: 'POST', path: `${base}/${version}/submit`, token: s.author, body: {} }, 200);
      return { method: 'POST', path: `${base}/${version}/approve`, token: s.approver, body: {} };
    },
    bare: (t) =>
      bareModule(
        dynamo('UpdateCommand'),
        `const app = new Hono().post('/api/decisions/:ws/:key/versions/:v/approve', async (c) => {
  const { ws, key, v } = c.req.param();
  const at = new Date().toISOString();
  const out = await db.send(new UpdateCommand({
    TableName: ${j(t.tableName('decisions'))},
    Key: { pk: \`D#\${ws}#\${key}\`, sk: \`V#\${v.padStart(10, '0')}\` },
    ReturnValues: 'ALL_NEW',
    UpdateExpression: 'SET #status = :to, #history = list_append(if_not_exists(#history, :empty), :entry), approved_by = :by, approved_at = :at, pub_pk = :pub_pk, pub_sk = :pub_sk REMOVE sub_pk, sub_sk',
    ConditionExpression: 'attribute_exists(pk) AND #status = :from',
    ExpressionAttributeNames: { '#status': 'status', '#history': 'history' },
    ExpressionAttributeValues: {
      ':from': 'submitted', ':to': 'approved', ':empty': [], ':by': 'bare', ':at': at,
      ':entry': [{ from: 'submitted', to: 'approved', action: 'approve', by: 'bare', at, notes: null }],
      ':pub_pk': \`D#\${ws}#\${key}\`, ':pub_sk': Number(v),
    },
  }));
  return c.json(out.Attributes, 200);
});`,
      ),
  },
  {
    group: 'crews',
    what: 'E2 POST /api/crew-templates/{id}/run',
    status: 202,
    prepare: async (t) => {
      const admin = await t.token('cold-admin', ['admin']);
      const template = await seed<{ id: string }>(
        t,
        {
          method: 'POST',
          path: '/api/crew-templates',
          token: admin,
          body: {
            name: 'cold-start',
            variables: [{ name: 'who', required: true }],
            steps: [{ id: 'a', kind: 'render', template: 'Hello {{who}}' }],
          },
        },
        201,
      );
      // The bare handler sends to a queue of its own, which no worker reads.
      return {
        admin,
        template: template.id,
        user: await t.token('cold-user'),
        bareQueue: await t.queue('cold-start-bare'),
      };
    },
    request: async (_t, s) => ({
      method: 'POST',
      path: `/api/crew-templates/${s.template}/run`,
      token: s.user,
      body: { values: { who: 'bench' } },
    }),
    bare: (t, s) =>
      bareModule(
        `${dynamo('GetCommand', 'TransactWriteCommand')}
import { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import { randomUUID } from 'node:crypto';
const sqs = new SQSClient({ endpoint: process.env.SQS_ENDPOINT });`,
        `const app = new Hono().post('/api/crew-templates/:id/run', async (c) => {
  const { values } = await c.req.json();
  const template = (await db.send(new GetCommand({ TableName: ${j(t.tableName('crewTemplates'))}, Key: { id: c.req.param('id') } }))).Item;
  const id = randomUUID();
  const at = new Date().toISOString();
  const expires = Math.floor(Date.now() / 1000) + 30 * 86400;
  const run = {
    correlation_id: id, template_id: template.id, status: 'pending', created_by: 'bare', created_at: at,
    started_at: null, finished_at: null, event_count: 1, error: null, steps: template.steps, expires_at: expires,
    template_name: template.name, values_json: JSON.stringify(values), variables_json: JSON.stringify(template.variables),
    open: 'open', list_pk: 'run', created_key: \`\${at}#\${id}\`, ev_seq: 1,
  };
  await db.send(new TransactWriteCommand({ TransactItems: [
    { Put: { TableName: ${j(t.tableName('crewRuns'))}, Item: run, ConditionExpression: 'attribute_not_exists(correlation_id)' } },
    { Put: { TableName: ${j(t.tableName('runLog'))}, Item: { index: 0, correlation_id: id, type: 'run.queued', timestamp: at, message: 'queued', data_json: JSON.stringify({ values }), expires_at: expires }, ConditionExpression: 'attribute_not_exists(correlation_id)' } },
  ] }));
  await sqs.send(new SendMessageCommand({ QueueUrl: ${j(s.bareQueue)}, MessageBody: JSON.stringify({ correlation_id: id, run }) }));
  return c.json({ correlation_id: id, status: 'pending' }, 202);
});`,
      ),
    // The platform's worker runs the queued run: done before the next process starts.
    settle: (t, s, answer) => runFinished(t, s.user, answer),
    // The bare handlers' runs stay pending (no worker reads their queue): in the open runs'
    // index, they would be read by every later phase that lists unfinished runs.
    cleanup: async (t, s) => {
      for (;;) {
        const { more } = await seed<{ more: boolean }>(
          t,
          {
            method: 'POST',
            path: '/api/crew-runs/cancel',
            token: s.admin,
            body: { template_id: s.template },
          },
          200,
        );
        if (!more) return;
      }
    },
  },
  {
    group: 'dataproduct',
    what: 'E7 POST /api/dataproduct/psk/{psk}/extend',
    status: 200,
    prepare: async (t) => {
      const user = await t.token('cold-user');
      const key = await seed<{ psk: string }>(
        t,
        { method: 'POST', path: '/api/dataproduct/default/psk', token: user, body: { description: 'cold start' } },
        201,
      );
      return { user, psk: key.psk };
    },
    request: async (_t, s) => ({
      method: 'POST',
      path: `/api/dataproduct/psk/${s.psk}/extend`,
      token: s.user,
      body: { validity_days: 1 },
    }),
    bare: (t) =>
      bareModule(
        dynamo('QueryCommand', 'UpdateCommand'),
        `const app = new Hono().post('/api/dataproduct/psk/:psk/extend', async (c) => {
  const { validity_days } = await c.req.json();
  const table = ${j(t.tableName('keys'))};
  const found = await db.send(new QueryCommand({ TableName: table, IndexName: 'by_psk', KeyConditionExpression: 'psk = :psk', ExpressionAttributeValues: { ':psk': c.req.param('psk') } }));
  const now = Date.now();
  const out = await db.send(new UpdateCommand({
    TableName: table, Key: { key_hash: found.Items[0].key_hash }, ReturnValues: 'ALL_NEW',
    UpdateExpression: 'ADD valid_until_ms :add',
    ConditionExpression: 'attribute_exists(key_hash) AND attribute_not_exists(deleted_at) AND valid_until_ms >= :now',
    ExpressionAttributeValues: { ':add': validity_days * 86400000, ':now': now },
  }));
  return c.json({ psk: out.Attributes.psk, valid_until: new Date(out.Attributes.valid_until_ms).toISOString() }, 200);
});`,
      ),
  },
  {
    group: 'data-shares',
    what: 'E8 GET /api/data_shares/{name} (its secret opened with KMS)',
    status: 200,
    prepare: async (t, viaLambda) => {
      const user = await t.token('cold-user');
      // Created through the data-shares Lambda itself (a child with the same environment), so
      // its secret is sealed under the KMS key the cold starts open it with.
      const created = await viaLambda({
        method: 'POST',
        path: '/api/data_shares',
        token: user,
        body: { name: 'cold-start-share', description: 'cold start' },
      });
      if (created.status !== 201) throw new Error(`creating the share: ${created.status} ${created.body}`);
      return { user };
    },
    request: async (_t, s) => ({ method: 'GET', path: '/api/data_shares/cold-start-share', token: s.user }),
    bare: (t) =>
      bareModule(
        `${dynamo('GetCommand')}
import { KMSClient, DecryptCommand } from '@aws-sdk/client-kms';
import { createDecipheriv } from 'node:crypto';
const kms = new KMSClient({});`,
        `const app = new Hono().get('/api/data_shares/:name', async (c) => {
  const share = (await db.send(new GetCommand({ TableName: ${j(t.tableName('dataShares'))}, Key: { name: c.req.param('name') }, ConsistentRead: true }))).Item;
  const client = (await db.send(new GetCommand({ TableName: ${j(t.tableName('idpClients'))}, Key: { client_id: share.client_id }, ConsistentRead: true }))).Item;
  const sealed = client.secret;
  const key = (await kms.send(new DecryptCommand({ KeyId: process.env.KMS_KEY_ID, CiphertextBlob: Buffer.from(sealed.key, 'base64') }))).Plaintext;
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAAD(Buffer.from(\`idp-client:\${share.client_id}\`, 'utf8'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  const secret = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
  return c.json({ name: share.name, client_id: share.client_id, secret }, 200);
});`,
      ),
  },
  {
    group: 'mcps',
    what: 'E9 GET /api/mcps/{id}',
    status: 200,
    prepare: async (t) => {
      const admin = await t.token('cold-admin', ['admin']);
      const server = await seed<{ id: string }>(
        t,
        {
          method: 'POST',
          path: '/api/mcps',
          token: admin,
          body: { name: 'cold start', command: 'true', env: { A: 'b' } },
        },
        201,
      );
      return { id: server.id, user: await t.token('cold-user') };
    },
    request: async (_t, s) => ({ method: 'GET', path: `/api/mcps/${s.id}`, token: s.user }),
    bare: (t) =>
      bareModule(
        dynamo('GetCommand'),
        `const app = new Hono().get('/api/mcps/:id', async (c) => {
  const out = await db.send(new GetCommand({ TableName: ${j(t.tableName('mcpServers'))}, Key: { id: c.req.param('id') }, ConsistentRead: true }));
  return c.json(out.Item, 200);
});`,
      ),
  },
  {
    group: 'finetune',
    what: 'E11 DELETE /api/finetune/datasets/{id}',
    status: 200,
    prepare: async (t) => ({ user: await t.token('cold-user') }),
    request: async (t, s, run) => {
      const job = await seed<{ id: string }>(
        t,
        { method: 'POST', path: '/api/finetune/datasets', token: s.user, body: { name: `cold start ${run}` } },
        201,
      );
      return { method: 'DELETE', path: `/api/finetune/datasets/${job.id}`, token: s.user };
    },
    bare: (t) =>
      bareModule(
        `${dynamo('GetCommand', 'TransactWriteCommand')}
import { S3Client, ListObjectsV2Command, DeleteObjectsCommand } from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
const s3 = new S3Client({ endpoint: process.env.S3_ENDPOINT, forcePathStyle: true });`,
        `const app = new Hono().delete('/api/finetune/datasets/:id', async (c) => {
  const id = c.req.param('id');
  const job = (await db.send(new GetCommand({ TableName: ${j(t.tableName('finetuneJobs'))}, Key: { id }, ConsistentRead: true }))).Item;
  const bucket = ${j(t.artifactsBucket)};
  const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: \`finetune/\${id}/\`, MaxKeys: 1000 }));
  const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key }));
  if (keys.length > 0) await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
  const at = new Date().toISOString();
  const event = randomUUID();
  await db.send(new TransactWriteCommand({ TransactItems: [
    { Delete: { TableName: ${j(t.tableName('finetuneJobs'))}, Key: { id }, ConditionExpression: 'attribute_exists(id) AND ev_seq = :seq', ExpressionAttributeValues: { ':seq': job.ev_seq } } },
    { Put: { TableName: ${j(t.tableName('domainEvents'))}, ConditionExpression: 'attribute_not_exists(subject)', Item: {
      specversion: '1.0', id: event, source: 'dpm/bare', type: 'dpm.finetune.dataset.deleted', subject: \`finetune/datasets/\${id}\`,
      time: at, datacontenttype: 'application/json', actor: 'bare', sequence: job.ev_seq + 1, data_json: JSON.stringify(job),
      feed: 'all', feed_key: \`\${at}#\${event}\`, expires_at: Math.floor(Date.now() / 1000) + 30 * 86400,
    } } },
  ] }));
  return c.json({ id, deleted: true }, 200);
});`,
      ),
  },
  {
    group: 'metastore',
    what: 'E10 GET /api/metastore/catalogs/{c}/schemas/{s}/tables',
    status: 200,
    prepare: async (t) => {
      const admin = await t.token('cold-admin', ['admin']);
      for (let i = 0; i < 20; i++) {
        await seed(
          t,
          {
            method: 'PUT',
            path: `/api/metastore/catalogs/coldstart/schemas/sales/tables/table_${String(i).padStart(2, '0')}`,
            token: admin,
            body: {
              columns: [
                { name: 'id', type: 'bigint' },
                { name: 'amount', type: 'decimal(12,2)' },
              ],
            },
          },
          200,
        );
      }
      return { user: await t.token('cold-user') };
    },
    request: async (_t, s) => ({
      method: 'GET',
      path: '/api/metastore/catalogs/coldstart/schemas/sales/tables',
      token: s.user,
    }),
    bare: (t) =>
      bareModule(
        dynamo('QueryCommand'),
        `const app = new Hono().get('/api/metastore/catalogs/:c/schemas/:s/tables', async (c) => {
  const out = await db.send(new QueryCommand({ TableName: ${j(t.tableName('metastore'))}, ProjectionExpression: 'sk', KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': \`TABLE#\${c.req.param('c')}#\${c.req.param('s')}\` } }));
  return c.json({ tables: out.Items.map((i) => i.sk) }, 200);
});`,
      ),
  },
  {
    group: 'documents',
    what: 'E6 PATCH /api/documents/{id}/enrichment',
    status: 200,
    prepare: async (t) => ({ user: await t.token('cold-user'), admin: await t.token('cold-admin', ['admin']) }),
    request: async (t, s) => {
      const doc = await seed<{ id: string }>(
        t,
        {
          method: 'POST',
          path: '/api/documents',
          token: s.user,
          body: { filename: 'cold-start.pdf', mime_type: 'application/pdf', size_bytes: 1024 },
        },
        201,
      );
      await seed(
        t,
        {
          method: 'PUT',
          path: `/api/documents/${doc.id}/suggestions`,
          token: s.admin,
          body: { suggested_summary: 'A contract', suggested_tags: [], suggested_glossary_terms: [] },
        },
        200,
      );
      return {
        method: 'PATCH',
        path: `/api/documents/${doc.id}/enrichment`,
        token: s.user,
        body: {
          summary: 'A contract',
          accepted_tags: [],
          new_tags: [],
          accepted_glossary_terms: [],
          new_glossary_terms: [],
        },
      };
    },
    bare: (t) =>
      bareModule(
        `${dynamo('GetCommand', 'UpdateCommand', 'PutCommand')}
import { randomUUID } from 'node:crypto';`,
        `const app = new Hono().patch('/api/documents/:id/enrichment', async (c) => {
  const body = await c.req.json();
  const id = c.req.param('id');
  const documents = ${j(t.tableName('documents'))};
  const catalog = ${j(t.tableName('catalog'))};
  const entity = { pk: \`ENTITY#urn:li:document:\${id}\`, sk: 'META' };
  await db.send(new GetCommand({ TableName: documents, Key: { id }, ConsistentRead: true }));
  await db.send(new GetCommand({ TableName: catalog, Key: entity, ConsistentRead: true }));
  const claim = randomUUID();
  const now = Date.now();
  await db.send(new UpdateCommand({
    TableName: documents, Key: { id }, ReturnValues: 'ALL_NEW',
    UpdateExpression: 'SET #es = :confirming, #claim = :claim, #exp = :exp',
    ConditionExpression: 'attribute_exists(id) AND #es = :awaiting',
    ExpressionAttributeNames: { '#es': 'enrichment_status', '#claim': 'confirmation_claim', '#exp': 'confirmation_claim_expires_at' },
    ExpressionAttributeValues: { ':awaiting': 'awaiting_review', ':confirming': 'confirming', ':claim': claim, ':exp': now + 30000 },
  }));
  await db.send(new GetCommand({ TableName: catalog, Key: entity, ConsistentRead: true }));
  await db.send(new PutCommand({ TableName: catalog, Item: { ...entity, urn: \`urn:li:document:\${id}\`, description: body.summary, version: 1 }, ConditionExpression: 'attribute_not_exists(pk)' }));
  const out = await db.send(new UpdateCommand({
    TableName: documents, Key: { id }, ReturnValues: 'ALL_NEW',
    UpdateExpression: 'SET suggested_summary = :summary, suggested_tags = :tags, suggested_glossary_terms = :terms, #es = :confirmed, updated_at = :at REMOVE #claim, #exp',
    ConditionExpression: 'attribute_exists(id) AND #es = :confirming AND #claim = :claim',
    ExpressionAttributeNames: { '#es': 'enrichment_status', '#claim': 'confirmation_claim', '#exp': 'confirmation_claim_expires_at' },
    ExpressionAttributeValues: { ':summary': body.summary, ':tags': [], ':terms': [], ':confirmed': 'confirmed', ':confirming': 'confirming', ':claim': claim, ':at': new Date().toISOString() },
  }));
  return c.json(out.Attributes, 200);
});`,
      ),
  },
  {
    group: 'migration',
    what: 'E3 PUT /api/migration/infrastructure-config',
    status: 200,
    prepare: async (t) => ({ admin: await t.token('cold-admin', ['admin']) }),
    request: async (_t, s, run) => ({
      method: 'PUT',
      path: '/api/migration/infrastructure-config',
      token: s.admin,
      body: { fs_user: 'svc-migration', tracking_database: `tracking_${run}` },
    }),
    bare: (t) =>
      bareModule(
        dynamo('UpdateCommand'),
        `const app = new Hono().put('/api/migration/infrastructure-config', async (c) => {
  const body = await c.req.json();
  const names = Object.keys(body);
  const out = await db.send(new UpdateCommand({
    TableName: ${j(t.tableName('migrationConfig'))}, Key: { id: 'current' }, ReturnValues: 'ALL_OLD',
    UpdateExpression: 'SET updated_by = :by, updated_at = :at, ' + names.map((_, i) => \`#f\${i} = :f\${i}\`).join(', '),
    ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [\`#f\${i}\`, n])),
    ExpressionAttributeValues: { ':by': 'bare', ':at': new Date().toISOString(), ...Object.fromEntries(names.map((n, i) => [\`:f\${i}\`, body[n]])) },
  }));
  return c.json({ ...out.Attributes, ...body }, 200);
});`,
      ),
  },
  {
    group: 'domain-events',
    what: 'GET /api/domain-events?limit=20',
    status: 200,
    prepare: async (t) => ({ admin: await t.token('cold-admin', ['admin']) }),
    request: async (_t, s) => ({ method: 'GET', path: '/api/domain-events', query: { limit: '20' }, token: s.admin }),
    bare: (t) =>
      bareModule(
        dynamo('QueryCommand'),
        `const app = new Hono().get('/api/domain-events', async (c) => {
  const limit = Number(c.req.query('limit') ?? 100);
  const out = await db.send(new QueryCommand({ TableName: ${j(t.tableName('domainEvents'))}, IndexName: 'by_time', Limit: limit + 1, KeyConditionExpression: 'feed = :feed', ExpressionAttributeValues: { ':feed': 'all' } }));
  return c.json(out.Items.slice(0, limit), 200);
});`,
      ),
  },
  {
    group: 'webhooks',
    what: 'POST /api/webhooks (its secret sealed with KMS)',
    status: 201,
    prepare: async (t) => ({ admin: await t.token('cold-admin', ['admin']) }),
    request: async (t, s) => ({
      method: 'POST',
      path: '/api/webhooks',
      token: s.admin,
      // a type no cold start emits: the other groups' runs send these endpoints nothing
      body: { url: t.receiverUrl, event_types: ['webhook.endpoint.disabled'], description: 'cold start' },
    }),
    // Each run registered an endpoint (the bare handler's too) with a secret sealed by the KMS
    // stand-in's key, which the platform cannot open: none may stay for the later phases.
    cleanup: async (t, s, answers) => {
      for (const { body } of answers) {
        const { id } = JSON.parse(body) as { id: string };
        await seed(t, { method: 'DELETE', path: `/api/webhooks/${id}`, token: s.admin }, 204);
      }
    },
    bare: (t) =>
      bareModule(
        `${dynamo('PutCommand')}
import { KMSClient, GenerateDataKeyCommand } from '@aws-sdk/client-kms';
import { createCipheriv, randomBytes, randomUUID } from 'node:crypto';
const kms = new KMSClient({});`,
        `const app = new Hono().post('/api/webhooks', async (c) => {
  const body = await c.req.json();
  const id = randomUUID();
  const secret = \`whsec_\${randomBytes(32).toString('base64')}\`;
  const dataKey = await kms.send(new GenerateDataKeyCommand({ KeyId: process.env.KMS_KEY_ID, KeySpec: 'AES_256' }));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', dataKey.Plaintext, iv);
  cipher.setAAD(Buffer.from(\`webhook:\${id}\`, 'utf8'));
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  const at = new Date().toISOString();
  const item = {
    id, url: body.url, event_types: body.event_types, description: body.description, enabled: true, disabled_reason: null,
    created_by: 'bare', created_at: at, updated_at: at, list_pk: 'webhook', created_key: \`\${at}#\${id}\`,
    secret: { v: 1, key: Buffer.from(dataKey.CiphertextBlob).toString('base64'), iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') },
  };
  await db.send(new PutCommand({ TableName: ${j(t.tableName('webhooks'))}, Item: item, ConditionExpression: 'attribute_not_exists(id)' }));
  return c.json({ id, url: body.url, event_types: body.event_types, secret }, 201);
});`,
      ),
  },
  {
    group: 'approvals',
    what: 'GET /api/approvals',
    status: 200,
    // An inbox with more than a page waiting (the bare handler's Limit), as an approver's is.
    prepare: async (t) => {
      const author = await t.token('cold-inbox-author');
      const waiting: string[] = [];
      for (let i = 0; i < INBOX_WAITING; i++) {
        const base = `/api/decisions/coldstart-inbox/k${i}/versions`;
        const { version } = await seed<{ version: number }>(
          t,
          { method: 'POST', path: base, token: author, body: { content: { item: i } } },
          201,
        );
        await seed(t, { method: 'POST', path: `${base}/${version}/submit`, token: author, body: {} }, 200);
        waiting.push(`${base}/${version}`);
      }
      return { approver: await t.token('cold-approver', ['approver']), waiting };
    },
    request: async (_t, s) => ({ method: 'GET', path: '/api/approvals', token: s.approver }),
    // Out of every later phase's inboxes.
    cleanup: async (t, s) => {
      for (const version of s.waiting as string[])
        await seed(t, { method: 'POST', path: `${version}/reject`, token: s.approver, body: {} }, 200);
    },
    bare: (t) =>
      bareModule(
        dynamo('QueryCommand'),
        `const app = new Hono().get('/api/approvals', async (c) => {
  const [versions, steps] = await Promise.all([
    db.send(new QueryCommand({ TableName: ${j(t.tableName('decisions'))}, IndexName: 'submitted', Limit: 101, KeyConditionExpression: 'sub_pk = :pk', ExpressionAttributeValues: { ':pk': 'submitted' } })),
    db.send(new QueryCommand({ TableName: ${j(t.tableName('crewRuns'))}, IndexName: 'waiting_steps', Limit: 101, KeyConditionExpression: 'waiting_role = :role', ExpressionAttributeValues: { ':role': 'approver' } })),
  ]);
  return c.json([...versions.Items, ...steps.Items].slice(0, 100), 200);
});`,
      ),
  },
  {
    group: 'query',
    what: 'E12 GET /api/query/suggest/{domain}',
    status: 200,
    prepare: async (t) => {
      const admin = await t.token('cold-admin', ['admin']);
      await seed(t, { method: 'POST', path: '/api/catalog/domains', token: admin, body: { name: 'cold-start' } }, 201);
      for (const table of ['orders', 'customers', 'payments']) {
        await seed(
          t,
          {
            method: 'PUT',
            path: `/api/metastore/catalogs/coldstart/schemas/shop/tables/${table}`,
            token: admin,
            body: {
              description: `The ${table}`,
              domain: 'cold-start',
              columns: [
                { name: 'id', type: 'bigint' },
                { name: 'customer_id', type: 'bigint' },
                { name: 'created_at', type: 'timestamp(3)' },
              ],
            },
          },
          200,
        );
      }
      return { user: await t.token('cold-user') };
    },
    request: async (_t, s) => ({ method: 'GET', path: '/api/query/suggest/cold-start', token: s.user }),
    bare: (t) =>
      bareModule(
        dynamo('GetCommand', 'QueryCommand', 'BatchGetCommand'),
        `const app = new Hono().get('/api/query/suggest/:domain', async (c) => {
  const domain = c.req.param('domain');
  const catalog = ${j(t.tableName('catalog'))};
  const metastore = ${j(t.tableName('metastore'))};
  await db.send(new GetCommand({ TableName: catalog, Key: { pk: 'DOMAIN', sk: domain }, ConsistentRead: true }));
  const entities = await db.send(new QueryCommand({ TableName: catalog, IndexName: 'by_domain', KeyConditionExpression: '#domain = :domain', ExpressionAttributeNames: { '#domain': 'domain' }, ExpressionAttributeValues: { ':domain': domain } }));
  const keys = ${j(['customers', 'orders', 'payments'].map((table) => ({ pk: 'TABLE#coldstart#shop', sk: table })))};
  const tables = await db.send(new BatchGetCommand({ RequestItems: { [metastore]: { Keys: keys } } }));
  return c.json((tables.Responses[metastore] ?? []).map((table) => ({ domain, question: \`How many rows has \${table.sk}?\`, sql: \`SELECT count(*) FROM "\${table.sk}"\`, entities: entities.Count })), 200);
});`,
      ),
  },
];

export const COLD_START_CASES: readonly ColdStartCase[] = cases;
