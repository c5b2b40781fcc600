import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { physicalTableName, TABLES } from '../../../infra/tables.js';
import { eventually, NotWithin, notYet } from '../../support/eventually.js';
import {
  callPlatform,
  commandLineOf,
  dynamoDbPid,
  listAllOf,
  type LocalProcess,
  localProcessScratch,
  type PlatformCall,
  processAlive,
  waitForDeath,
} from '../../support/local-process.js';
import type { Envelope } from '../event-feed.js';

/**
 * Durability of the domain events and their webhook deliveries (docs/events-and-webhooks.md) on the
 * local platform (`npm start`, file-backed DynamoDB Local under DPM_DATA_DIR): writers make
 * changes under load while a webhook receiver here takes every event, the platform is
 * killed with SIGKILL while writes and deliveries are in flight, and after a restart on the
 * same data directory
 * - every committed change (what reads back after the restart, which includes every
 *   acknowledged write) has exactly one event in the feed, and its subject's sequence is
 *   1, 2, ... without gaps; no event exists for a change that was not committed;
 * - every event of those subjects reaches the receiver at least once, signed (Standard
 *   Webhooks), and deduplicated on `webhook-id` the receiver has exactly the feed's events,
 *   each subject's first arrivals in sequence order. Duplicates are allowed (and logged).
 * Two kills: of the whole process group, then of the Node process alone (DynamoDB Local, in
 * a group of its own, exits with it either way), as in durability.test.ts.
 */

const ADMIN_PSK = 'events-durability-admin-key-0123456789abcdef';
const WRITERS = 6;
/** Acknowledged writes (creations and transitions) before each kill. */
const MIN_ACKED = 60;
const WORKSPACE = 'events-durability';
const DECISION_KEYS = ['alpha', 'beta', 'gamma'];
/** Appended to an MCP server's name by its update: what tells after the restart that the update committed. */
const UPDATED = ' (updated)';
/**
 * How long the pipeline may take after a restart to record and deliver the backlog (an
 * attempt cut short by the kill is made again at once: the restart lets go of its lease).
 */
const CONVERGE_MS = 60_000;

const CREATED = 'dpm.decision.version.created';
const SUBMITTED = 'dpm.decision.version.submitted';
const MCP_CREATED = 'dpm.mcp.server.created';
const MCP_UPDATED = 'dpm.mcp.server.updated';

const { dataDir, logFile, started, spawn, printLogOnFailure, lockPid } = localProcessScratch('dpm-events-durability-');

const PLATFORM_ENV = {
  STAGE: 'evdurable',
  DPM_ADMIN_PSK: ADMIN_PSK,
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  WEBHOOK_RETRY_SCHEDULE: '1,1,2,2,5',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

async function start(): Promise<LocalProcess> {
  const p = spawn({ env: PLATFORM_ENV });
  await p.waitUntilReady(60_000);
  return p;
}

/** A call with the admin key unless `options` give another key (given up after 20 s). */
const call = <T = any>(base: string, path: string, options: PlatformCall = {}) =>
  callPlatform<T>(base, path, { ...options, psk: options.psk ?? ADMIN_PSK, timeoutMs: 20_000 });

/** Every item of a list endpoint, read with the admin key. */
const listAll = <T>(base: string, path: string) => listAllOf<T>(base, path, { psk: ADMIN_PSK, timeoutMs: 20_000 });

/** Runs `fn` over `items`, `limit` at a time. */
async function inParallel<T>(items: Iterable<T>, fn: (item: T) => Promise<void>, limit = WRITERS): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: limit }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------
// The webhook receiver

/** One POST the receiver got. */
interface Received {
  /** Arrival order (across the whole test). */
  readonly n: number;
  readonly webhookId: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly body: string;
  /** The envelope, parsed (undefined if the body is not JSON). */
  readonly event: Envelope | undefined;
  /** Whether the signature verified with the endpoint's secret (undefined: arrived before the secret was known). */
  valid: boolean | undefined;
}

/**
 * A webhook receiver on loopback (node:http) as a consumer would write one: verifies the
 * Standard Webhooks signature with the `standardwebhooks` package, records every request
 * (duplicates included) and answers 200, or 400 to a bad signature. Some answers are slow
 * (50-200 ms), so that attempts are in flight when the platform is killed.
 */
class Receiver {
  readonly received: Received[] = [];
  /** The endpoint's secret, once its creation answered. */
  secret: string | undefined;
  /** Requests received and not yet answered. */
  open = 0;
  private server: Server | undefined;

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      req.on('error', () => undefined);
      res.on('error', () => undefined);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const n = this.received.length;
        const body = Buffer.concat(chunks).toString('utf8');
        let event: Envelope | undefined;
        try {
          event = JSON.parse(body) as Envelope;
        } catch {
          event = undefined;
        }
        const hook: Received = {
          n,
          webhookId: header(req.headers, 'webhook-id'),
          timestamp: header(req.headers, 'webhook-timestamp'),
          signature: header(req.headers, 'webhook-signature'),
          body,
          event,
          valid: this.secret === undefined ? undefined : verifies(verifiable(req.headers, body), this.secret),
        };
        this.received.push(hook);
        this.open++;
        // One request in four is answered after 50-200 ms.
        const delay = n % 4 === 1 ? 50 + ((n * 37) % 151) : 0;
        setTimeout(() => {
          this.open--;
          if (!res.destroyed) res.writeHead(hook.valid === false ? 400 : 200).end();
        }, delay);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}${path}`;
  }

  /** The ids received so far, deduplicated. */
  distinctIds(): Set<string> {
    return new Set(this.received.map((r) => r.webhookId));
  }
}

const header = (headers: IncomingHttpHeaders, name: string) => String(headers[name] ?? '');

/** What `Webhook.verify` takes. */
const verifiable = (headers: IncomingHttpHeaders, body: string) => ({
  body,
  headers: {
    'webhook-id': header(headers, 'webhook-id'),
    'webhook-timestamp': header(headers, 'webhook-timestamp'),
    'webhook-signature': header(headers, 'webhook-signature'),
  },
});

function verifies({ body, headers }: ReturnType<typeof verifiable>, secret: string): boolean {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

const receiver = new Receiver();
/** The webhook endpoint that sends to the receiver. */
let endpointId = '';
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

// ---------------------------------------------------------------------------------------
// The writers

type Json = Record<string, any>;

/** What the writers were told. */
interface Ledger {
  /** `key/version` → the created VersionDetail. */
  versions: Map<string, Json>;
  /** `key/version` of acknowledged submissions. */
  submitted: Set<string>;
  /** id → the created McpServer. */
  mcps: Map<string, Json>;
  /** ids of acknowledged updates. */
  updated: Set<string>;
  /** Requests that never got an answer (the kill). */
  unanswered: number;
  /** Answers that were not the expected 2xx: each one is a failure. */
  unexpected: string[];
}

const newLedger = (): Ledger => ({
  versions: new Map(),
  submitted: new Set(),
  mcps: new Map(),
  updated: new Set(),
  unanswered: 0,
  unexpected: [],
});

const acknowledged = (l: Ledger) => l.versions.size + l.submitted.size + l.mcps.size + l.updated.size;

/**
 * Writers that loop until stopped, each round one decision version (then, mostly, its
 * submission) or one MCP server (then, every other time, its update): subjects with one
 * event and subjects with two. A request that fails without an answer ends its writer.
 */
function startWriters(base: string, ledger: Ledger, round: string) {
  let stopped = false;
  let inFlight = 0;

  /** One request; null when it got no answer, undefined when the answer was not `expected`. */
  const send = async (what: string, path: string, options: PlatformCall, expected: number) => {
    inFlight++;
    try {
      const res = await call(base, path, options);
      if (res.status !== expected) ledger.unexpected.push(`${what}: ${res.status} ${res.text}`);
      return res.status === expected ? res : undefined;
    } catch {
      ledger.unanswered++;
      stopped = true;
      return null;
    } finally {
      inFlight--;
    }
  };

  const kinds = [
    async (w: number, n: number) => {
      const key = DECISION_KEYS[(w + n) % DECISION_KEYS.length]!;
      const base = `/api/decisions/${WORKSPACE}/${key}/versions`;
      const body = { content: { round, writer: w, n }, notes: `round ${round}` };
      const created = await send('create decision version', base, { method: 'POST', body }, 201);
      if (!created) return created !== null;
      const v = created.body.version as number;
      ledger.versions.set(`${key}/${v}`, created.body);
      if (n % 3 === 2) return true; // stays a draft: one event
      const submitted = await send('submit decision version', `${base}/${v}/submit`, { method: 'POST' }, 200);
      if (submitted) ledger.submitted.add(`${key}/${v}`);
      return submitted !== null;
    },
    async (w: number, n: number) => {
      const body = { name: `mcp ${round}-${w}-${n}`, command: 'npx', args: ['-y', `server-${n}`], env: { W: `${w}` } };
      const created = await send('create mcp', '/api/mcps', { method: 'POST', body }, 201);
      if (!created) return created !== null;
      const id = created.body.id as string;
      ledger.mcps.set(id, created.body);
      if (n % 2 === 1) return true; // never updated: one event
      const update = { ...body, name: `${body.name}${UPDATED}`, enabled: false };
      const updated = await send('update mcp', `/api/mcps/${id}`, { method: 'PUT', body: update }, 200);
      if (updated) ledger.updated.add(id);
      return updated !== null;
    },
  ];

  const loops = Array.from({ length: WRITERS }, async (_, w) => {
    for (let n = 0; !stopped; n++) {
      const ok = await kinds[(w + n) % kinds.length]!(w, n);
      if (!ok) return;
    }
  });
  return {
    get inFlight() {
      return inFlight;
    },
    done: () => Promise.all(loops),
    stop: () => {
      stopped = true;
    },
  };
}

/**
 * Lets the writers run until MIN_ACKED more writes are acknowledged and the receiver has
 * taken deliveries of this round, then kills (`kill`) at a moment when a delivery is being
 * answered (the receiver holds its body and has not answered yet), if one comes within 5 s,
 * while writes are in flight; waits for the writers to end.
 */
async function writeThenKill(p: LocalProcess, ledger: Ledger, round: string, kill: () => void) {
  const before = acknowledged(ledger);
  const receivedBefore = receiver.received.length;
  const writers = startWriters(p.baseUrl, ledger, round);
  const since = Date.now();
  const ready = () =>
    Date.now() - since >= 1_000 &&
    acknowledged(ledger) - before >= MIN_ACKED &&
    receiver.received.length > receivedBefore;
  while (!ready() && Date.now() - since < 30_000) {
    if (ledger.unexpected.length > 0 || !p.running) break;
    await sleep(10);
  }
  const waitOpen = Date.now();
  while (receiver.open === 0 && Date.now() - waitOpen < 5_000 && p.running) await sleep(1);
  const atKill = {
    writesInFlight: writers.inFlight,
    deliveriesBeingAnswered: receiver.open,
    acknowledged: acknowledged(ledger) - before,
    deliveriesThisRound: receiver.received.length - receivedBefore,
  };
  kill();
  const exit = await p.exited;
  writers.stop();
  await writers.done();
  console.log(`round ${round}: at the kill ${JSON.stringify(atKill)}; ${ledger.unanswered} unanswered in all`);
  expect(exit.signal, 'the platform died of the SIGKILL').toBe('SIGKILL');
  expect(ledger.unexpected, 'every answered write was a success').toEqual([]);
  // The kill hit writes in flight, after a real amount of acknowledged work and of deliveries.
  expect(atKill.writesInFlight).toBeGreaterThan(0);
  expect(atKill.acknowledged).toBeGreaterThanOrEqual(MIN_ACKED);
  expect(atKill.deliveriesThisRound).toBeGreaterThan(0);
  return atKill;
}

// ---------------------------------------------------------------------------------------
// What must be there after the restart

/**
 * The committed changes, from what reads back after the restart: subject → the types of
 * its events, in order. Checks on the way that every acknowledged write is among them
 * (a write in flight at the kill may or may not be).
 */
async function committedChanges(base: string, ledger: Ledger): Promise<Map<string, string[]>> {
  const expected = new Map<string, string[]>();
  const listed = new Set<string>();
  for (const key of DECISION_KEYS) {
    const res = await call<Json[]>(base, `/api/decisions/${WORKSPACE}/${key}/versions`);
    if (res.status === 404) continue;
    expect(res.status, `versions of ${key}: ${res.text}`).toBe(200);
    for (const v of res.body) {
      expect(['draft', 'submitted'], `${key} v${v.version}`).toContain(v.status);
      listed.add(`${key}/${v.version}`);
      expected.set(
        `decisions/${WORKSPACE}/${key}/versions/${v.version}`,
        v.status === 'submitted' ? [CREATED, SUBMITTED] : [CREATED],
      );
      if (ledger.submitted.has(`${key}/${v.version}`)) expect(v.status, `${key} v${v.version}`).toBe('submitted');
    }
  }
  for (const k of ledger.versions.keys()) expect(listed.has(k), `acknowledged version ${k} is listed`).toBe(true);

  const servers = new Map((await listAll<Json>(base, '/api/mcps')).map((s) => [s.id as string, s]));
  for (const [id, s] of servers) {
    const updated = (s.name as string).endsWith(UPDATED);
    expected.set(`mcps/${id}`, updated ? [MCP_CREATED, MCP_UPDATED] : [MCP_CREATED]);
  }
  for (const id of ledger.mcps.keys()) expect(servers.has(id), `acknowledged mcp ${id} is listed`).toBe(true);
  for (const id of ledger.updated) expect(servers.get(id)?.name, `acknowledged update of ${id}`).toMatch(/updated/);
  return expected;
}

/** Subjects of the changes the writers make. */
const ours = (subject: string) => subject.startsWith(`decisions/${WORKSPACE}/`) || subject.startsWith('mcps/');

/** The whole feed of our subjects (GET /api/domain-events, every page), by subject. */
async function feedBySubject(base: string): Promise<Map<string, Envelope[]>> {
  const by = new Map<string, Envelope[]>();
  for (const e of await listAll<Envelope>(base, '/api/domain-events')) {
    if (!ours(e.subject)) continue;
    by.set(e.subject, [...(by.get(e.subject) ?? []), e]);
  }
  return by;
}

/** What still differs from the end state (empty: converged). */
function differences(expected: Map<string, string[]>, feed: Map<string, Envelope[]>): string[] {
  const out: string[] = [];
  for (const [subject, types] of expected) {
    const got = (feed.get(subject) ?? []).map((e) => e.type);
    if (got.length !== types.length) out.push(`${subject}: feed has [${got}], expected [${types}]`);
  }
  for (const subject of feed.keys()) if (!expected.has(subject)) out.push(`${subject}: events for no committed change`);
  const delivered = receiver.distinctIds();
  for (const events of feed.values())
    for (const e of events) if (!delivered.has(e.id)) out.push(`${e.subject} #${e.sequence} (${e.id}): not delivered`);
  return out;
}

/**
 * Waits until the feed has every committed change's event and the receiver every event,
 * then checks it all exactly: the feed subject by subject, and the deliveries.
 */
async function expectEventsDelivered(base: string, ledger: Ledger, label: string): Promise<void> {
  const since = Date.now();
  const expected = await committedChanges(base, ledger);
  // Up to CONVERGE_MS for everything to arrive; if it does not, the checks below say what is missing.
  await eventually(
    async () => {
      const left = differences(expected, await feedBySubject(base));
      return left.length === 0 || notYet(left);
    },
    CONVERGE_MS - (Date.now() - since),
    `${label}: every event in the feed and delivered`,
    500,
  ).catch((err: unknown) => {
    if (!(err instanceof NotWithin)) throw err;
  });
  const convergedMs = Date.now() - since;
  // Late duplicates (a batch handed again) would show up by now.
  await sleep(2_000);

  // The feed, subject by subject: exactly one event per committed change, 1..n, and none else.
  const feed = new Map<string, Envelope[]>();
  await inParallel(expected.keys(), async (subject) => {
    const res = await call<Envelope[]>(base, `/api/domain-events?subject=${encodeURIComponent(subject)}&limit=1000`);
    expect(res.status, res.text).toBe(200);
    feed.set(subject, res.body);
  });
  const wholeFeed = await feedBySubject(base);
  expect(
    [...wholeFeed.keys()].filter((s) => !expected.has(s)),
    'no events about changes that were not committed',
  ).toEqual([]);
  const problems: string[] = [];
  for (const [subject, types] of expected) {
    const events = feed.get(subject)!;
    const got = events.map((e) => `${e.sequence}:${e.type}`);
    const want = types.map((t, i) => `${i + 1}:${t}`);
    if (JSON.stringify(got) !== JSON.stringify(want)) problems.push(`${subject}: [${got}] instead of [${want}]`);
    if ((wholeFeed.get(subject) ?? []).length !== events.length)
      problems.push(`${subject}: the unfiltered feed has ${(wholeFeed.get(subject) ?? []).length} events`);
  }
  const events = [...feed.values()].flat();
  const byId = new Map(events.map((e) => [e.id, e]));
  if (byId.size !== events.length) problems.push(`${events.length - byId.size} event ids repeated in the feed`);
  expect(problems, `${label}: the feed holds each committed change once (after ${convergedMs} ms)`).toEqual([]);

  // The deliveries: every one signed; deduplicated on webhook-id, exactly the feed's events.
  const secret = receiver.secret!;
  const hooks = receiver.received.filter((r) => r.event && ours(r.event.subject));
  for (const r of hooks) r.valid ??= verifies({ body: r.body, headers: headersOf(r) }, secret);
  expect(
    hooks.filter((r) => !r.valid).map((r) => r.webhookId),
    'every delivery carries a valid signature',
  ).toEqual([]);
  const bad = hooks.filter((r) => r.webhookId !== r.event!.id || !byId.has(r.webhookId));
  expect(
    bad.map((r) => `${r.webhookId} ${r.event!.subject}`),
    'each delivery is an event of the feed, under its id',
  ).toEqual([]);
  for (const r of hooks) expect(r.event, `delivery ${r.n} is the feed's envelope`).toEqual(byId.get(r.webhookId));
  const first = new Map<string, Received>();
  for (const r of hooks) if (!first.has(r.webhookId)) first.set(r.webhookId, r);
  const lost = events.filter((e) => !first.has(e.id));
  expect(
    lost.map((e) => `${e.subject} #${e.sequence} ${e.type} ${e.id}`),
    `${label}: every event reached the receiver (after ${convergedMs} ms)${lost.length ? await whyLost(base, lost) : ''}`,
  ).toEqual([]);

  // Per subject, first arrivals in sequence order.
  const arrivals = new Map<string, number[]>();
  for (const r of first.values()) {
    const e = r.event!;
    arrivals.set(e.subject, [...(arrivals.get(e.subject) ?? []), e.sequence]);
  }
  const disordered = [...arrivals].filter(([, seqs]) => seqs.some((s, i) => i > 0 && s < seqs[i - 1]!));
  expect(
    disordered.map(([s, seqs]) => `${s}: ${seqs}`),
    'deliveries about a subject arrive in order',
  ).toEqual([]);

  const duplicates = hooks.length - first.size;
  const repeated = new Map<string, number>();
  for (const r of hooks) repeated.set(r.webhookId, (repeated.get(r.webhookId) ?? 0) + 1);
  const twice = [...repeated].filter(([, c]) => c > 1);
  console.log(
    `${label}: ${expected.size} subjects, ${events.length} events, converged in ${convergedMs} ms; ` +
      `${hooks.length} deliveries, ${first.size} distinct, ${duplicates} duplicates` +
      (twice.length
        ? ` (${twice
            .slice(0, 10)
            .map(([id, c]) => `${byId.get(id)?.subject} #${byId.get(id)?.sequence} ×${c}`)
            .join(', ')}${twice.length > 10 ? ', ...' : ''})`
        : ''),
  );
}

/**
 * For the failure message: the lost events' deliveries as the API and as the deliveries
 * table has them (with the other open deliveries of their subjects, lease and attempt
 * message included), and what the platform logged about them or besides requests since its
 * last start.
 */
async function whyLost(base: string, lost: readonly Envelope[]): Promise<string> {
  const ids = new Set(lost.map((e) => e.id));
  const subjects = new Set(lost.map((e) => e.subject));
  const deliveries = (await listAll<Json>(base, `/api/webhooks/${endpointId}/deliveries`)).filter((d) =>
    ids.has(d.event_id),
  );
  let stored: unknown;
  try {
    const port = /-port (\d+)/.exec(commandLineOf(dynamoDbPid(dataDir)))?.[1];
    const db = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        region: 'us-east-1',
        endpoint: `http://127.0.0.1:${port}`,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    const items = (
      await db.send(new ScanCommand({ TableName: physicalTableName(PLATFORM_ENV.STAGE, TABLES.webhookDeliveries) }))
    ).Items;
    stored = (items ?? [])
      .filter((i) => subjects.has(i.subject) && (ids.has(i.event_id) || i.open === 'open'))
      .map((i) => ({
        subject: i.subject,
        sequence: i.sequence,
        event_type: i.event_type,
        status: i.status,
        open: i.open,
        attempts: i.attempts,
        series: i.series,
        attempt_message: i.attempt_message,
        lease_until: typeof i.lease_until === 'number' ? new Date(i.lease_until).toISOString() : i.lease_until,
        created_at: i.created_at,
        next_attempt_at: i.next_attempt_at,
      }));
    db.destroy();
  } catch (err) {
    stored = `not read: ${(err as Error).message}`;
  }
  const received = receiver.received
    .filter((r) => r.event && subjects.has(r.event.subject))
    .map((r) => `${r.event!.subject} #${r.event!.sequence} (arrival ${r.n})`);
  const words = [...ids, ...deliveries.map((d) => d.id as string)];
  const lines = readFileSync(logFile, 'utf8').split('\n');
  const about = lines.filter((l) => words.some((w) => l.includes(w)));
  const current = started
    .at(-1)!
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.includes('"message":"request"'));
  return (
    `\n  their deliveries (API): ${JSON.stringify(deliveries)}` +
    `\n  their deliveries and the open ones of their subjects (table): ${JSON.stringify(stored)}` +
    `\n  now: ${new Date().toISOString()}; the receiver got about these subjects: ${JSON.stringify(received)}` +
    `\n  log lines about them:\n${about.join('\n')}` +
    `\n  the current run's log other than requests:\n${current.slice(-30).join('\n')}\n`
  );
}

const headersOf = (r: Received) => ({
  'webhook-id': r.webhookId,
  'webhook-timestamp': r.timestamp,
  'webhook-signature': r.signature,
});

const errorLines = (p: LocalProcess) =>
  p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{"level":"ERROR"'));

// ---------------------------------------------------------------------------------------

describe('domain events and webhook deliveries across SIGKILL of the local platform (npm start)', () => {
  it('records each committed change once and delivers every event at least once after a kill -9', async () => {
    printLogOnFailure();
    const ledger = newLedger();

    const first = await start();
    const hook = await call(first.baseUrl, '/api/webhooks', {
      method: 'POST',
      body: { url: receiver.url('/hooks'), description: 'events durability' },
    });
    expect(hook.status, hook.text).toBe(201);
    receiver.secret = hook.body.secret as string;
    endpointId = hook.body.id as string;
    expect(receiver.secret).toMatch(/^whsec_/);

    // 1. Kill the whole process group: Node dies, and DynamoDB Local's JVM exits with it.
    const firstJava = dynamoDbPid(dataDir);
    expect(processAlive(firstJava)).toBe(true);
    await writeThenKill(first, ledger, 'a', () => first.killGroup('SIGKILL'));
    expect(await waitForDeath(firstJava, 10_000), 'the JVM exited with the Node process').toBe(true);

    const second = await start();
    expect(lockPid()).toBe(second.pid);
    await expectEventsDelivered(second.baseUrl, ledger, 'after the kill of the group');

    // 2. Kill the Node process alone: DynamoDB Local does not outlive it.
    const secondJava = dynamoDbPid(dataDir);
    await writeThenKill(second, ledger, 'b', () => second.killMain('SIGKILL'));
    expect(await waitForDeath(secondJava, 10_000), 'the JVM exited with its parent').toBe(true);
    const third = await start();
    await expectEventsDelivered(third.baseUrl, ledger, 'after the kill of the Node process');

    expect(errorLines(second).concat(errorLines(third)), 'no errors logged after the restarts').toEqual([]);
    third.killMain('SIGTERM');
    expect(await third.exited).toEqual({ code: 0, signal: null });
  }, 300_000);
});
