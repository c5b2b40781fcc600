import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { decisionEvents } from '../../functions/decisions/events.js';
import { createDispatcher, recordedEvent } from '../../functions/domain-events/dispatcher.js';
import { createPublisher, eventOf } from '../../functions/domain-events/publisher.js';
import { tableOfStream } from '../../shared/events/stream.js';
import { feedFilter } from '../../functions/domain-events/service.js';
import type { RecordResult } from '../../functions/domain-events/store.js';
import { eventItem } from '../../shared/events/events-table.js';
import { stampNew, stampUpdate, unstamped } from '../../shared/events/stamp.js';
import type { DomainEvent } from '../../shared/events/types.js';
import type { BusinessMetrics } from '../../shared/ports/metrics.js';

const ARN = 'arn:aws:dynamodb:us-east-1:000000000000:table/dpm-test-decisions/stream/2026-11-24T00:00:00.000';
const ORIGIN = 'dpm/test';

const version = (v: number, status: string) => ({
  pk: 'D#ws#k',
  sk: `V#${String(v).padStart(10, '0')}`,
  workspace: 'ws',
  key: 'k',
  version: v,
  content_sha: 'ab',
  status,
  notes: null,
  created_by: 'alice',
  created_by_principal: '["i","alice"]',
  created_at: '2026-11-24T00:00:00.000Z',
  submitted_by: null,
  submitted_at: null,
  approved_by: null,
  approved_at: null,
  source_instance: null,
  source_version: null,
  content_json: '{"limit":1}',
  history: [],
});

let seq = 0;
function record(
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
  newItem: Record<string, unknown> | undefined,
  oldItem?: Record<string, unknown>,
): DynamoDBRecord {
  seq += 1;
  return {
    eventName,
    eventSourceARN: ARN,
    dynamodb: {
      SequenceNumber: String(seq).padStart(21, '0'),
      ...(newItem ? { NewImage: marshall(newItem, { removeUndefinedValues: true }) as never } : {}),
      ...(oldItem ? { OldImage: marshall(oldItem, { removeUndefinedValues: true }) as never } : {}),
    },
  };
}

const change = (type: 'decision.version.created' | 'decision.version.submitted', actor = 'alice') => ({
  type,
  actor,
  at: '2026-11-24T01:00:00.000Z',
});

describe('a domain event from a stamped stream record', () => {
  it('is the envelope of the change, with the resource as GET answers it and no stamp or key in data', () => {
    const item = { ...version(3, 'draft'), ...stampNew(change('decision.version.created')) };
    const e = eventOf(record('INSERT', item), decisionEvents, ORIGIN)!;
    expect(e).toMatchObject({
      specversion: '1.0',
      id: (item as Record<string, unknown>).ev_id,
      source: ORIGIN,
      type: 'dpm.decision.version.created',
      subject: 'decisions/ws/k/versions/3',
      time: '2026-11-24T01:00:00.000Z',
      datacontenttype: 'application/json',
      actor: 'alice',
      sequence: 1,
    });
    expect(e.data).toMatchObject({ workspace: 'ws', key: 'k', version: 3, status: 'draft', content: { limit: 1 } });
    for (const k of ['pk', 'sk', 'content_json', 'history', 'created_by_principal', 'ev_id', 'ev_seq'])
      expect(e.data).not.toHaveProperty(k);
  });

  it('is none for a write that stamped nothing new, a removal, or an item that is no subject', () => {
    const stamped = { ...version(1, 'draft'), ...stampNew(change('decision.version.created')) };
    expect(eventOf(record('MODIFY', { ...stamped, notes: 'x' }, stamped), decisionEvents, ORIGIN)).toBeUndefined();
    expect(eventOf(record('REMOVE', undefined, stamped), decisionEvents, ORIGIN)).toBeUndefined();
    expect(eventOf(record('INSERT', version(1, 'draft')), decisionEvents, ORIGIN)).toBeUndefined();
    const counter = { pk: 'D#ws#k', sk: '#COUNTER', last_version: 3, ...stampNew(change('decision.version.created')) };
    expect(eventOf(record('INSERT', counter), decisionEvents, ORIGIN)).toBeUndefined();
  });

  it('merges what the change was about into data', () => {
    const item = {
      ...version(1, 'submitted'),
      ...stampNew({ ...change('decision.version.submitted'), about: { changed_fields: ['status'] } }, 1),
    };
    const e = eventOf(record('MODIFY', item, version(1, 'draft')), decisionEvents, ORIGIN)!;
    expect(e.sequence).toBe(2);
    expect(e.data.changed_fields).toEqual(['status']);
  });

  it('reads the table from the stream ARN', () => {
    expect(tableOfStream(ARN)).toBe('dpm-test-decisions');
    expect(tableOfStream('arn:aws:sqs:us-east-1:1:q')).toBeUndefined();
  });
});

describe('the stamp', () => {
  it('counts one more with each update and is left out of what stores answer', () => {
    const u = stampUpdate(change('decision.version.submitted'));
    expect(u.add).toBe('#ev_seq :ev_one');
    expect(u.values[':ev_one']).toBe(1);
    expect(u.values[':ev_id']).not.toBe(stampUpdate(change('decision.version.submitted')).values[':ev_id']);
    const item = { a: 1, ...stampNew(change('decision.version.created')) };
    expect(unstamped(item)).toEqual({ a: 1 });
  });
});

describe('the publisher', () => {
  const sources = new Map([['dpm-test-decisions', decisionEvents]]);

  function subjectRecords(v: number, n: number) {
    const out: DynamoDBRecord[] = [];
    let old: Record<string, unknown> | undefined;
    for (let i = 0; i < n; i++) {
      const item = {
        ...version(v, i === 0 ? 'draft' : 'submitted'),
        ...stampNew(change('decision.version.created'), i),
      };
      out.push(record(old ? 'MODIFY' : 'INSERT', item, old));
      old = item;
    }
    return out;
  }

  it('records each subject’s events in their order and answers no failure', async () => {
    const recorded: DomainEvent[] = [];
    const publisher = createPublisher({
      events: {
        record: async (e) => {
          await new Promise((r) => setTimeout(r, Math.random() * 3));
          recorded.push(e);
          return 'recorded' as RecordResult;
        },
      },
      sources,
      origin: ORIGIN,
    });
    const a = subjectRecords(1, 4);
    const b = subjectRecords(2, 4);
    const interleaved = a.flatMap((r, i) => [r, b[i]!]);
    expect(await publisher({ Records: interleaved })).toEqual({ batchItemFailures: [] });
    for (const subject of ['decisions/ws/k/versions/1', 'decisions/ws/k/versions/2'])
      expect(recorded.filter((e) => e.subject === subject).map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
  });

  it('answers a failed record and the rest of its subject as failures, not other subjects', async () => {
    const a = subjectRecords(1, 3);
    const b = subjectRecords(2, 2);
    const publisher = createPublisher({
      events: {
        record: async (e) => {
          if (e.subject.endsWith('/1') && e.sequence === 2) throw new Error('throttled');
          return 'recorded';
        },
      },
      sources,
      origin: ORIGIN,
    });
    const out = await publisher({ Records: [...a, ...b] });
    expect(out.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([
      a[1]!.dynamodb!.SequenceNumber,
      a[2]!.dynamodb!.SequenceNumber,
    ]);
  });

  it('takes a record handed again (a duplicate) as done', async () => {
    const publisher = createPublisher({ events: { record: async () => 'duplicate' }, sources, origin: ORIGIN });
    expect(await publisher({ Records: subjectRecords(1, 2) })).toEqual({ batchItemFailures: [] });
  });

  /** Business metrics that remember what was counted and how often they were flushed. */
  function countingMetrics() {
    const counted: string[] = [];
    let flushes = 0;
    const metrics: BusinessMetrics = {
      count: (metric, dimensions, value = 1) => void counted.push(`${metric} ${JSON.stringify(dimensions)} ${value}`),
      flush: async () => void (flushes += 1),
    };
    return { metrics, counted, flushes: () => flushes };
  }

  /** The events store's answers: an event id recorded once, a duplicate after that. */
  function onceEach() {
    const ids = new Set<string>();
    return {
      record: async (e: DomainEvent): Promise<RecordResult> => {
        if (ids.has(e.id)) return 'duplicate';
        ids.add(e.id);
        return 'recorded';
      },
    };
  }
});

describe('the dispatcher', () => {
  const table = { tableName: 'dpm-test-domain-events', ttlDays: 30, source: ORIGIN };
  const envelope = (n: number): DomainEvent => ({
    specversion: '1.0',
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    source: ORIGIN,
    type: 'dpm.decision.version.created',
    subject: 'decisions/ws/k/versions/1',
    time: '2026-11-24T01:00:00.000Z',
    datacontenttype: 'application/json',
    actor: 'alice',
    sequence: n,
    data: { version: 1 },
  });
  const inserted = (n: number) => record('INSERT', eventItem(table, envelope(n)));

  it('reads the envelope back from the events table’s record, without the table’s own attributes', () => {
    expect(recordedEvent(inserted(1))).toEqual(envelope(1));
    expect(recordedEvent(record('REMOVE', undefined, eventItem(table, envelope(1))))).toBeUndefined();
  });

  it('puts every new event on the bus and answers those the bus refused as failures', async () => {
    const put: DomainEvent[][] = [];
    const records = [inserted(1), inserted(2), inserted(3)];
    const dispatcher = createDispatcher({
      publish: async (events) => {
        put.push([...events]);
        return { failed: events.filter((e) => e.sequence === 2) };
      },
    });
    const out = await dispatcher({ Records: records });
    expect(put).toEqual([[envelope(1), envelope(2), envelope(3)]]);
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: records[1]!.dynamodb!.SequenceNumber }]);
    const down = createDispatcher({ publish: () => Promise.reject(new Error('down')) });
    expect((await down({ Records: records })).batchItemFailures).toHaveLength(3);
  });

  it('counts each event it is done with once by its type (outbox events too), none from the first it hands back on', async () => {
    const counted: string[] = [];
    let flushes = 0;
    const metrics: BusinessMetrics = {
      count: (metric, dimensions, value = 1) => void counted.push(`${metric} ${JSON.stringify(dimensions)} ${value}`),
      flush: async () => void (flushes += 1),
    };
    const records = [inserted(1), inserted(2), inserted(3)];
    let refuse = 2;
    const dispatcher = createDispatcher(
      { publish: async (events) => ({ failed: events.filter((e) => e.sequence === refuse) }) },
      undefined,
      undefined,
      metrics,
    );
    // 2 is handed back, and 3 with it (Lambda starts the batch again at 2): only 1 counts
    expect((await dispatcher({ Records: records })).batchItemFailures).toHaveLength(1);
    expect(counted).toEqual(['DomainEvents {"type":"dpm.decision.version.created"} 1']);
    expect(flushes).toBe(1);
    refuse = 0;
    expect((await dispatcher({ Records: records.slice(1) })).batchItemFailures).toEqual([]);
    expect(counted).toHaveLength(3);
    expect(flushes).toBe(2);
    // a bus that is down: nothing counts, and the metrics are flushed all the same
    const down = createDispatcher({ publish: () => Promise.reject(new Error('down')) }, undefined, undefined, metrics);
    expect((await down({ Records: records })).batchItemFailures).toHaveLength(3);
    expect(counted).toHaveLength(3);
    expect(flushes).toBe(3);
  });
});

describe('the feed filter', () => {
  it('reads types with or without `dpm.`, exact or by prefix, and `since` as an instant', () => {
    // a prefix is the catalog's types under it, each read from the type index
    expect(feedFilter({ type: 'decision.*' })).toEqual({
      types: ['created', 'submitted', 'approved', 'rejected', 'retired'].map((t) => `dpm.decision.version.${t}`),
    });
    expect(feedFilter({ type: 'crew.template.*' })).toEqual({
      types: ['dpm.crew.template.created', 'dpm.crew.template.updated', 'dpm.crew.template.deleted'],
    });
    expect(feedFilter({ type: 'dpm.psk.created' })).toEqual({ types: ['dpm.psk.created'] });
    expect(feedFilter({ type: 'nothing.*' })).toEqual({ types: [] });
    // the prefix of every type is no filter: the whole feed
    expect(feedFilter({ type: 'dpm.*' })).toEqual({});
    expect(feedFilter({ since: '2026-11-24T02:00:00+01:00' })).toEqual({ since: '2026-11-24T01:00:00.000Z' });
    expect(feedFilter({ subject: 'psks/x' })).toEqual({ subject: 'psks/x' });
  });
});

describe('the event sources', () => {
  it('cover every table the publisher reads, once each', async () => {
    const { EVENT_SOURCES } = await import('../../functions/domain-events/sources.js');
    const { STREAM_CONSUMERS } = await import('../../infra/groups.js');
    const publisher = STREAM_CONSUMERS.find((c) => c.name === 'domain-events-publisher')!;
    expect(EVENT_SOURCES.map((s) => s.table).sort()).toEqual([...publisher.streams].sort());
  });
});
