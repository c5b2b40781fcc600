/**
 * The authorization matrix: one row per endpoint the service serves (checked against the
 * running platform's `/openapi.json`), one column per kind of caller, each cell the status
 * that the API reference gives that caller. Every cell is its own test, named
 * "<METHOD> <path> [variant] › <caller>", so a failure names both.
 *
 * Columns (in the order of the `expect` strings below):
 *   anonymous    no credentials
 *   badPsk       a garbage `Authorization-PSK`
 *   expiredPsk   a key past its `valid_until` (it belongs to an admin: expiry beats roles)
 *   user         Bearer token, no roles; the owner of the row's resource
 *   other        Bearer token, no roles; a second user who does not own the resource
 *   approver     Bearer token, role `approver` (never the owner)
 *   admin        Bearer token, role `admin`
 *   userPsk      a valid pre-shared key created by `user` (acts as `user`, docs/identity-and-keys.md)
 *   approverPsk  a valid pre-shared key created by `approver` with role `approver`
 *   adminPsk     the bootstrap admin key (`DPM_ADMIN_PSK`)
 *   sameName     Bearer token, no roles, with `user`'s name (`preferred_username`) but another
 *                subject: another person, so exactly like `other` (docs/identity-and-keys.md, principals: identity is iss + sub)
 *   sameSubject  Bearer token, no roles, with `user`'s subject but another name (email only, so
 *                the name falls back to the email): `user` itself, so exactly like `user`
 *   nameAdmin    Bearer token, no roles, named "admin" (the bootstrap key's creator name) with a
 *                subject of its own: reaches nothing the bootstrap key made (reserved principal)
 *
 * Contract rules the cells come from (docs/identity-and-keys.md and the tables):
 * only `/api/health/ping`, `/openapi.json`, `/asyncapi.json` and `/docs` (with its files) are open; 401 comes before anything
 * else; `admin` may do everything that needs no identity-provider session but does not imply
 * `approver`; approve and reject need role `approver` and a Bearer session (a key is never a
 * session); approve also needs a second person (four-eyes); retire is `approver` or `admin`.
 * Identity (principals, docs/identity-and-keys.md): every owner check, own-items list and the four-eyes rule compare
 * principals (token `iss` + `sub`; a key's creator's; the bootstrap key's reserved one), never
 * names. Own-items list rows also say, per caller, whether the row's resource is listed.
 *
 * The budget is work, not time: every cell makes its one call (counted: the last test checks
 * that all of them were made) and the cells run a few at a time (vitest's maxConcurrency);
 * timeouts only catch a hang (test/support/work-budget.ts).
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { storeUnqueuedRun, storeWaitingRun } from '../../support/pending-run.js';
import { type TokenOptions, WWW_AUTHENTICATE } from '../../support/tokens.js';
import { HANG_GUARD_MS, REQUEST_HANG_GUARD_MS, TOKEN_LIFETIME } from '../../support/work-budget.js';
import {
  adminPsk,
  api,
  type ApiResponse,
  baseUrl,
  db,
  insertKey,
  principalOf,
  slug,
  table,
  token,
} from '../helpers.js';

const CALLERS = [
  'anonymous',
  'badPsk',
  'expiredPsk',
  'user',
  'other',
  'approver',
  'admin',
  'userPsk',
  'approverPsk',
  'adminPsk',
  'sameName',
  'sameSubject',
  'nameAdmin',
] as const;
type Caller = (typeof CALLERS)[number];

interface Auth {
  token?: string;
  psk?: string;
}

/** Unique identities for this file, so lists and ownership never mix with other files. */
const run = randomUUID().slice(0, 8);
const NAMES = {
  user: `authz-user-${run}`,
  other: `authz-other-${run}`,
  approver: `authz-approver-${run}`,
  admin: `authz-admin-${run}`,
  setupApprover: `authz-setup-approver-${run}`,
};

const auth = {} as Record<Caller, Auth>;
let setupAdmin: Auth;
let setupApprover: Auth;
/** The approver's subject under another name, and another subject under the approver's name. */
let approverAlias: Auth;
let approverNamesake: Auth;
/** What the identity columns are shown as (checked below, so that they test what they claim). */
const SAME_SUBJECT_EMAIL = `Authz-User-${run}@example.com`;

beforeAll(async () => {
  const dayAgo = new Date(Date.now() - 86_400_000).toISOString();
  // Valid for a year: a key cannot make or extend a key past its own valid_until (docs/identity-and-keys.md, key lineage), and the
  // owner's keys it extends are valid for 30 days.
  const yearAhead = new Date(Date.now() + 365 * 86_400_000).toISOString();
  // Tokens valid for as long as the file's work can take (not the default 10 minutes).
  const bearer = async (name: string, options: TokenOptions = {}): Promise<Auth> => ({
    token: await token(name, { ...options, expiresIn: TOKEN_LIFETIME }),
  });
  const approver = { roles: ['approver'] };
  const key = async (made: Promise<{ secret: string }>): Promise<Auth> => ({ psk: (await made).secret });
  // Each minted or stored once, all at the same time, for every cell of the file.
  [
    auth.expiredPsk,
    auth.user,
    auth.other,
    auth.approver,
    auth.admin,
    auth.userPsk,
    auth.approverPsk,
    setupApprover,
    auth.sameName,
    auth.sameSubject,
    auth.nameAdmin,
    approverAlias,
    approverNamesake,
  ] = await Promise.all([
    key(insertKey({ createdBy: NAMES.admin, roles: ['admin'], validUntil: dayAgo })),
    bearer(NAMES.user),
    bearer(NAMES.other),
    bearer(NAMES.approver, approver),
    bearer(NAMES.admin, { roles: ['admin'] }),
    key(insertKey({ createdBy: NAMES.user, validUntil: yearAhead })),
    key(insertKey({ createdBy: NAMES.approver, roles: ['approver'] })),
    bearer(NAMES.setupApprover, approver),
    bearer(NAMES.user, { subject: `other-subject-${run}` }),
    bearer(NAMES.user, { claims: { preferred_username: undefined, email: SAME_SUBJECT_EMAIL } }),
    bearer('admin', { subject: `authz-name-admin-${run}` }),
    bearer(`Authz-Approver-${run}`, { subject: `sub-${NAMES.approver}` }),
    bearer(NAMES.approver, { subject: `namesake-subject-${run}` }),
  ]);
  auth.anonymous = {};
  auth.badPsk = { psk: `garbage-${randomUUID()}` };
  auth.adminPsk = { psk: adminPsk() };
  setupAdmin = auth.admin;
}, HANG_GUARD_MS);

// ---------------------------------------------------------------------------------------
// Setup helpers: each creates what a row needs, through the API, as the resource's owner
// (`user`) or an admin, and fails loudly if the setup itself does not work.

async function must<T = any>(res: Promise<ApiResponse<T>>, status: number, what: string): Promise<T> {
  const r = await res;
  if (r.status !== status) throw new Error(`setup ${what}: expected ${status}, got ${r.status} ${r.text}`);
  return r.body;
}

/** Memoizes a shared (read-only) setup: created once, on first use. */
function once<T>(fn: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= fn());
}

const post = (path: string, who: Auth, body?: unknown) => api(path, { method: 'POST', ...who, body });
const put = (path: string, who: Auth, body: unknown) => api(path, { method: 'PUT', ...who, body });

interface Version {
  ws: string;
  key: string;
  version: number;
  base: string;
}

/** A draft decision version created by `author` (default: the owner) in a fresh workspace. */
async function draft(author: Auth = auth.user): Promise<Version> {
  const ws = slug('authz');
  const key = 'limits';
  const created = await must(
    post(`/api/decisions/${ws}/${key}/versions`, author, { content: { max: 10 } }),
    201,
    'decision version',
  );
  return { ws, key, version: created.version, base: `/api/decisions/${ws}/${key}/versions/${created.version}` };
}
async function submitted(author: Auth = auth.user, submitter: Auth = auth.user): Promise<Version> {
  const v = await draft(author);
  await must(post(`${v.base}/submit`, submitter), 200, 'submit');
  return v;
}
async function approved(): Promise<Version> {
  const v = await submitted();
  await must(post(`${v.base}/approve`, setupApprover), 200, 'approve');
  return v;
}

const TEMPLATE = {
  name: 'authz template',
  variables: [{ name: 'who', type: 'string', default: 'world' }],
  steps: [{ id: 'hello', kind: 'render', template: 'Hello {{who}}' }],
};
const template = async () => (await must(post('/api/crew-templates', setupAdmin, TEMPLATE), 201, 'template')).id;
const sharedTemplate = once(template);
/** The name of a template no other has (its crew type, docs/sdk.md). */
const crewTypeName = once(
  async () =>
    (await must(post('/api/crew-templates', setupAdmin, { ...TEMPLATE, name: `authz-crew-${run}` }), 201, 'template'))
      .name as string,
);
const sharedRun = once(
  async () =>
    (await must(post(`/api/crew-templates/${await sharedTemplate()}/run`, auth.user, { values: {} }), 202, 'crew run'))
      .correlation_id as string,
);

/**
 * A run of `user`'s stored as E2 leaves it but never queued: no worker takes it, so it is
 * `pending` for as long as a row needs (cancelling it is the only change).
 */
const pendingRunOfUser = () =>
  storeUnqueuedRun(
    db(),
    { crewRuns: table('crewRuns'), runLog: table('runLog') },
    { name: NAMES.user, principal: principalOf(NAMES.user) },
  );

/** A run of `user`'s, cancelled (so it can be retried); never queued before. */
const cancelledRunOfUser = async () => {
  const id = await pendingRunOfUser();
  await must(post(`/api/crew-runs/${id}/cancel`, setupAdmin, {}), 200, 'cancel');
  return id;
};

/** A run of `user`'s with one step `only`, cancelled (so it can be rerun from `only`); never queued before. */
const cancelledRunWithStepOfUser = async () => {
  const id = await storeUnqueuedRun(
    db(),
    { crewRuns: table('crewRuns'), runLog: table('runLog') },
    { name: NAMES.user, principal: principalOf(NAMES.user) },
    [{ id: 'only', kind: 'render', template: 'rerun' }],
  );
  await must(post(`/api/crew-runs/${id}/cancel`, setupAdmin, {}), 200, 'cancel');
  return id;
};

/** A pending run of `user`'s, with its template id (one no other run has): `{ id, templateId }`. */
const pendingRunOfUserByTemplate = async () => {
  const id = await pendingRunOfUser();
  return { id, templateId: (await must(api(`/api/crew-runs/${id}`, setupAdmin), 200, 'run')).template_id as string };
};

/** A run of `user`'s parked at its `approval` step `gate` (status `waiting`). */
const waitingRunOfUser = () =>
  storeWaitingRun(
    db(),
    { crewRuns: table('crewRuns'), runLog: table('runLog') },
    { name: NAMES.user, principal: principalOf(NAMES.user) },
  );

/** A pre-shared key created by `owner` (default: the owner) through the API; returns its public id. */
const ownedKey = async (owner: Auth = auth.user) =>
  (await must(post('/api/dataproduct/default/psk', owner, { description: 'authz' }), 201, 'psk')).psk as string;
const sharedKey = once(() => ownedKey());

/** A new data product (docs/sdk.md), made by an admin; returns its id. */
const dataProduct = async () =>
  (
    await must(
      post('/api/dataproduct', setupAdmin, {
        name: slug('authz-product'),
        role_name: 'authz',
        query: 'SELECT 1 FROM authz.core.orders',
      }),
      201,
      'data product',
    )
  ).id as string;
/** Whether an admin's list of data products shows `id`. */
const listedProduct = async (id: string) => ({
  listed: (await everyItem('/api/dataproduct?limit=1000', setupAdmin)).some((p) => p.id === id),
});

const share = async (owner: Auth = auth.user) =>
  (await must(post('/api/data_shares', owner, { name: slug('authz-share') }), 201, 'data share')).name as string;
const sharedShare = once(() => share());
/** A share of the owner's, by its id (docs/sdk.md: GET and DELETE take the id as well as the name). */
const shareById = async () =>
  (await must(post('/api/data_shares', auth.user, { name: slug('authz-share') }), 201, 'data share')).id as string;
const sharedShareById = once(shareById);

/** A domain event (docs/events-and-webhooks.md): a new decision version's `created`, once the feed has it. */
const sharedEvent = once(async () => {
  const ws = slug('authz-ev');
  const v = (await must(post(`/api/decisions/${ws}/k/versions`, setupAdmin, { content: 1 }), 201, 'version')).version;
  const subject = encodeURIComponent(`decisions/${ws}/k/versions/${v}`);
  return eventually(
    async () => {
      const events = await must(api(`/api/domain-events?subject=${subject}`, setupAdmin), 200, 'event feed');
      return events.length > 0 ? (events[0].id as string) : undefined;
    },
    REQUEST_HANG_GUARD_MS,
    'setup domain event: the feed shows it',
    50,
  );
});

/**
 * A webhook endpoint (docs/events-and-webhooks.md) on a closed port over https (any host is allowed over
 * https): its deliveries fail, which nothing here minds. Only `webhook.endpoint.disabled`
 * events, so other files' events do not keep it busy.
 */
const WEBHOOK = { url: 'https://127.0.0.1:9/authz', event_types: ['webhook.endpoint.disabled'] };
const webhook = async () => (await must(post('/api/webhooks', setupAdmin, WEBHOOK), 201, 'webhook')).id as string;
const sharedWebhook = once(webhook);
/** A webhook with one delivery (its test ping): `{ id, delivery }`. */
const webhookDelivery = async () => {
  const id = await webhook();
  const delivery = (await must(post(`/api/webhooks/${id}/test`, setupAdmin), 202, 'webhook test')).id as string;
  return { id, delivery };
};
const sharedWebhookDelivery = once(webhookDelivery);
/** How many deliveries an admin sees for a webhook. */
const deliveryCount = async (id: string) => {
  const res = await api<unknown[]>(`/api/webhooks/${id}/deliveries?limit=1000`, setupAdmin);
  return { status: res.status, count: Array.isArray(res.body) ? res.body.length : undefined };
};

const MCP = { name: 'authz mcp', command: 'mcp-server', args: ['--stdio'] };
const mcp = async () => (await must(post('/api/mcps', setupAdmin, MCP), 201, 'mcp server')).id;
const scheduleTemplate = once(template);
const scheduleBody = async () => ({
  template_id: await scheduleTemplate(),
  name: 'authz schedule',
  // 1 January 2099: never fires while the suite runs
  expression: 'cron(0 0 1 1 ? 2099)',
});
const crewSchedule = async () =>
  (await must(post('/api/crew-schedules', setupAdmin, await scheduleBody()), 201, 'crew schedule')).id as string;
const sharedSchedule = once(crewSchedule);
const sharedMcp = once(mcp);

const job = async (owner: Auth = auth.user) =>
  (await must(post('/api/finetune/datasets', owner, { name: 'authz dataset' }), 201, 'finetune job')).id as string;
const sharedJob = once(() => job());

/** A registered connection pointing at the platform's own port, so a TCP probe succeeds. */
const connection = async () => {
  const connId = slug('authz-conn');
  const { hostname, port } = new URL(baseUrl());
  await must(
    put(`/api/migration/connections/${connId}`, setupAdmin, { conn_type: 'generic', host: hostname, port: +port }),
    200,
    'connection',
  );
  return connId;
};
const sharedConnection = once(connection);

/** One catalog/schema/table in the built-in metastore, registered by an admin. */
const sharedTable = once(async () => {
  const t = { catalog: slug('authzcat'), schema: 'sales', table: 'orders' };
  await must(
    put(`/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}`, setupAdmin, {
      columns: [{ name: 'id', type: 'bigint' }],
    }),
    200,
    'table',
  );
  return t;
});

/** A fresh table of its own (docs/sdk.md DDL rows change it). */
const metastoreTable = async () => {
  const t = { catalog: slug('authzddl'), schema: 'sales', table: 'orders' };
  await must(
    put(`/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}`, setupAdmin, {
      columns: [{ name: 'id', type: 'bigint' }],
    }),
    200,
    'table',
  );
  return t;
};
/** An empty catalog, or one with an empty schema `sales` (docs/sdk.md drops). */
const emptyCatalog = async (withSchema = false) => {
  const catalog = slug('authzddl');
  await must(post('/api/metastore/catalogs', setupAdmin, { catalog, catalog_type: 'memory' }), 201, 'catalog');
  if (withSchema)
    await must(post(`/api/metastore/catalogs/${catalog}/schemas`, setupAdmin, { schema_name: 'sales' }), 201, 'schema');
  return catalog;
};
const tableRef = (t: { catalog: string; schema: string; table: string }) => `${t.catalog}.${t.schema}.${t.table}`;

const sharedDomain = once(
  async () =>
    (await must(post('/api/catalog/domains', setupAdmin, { name: slug('authz-domain') }), 201, 'domain')).name,
);

/** A domain with one table: an ask (docs/sdk.md) has something to answer. */
const sharedAskDomain = once(async () => {
  const name = (await must(post('/api/catalog/domains', setupAdmin, { name: slug('authz-ask') }), 201, 'domain'))
    .name as string;
  const path = `/api/metastore/catalogs/${slug('authzask')}/schemas/sales/tables/orders`;
  await must(put(path, setupAdmin, { domain: name, columns: [{ name: 'id', type: 'bigint' }] }), 200, 'table');
  return name;
});

const DOCUMENT = { filename: 'authz.pdf', mime_type: 'application/pdf', size_bytes: 42 };
const SUGGESTIONS = { suggested_summary: 'a summary', suggested_tags: [], suggested_glossary_terms: [] };
const document = async (owner: Auth = auth.user) =>
  (await must(post('/api/documents', owner, DOCUMENT), 201, 'document')).id as string;
const sharedDocument = once(() => document());
const documentAwaitingReview = async () => {
  const id = await document();
  await must(put(`/api/documents/${id}/suggestions`, setupAdmin, SUGGESTIONS), 200, 'suggestions');
  return id;
};

/**
 * Resources made with the bootstrap admin key, whose principal is a reserved one (docs/identity-and-keys.md, principals): its
 * creator name is "admin", which a token can carry, but that gives the token none of them.
 */
const bootstrapKey = () => ownedKey(auth.adminPsk);
const sharedBootstrapKey = once(bootstrapKey);
const bootstrapShare = () => share(auth.adminPsk);
const sharedBootstrapShare = once(bootstrapShare);
const sharedBootstrapDocument = once(() => document(auth.adminPsk));
const sharedBootstrapJob = once(() => job(auth.adminPsk));

// ---------------------------------------------------------------------------------------
// The matrix. `path` is the route exactly as `/openapi.json` lists it; `setup` runs once per
// row, and again for each allowed cell when the call changes state (`fresh: true`);
// `request` builds the concrete call. `expect` lists the statuses in CALLERS order:
//
//   anon  badPsk expPsk user other approver admin userPsk apprPsk adminPsk sameName sameSubj nameAdmin

interface Request {
  path: string;
  body?: unknown;
}

interface Row {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  variant?: string;
  fresh?: boolean;
  setup?: () => Promise<any>;
  request: (state: any) => Request;
  expect: string;
  /**
   * For rows that change state: reads the resource (as an admin). A refused call (401/403)
   * must leave it as it was; an allowed one must change it.
   */
  observe?: (state: any) => Promise<unknown>;
  /**
   * For rows whose allowed calls reach the resource for some callers only (a bulk action over
   * the caller's own items), or for none (what the call makes is another resource): per caller
   * in CALLERS order whether an allowed call must change what `observe` reads (`y` / `n`; `-`
   * for the cells that are refused). Without it, every allowed call must change it.
   */
  changes?: string;
  /**
   * For own-items lists (`request` asks for `limit=1000`; further pages are followed): whether
   * the row's resource is in the list, and per caller in CALLERS order whether it must be
   * (`y` / `n`; `-` for the cells that are refused).
   */
  lists?: { has: (state: any, item: any) => boolean; expect: string };
}

/** What an admin reads at `path`: status and body. */
const readAsAdmin = async (path: string) => {
  const res = await api(path, setupAdmin);
  return { status: res.status, body: res.body };
};
/** The owner's key `psk` as the owner's list shows it (deleted ones included). */
const ownKey = async (psk: string) => {
  const res = await api<{ psk: string }[]>('/api/dataproduct/psk?include_deleted=true&limit=1000', auth.user);
  return { status: res.status, key: res.body.find((k) => k.psk === psk) };
};
/** Every item of the list at `path` (which has a query) as `who` sees it, following `X-Next-Cursor`. */
async function everyItem(path: string, who: Auth, first?: ApiResponse<any[]>): Promise<any[]> {
  let res = first ?? (await api<any[]>(path, who));
  const items: any[] = [];
  for (;;) {
    if (res.status !== 200 || !Array.isArray(res.body)) throw new Error(`list ${path}: ${res.status} ${res.text}`);
    items.push(...res.body);
    const cursor = res.headers.get('x-next-cursor');
    if (!cursor) return items;
    res = await api<any[]>(`${path}&cursor=${encodeURIComponent(cursor)}`, who);
  }
}
/** Any key `psk` as an admin's list shows it (deleted ones included). */
const anyKey = async (psk: string) => ({
  key: (await everyItem('/api/dataproduct/psk?include_deleted=true&limit=1000', setupAdmin)).find((k) => k.psk === psk),
});

const ANY_USER_200 = '401 401 401 200 200 200 200 200 200 200 200 200 200';
const ANY_USER_201 = '401 401 401 201 201 201 201 201 201 201 201 201 201';
const OWNER_OR_ADMIN_200 = '401 401 401 200 403 403 200 200 403 200 403 200 403';
/** A run waiting at an approval step of role `approver`: its holders (and their keys) may read it too (docs/reviewing.md). */
const OWNER_APPROVER_OR_ADMIN_200 = '401 401 401 200 403 200 200 200 200 200 403 200 403';
const OWNER_OR_ADMIN_202 = '401 401 401 202 403 403 202 202 403 202 403 202 403';
const OWNER_OR_ADMIN_204 = '401 401 401 204 403 403 204 204 403 204 403 204 403';
const ADMIN_200 = '401 401 401 403 403 403 200 403 403 200 403 403 403';
const ADMIN_201 = '401 401 401 403 403 403 201 403 403 201 403 403 403';
const ADMIN_204 = '401 401 401 403 403 403 204 403 403 204 403 403 403';
const PUBLIC_200 = '200 200 200 200 200 200 200 200 200 200 200 200 200';
const PUBLIC_301 = '301 301 301 301 301 301 301 301 301 301 301 301 301';
/** Who finds the owner's resource in an own-items list (admins see everyone's). */
const LISTS_OWNERS = '- - - y n n y y n y n y n';
/** Who finds a resource made with the bootstrap key in an own-items list: admins only. */
const LISTS_BOOTSTRAPS = '- - - n n n y n n y n n n';

const ROWS: Row[] = [
  // Platform: open to anyone, whatever credentials come along.
  { method: 'GET', path: '/api/health/ping', request: () => ({ path: '/api/health/ping' }), expect: PUBLIC_200 },
  { method: 'GET', path: '/openapi.json', request: () => ({ path: '/openapi.json' }), expect: PUBLIC_200 },
  { method: 'GET', path: '/asyncapi.json', request: () => ({ path: '/asyncapi.json' }), expect: PUBLIC_200 },
  { method: 'GET', path: '/docs', request: () => ({ path: '/docs' }), expect: PUBLIC_200 },
  {
    method: 'GET',
    path: '/docs/{asset}',
    request: () => ({ path: '/docs/swagger-ui.css' }),
    expect: PUBLIC_200,
  },
  // The review console: open like /docs (its API calls carry the signed-in person's token).
  { method: 'GET', path: '/console', request: () => ({ path: '/console' }), expect: PUBLIC_301 },
  { method: 'GET', path: '/console/', request: () => ({ path: '/console/' }), expect: PUBLIC_200 },
  {
    method: 'GET',
    path: '/console/{asset}',
    request: () => ({ path: '/console/main.js' }),
    expect: PUBLIC_200,
  },

  // Decisions.
  {
    method: 'GET',
    path: '/api/decisions',
    setup: once(() => draft()),
    request: (v: Version) => ({ path: `/api/decisions?workspace=${v.ws}&limit=1000` }),
    expect: ANY_USER_200,
    // Not an own-items list: every caller who may list sees every decision.
    lists: {
      has: (v: Version, item: { workspace: string; key: string }) => item.workspace === v.ws && item.key === v.key,
      expect: '- - - y y y y y y y y y y',
    },
  },
  {
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions',
    request: () => ({ path: `/api/decisions/${slug('authz')}/limits/versions`, body: { content: [1, 2] } }),
    expect: ANY_USER_201,
  },
  {
    method: 'GET',
    path: '/api/decisions/{workspace}/{key}/versions',
    setup: once(() => draft()),
    request: (v: Version) => ({ path: `/api/decisions/${v.ws}/${v.key}/versions` }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/decisions/{workspace}/{key}/versions/{version}',
    setup: once(() => draft()),
    request: (v: Version) => ({ path: v.base }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/decisions/{workspace}/{key}/published',
    setup: once(approved),
    request: (v: Version) => ({ path: `/api/decisions/${v.ws}/${v.key}/published` }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/history',
    setup: once(approved),
    request: (v: Version) => ({ path: `${v.base}/history` }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/diff',
    setup: once(approved),
    request: (v: Version) => ({ path: `${v.base}/diff` }),
    expect: ANY_USER_200,
  },
  {
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/submit',
    fresh: true,
    setup: () => draft(),
    request: (v: Version) => ({ path: `${v.base}/submit` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: ANY_USER_200,
  },
  {
    // E1: role approver AND a Bearer session; admin does not imply approver; a key is never a session.
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    fresh: true,
    setup: () => submitted(),
    request: (v: Version) => ({ path: `${v.base}/approve`, body: { notes: 'looks right' } }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 200 403 403 403 403 403 403 403',
  },
  {
    // Four-eyes: the approver authored the version (the owner submitted it).
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    variant: 'authored by the approver',
    fresh: true,
    setup: () => submitted(auth.approver, auth.user),
    request: (v: Version) => ({ path: `${v.base}/approve` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 403 403 403 403 403 403 403 403',
  },
  {
    // Four-eyes: the approver submitted the version (the owner authored it).
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    variant: 'submitted by the approver',
    fresh: true,
    setup: () => submitted(auth.user, auth.approver),
    request: (v: Version) => ({ path: `${v.base}/approve` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 403 403 403 403 403 403 403 403',
  },
  {
    // Four-eyes compares principals: the author had the approver's subject under another name.
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    variant: "authored by the approver's subject under another name",
    fresh: true,
    setup: () => submitted(approverAlias, auth.user),
    request: (v: Version) => ({ path: `${v.base}/approve` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 403 403 403 403 403 403 403 403',
  },
  {
    // Four-eyes compares principals: the submitter had the approver's subject under another name.
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    variant: "submitted by the approver's subject under another name",
    fresh: true,
    setup: () => submitted(auth.user, approverAlias),
    request: (v: Version) => ({ path: `${v.base}/approve` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 403 403 403 403 403 403 403 403',
  },
  {
    // ... and only principals: another person who shares the approver's name is a second person.
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    variant: "authored by the approver's namesake",
    fresh: true,
    setup: () => submitted(approverNamesake, auth.user),
    request: (v: Version) => ({ path: `${v.base}/approve` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 200 403 403 403 403 403 403 403',
  },
  {
    // A key acts as its creator's principal (docs/identity-and-keys.md, principals): authored with the approver's own key.
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    variant: "authored with the approver's key",
    fresh: true,
    setup: () => submitted(auth.approverPsk, auth.user),
    request: (v: Version) => ({ path: `${v.base}/approve` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 403 403 403 403 403 403 403 403',
  },
  {
    // ... and submitted with it.
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/approve',
    variant: "submitted with the approver's key",
    fresh: true,
    setup: () => submitted(auth.user, auth.approverPsk),
    request: (v: Version) => ({ path: `${v.base}/approve` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 403 403 403 403 403 403 403 403',
  },
  {
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/reject',
    fresh: true,
    setup: () => submitted(),
    request: (v: Version) => ({ path: `${v.base}/reject`, body: { notes: 'not yet' } }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 200 403 403 403 403 403 403 403',
  },
  {
    // Retire: approver or admin, no session needed, so their keys work too.
    method: 'POST',
    path: '/api/decisions/{workspace}/{key}/versions/{version}/retire',
    fresh: true,
    setup: approved,
    request: (v: Version) => ({ path: `${v.base}/retire` }),
    observe: (v: Version) => readAsAdmin(v.base),
    expect: '401 401 401 403 403 200 200 403 200 200 403 403 403',
  },

  // Crew templates, runs and events.
  {
    method: 'POST',
    path: '/api/crew-templates',
    request: () => ({ path: '/api/crew-templates', body: TEMPLATE }),
    expect: ADMIN_201,
  },
  {
    method: 'GET',
    path: '/api/crew-templates',
    request: () => ({ path: '/api/crew-templates' }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/crew-templates/{template_id}',
    setup: sharedTemplate,
    request: (id: string) => ({ path: `/api/crew-templates/${id}` }),
    expect: ANY_USER_200,
  },
  {
    method: 'PUT',
    path: '/api/crew-templates/{template_id}',
    fresh: true,
    setup: template,
    request: (id: string) => ({ path: `/api/crew-templates/${id}`, body: { ...TEMPLATE, name: 'replaced' } }),
    observe: (id: string) => readAsAdmin(`/api/crew-templates/${id}`),
    expect: ADMIN_200,
  },
  {
    method: 'DELETE',
    path: '/api/crew-templates/{template_id}',
    fresh: true,
    setup: template,
    request: (id: string) => ({ path: `/api/crew-templates/${id}` }),
    observe: (id: string) => readAsAdmin(`/api/crew-templates/${id}`),
    expect: ADMIN_204,
  },
  {
    method: 'POST',
    path: '/api/crew-templates/{template_id}/run',
    setup: sharedTemplate,
    request: (id: string) => ({ path: `/api/crew-templates/${id}/run`, body: { values: { who: 'matrix' } } }),
    expect: '401 401 401 202 202 202 202 202 202 202 202 202 202',
  },
  {
    // Own runs; an admin's list has every run.
    method: 'GET',
    path: '/api/crew-runs',
    setup: sharedRun,
    request: () => ({ path: '/api/crew-runs?limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (id: string, r) => r.correlation_id === id, expect: LISTS_OWNERS },
  },
  {
    // The run was started by `user`: its starter or an admin.
    method: 'GET',
    path: '/api/crew-runs/{correlation_id}',
    setup: sharedRun,
    request: (id: string) => ({ path: `/api/crew-runs/${id}` }),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    // docs/reviewing.md: a holder of the waiting approval step's role (not the starter) may read the run.
    method: 'GET',
    path: '/api/crew-runs/{correlation_id}',
    variant: 'waiting at an approval step of role approver',
    setup: once(waitingRunOfUser),
    request: (id: string) => ({ path: `/api/crew-runs/${id}` }),
    expect: OWNER_APPROVER_OR_ADMIN_200,
  },
  {
    method: 'POST',
    path: '/api/crew-runs/{correlation_id}/cancel',
    fresh: true,
    setup: pendingRunOfUser,
    request: (id: string) => ({ path: `/api/crew-runs/${id}/cancel`, body: {} }),
    observe: (id: string) => readAsAdmin(`/api/crew-runs/${id}`),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    method: 'POST',
    path: '/api/crew-runs/{correlation_id}/retry',
    fresh: true,
    setup: cancelledRunOfUser,
    request: (id: string) => ({ path: `/api/crew-runs/${id}/retry` }),
    observe: (id: string) => readAsAdmin(`/api/events/${id}?start=0`),
    expect: OWNER_OR_ADMIN_202,
  },
  {
    // A new run, the caller's: the old one (observed) stays exactly as it was.
    method: 'POST',
    path: '/api/crew-runs/{correlation_id}/rerun',
    setup: once(cancelledRunWithStepOfUser),
    request: (id: string) => ({ path: `/api/crew-runs/${id}/rerun`, body: { from_step: 'only' } }),
    observe: (id: string) => readAsAdmin(`/api/crew-runs/${id}`),
    expect: OWNER_OR_ADMIN_202,
    changes: '- - - n - - n n - n - n -',
  },
  {
    // Any user, over their own runs (by principal); an admin over everyone's. Only the row's
    // template: no other run is touched.
    method: 'POST',
    path: '/api/crew-runs/cancel',
    fresh: true,
    setup: pendingRunOfUserByTemplate,
    request: (run: { templateId: string }) => ({
      path: '/api/crew-runs/cancel',
      body: { template_id: run.templateId },
    }),
    observe: (run: { id: string }) => readAsAdmin(`/api/crew-runs/${run.id}`),
    expect: ANY_USER_200,
    changes: '- - - y n n y y n y n y n',
  },
  {
    // A person with the step's role (approver), with a Bearer session, who did not start the run.
    method: 'POST',
    path: '/api/crew-runs/{correlation_id}/steps/{step_id}/decision',
    fresh: true,
    setup: waitingRunOfUser,
    request: (id: string) => ({ path: `/api/crew-runs/${id}/steps/gate/decision`, body: { approve: false } }),
    observe: (id: string) => readAsAdmin(`/api/events/${id}?start=0`),
    expect: '401 401 401 403 403 200 403 403 403 403 403 403 403',
  },
  {
    // The usual check order (401 → 403 → 422 → 404 → 409): the session and "some role" before the body (422), the run (404), the step.
    method: 'POST',
    path: '/api/crew-runs/{correlation_id}/steps/{step_id}/decision',
    variant: 'invalid body',
    setup: once(waitingRunOfUser),
    request: (id: string) => ({ path: `/api/crew-runs/${id}/steps/gate/decision`, body: { approve: 'perhaps' } }),
    observe: (id: string) => readAsAdmin(`/api/events/${id}?start=0`),
    expect: '401 401 401 403 403 422 422 403 403 403 403 403 403',
  },
  {
    // Only a caller holding a role learns that no such run exists.
    method: 'POST',
    path: '/api/crew-runs/{correlation_id}/steps/{step_id}/decision',
    variant: 'unknown run',
    request: () => ({ path: `/api/crew-runs/${randomUUID()}/steps/gate/decision`, body: { approve: false } }),
    expect: '401 401 401 403 403 404 404 403 403 403 403 403 403',
  },
  {
    // Of a run, a caller learns of its steps only with the role of one of its approval steps.
    method: 'POST',
    path: '/api/crew-runs/{correlation_id}/steps/{step_id}/decision',
    variant: 'unknown step',
    setup: once(waitingRunOfUser),
    request: (id: string) => ({ path: `/api/crew-runs/${id}/steps/nope/decision`, body: { approve: false } }),
    observe: (id: string) => readAsAdmin(`/api/events/${id}?start=0`),
    expect: '401 401 401 403 403 404 403 403 403 403 403 403 403',
  },
  {
    method: 'GET',
    path: '/api/events/{correlation_id}',
    setup: sharedRun,
    request: (id: string) => ({ path: `/api/events/${id}?start=0` }),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/events/{correlation_id}',
    variant: 'waiting at an approval step of role approver',
    setup: once(waitingRunOfUser),
    request: (id: string) => ({ path: `/api/events/${id}?start=0` }),
    expect: OWNER_APPROVER_OR_ADMIN_200,
  },

  // The SDK's crews: templates by name; runs and results as E2 and GET /api/crew-runs/{id}.
  { method: 'GET', path: '/api/crews/types', request: () => ({ path: '/api/crews/types' }), expect: ANY_USER_200 },
  {
    method: 'POST',
    path: '/api/crews/run',
    setup: crewTypeName,
    request: (name: string) => ({ path: '/api/crews/run', body: { crew_type: name, task_input: { who: 'matrix' } } }),
    expect: '401 401 401 202 202 202 202 202 202 202 202 202 202',
  },
  {
    method: 'GET',
    path: '/api/crews/results/{correlation_id}',
    setup: sharedRun,
    request: (id: string) => ({ path: `/api/crews/results/${id}` }),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/crews/results/{correlation_id}',
    variant: 'waiting at an approval step of role approver',
    setup: once(waitingRunOfUser),
    request: (id: string) => ({ path: `/api/crews/results/${id}` }),
    expect: OWNER_APPROVER_OR_ADMIN_200,
  },

  // People in the loop: any authenticated caller (the answers differ per caller).
  { method: 'GET', path: '/api/me', request: () => ({ path: '/api/me' }), expect: ANY_USER_200 },
  {
    method: 'GET',
    path: '/api/approvals',
    request: () => ({ path: '/api/approvals?limit=5' }),
    expect: ANY_USER_200,
  },

  // Data products: any user lists, admins create and delete.
  {
    method: 'GET',
    path: '/api/dataproduct',
    request: () => ({ path: '/api/dataproduct?limit=5' }),
    expect: ANY_USER_200,
  },
  {
    method: 'POST',
    path: '/api/dataproduct',
    request: () => ({
      path: '/api/dataproduct',
      body: { name: slug('authz-product'), role_name: 'authz', query: 'SELECT 1 FROM authz.core.orders' },
    }),
    expect: ADMIN_201,
  },
  {
    method: 'DELETE',
    path: '/api/dataproduct/{dataproduct_id}',
    fresh: true,
    setup: dataProduct,
    request: (id: string) => ({ path: `/api/dataproduct/${id}` }),
    observe: listedProduct,
    expect: ADMIN_204,
  },

  // Pre-shared keys.
  {
    method: 'POST',
    path: '/api/dataproduct/{dataproduct_id}/psk',
    request: () => ({ path: '/api/dataproduct/default/psk', body: { description: 'matrix', validity_days: 1 } }),
    expect: ANY_USER_201,
  },
  {
    method: 'GET',
    path: '/api/dataproduct/psk',
    setup: sharedKey,
    request: () => ({ path: '/api/dataproduct/psk?include_deleted=false&limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (psk: string, k) => k.psk === psk, expect: LISTS_OWNERS },
  },
  {
    method: 'GET',
    path: '/api/dataproduct/psk',
    variant: 'made with the bootstrap key',
    setup: sharedBootstrapKey,
    request: () => ({ path: '/api/dataproduct/psk?include_deleted=false&limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (psk: string, k) => k.psk === psk, expect: LISTS_BOOTSTRAPS },
  },
  {
    method: 'DELETE',
    path: '/api/dataproduct/psk/{psk_id}',
    fresh: true,
    setup: ownedKey,
    request: (id: string) => ({ path: `/api/dataproduct/psk/${id}` }),
    observe: ownKey,
    expect: OWNER_OR_ADMIN_204,
  },
  {
    method: 'POST',
    path: '/api/dataproduct/psk/{psk_id}/extend',
    fresh: true,
    setup: ownedKey,
    request: (id: string) => ({ path: `/api/dataproduct/psk/${id}/extend`, body: { validity_days: 1 } }),
    observe: ownKey,
    expect: OWNER_OR_ADMIN_200,
  },
  {
    // A key made with the bootstrap key: only admins (its creator "admin" is no name to match).
    method: 'DELETE',
    path: '/api/dataproduct/psk/{psk_id}',
    variant: 'made with the bootstrap key',
    fresh: true,
    setup: bootstrapKey,
    request: (id: string) => ({ path: `/api/dataproduct/psk/${id}` }),
    observe: anyKey,
    expect: ADMIN_204,
  },
  {
    method: 'POST',
    path: '/api/dataproduct/psk/{psk_id}/extend',
    variant: 'made with the bootstrap key',
    fresh: true,
    setup: bootstrapKey,
    request: (id: string) => ({ path: `/api/dataproduct/psk/${id}/extend`, body: { validity_days: 1 } }),
    observe: anyKey,
    expect: ADMIN_200,
  },

  // Data shares.
  {
    method: 'POST',
    path: '/api/data_shares',
    request: () => ({ path: '/api/data_shares', body: { name: slug('authz-share') } }),
    expect: ANY_USER_201,
  },
  {
    method: 'GET',
    path: '/api/data_shares',
    setup: sharedShare,
    request: () => ({ path: '/api/data_shares?limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (name: string, s) => s.name === name, expect: LISTS_OWNERS },
  },
  {
    method: 'GET',
    path: '/api/data_shares',
    variant: 'made with the bootstrap key',
    setup: sharedBootstrapShare,
    request: () => ({ path: '/api/data_shares?limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (name: string, s) => s.name === name, expect: LISTS_BOOTSTRAPS },
  },
  {
    method: 'GET',
    path: '/api/data_shares/{share_id}',
    setup: sharedShare,
    request: (name: string) => ({ path: `/api/data_shares/${name}` }),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    // E8 answers the secret: a token named "admin" must not get the bootstrap key's share.
    method: 'GET',
    path: '/api/data_shares/{share_id}',
    variant: 'made with the bootstrap key',
    setup: sharedBootstrapShare,
    request: (name: string) => ({ path: `/api/data_shares/${name}` }),
    expect: ADMIN_200,
  },
  {
    method: 'POST',
    path: '/api/data_shares/{share_id}/rotate-secret',
    fresh: true,
    setup: share,
    request: (name: string) => ({ path: `/api/data_shares/${name}/rotate-secret` }),
    observe: (name: string) => readAsAdmin(`/api/data_shares/${name}`),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    method: 'POST',
    path: '/api/data_shares/{share_id}/rotate-secret',
    variant: 'made with the bootstrap key',
    fresh: true,
    setup: bootstrapShare,
    request: (name: string) => ({ path: `/api/data_shares/${name}/rotate-secret` }),
    observe: (name: string) => readAsAdmin(`/api/data_shares/${name}`),
    expect: ADMIN_200,
  },
  {
    method: 'DELETE',
    path: '/api/data_shares/{share_id}',
    fresh: true,
    setup: share,
    request: (name: string) => ({ path: `/api/data_shares/${name}` }),
    observe: (name: string) => readAsAdmin(`/api/data_shares/${name}`),
    expect: OWNER_OR_ADMIN_204,
  },
  {
    method: 'GET',
    path: '/api/data_shares/{share_id}',
    variant: 'by id',
    setup: sharedShareById,
    request: (id: string) => ({ path: `/api/data_shares/${id}` }),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    method: 'DELETE',
    path: '/api/data_shares/{share_id}',
    variant: 'by id',
    fresh: true,
    setup: shareById,
    request: (id: string) => ({ path: `/api/data_shares/${id}` }),
    observe: (id: string) => readAsAdmin(`/api/data_shares/${id}`),
    expect: OWNER_OR_ADMIN_204,
  },

  // MCP servers.
  { method: 'POST', path: '/api/mcps', request: () => ({ path: '/api/mcps', body: MCP }), expect: ADMIN_201 },
  { method: 'GET', path: '/api/mcps', request: () => ({ path: '/api/mcps' }), expect: ANY_USER_200 },
  {
    method: 'GET',
    path: '/api/mcps/{server_id}',
    setup: sharedMcp,
    request: (id: string) => ({ path: `/api/mcps/${id}` }),
    expect: ANY_USER_200,
  },
  {
    method: 'PUT',
    path: '/api/mcps/{server_id}',
    fresh: true,
    setup: mcp,
    request: (id: string) => ({ path: `/api/mcps/${id}`, body: { ...MCP, enabled: false } }),
    observe: (id: string) => readAsAdmin(`/api/mcps/${id}`),
    expect: ADMIN_200,
  },
  {
    method: 'DELETE',
    path: '/api/mcps/{server_id}',
    fresh: true,
    setup: mcp,
    request: (id: string) => ({ path: `/api/mcps/${id}` }),
    observe: (id: string) => readAsAdmin(`/api/mcps/${id}`),
    expect: ADMIN_204,
  },

  // Crew schedules: admins declare, any user reads them; the runs they started are admins'.
  {
    method: 'POST',
    path: '/api/crew-schedules',
    setup: scheduleBody,
    request: (body: unknown) => ({ path: '/api/crew-schedules', body }),
    expect: ADMIN_201,
  },
  {
    method: 'GET',
    path: '/api/crew-schedules',
    request: () => ({ path: '/api/crew-schedules' }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/crew-schedules/{schedule_id}',
    setup: sharedSchedule,
    request: (id: string) => ({ path: `/api/crew-schedules/${id}` }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/crew-schedules/{schedule_id}/runs',
    setup: sharedSchedule,
    request: (id: string) => ({ path: `/api/crew-schedules/${id}/runs` }),
    // The runs carry values and errors that only their starter, admins and approvers may read.
    expect: ADMIN_200,
  },
  {
    method: 'PATCH',
    path: '/api/crew-schedules/{schedule_id}',
    fresh: true,
    setup: crewSchedule,
    request: (id: string) => ({ path: `/api/crew-schedules/${id}`, body: { enabled: false } }),
    observe: (id: string) => readAsAdmin(`/api/crew-schedules/${id}`),
    expect: ADMIN_200,
  },
  {
    method: 'DELETE',
    path: '/api/crew-schedules/{schedule_id}',
    fresh: true,
    setup: crewSchedule,
    request: (id: string) => ({ path: `/api/crew-schedules/${id}` }),
    observe: (id: string) => readAsAdmin(`/api/crew-schedules/${id}`),
    expect: ADMIN_204,
  },

  // Fine-tuning datasets.
  {
    method: 'POST',
    path: '/api/finetune/datasets',
    request: () => ({ path: '/api/finetune/datasets', body: { name: 'matrix' } }),
    expect: ANY_USER_201,
  },
  {
    method: 'GET',
    path: '/api/finetune/datasets',
    setup: sharedJob,
    request: () => ({ path: '/api/finetune/datasets?limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (id: string, j) => j.id === id, expect: LISTS_OWNERS },
  },
  {
    method: 'GET',
    path: '/api/finetune/datasets',
    variant: 'made with the bootstrap key',
    setup: sharedBootstrapJob,
    request: () => ({ path: '/api/finetune/datasets?limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (id: string, j) => j.id === id, expect: LISTS_BOOTSTRAPS },
  },
  {
    // docs/data-and-catalog.md does not say who may read one job; owner-or-admin, as for the list (own;
    // admin all) and for E11.
    method: 'GET',
    path: '/api/finetune/datasets/{job_id}',
    setup: sharedJob,
    request: (id: string) => ({ path: `/api/finetune/datasets/${id}` }),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/finetune/datasets/{job_id}',
    variant: 'made with the bootstrap key',
    setup: sharedBootstrapJob,
    request: (id: string) => ({ path: `/api/finetune/datasets/${id}` }),
    expect: ADMIN_200,
  },
  {
    // E11: the owner or an admin, else 403; answers 200 {"id", "deleted": true}.
    method: 'DELETE',
    path: '/api/finetune/datasets/{job_id}',
    fresh: true,
    setup: job,
    request: (id: string) => ({ path: `/api/finetune/datasets/${id}` }),
    observe: (id: string) => readAsAdmin(`/api/finetune/datasets/${id}`),
    expect: OWNER_OR_ADMIN_200,
  },

  // Migration: role admin throughout.
  {
    method: 'GET',
    path: '/api/migration/infrastructure-config',
    request: () => ({ path: '/api/migration/infrastructure-config' }),
    expect: ADMIN_200,
  },
  {
    // The configuration is one shared record that migration.test.ts checks from a clean
    // start, so this row never writes it: the body is invalid (copy_mappers ≥ 1). By the
    // contract's order (401 → 403 → 422) an authorized caller gets 422, anyone else 401/403.
    method: 'PUT',
    path: '/api/migration/infrastructure-config',
    request: () => ({ path: '/api/migration/infrastructure-config', body: { copy_mappers: 0, copy_bandwidth: 0 } }),
    expect: '401 401 401 403 403 403 422 403 403 422 403 403 403',
  },
  {
    method: 'PUT',
    path: '/api/migration/connections/{conn_id}',
    request: () => ({
      path: `/api/migration/connections/${slug('authz-conn')}`,
      body: { conn_type: 'ssh', host: 'edge.example.com', port: 22 },
    }),
    expect: ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/migration/connections',
    request: () => ({ path: '/api/migration/connections' }),
    expect: ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/migration/connections/{conn_id}',
    setup: sharedConnection,
    request: (id: string) => ({ path: `/api/migration/connections/${id}` }),
    expect: ADMIN_200,
  },
  {
    method: 'DELETE',
    path: '/api/migration/connections/{conn_id}',
    fresh: true,
    setup: connection,
    request: (id: string) => ({ path: `/api/migration/connections/${id}` }),
    observe: (id: string) => readAsAdmin(`/api/migration/connections/${id}`),
    expect: ADMIN_204,
  },
  {
    method: 'POST',
    path: '/api/migration/infrastructure-config/test-connection',
    setup: sharedConnection,
    request: (id: string) => ({
      path: '/api/migration/infrastructure-config/test-connection',
      body: { conn_id: id, conn_type: 'generic' },
    }),
    expect: ADMIN_200,
  },

  // Metastore and catalog: reads for any user, writes for admins; E5 for any user.
  {
    method: 'GET',
    path: '/api/metastore/catalogs',
    request: () => ({ path: '/api/metastore/catalogs' }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/catalogs/{catalog_name}/schemas',
    setup: sharedTable,
    request: (t) => ({ path: `/api/metastore/catalogs/${t.catalog}/schemas` }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables',
    setup: sharedTable,
    request: (t) => ({ path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables` }),
    expect: ANY_USER_200,
  },
  {
    method: 'PUT',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
    setup: sharedTable,
    request: (t) => ({
      path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${slug('t')}`,
      body: { description: 'matrix', columns: [{ name: 'id', type: 'bigint' }] },
    }),
    expect: ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
    setup: sharedTable,
    request: (t) => ({ path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}` }),
    expect: ANY_USER_200,
  },
  {
    method: 'POST',
    path: '/api/metastore/classify/{catalog}/{schema}/{table}/accept',
    setup: sharedTable,
    request: (t) => ({
      path: `/api/metastore/classify/${t.catalog}/${t.schema}/${t.table}/accept`,
      body: { table: { description: 'accepted' }, columns: [] },
    }),
    expect: ANY_USER_200,
  },
  { method: 'GET', path: '/api/catalog/tags', request: () => ({ path: '/api/catalog/tags' }), expect: ANY_USER_200 },
  {
    method: 'GET',
    path: '/api/catalog/glossary-terms',
    request: () => ({ path: '/api/catalog/glossary-terms' }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/catalog/domains',
    request: () => ({ path: '/api/catalog/domains' }),
    expect: ANY_USER_200,
  },
  {
    method: 'POST',
    path: '/api/catalog/domains',
    request: () => ({ path: '/api/catalog/domains', body: { name: slug('authz-domain') } }),
    expect: ADMIN_201,
  },

  // The NX1 SDK's metastore: reads and tags/domains for any user, DDL for admins.
  {
    method: 'GET',
    path: '/api/metastore/engines',
    request: () => ({ path: '/api/metastore/engines' }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/catalogs/details',
    request: () => ({ path: '/api/metastore/catalogs/details' }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/details',
    setup: sharedTable,
    request: (t) => ({ path: `/api/metastore/catalogs/${t.catalog}/schemas/details` }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/details',
    setup: sharedTable,
    request: (t) => ({ path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/details` }),
    expect: ANY_USER_200,
  },
  ...(['details', 'metadata', 'columns', 'preview'] as const).map((read): Row => ({
    method: 'GET',
    path: `/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}/${read}`,
    setup: sharedTable,
    request: (t) => ({ path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}/${read}` }),
    expect: ANY_USER_200,
  })),
  {
    method: 'POST',
    path: '/api/metastore/catalogs',
    request: () => ({ path: '/api/metastore/catalogs', body: { catalog: slug('authzddl'), catalog_type: 'memory' } }),
    expect: ADMIN_201,
  },
  {
    method: 'DELETE',
    path: '/api/metastore/catalogs/{catalog_name}',
    fresh: true,
    setup: () => emptyCatalog(),
    request: (catalog: string) => ({ path: `/api/metastore/catalogs/${catalog}` }),
    observe: (catalog: string) => readAsAdmin(`/api/metastore/catalogs/${catalog}/schemas`),
    expect: ADMIN_204,
  },
  {
    method: 'POST',
    path: '/api/metastore/catalogs/{catalog_name}/schemas',
    setup: once(() => emptyCatalog()),
    request: (catalog: string) => ({
      path: `/api/metastore/catalogs/${catalog}/schemas`,
      body: { schema_name: slug('s') },
    }),
    expect: ADMIN_201,
  },
  {
    method: 'DELETE',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}',
    fresh: true,
    setup: () => emptyCatalog(true),
    request: (catalog: string) => ({ path: `/api/metastore/catalogs/${catalog}/schemas/sales` }),
    observe: (catalog: string) => readAsAdmin(`/api/metastore/catalogs/${catalog}/schemas`),
    expect: ADMIN_204,
  },
  {
    method: 'POST',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables',
    setup: sharedTable,
    request: (t) => ({
      path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables`,
      body: { table_name: slug('t'), columns: [{ name: 'id', type: 'bigint' }] },
    }),
    expect: ADMIN_201,
  },
  {
    method: 'DELETE',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
    fresh: true,
    setup: metastoreTable,
    request: (t) => ({ path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}` }),
    observe: (t) => readAsAdmin(`/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}`),
    expect: ADMIN_204,
  },
  {
    method: 'PATCH',
    path: '/api/metastore/catalogs/{catalog_name}/schemas/{schema_name}/tables/{table_name}',
    fresh: true,
    setup: metastoreTable,
    request: (t) => ({
      path: `/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}`,
      body: { operations: [{ op: 'set_comment', comment: 'matrix' }] },
    }),
    observe: (t) => readAsAdmin(`/api/metastore/catalogs/${t.catalog}/schemas/${t.schema}/tables/${t.table}`),
    expect: ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/tags',
    request: () => ({ path: '/api/metastore/tags' }),
    expect: ANY_USER_200,
  },
  {
    method: 'GET',
    path: '/api/metastore/domains',
    request: () => ({ path: '/api/metastore/domains' }),
    expect: ANY_USER_200,
  },
  ...(['POST', 'DELETE'] as const).map((method): Row => ({
    method,
    path: '/api/metastore/tags/{tag}/tables/{table}',
    setup: sharedTable,
    request: (t) => ({ path: `/api/metastore/tags/authz-sdk-tag/tables/${tableRef(t)}` }),
    expect: ANY_USER_200,
  })),
  ...(['POST', 'DELETE'] as const).map((method): Row => ({
    method,
    path: '/api/metastore/domains/{domain}/tables/{table}',
    setup: async () => ({ table: await sharedTable(), domain: await sharedDomain() }),
    request: ({ table, domain }) => ({ path: `/api/metastore/domains/${domain}/tables/${tableRef(table)}` }),
    expect: ANY_USER_200,
  })),

  // Documents.
  {
    method: 'POST',
    path: '/api/documents',
    request: () => ({ path: '/api/documents', body: DOCUMENT }),
    expect: ANY_USER_201,
  },
  {
    // "owner or admin": a plain user lists their own documents.
    method: 'GET',
    path: '/api/documents',
    setup: sharedDocument,
    request: () => ({ path: '/api/documents?limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (id: string, d) => d.id === id, expect: LISTS_OWNERS },
  },
  {
    method: 'GET',
    path: '/api/documents',
    variant: 'made with the bootstrap key',
    setup: sharedBootstrapDocument,
    request: () => ({ path: '/api/documents?limit=1000' }),
    expect: ANY_USER_200,
    lists: { has: (id: string, d) => d.id === id, expect: LISTS_BOOTSTRAPS },
  },
  {
    method: 'GET',
    path: '/api/documents/{document_id}',
    setup: sharedDocument,
    request: (id: string) => ({ path: `/api/documents/${id}` }),
    expect: OWNER_OR_ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/documents/{document_id}',
    variant: 'made with the bootstrap key',
    setup: sharedBootstrapDocument,
    request: (id: string) => ({ path: `/api/documents/${id}` }),
    expect: ADMIN_200,
  },
  {
    // The ingestion pipeline: admin only, even for the owner.
    method: 'POST',
    path: '/api/documents/{document_id}/status',
    fresh: true,
    setup: document,
    request: (id: string) => ({ path: `/api/documents/${id}/status`, body: { status: 'extracting' } }),
    observe: (id: string) => readAsAdmin(`/api/documents/${id}`),
    expect: ADMIN_200,
  },
  {
    // The enrichment pipeline: admin only, even for the owner.
    method: 'PUT',
    path: '/api/documents/{document_id}/suggestions',
    fresh: true,
    setup: document,
    request: (id: string) => ({ path: `/api/documents/${id}/suggestions`, body: SUGGESTIONS }),
    observe: (id: string) => readAsAdmin(`/api/documents/${id}`),
    expect: ADMIN_200,
  },
  {
    // E6: owner or admin (403 otherwise), on a document awaiting review.
    method: 'PATCH',
    path: '/api/documents/{document_id}/enrichment',
    fresh: true,
    setup: documentAwaitingReview,
    request: (id: string) => ({ path: `/api/documents/${id}/enrichment`, body: { summary: 'confirmed' } }),
    observe: (id: string) => readAsAdmin(`/api/documents/${id}`),
    expect: OWNER_OR_ADMIN_200,
  },

  // Domain events.
  {
    method: 'GET',
    path: '/api/domain-events',
    request: () => ({ path: '/api/domain-events?limit=1' }),
    expect: ADMIN_200,
  },
  {
    method: 'GET',
    path: '/api/domain-events/{event_id}',
    setup: sharedEvent,
    request: (id: string) => ({ path: `/api/domain-events/${id}` }),
    expect: ADMIN_200,
  },

  // Webhooks: admin only.
  {
    method: 'POST',
    path: '/api/webhooks',
    request: () => ({ path: '/api/webhooks', body: WEBHOOK }),
    expect: ADMIN_201,
  },
  { method: 'GET', path: '/api/webhooks', request: () => ({ path: '/api/webhooks' }), expect: ADMIN_200 },
  {
    method: 'GET',
    path: '/api/webhooks/{webhook_id}',
    setup: sharedWebhook,
    request: (id: string) => ({ path: `/api/webhooks/${id}` }),
    expect: ADMIN_200,
  },
  {
    method: 'PATCH',
    path: '/api/webhooks/{webhook_id}',
    fresh: true,
    setup: webhook,
    request: (id: string) => ({ path: `/api/webhooks/${id}`, body: { description: `patched ${randomUUID()}` } }),
    observe: (id: string) => readAsAdmin(`/api/webhooks/${id}`),
    expect: ADMIN_200,
  },
  {
    method: 'DELETE',
    path: '/api/webhooks/{webhook_id}',
    fresh: true,
    setup: webhook,
    request: (id: string) => ({ path: `/api/webhooks/${id}` }),
    observe: (id: string) => readAsAdmin(`/api/webhooks/${id}`),
    expect: ADMIN_204,
  },
  {
    method: 'POST',
    path: '/api/webhooks/{webhook_id}/rotate-secret',
    fresh: true,
    setup: webhook,
    request: (id: string) => ({ path: `/api/webhooks/${id}/rotate-secret` }),
    observe: (id: string) => readAsAdmin(`/api/webhooks/${id}`),
    expect: ADMIN_200,
  },
  {
    method: 'POST',
    path: '/api/webhooks/{webhook_id}/test',
    fresh: true,
    setup: webhook,
    request: (id: string) => ({ path: `/api/webhooks/${id}/test` }),
    observe: deliveryCount,
    expect: '401 401 401 403 403 403 202 403 403 202 403 403 403',
  },
  {
    method: 'GET',
    path: '/api/webhooks/{webhook_id}/deliveries',
    setup: sharedWebhookDelivery,
    request: (w: { id: string }) => ({ path: `/api/webhooks/${w.id}/deliveries` }),
    expect: ADMIN_200,
  },
  {
    // The delivery's worker moves it on meanwhile: what the call changes is not observed here
    // (test/integration/events/webhooks-delivery.test.ts checks redelivery).
    method: 'POST',
    path: '/api/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
    fresh: true,
    setup: webhookDelivery,
    request: (w: { id: string; delivery: string }) => ({
      path: `/api/webhooks/${w.id}/deliveries/${w.delivery}/redeliver`,
    }),
    expect: '401 401 401 403 403 403 202 403 403 202 403 403 403',
  },

  // Suggested questions.
  {
    method: 'GET',
    path: '/api/query/suggest/{domain}',
    setup: sharedDomain,
    request: (domain: string) => ({ path: `/api/query/suggest/${domain}` }),
    expect: ANY_USER_200,
  },
  {
    method: 'POST',
    path: '/api/query/suggest',
    setup: sharedDomain,
    request: (domain: string) => ({ path: '/api/query/suggest', body: { domain } }),
    expect: ANY_USER_200,
  },
  {
    method: 'POST',
    path: '/api/query/ask',
    setup: sharedAskDomain,
    request: (domain: string) => ({ path: '/api/query/ask', body: { domain, prompt: 'How many orders are there?' } }),
    expect: ANY_USER_200,
  },
];

/** Per caller, whether the row's resource must be in the list (`lists` rows only). */
function listed(row: Row): Record<Caller, boolean | undefined> {
  return marked(row, row.lists!.expect, 'lists', (status) => status === 200);
}

/** Per caller, whether an allowed call must change the row's resource (`changes` rows only). */
function changed(row: Row): Record<Caller, boolean | undefined> {
  return marked(row, row.changes!, 'changes', (status) => status >= 200 && status < 300);
}

/** `y` / `n` per cell whose status `takes`, `-` for the others: true / false / undefined per caller. */
function marked(
  row: Row,
  text: string,
  what: string,
  takes: (status: number) => boolean,
): Record<Caller, boolean | undefined> {
  const marks = text.trim().split(/\s+/);
  const statuses = cells(row);
  if (
    marks.length !== CALLERS.length ||
    CALLERS.some((c, i) => !(takes(statuses[c]) ? ['y', 'n'] : ['-']).includes(marks[i] ?? ''))
  )
    throw new Error(`${rowName(row)}: ${what} needs y/n per cell it applies to and - otherwise, got "${text}"`);
  return Object.fromEntries(CALLERS.map((c, i) => [c, marks[i] === '-' ? undefined : marks[i] === 'y'])) as Record<
    Caller,
    boolean | undefined
  >;
}

const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
const rowName = (row: Row) => `${routeKey(row.method, row.path)}${row.variant ? ` [${row.variant}]` : ''}`;

/** The row's expected status per caller, parsed from its `expect` string. */
function cells(row: Row): Record<Caller, number> {
  const statuses = row.expect.trim().split(/\s+/).map(Number);
  if (statuses.length !== CALLERS.length || statuses.some((s) => !Number.isInteger(s)))
    throw new Error(`${rowName(row)}: expect needs ${CALLERS.length} statuses, got "${row.expect}"`);
  return Object.fromEntries(CALLERS.map((c, i) => [c, statuses[i]])) as Record<Caller, number>;
}

/** Cells that made their call (and had an answer), whatever its checks found. */
let cellCalls = 0;

describe('authorization matrix', { timeout: HANG_GUARD_MS }, () => {
  it('has a row for every endpoint that /openapi.json lists, and no row for anything else', async () => {
    const res = await api<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json');
    expect(res.status).toBe(200);
    const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
    const served = Object.entries(res.body.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((m) => routeKey(m, path)),
    );
    const rows = new Set(ROWS.map((r) => routeKey(r.method, r.path)));
    expect(
      served.filter((k) => !rows.has(k)),
      'endpoints without a row',
    ).toEqual([]);
    expect(
      [...rows].filter((k) => !served.includes(k)),
      'rows for endpoints not served',
    ).toEqual([]);
    // Every row parses to a full set of cells (cells and listed throw on a malformed row).
    for (const row of ROWS) expect(() => cells(row), rowName(row)).not.toThrow();
    for (const row of ROWS.filter((r) => r.lists)) expect(() => listed(row), rowName(row)).not.toThrow();
    for (const row of ROWS.filter((r) => r.changes)) expect(() => changed(row), rowName(row)).not.toThrow();
  });

  it('the identity columns are shown under the names they claim', async () => {
    // So that sameName / sameSubject / nameAdmin test what they say: the name is what differs.
    const shownAs = async (who: Auth) =>
      (await must(post(`/api/decisions/${slug('authz')}/limits/versions`, who, { content: 1 }), 201, 'version'))
        .created_by;
    expect(await shownAs(auth.user)).toBe(NAMES.user);
    expect(await shownAs(auth.sameName)).toBe(NAMES.user);
    expect(await shownAs(auth.sameSubject)).toBe(SAME_SUBJECT_EMAIL);
    expect(await shownAs(auth.nameAdmin)).toBe('admin');
    expect(await shownAs(approverAlias)).toBe(`Authz-Approver-${run}`);
    expect(await shownAs(approverNamesake)).toBe(NAMES.approver);
  });

  it('row names are unique', () => {
    const names = ROWS.map(rowName);
    expect(new Set(names).size).toBe(names.length);
  });

  for (const row of ROWS) {
    const expected = cells(row);
    const sees = row.lists && listed(row);
    const reaches = row.changes ? changed(row) : undefined;
    // Refused calls (401/403) must not change anything (`observe` checks that), so they share
    // one resource per row; calls that are allowed to change state get a fresh one each.
    const shared = row.setup && (row.fresh ? once(row.setup) : row.setup);
    // ... and, in a `fresh` row (no allowed call touches that resource), one reading of it
    // before any refused call, which each refused call must leave it exactly as.
    const pristine = row.fresh && row.observe ? once(async () => row.observe!(await shared!())) : undefined;
    describe.concurrent(rowName(row), () => {
      for (const caller of CALLERS) {
        it(`${caller} → ${expected[caller]}`, async ({ expect }) => {
          const status = expected[caller];
          const refused = status === 401 || status === 403;
          const state = row.fresh && !refused ? await row.setup!() : await shared?.();
          const { path, body } = row.request(state);
          const before = refused && pristine ? await pristine() : await row.observe?.(state);
          const res = await api(path, { method: row.method, ...auth[caller], body });
          cellCalls++;
          expect(res.status, `${row.method} ${path} as ${caller}: ${res.text.slice(0, 300)}`).toBe(status);
          if (status === 422) {
            expect(res.body).toEqual({ detail: expect.any(Array) });
            expect(res.body.detail.length).toBeGreaterThan(0);
          } else if (status >= 400) {
            expect(res.body).toEqual({ error: expect.any(String), code: status });
            expect(res.body.error.length).toBeGreaterThan(0);
            if (status === 401) expect(res.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
          } else if (status === 204) {
            expect(res.text).toBe('');
          }
          if (sees && res.status === 200) {
            const items = await everyItem(path, auth[caller], res);
            expect(
              items.some((item) => row.lists!.has(state, item)),
              `${path} as ${caller}: the row's resource ${sees[caller] ? 'missing from' : 'shown in'} the list`,
            ).toBe(sees[caller]);
          }
          if (row.observe) {
            const after = await row.observe(state);
            if (res.status === 401 || res.status === 403)
              expect(after, 'a refused call changed the resource').toEqual(before);
            else if (res.status < 300 && reaches?.[caller] === false)
              expect(after, 'an allowed call changed a resource it does not reach').toEqual(before);
            else if (res.status < 300) expect(after, 'an allowed call left the resource as it was').not.toEqual(before);
          }
        });
      }
    });
  }

  const CELLS = ROWS.length * CALLERS.length;
  it(`made the call of every one of the ${CELLS} cells`, () => {
    expect(cellCalls).toBe(CELLS);
  });
});
