import { describe, expect, it } from 'vitest';
import { type DeliveryQueue, inLineDelaySeconds } from '../../functions/webhooks/delivery-queue.js';
import type { DeliveryRecord } from '../../functions/webhooks/delivery-store.js';
import { ENDPOINTS_FRESH_MS, WebhookFanout } from '../../functions/webhooks/fanout.js';
import type { WebhookEndpoint } from '../../functions/webhooks/schemas.js';
import { ManualClock } from '../../shared/clock.js';
import { envelope } from '../../shared/events/types.js';

/** The dispatcher's fan-out keeps the enabled endpoints it read (issue 30: no read per batch). */

const T0 = Date.parse('2026-11-26T10:00:00.000Z');

const endpoint = (id: string, eventTypes: string[] = ['*']): WebhookEndpoint =>
  ({
    id,
    url: `http://127.0.0.1:9/${id}`,
    event_types: eventTypes,
    description: null,
    enabled: true,
    disabled_reason: null,
    created_by: 'admin',
    created_at: new Date(T0).toISOString(),
    updated_at: new Date(T0).toISOString(),
  }) as WebhookEndpoint;

const event = (type: string, subject = 'decisions/ws/k/versions/1', sequence = 1) =>
  envelope({
    id: `${subject}#${sequence}`,
    source: 'dpm/test',
    type,
    subject,
    time: new Date(T0).toISOString(),
    actor: null,
    sequence,
    data: {},
  });

function world(initial: WebhookEndpoint[]) {
  const clock = new ManualClock(T0);
  let endpoints = initial;
  let fail = false;
  const reads = { count: 0 };
  const delivered: { endpoint: string; event: string }[] = [];
  const queue: DeliveryQueue = { send: async () => undefined };
  const fanout = new WebhookFanout({
    endpoints: {
      enabled: async () => {
        reads.count++;
        if (fail) throw new Error('DynamoDB is down');
        return endpoints;
      },
      get: async () => undefined,
      stopBefore: async () => true,
    },
    deliveries: {
      create: async (d: DeliveryRecord) => {
        delivered.push({ endpoint: d.endpoint_id, event: d.event_id });
        return { created: true, delivery: d };
      },
      openOf: async () => [],
    },
    queue,
    clock,
  });
  return {
    fanout,
    reads,
    delivered,
    set: (next: WebhookEndpoint[]) => (endpoints = next),
    failing: (on: boolean) => (fail = on),
    advance: (ms: number) => clock.advance(ms),
  };
}

describe('the fan-out’s endpoints', () => {
  it('are read once for every batch within ENDPOINTS_FRESH_MS, concurrent batches sharing the read', async () => {
    const w = world([endpoint('a')]);
    await Promise.all([
      w.fanout.fanOut([event('dpm.decision.version.approved')]),
      w.fanout.fanOut([event('dpm.x.y', 's2')]),
    ]);
    await w.advance(ENDPOINTS_FRESH_MS - 1);
    await w.fanout.fanOut([event('dpm.decision.version.approved', 's3')]);
    expect(w.reads.count).toBe(1);
    expect(w.delivered).toHaveLength(3);
  });

  it('are read again once ENDPOINTS_FRESH_MS passed: an endpoint created meanwhile takes the next events', async () => {
    const w = world([]);
    await w.fanout.fanOut([event('dpm.decision.version.approved')]);
    w.set([endpoint('new')]);
    await w.fanout.fanOut([event('dpm.decision.version.approved', 's2')]);
    expect(w.delivered).toEqual([]);
    await w.advance(ENDPOINTS_FRESH_MS);
    await w.fanout.fanOut([event('dpm.decision.version.approved', 's3')]);
    expect(w.reads.count).toBe(2);
    expect(w.delivered).toEqual([{ endpoint: 'new', event: 's3#1' }]);
  });

  it('are read again at once after endpointsChanged (the local platform’s writes of them)', async () => {
    const w = world([endpoint('a')]);
    await w.fanout.fanOut([event('dpm.decision.version.approved')]);
    w.set([]);
    w.fanout.endpointsChanged();
    await w.fanout.fanOut([event('dpm.decision.version.approved', 's2')]);
    expect(w.reads.count).toBe(2);
    expect(w.delivered.map((d) => d.event)).toEqual(['decisions/ws/k/versions/1#1']);
  });

  it('are read again before a batch holding an endpoint’s own event (webhook.endpoint.disabled)', async () => {
    const w = world([endpoint('a'), endpoint('b')]);
    await w.fanout.fanOut([event('dpm.decision.version.approved')]);
    w.set([endpoint('a')]);
    await w.fanout.fanOut([event('dpm.webhook.endpoint.disabled', 'webhooks/b'), event('dpm.x.y', 's2')]);
    expect(w.reads.count).toBe(2);
    expect(w.delivered.filter((d) => d.endpoint === 'b')).toHaveLength(1);
  });

  it('are not kept when the read fails: the events are handed again and the next batch reads', async () => {
    const w = world([endpoint('a')]);
    w.failing(true);
    const failed = await w.fanout.fanOut([event('dpm.decision.version.approved')]);
    expect([...failed]).toEqual(['decisions/ws/k/versions/1#1']);
    w.failing(false);
    expect([...(await w.fanout.fanOut([event('dpm.decision.version.approved')]))]).toEqual([]);
    expect(w.reads.count).toBe(2);
    expect(w.delivered).toHaveLength(1);
  });
});

describe("a crew run's events to its own endpoint", () => {
  const runEvent = (index: number) =>
    envelope({
      id: `run-event-${index}`,
      source: 'dpm/test',
      type: 'dpm.crew.run.event',
      subject: 'crew-runs/c1',
      time: new Date(T0).toISOString(),
      actor: null,
      sequence: index + 1,
      data: { correlation_id: 'c1', index, type: index === 0 ? 'run.queued' : 'run.started' },
    });

  function runWorld(options: { failSend?: boolean; failCreateAt?: number } = {}) {
    const sent: Parameters<DeliveryQueue['send']>[0][number][] = [];
    const recorded: string[] = [];
    const fanout = new WebhookFanout({
      endpoints: {
        enabled: async () => [],
        get: async (id) => ({
          endpoint: { ...endpoint(id, ['dpm.crew.run.event']) },
          principal: 'p',
          secret: { v: 1, key: 'k', iv: 'i', tag: 't', data: 'd' },
          previousSecret: undefined,
          failingSince: undefined,
          forRun: true,
          stoppedBefore: undefined,
        }),
        stopBefore: async () => true,
      },
      deliveries: {
        create: async (d: DeliveryRecord) => {
          if (options.failCreateAt === d.sequence) throw new Error('DynamoDB is down');
          recorded.push(d.event_id);
          return { created: true, delivery: d };
        },
        openOf: async () => [],
      },
      queue: {
        send: async (messages) => {
          if (options.failSend) throw new Error('SQS is down');
          sent.push(...messages);
        },
      },
      clock: new ManualClock(T0),
    });
    return { fanout, sent, recorded };
  }

  it('are all recorded, then the first queued now and those behind it in line only to look again much later', async () => {
    const w = runWorld();
    const failed = await w.fanout.fanOutToRun('c1', [runEvent(2), runEvent(0), runEvent(1)]);
    expect([...failed]).toEqual([]);
    expect(w.recorded).toEqual(['run-event-0', 'run-event-1', 'run-event-2']);
    // One send once all are recorded: the one before wakes each in turn when done.
    expect(w.sent.map((m) => m.delaySeconds)).toEqual([0, inLineDelaySeconds(0), inLineDelaySeconds(0)]);
    expect(w.sent.map((m) => m.message.waits)).toEqual([undefined, 1, 1]);
  });

  it('queue what was recorded when one is not, and hand that one again with those after it', async () => {
    const w = runWorld({ failCreateAt: 2 });
    const failed = await w.fanout.fanOutToRun('c1', [runEvent(0), runEvent(1), runEvent(2)]);
    expect([...failed]).toEqual(['run-event-1', 'run-event-2']);
    expect(w.sent).toHaveLength(1);
    // Not queued at all: every event handed again (found recorded, and queued then).
    const down = runWorld({ failSend: true });
    expect([...(await down.fanout.fanOutToRun('c1', [runEvent(0), runEvent(1)]))]).toEqual([
      'run-event-0',
      'run-event-1',
    ]);
  });
});
