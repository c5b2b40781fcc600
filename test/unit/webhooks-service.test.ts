import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryMessage } from '../../functions/webhooks/delivery-queue.js';
import type { DeliveryRecord, Settlement } from '../../functions/webhooks/delivery-store.js';
import type { StoredEndpoint } from '../../functions/webhooks/endpoint-store.js';
import type { WebhookEndpoint } from '../../functions/webhooks/schemas.js';
import { PREVIOUS_SECRET_MS, WebhookService, type WebhookServiceDeps } from '../../functions/webhooks/service.js';
import { Conflict, NotFound, Unavailable } from '../../shared/errors.js';
import type { Change } from '../../shared/events/types.js';
import type { Sealed } from '../../shared/secrets.js';
import { rejection } from '../support/rejection.js';
import { adminCaller, invalidIssues, principalOf, unused } from './fakes.js';

/**
 * Webhook endpoints and deliveries (docs/events-and-webhooks.md) over in-memory stores, queue and secret
 * box: URL refusals (422, credentials never echoed), the secret shown only at creation and
 * rotation and stored sealed, what an update records, a crew run's own endpoint, test
 * pings and redeliveries, and what is left behind when the queue does not answer.
 */

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const SOURCE = 'dpm/test';
const HOOK = 'https://127.0.0.1:9/hook';
/** The URL rule of the fake: https anywhere, nothing else. */
const HTTPS_ONLY = 'only https URLs are allowed here';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Row {
  endpoint: WebhookEndpoint;
  principal: string;
  secret: Sealed;
  previous?: { sealed: Sealed; until: string };
  forRun: boolean;
  testSeq: number;
}

type Deps = Pick<WebhookServiceDeps, 'endpoints' | 'deliveries' | 'queue' | 'box'>;

function world() {
  const rows = new Map<string, Row>();
  const reads: string[] = [];
  const updates: { id: string; fields: unknown; wasEnabled: boolean; change: Change | undefined }[] = [];
  const rotations: { id: string; current: Sealed; secret: Sealed; previousUntil: string; at: string }[] = [];
  const lists: unknown[][] = [];
  const stored = (row: Row): StoredEndpoint => ({
    endpoint: row.endpoint,
    principal: row.principal,
    secret: row.secret,
    previousSecret: row.previous,
    failingSince: undefined,
    forRun: row.forRun,
    stoppedBefore: undefined,
  });
  const endpoints: WebhookServiceDeps['endpoints'] = {
    create: async (endpoint, principal, secret) => {
      rows.set(endpoint.id, { endpoint, principal, secret, forRun: false, testSeq: 0 });
    },
    get: async (id) => {
      reads.push(id);
      const row = rows.get(id);
      return row && stored(row);
    },
    list: async (kind, limit, cursor) => {
      lists.push([kind, limit, cursor]);
      return { items: [...rows.values()].map((r) => r.endpoint), nextCursor: 'next' };
    },
    enabled: unused,
    update: async (id, fields, wasEnabled, change) => {
      updates.push({ id, fields, wasEnabled, change });
      const row = rows.get(id);
      if (!row) return undefined;
      if (row.endpoint.enabled !== wasEnabled) return 'changed';
      row.endpoint = { ...row.endpoint, ...fields };
      return row.endpoint;
    },
    rotate: async (id, current, secret, previousUntil, at) => {
      rotations.push({ id, current, secret, previousUntil, at });
      const row = rows.get(id);
      if (!row) return undefined;
      if (row.secret.data !== current.data) return 'changed';
      row.previous = { sealed: current, until: previousUntil };
      row.secret = secret;
      row.endpoint = { ...row.endpoint, updated_at: at };
      return row.endpoint;
    },
    delete: async (id) => rows.delete(id),
    stopBefore: unused,
    nextTestSequence: async (id) => {
      const row = rows.get(id);
      return row && ++row.testSeq;
    },
    disable: unused,
    noteFailure: unused,
    noteSuccess: unused,
  };

  const deliveryRows = new Map<string, DeliveryRecord>();
  const removed: string[] = [];
  const settled: { d: DeliveryRecord; s: Settlement; attempted: unknown }[] = [];
  let redelivery: Awaited<ReturnType<WebhookServiceDeps['deliveries']['redeliver']>> = undefined;
  const deliveries: WebhookServiceDeps['deliveries'] = {
    create: async (d) => {
      deliveryRows.set(d.id, d);
      return { created: true, delivery: d };
    },
    get: unused,
    list: async (endpointId, status, limit, cursor) => {
      lists.push([endpointId, status, limit, cursor]);
      return { items: [...deliveryRows.values()].filter((d) => d.endpoint_id === endpointId), nextCursor: 'older' };
    },
    open: unused,
    releaseLease: unused,
    claim: unused,
    settle: async (d, s, attempted) => {
      settled.push({ d, s, attempted });
      return true;
    },
    redeliver: async () => redelivery,
    takeSlot: unused,
    releaseSlot: unused,
    releaseSlots: unused,
    park: unused,
    unpark: unused,
    wakeParked: unused,
    openOf: unused,
    remove: async (d) => {
      removed.push(d.id);
      deliveryRows.delete(d.id);
    },
    waitsInLine: unused,
    nextInLine: unused,
  };

  const sent: { message: DeliveryMessage; delaySeconds: number }[] = [];
  const queue: WebhookServiceDeps['queue'] = { send: async (messages) => void sent.push(...messages) };
  const sealedWith: { secret: string; context: string }[] = [];
  const box: WebhookServiceDeps['box'] = {
    seal: async (secret, context) => {
      sealedWith.push({ secret, context });
      return { v: 1, key: 'wrapped', iv: 'iv', tag: 'tag', data: `sealed-${sealedWith.length}` };
    },
  };
  const deps: Deps = { endpoints, deliveries, queue, box };
  const serviceWith = (over: Partial<Deps> = {}) =>
    new WebhookService({
      ...deps,
      ...over,
      urls: { refusal: (url) => (url.startsWith('https://') ? undefined : HTTPS_ONLY) },
      source: SOURCE,
    });
  return {
    ...deps,
    rows,
    reads,
    updates,
    rotations,
    lists,
    deliveryRows,
    removed,
    settled,
    sent,
    sealedWith,
    redeliverAnswers: (answer: typeof redelivery) => (redelivery = answer),
    serviceWith,
    service: serviceWith(),
  };
}

/** A world with one enabled endpoint made by dana. */
async function withEndpoint(over: { enabled?: boolean } = {}) {
  const w = world();
  const made = await w.service.create({ url: HOOK, enabled: over.enabled }, adminCaller('dana'));
  w.reads.length = 0;
  return { ...w, id: made.id, secret: made.secret };
}

const delivery = (over: Partial<DeliveryRecord> = {}): DeliveryRecord => ({
  id: 'd1',
  endpoint_id: 'ep',
  event_id: 'e1',
  event_type: 'dpm.psk.deleted',
  subject: 'psks/x',
  sequence: 1,
  body: '{"id":"e1"}',
  series: 1,
  status: 'pending',
  attempts: 0,
  last_response_status: null,
  last_error: null,
  last_attempt_at: null,
  next_attempt_at: iso(T0),
  duration_ms: null,
  created_at: iso(T0 - 60_000),
  attempt_message: undefined,
  ...over,
});

/** The fields of a delivery the contract answers (docs/events-and-webhooks.md). */
const DELIVERY_FIELDS = [
  'id',
  'event_id',
  'event_type',
  'status',
  'attempts',
  'last_response_status',
  'last_error',
  'last_attempt_at',
  'next_attempt_at',
  'duration_ms',
];

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('WebhookService.create', () => {
  it('answers the secret once and stores it only sealed, bound to the endpoint', async () => {
    const w = world();
    const out = await w.service.create(
      { url: HOOK, event_types: ['decision.*', 'crew.run.*', 'decision.*'], description: 'sync' },
      adminCaller('dana'),
    );
    expect(out).toEqual({
      id: expect.stringMatching(UUID),
      url: HOOK,
      event_types: ['decision.*', 'crew.run.*'],
      description: 'sync',
      enabled: true,
      disabled_reason: null,
      created_by: 'dana',
      created_at: iso(T0),
      updated_at: iso(T0),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(Buffer.from(out.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(w.sealedWith).toEqual([{ secret: out.secret, context: `webhook:${out.id}` }]);
    const row = w.rows.get(out.id)!;
    expect(row.principal).toBe(principalOf('dana'));
    expect(row.secret.data).toBe('sealed-1');
    expect(JSON.stringify(row)).not.toContain(out.secret);
  });

  it('defaults to every event type, no description, enabled', async () => {
    const w = world();
    const out = await w.service.create({ url: HOOK }, adminCaller());
    expect(out).toMatchObject({ event_types: ['*'], description: null, enabled: true });
    expect((await w.service.create({ url: HOOK, enabled: false }, adminCaller())).enabled).toBe(false);
  });

  it('refuses a URL the rules refuse (422 at body.url), echoing it without its credentials, storing nothing', async () => {
    const w = world();
    const url = 'http://ada:pw@localhost:9/x?token=t';
    expect(await invalidIssues(w.service.create({ url }, adminCaller()))).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'url'],
        msg: `Value error, ${HTTPS_ONLY}`,
        input: 'http://***@localhost:9/x?***',
        ctx: { error: HTTPS_ONLY },
      },
    ]);
    expect(w.rows.size).toBe(0);
    expect(w.sealedWith).toEqual([]);
  });
});

describe('WebhookService reads', () => {
  it('answers endpoints without any secret, lists by kind passing the cursor on, and 404s an unknown id', async () => {
    const w = await withEndpoint();
    const got = await w.service.get(w.id);
    expect(Object.keys(got)).toEqual([
      'id',
      'url',
      'event_types',
      'description',
      'enabled',
      'disabled_reason',
      'created_by',
      'created_at',
      'updated_at',
    ]);
    const page = await w.service.list('run', 7, 'c1');
    expect(page.nextCursor).toBe('next');
    expect(JSON.stringify(page.items)).not.toContain(w.secret);
    expect(w.lists).toEqual([['run', 7, 'c1']]);
    const missing = await rejection(w.service.get('nope'));
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing.message).toBe('No webhook nope');
  });
});

describe('WebhookService.update', () => {
  it('records disabling an enabled endpoint, and sets only the fields given', async () => {
    const w = await withEndpoint();
    vi.setSystemTime(T0 + 1000);
    const out = await w.service.update(w.id, { enabled: false }, adminCaller('erin'));
    expect(out).toMatchObject({ enabled: false, url: HOOK, updated_at: iso(T0 + 1000) });
    expect(w.updates).toEqual([
      {
        id: w.id,
        fields: { updated_at: iso(T0 + 1000), enabled: false },
        wasEnabled: true,
        change: { type: 'webhook.endpoint.disabled', actor: 'erin', at: iso(T0 + 1000) },
      },
    ]);
    // Disabling a disabled endpoint is no change of state: nothing recorded.
    await w.service.update(w.id, { enabled: false, description: null }, adminCaller());
    expect(w.updates[1]).toMatchObject({
      fields: { enabled: false, description: null },
      wasEnabled: false,
      change: undefined,
    });
  });

  it('clears the reason when enabling a disabled endpoint, recording no event', async () => {
    const w = await withEndpoint({ enabled: false });
    const out = await w.service.update(w.id, { enabled: true, event_types: ['psk.*', 'psk.*'] }, adminCaller());
    expect(out).toMatchObject({ enabled: true, disabled_reason: null, event_types: ['psk.*'] });
    expect(w.updates).toEqual([
      {
        id: w.id,
        fields: { updated_at: iso(T0), event_types: ['psk.*'], enabled: true, disabled_reason: null },
        wasEnabled: false,
        change: undefined,
      },
    ]);
  });

  it('refuses a URL before reading the endpoint', async () => {
    const w = await withEndpoint();
    expect(await invalidIssues(w.service.update(w.id, { url: 'ftp://127.0.0.1/x' }, adminCaller()))).toHaveLength(1);
    expect(w.reads).toEqual([]);
    expect(w.updates).toEqual([]);
  });

  it("keeps a crew run's own endpoint's URL and event types (409), but lets it be described or disabled", async () => {
    const w = await withEndpoint();
    w.rows.get(w.id)!.forRun = true;
    for (const req of [{ url: HOOK }, { event_types: ['*'] }]) {
      const refused = await rejection(w.service.update(w.id, req, adminCaller()));
      expect(refused).toBeInstanceOf(Conflict);
      expect(refused.message).toBe(`Webhook ${w.id} is a crew run's own: its URL and event types are the run's`);
    }
    expect(w.updates).toEqual([]);
    expect((await w.service.update(w.id, { description: 'run hook', enabled: false }, adminCaller())).enabled).toBe(
      false,
    );
  });

  it('tries again when the endpoint changed between read and write, then gives up (409); 404 when it went', async () => {
    const w = await withEndpoint();
    const service = w.serviceWith({ endpoints: { ...w.endpoints, update: async () => 'changed' } });
    const refused = await rejection(service.update(w.id, { description: 'x' }, adminCaller()));
    expect(refused).toBeInstanceOf(Conflict);
    expect(refused.message).toBe(`Webhook ${w.id} changed concurrently; try again`);
    expect(w.reads).toHaveLength(5);

    const gone = w.serviceWith({ endpoints: { ...w.endpoints, update: async () => undefined } });
    expect(await rejection(gone.update(w.id, { description: 'x' }, adminCaller()))).toBeInstanceOf(NotFound);
    expect(await rejection(w.service.update('nope', { description: 'x' }, adminCaller()))).toBeInstanceOf(NotFound);
  });
});

describe('WebhookService.delete and rotateSecret', () => {
  it('deletes, and answers 404 for an endpoint that is not there', async () => {
    const w = await withEndpoint();
    await w.service.delete(w.id);
    expect(w.rows.has(w.id)).toBe(false);
    expect(await rejection(w.service.delete(w.id))).toBeInstanceOf(NotFound);
  });

  it('answers a new secret, sealed for the endpoint; the old one keeps signing for a day', async () => {
    const w = await withEndpoint();
    const out = await w.service.rotateSecret(w.id);
    expect(out.secret).toMatch(/^whsec_/);
    expect(out.secret).not.toBe(w.secret);
    expect(out).toMatchObject({ id: w.id, url: HOOK, enabled: true });
    expect(w.sealedWith[1]).toEqual({ secret: out.secret, context: `webhook:${w.id}` });
    expect(w.rotations).toEqual([
      {
        id: w.id,
        current: expect.objectContaining({ data: 'sealed-1' }),
        secret: expect.objectContaining({ data: 'sealed-2' }),
        previousUntil: iso(T0 + PREVIOUS_SECRET_MS),
        at: iso(T0),
      },
    ]);
    expect(PREVIOUS_SECRET_MS).toBe(24 * 3600 * 1000);
  });

  it('rotates again from the secret now stored when another rotation got there first; 404 when it went', async () => {
    const w = await withEndpoint();
    const rotate = w.endpoints.rotate;
    let raced = false;
    const service = w.serviceWith({
      endpoints: {
        ...w.endpoints,
        rotate: async (...args) => {
          if (!raced) {
            raced = true;
            w.rows.get(w.id)!.secret = { v: 1, key: 'k', iv: 'i', tag: 't', data: 'by-another' };
          }
          return rotate(...args);
        },
      },
    });
    await service.rotateSecret(w.id);
    expect(w.rotations.map((r) => r.current.data)).toEqual(['sealed-1', 'by-another']);
    expect(w.rows.get(w.id)!.previous?.sealed.data).toBe('by-another');
    expect(await rejection(w.service.rotateSecret('nope'))).toBeInstanceOf(NotFound);
  });
});

describe('WebhookService.test', () => {
  it('queues a dpm.webhook.test event for this endpoint alone, its own sequence, no secret in it', async () => {
    const w = await withEndpoint();
    const first = await w.service.test(w.id, adminCaller('erin'));
    expect(Object.keys(first)).toEqual(DELIVERY_FIELDS);
    expect(first).toMatchObject({
      event_type: 'dpm.webhook.test',
      status: 'pending',
      attempts: 0,
      next_attempt_at: iso(T0),
    });
    const stored = w.deliveryRows.get(first.id)!;
    const event = JSON.parse(stored.body) as Record<string, unknown>;
    expect(event).toEqual({
      specversion: '1.0',
      id: first.event_id,
      source: SOURCE,
      type: 'dpm.webhook.test',
      subject: `webhooks/${w.id}/test`,
      time: iso(T0),
      datacontenttype: 'application/json',
      actor: 'erin',
      sequence: 1,
      data: await w.service.get(w.id),
    });
    expect(first.event_id).toMatch(UUID);
    expect(stored.body).not.toContain(w.secret);
    expect(w.sent).toEqual([
      { message: { endpoint_id: w.id, delivery_id: first.id, series: 0, attempt: 0, due: T0 }, delaySeconds: 0 },
    ]);
    const second = await w.service.test(w.id, adminCaller('erin'));
    expect(JSON.parse(w.deliveryRows.get(second.id)!.body).sequence).toBe(2);
  });

  it('refuses a disabled endpoint (409) and an unknown one (404) without making a delivery', async () => {
    const w = await withEndpoint({ enabled: false });
    const refused = await rejection(w.service.test(w.id, adminCaller()));
    expect(refused).toBeInstanceOf(Conflict);
    expect(refused.message).toBe(`Webhook ${w.id} is disabled: enable it first (PATCH enabled: true)`);
    expect(w.rows.get(w.id)!.testSeq).toBe(0);
    expect(await rejection(w.service.test('nope', adminCaller()))).toBeInstanceOf(NotFound);
    expect(w.deliveryRows.size).toBe(0);
  });

  it('leaves nothing behind when the queue does not answer', async () => {
    const w = await withEndpoint();
    const service = w.serviceWith({
      queue: {
        send: async () => {
          throw new Unavailable();
        },
      },
    });
    expect(await rejection(service.test(w.id, adminCaller()))).toBeInstanceOf(Unavailable);
    expect(w.removed).toHaveLength(1);
    expect(w.deliveryRows.size).toBe(0);
  });
});

describe('WebhookService deliveries', () => {
  it('lists an endpoint’s deliveries as the contract answers them, passing status and cursor on', async () => {
    const w = await withEndpoint();
    await w.service.test(w.id, adminCaller());
    const page = await w.service.deliveries(w.id, { status: 'pending', limit: 5, cursor: 'c1' });
    expect(page.nextCursor).toBe('older');
    expect(page.items).toHaveLength(1);
    expect(Object.keys(page.items[0]!)).toEqual(DELIVERY_FIELDS);
    expect(w.lists).toEqual([[w.id, 'pending', 5, 'c1']]);
    expect(await rejection(w.service.deliveries('nope', { limit: 5 }))).toBeInstanceOf(NotFound);
    expect(w.lists).toHaveLength(1);
  });

  it('queues a redelivery it started; answers one started meanwhile without queueing it again', async () => {
    const w = await withEndpoint();
    const next = delivery({ endpoint_id: w.id });
    w.redeliverAnswers({ started: true, delivery: next });
    expect(await w.service.redeliver(w.id, 'd1')).toEqual(
      Object.fromEntries(DELIVERY_FIELDS.map((f) => [f, next[f as keyof DeliveryRecord]])),
    );
    expect(w.sent).toEqual([
      { message: { endpoint_id: w.id, delivery_id: 'd1', series: 1, attempt: 0, due: T0 }, delaySeconds: 0 },
    ]);
    w.redeliverAnswers({ started: false, delivery: next });
    expect((await w.service.redeliver(w.id, 'd1')).id).toBe('d1');
    expect(w.sent).toHaveLength(1);
  });

  it('answers 409 for a disabled endpoint or a contended delivery, 404 for an unknown delivery', async () => {
    const disabled = await withEndpoint({ enabled: false });
    disabled.redeliverAnswers({ started: true, delivery: delivery() });
    expect(await rejection(disabled.service.redeliver(disabled.id, 'd1'))).toBeInstanceOf(Conflict);
    expect(disabled.sent).toEqual([]);

    const w = await withEndpoint();
    w.redeliverAnswers('contended');
    const contended = await rejection(w.service.redeliver(w.id, 'd1'));
    expect(contended).toBeInstanceOf(Conflict);
    expect(contended.message).toBe(`Delivery d1 of webhook ${w.id} changed concurrently; try again`);
    w.redeliverAnswers(undefined);
    const missing = await rejection(w.service.redeliver(w.id, 'd1'));
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing.message).toBe(`No delivery d1 of webhook ${w.id}`);
  });

  it('settles a redelivery the queue did not take as failed, saying why, and fails the request', async () => {
    const w = await withEndpoint();
    const next = delivery({ endpoint_id: w.id });
    w.redeliverAnswers({ started: true, delivery: next });
    const service = w.serviceWith({
      queue: {
        send: async () => {
          throw new Unavailable();
        },
      },
    });
    expect(await rejection(service.redeliver(w.id, 'd1'))).toBeInstanceOf(Unavailable);
    expect(w.settled).toEqual([
      {
        d: next,
        s: {
          status: 'failed',
          last_response_status: null,
          last_error: 'not queued: the delivery queue did not answer; redeliver it',
          last_attempt_at: null,
          next_attempt_at: null,
          duration_ms: null,
        },
        attempted: undefined,
      },
    ]);
  });
});
