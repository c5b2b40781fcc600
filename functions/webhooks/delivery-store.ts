import { createHash, randomUUID } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { conditionally, isConditionFailed, isTransactionRefused } from '../../shared/aws/errors.js';
import { decodeCursor, queryAll, queryPage } from '../../shared/aws/pagination.js';
import { type Page } from '../../shared/page.js';
import type { DomainEvent } from '../../shared/events/types.js';
import type { DeliveryMessage } from './delivery-queue.js';
import { dropLapsed } from '../../shared/aws/leased-slots.js';
import { type LaneShare, nextShareTry, type ShareEntries, type ShareEntry, shareEntryName } from './lane-share.js';
import type { DeliveryStatus, WebhookDelivery } from './schemas.js';
import { AGAIN, retry } from '../../shared/retry.js';

/** A delivery of one event to one endpoint, as stored (TABLES.webhookDeliveries). */
export interface DeliveryRecord extends WebhookDelivery {
  readonly endpoint_id: string;
  readonly subject: string;
  readonly sequence: number;
  /** The envelope as JSON text: exactly what each attempt signs and POSTs. */
  readonly body: string;
  /** Each redelivery starts a new series; messages of an earlier one are stale. */
  readonly series: number;
  readonly created_at: string;
  /** The queue message that made (or is making) the current attempt. */
  readonly attempt_message: string | undefined;
}

/** A new delivery of `event` to an endpoint: pending, due at once, its body the envelope's JSON. */
export function newDelivery(endpointId: string, event: DomainEvent, at: string): DeliveryRecord {
  return {
    id: randomUUID(),
    endpoint_id: endpointId,
    event_id: event.id,
    event_type: event.type,
    subject: event.subject,
    sequence: event.sequence,
    body: JSON.stringify(event),
    series: 0,
    status: 'pending',
    attempts: 0,
    last_response_status: null,
    last_error: null,
    last_attempt_at: null,
    next_attempt_at: at,
    duration_ms: null,
    created_at: at,
    attempt_message: undefined,
  };
}

/** What an attempt (or the decision not to make one) leaves on a delivery. */
export interface Settlement {
  readonly status: Exclude<DeliveryStatus, 'pending'>;
  readonly last_response_status: number | null;
  readonly last_error: string | null;
  readonly last_attempt_at: string | null;
  readonly next_attempt_at: string | null;
  readonly duration_ms: number | null;
}

const OPEN: ReadonlySet<DeliveryStatus> = new Set(['pending', 'retrying']);
export const isOpen = (status: DeliveryStatus) => OPEN.has(status);

const deliveryKey = (endpointId: string, id: string) => ({ pk: `D#${endpointId}`, sk: id });

/** Tries to start a new attempt series while other writers change the delivery. */
const REDELIVER_ROUNDS = 5;

/** One of the endpoint's in-flight slots (`slot` from 0). */
const slotKey = (endpointId: string, slot: number) => ({ pk: `S#${endpointId}`, sk: `slot#${slot}` });
const claimKey = (endpointId: string, eventId: string) => ({ pk: `E#${endpointId}`, sk: eventId });
/** A principal in a key: hashed, of bounded length whatever it says. */
const principalKey = (principal: string) => createHash('sha256').update(principal).digest('base64url');
/** A principal's share of the per-run lane, one item. */
const shareKey = (principal: string) => ({ pk: `P#${principalKey(principal)}`, sk: 'slots' });
/** The principal's parked deliveries, oldest first (`place`: when parked, then what makes it unique). */
const parkedKey = (principal: string, place: string) => ({ pk: `W#${principalKey(principal)}`, sk: place });
/** Its place in line among the endpoint's open deliveries about the same subject. */
const lineKey = (d: Pick<DeliveryRecord, 'endpoint_id' | 'subject' | 'sequence' | 'id'>) => ({
  pk: `O#${d.endpoint_id}#${d.subject}`,
  sk: `${String(d.sequence).padStart(15, '0')}#${d.id}`,
});

/** The index attributes of a delivery in `status`. */
const statusAttributes = (endpointId: string, status: DeliveryStatus) => ({
  endpoint_status: `${endpointId}#${status}`,
  ...(isOpen(status) ? { open: 'open' } : {}),
});

/** Webhook deliveries as the services see them (DynamoDeliveryStore below implements them). */
export interface DeliveryStore {
  /**
   * Records a new pending delivery, unless the endpoint already has one of this event
   * (the dispatcher may be handed an event again): then that one is answered.
   */
  create(d: DeliveryRecord): Promise<{ created: boolean; delivery: DeliveryRecord | undefined }>;
  get(endpointId: string, id: string): Promise<DeliveryRecord | undefined>;
  /** An endpoint's deliveries, newest first, all or in one status. */
  list(
    endpointId: string,
    status: DeliveryStatus | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<DeliveryRecord>>;
  /** Every open delivery (pending or retrying), of every endpoint. */
  open(): Promise<DeliveryRecord[]>;
  /**
   * Lets go of the lease on a delivery's current attempt, made by a worker known to be gone
   * (a local platform's, before the restart): the next message may make the attempt at once.
   */
  releaseLease(d: DeliveryRecord): Promise<void>;
  /**
   * Takes attempt `attempt` of series `series` for the queue message `messageId`, unless
   * another message is making it (its lease has not run out): one attempt at a time.
   */
  claim(d: DeliveryRecord, messageId: string, nowMs: number, leaseMs: number): Promise<boolean>;
  /**
   * Records how a delivery stands after its current attempt (`attempted`: the claimed one, so
   * `attempts` goes up by one) or without one (an endpoint disabled meanwhile); a final status
   * takes it out of line. False when the delivery moved on meanwhile (a redelivery).
   */
  settle(d: DeliveryRecord, s: Settlement, attempted: { messageId: string } | undefined): Promise<boolean>;
  /**
   * A new attempt series: pending again, no attempts, back in line (a new place is its old
   * one: its subject's sequence). When another redelivery starts one meanwhile, that one
   * is answered (`started: false`): redeliveries at once make one series. Undefined when
   * there is no such delivery; `contended` when every try met another writer.
   */
  redeliver(
    endpointId: string,
    id: string,
    at: string,
  ): Promise<{ started: boolean; delivery: DeliveryRecord } | 'contended' | undefined>;
  /**
   * Takes one of an endpoint's `slots` in-flight slots for `holder` until `nowMs + leaseMs`
   * (a slot whose holder died lapses then): the slot taken, or undefined when all are held.
   * With `share` (a crew run's own endpoint), the same write also takes one of its starter's
   * slots of the per-run lane: undefined too when the principal holds all of those.
   */
  takeSlot(
    endpointId: string,
    holder: string,
    nowMs: number,
    leaseMs: number,
    slots: number,
    share?: LaneShare,
  ): Promise<number | undefined>;
  /**
   * Frees a slot `holder` took (not one that lapsed and was taken by another since); the same
   * `share`. With it, answers the principal's entries left, once it freed one (else undefined).
   */
  releaseSlot(endpointId: string, slot: number, holder: string, share?: LaneShare): Promise<ShareEntries | undefined>;
  /**
   * Parks a crew run's delivery message in its starter's wait list, behind those parked before
   * (or, with `keep`, a place it had: at the same time in line): answers its place there. A
   * message that finds its starter's share held waits so, rather than coming back every few seconds.
   */
  park(principal: string, message: DeliveryMessage, nowMs: number, keep?: string): Promise<string>;
  /** Takes a parked message out of the wait list by its place: false when a wake took it first. */
  unpark(principal: string, place: string): Promise<boolean>;
  /** Takes up to `count` of the principal's parked messages out, oldest first: those to send again. */
  wakeParked(principal: string, count: number): Promise<DeliveryMessage[]>;
  /**
   * Frees every slot of an endpoint, held by a worker known to be gone (see releaseLease);
   * with `share`, every slot of the principal's on the per-run lane (that worker held them all).
   */
  releaseSlots(endpointId: string, slots: number, share?: LaneShare): Promise<void>;
  /** An endpoint's open deliveries (pending or retrying), read consistently. */
  openOf(endpointId: string): Promise<DeliveryRecord[]>;
  /** Removes a delivery that was never queued (its claim and place in line too). */
  remove(d: DeliveryRecord): Promise<void>;
  /** Whether an open delivery of the same endpoint and subject comes before `d` (read consistently). */
  waitsInLine(d: DeliveryRecord): Promise<boolean>;
  /** The open delivery of the same endpoint and subject next in line after `d`, if any. */
  nextInLine(d: DeliveryRecord): Promise<DeliveryRecord | undefined>;
}

/**
 * DynamoDB repository for webhook deliveries (TABLES.webhookDeliveries): the delivery, its
 * claim (one per endpoint and event), while it is open its place in line, the endpoint's
 * in-flight slots, and for crew runs' own endpoints their starters' shares of the per-run
 * lane and the deliveries parked waiting for them.
 */
export class DynamoDeliveryStore implements DeliveryStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** How long deliveries are kept, in days. */
    private readonly ttlDays: number,
  ) {}

  /**
   * Records a new pending delivery, unless the endpoint already has one of this event
   * (the dispatcher may be handed an event again): then that one is answered.
   */
  async create(d: DeliveryRecord): Promise<{ created: boolean; delivery: DeliveryRecord | undefined }> {
    const expires = this.expiry(d.created_at);
    try {
      await this.db.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: { ...claimKey(d.endpoint_id, d.event_id), delivery_id: d.id, expires_at: expires },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            { Put: { TableName: this.tableName, Item: this.deliveryItem(d, expires) } },
            { Put: { TableName: this.tableName, Item: { ...lineKey(d), expires_at: expires } } },
          ],
        }),
      );
      return { created: true, delivery: d };
    } catch (err) {
      if (!isTransactionRefused(err)) throw err;
      const claim = await this.db.send(
        new GetCommand({ TableName: this.tableName, Key: claimKey(d.endpoint_id, d.event_id), ConsistentRead: true }),
      );
      // A conflict with another writer of the same claim: refused, tried again by the caller.
      if (!claim.Item) throw err;
      return { created: false, delivery: await this.get(d.endpoint_id, String(claim.Item.delivery_id)) };
    }
  }

  async get(endpointId: string, id: string): Promise<DeliveryRecord | undefined> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: deliveryKey(endpointId, id), ConsistentRead: true }),
    );
    return out.Item ? toRecord(out.Item) : undefined;
  }

  /** An endpoint's deliveries, newest first, all or in one status. */
  async list(
    endpointId: string,
    status: DeliveryStatus | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<DeliveryRecord>> {
    const [index, partition, value] = status
      ? ['by_endpoint_status', 'endpoint_status', `${endpointId}#${status}`]
      : ['by_endpoint', 'endpoint_id', endpointId];
    const keys = ['pk', 'sk', partition, 'created_key'];
    const start = decodeCursor(
      cursor,
      (k) =>
        k[partition] === value &&
        Object.keys(k).length === keys.length &&
        keys.every((name) => typeof k[name] === 'string' && k[name] !== ''),
    );
    const page = await queryPage(
      this.db,
      {
        TableName: this.tableName,
        IndexName: index,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': partition },
        ExpressionAttributeValues: { ':p': value },
        ScanIndexForward: false,
      },
      { limit, start, keyAttributes: keys },
    );
    return { items: page.items.map(toRecord), nextCursor: page.nextCursor };
  }

  /** Every open delivery (pending or retrying), of every endpoint. */
  async open(): Promise<DeliveryRecord[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      IndexName: 'open_deliveries',
      KeyConditionExpression: '#open = :open',
      ExpressionAttributeNames: { '#open': 'open' },
      ExpressionAttributeValues: { ':open': 'open' },
    });
    return items.map(toRecord);
  }

  /**
   * Lets go of the lease on a delivery's current attempt, made by a worker known to be gone
   * (a local platform's, before the restart): the next message may make the attempt at once.
   */
  async releaseLease(d: DeliveryRecord): Promise<void> {
    await conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: deliveryKey(d.endpoint_id, d.id),
          UpdateExpression: 'REMOVE lease_until',
          ConditionExpression:
            'series = :series AND attempts = :attempts AND #open = :open AND attribute_exists(lease_until)',
          ExpressionAttributeNames: { '#open': 'open' },
          ExpressionAttributeValues: { ':series': d.series, ':attempts': d.attempts, ':open': 'open' },
        }),
      ),
    );
  }

  /**
   * Takes attempt `attempt` of series `series` for the queue message `messageId`, unless
   * another message is making it (its lease has not run out): one attempt at a time.
   */
  async claim(d: DeliveryRecord, messageId: string, nowMs: number, leaseMs: number): Promise<boolean> {
    return conditionally(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: deliveryKey(d.endpoint_id, d.id),
          UpdateExpression: 'SET attempt_message = :msg, lease_until = :lease',
          ConditionExpression:
            'series = :series AND attempts = :attempts AND #open = :open AND ' +
            '(attribute_not_exists(lease_until) OR lease_until < :now OR attempt_message = :msg)',
          ExpressionAttributeNames: { '#open': 'open' },
          ExpressionAttributeValues: {
            ':msg': messageId,
            ':lease': nowMs + leaseMs,
            ':series': d.series,
            ':attempts': d.attempts,
            ':open': 'open',
            ':now': nowMs,
          },
        }),
      ),
    );
  }

  /**
   * Records how a delivery stands after its current attempt (`attempted`: the claimed one, so
   * `attempts` goes up by one) or without one (an endpoint disabled meanwhile); a final status
   * takes it out of line. False when the delivery moved on meanwhile (a redelivery).
   */
  async settle(d: DeliveryRecord, s: Settlement, attempted: { messageId: string } | undefined): Promise<boolean> {
    const final = !isOpen(s.status);
    const attributes = statusAttributes(d.endpoint_id, s.status);
    const values: Record<string, unknown> = {
      ':status': s.status,
      ':es': attributes.endpoint_status,
      ':lrs': s.last_response_status,
      ':le': s.last_error,
      ':lat': s.last_attempt_at,
      ':nat': s.next_attempt_at,
      ':dur': s.duration_ms,
      ':attempts': d.attempts + (attempted ? 1 : 0),
      ':series': d.series,
      ':was': d.attempts,
      ':open': 'open',
    };
    if (attempted) values[':msg'] = attempted.messageId;
    const update = {
      Update: {
        TableName: this.tableName,
        Key: deliveryKey(d.endpoint_id, d.id),
        UpdateExpression:
          'SET #status = :status, endpoint_status = :es, last_response_status = :lrs, last_error = :le, ' +
          'last_attempt_at = :lat, next_attempt_at = :nat, duration_ms = :dur, attempts = :attempts' +
          (final ? ' REMOVE #open, lease_until' : ' REMOVE lease_until'),
        ConditionExpression:
          'series = :series AND attempts = :was AND #open = :open' + (attempted ? ' AND attempt_message = :msg' : ''),
        ExpressionAttributeNames: { '#status': 'status', '#open': 'open' },
        ExpressionAttributeValues: values,
      },
    };
    return conditionally(
      this.db.send(
        new TransactWriteCommand({
          TransactItems: final ? [update, { Delete: { TableName: this.tableName, Key: lineKey(d) } }] : [update],
        }),
      ),
    );
  }

  /**
   * A new attempt series: pending again, no attempts, back in line (a new place is its old
   * one: its subject's sequence). When another redelivery starts one meanwhile, that one
   * is answered (`started: false`): redeliveries at once make one series. Undefined when
   * there is no such delivery; `contended` when every try met another writer.
   */
  async redeliver(
    endpointId: string,
    id: string,
    at: string,
  ): Promise<{ started: boolean; delivery: DeliveryRecord } | 'contended' | undefined> {
    let first: number | undefined;
    const tried = await retry(
      async () => {
        const d = await this.get(endpointId, id);
        if (!d) return undefined;
        if (first !== undefined && d.series > first) return { started: false, delivery: d };
        first ??= d.series;
        const expires = this.expiry(at);
        const next: DeliveryRecord = {
          ...d,
          series: d.series + 1,
          status: 'pending',
          attempts: 0,
          last_response_status: null,
          last_error: null,
          last_attempt_at: null,
          next_attempt_at: at,
          duration_ms: null,
          attempt_message: undefined,
        };
        const done = await conditionally(
          this.db.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Put: {
                    TableName: this.tableName,
                    Item: this.deliveryItem(next, expires),
                    ConditionExpression: 'series = :series',
                    ExpressionAttributeValues: { ':series': d.series },
                  },
                },
                { Put: { TableName: this.tableName, Item: { ...lineKey(d), expires_at: expires } } },
              ],
            }),
          ),
        );
        return done ? { started: true, delivery: next } : AGAIN;
      },
      { attempts: REDELIVER_ROUNDS },
    );
    return tried.done ? tried.value : 'contended';
  }

  /**
   * Takes one of an endpoint's `slots` in-flight slots for `holder` until `nowMs + leaseMs`
   * (a slot whose holder died lapses then): the slot taken, or undefined when all are held.
   */
  async takeSlot(
    endpointId: string,
    holder: string,
    nowMs: number,
    leaseMs: number,
    slots: number,
    share?: LaneShare,
  ): Promise<number | undefined> {
    if (share) return this.takeSharedSlot(endpointId, holder, nowMs, leaseMs, slots, share);
    for (let slot = 0; slot < slots; slot++) {
      const taken = await conditionally(
        this.db.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              ...slotKey(endpointId, slot),
              holder,
              until: nowMs + leaseMs,
              expires_at: Math.ceil((nowMs + leaseMs) / 1000) + 86_400,
            },
            ConditionExpression: 'attribute_not_exists(pk) OR #until < :now OR holder = :holder',
            ExpressionAttributeNames: { '#until': 'until' },
            ExpressionAttributeValues: { ':now': nowMs, ':holder': holder },
          }),
        ),
      );
      if (taken) return slot;
    }
    return undefined;
  }

  /**
   * A crew run endpoint's slot, held in its starter's share item (`holders`: entry
   * `<endpoint>#<slot>` → holder and lease end), so that one conditional write takes both the
   * endpoint's slot and one of the principal's: the entry must be free (absent, lapsed or
   * this holder's already), and a new entry must find the principal with fewer than its
   * share (lapsed entries count until dropped, so a lapsed one taken over never makes more).
   * A refused write answers the item as it stood: the next try takes the endpoint's
   * free slot and drops the entries that lapsed (their holders died), or there is none and
   * the delivery waits. One write when a slot is free or none is; two after a worker died.
   */
  private async takeSharedSlot(
    endpointId: string,
    holder: string,
    nowMs: number,
    leaseMs: number,
    slots: number,
    share: LaneShare,
  ): Promise<number | undefined> {
    const key = shareKey(share.principal);
    const entry: ShareEntry = { holder, until: nowMs + leaseMs };
    const expires = Math.ceil((nowMs + leaseMs) / 1000) + 86_400;
    let next: { slot: number; dropping: [string, number][] } = { slot: 0, dropping: [] };
    for (let round = 0; round < 3; round++) {
      const { slot, dropping } = next;
      // Entry names hold endpoint ids: placeholders, never the expression text.
      const names: Record<string, string> = {
        '#holders': 'holders',
        '#e': shareEntryName(endpointId, slot),
        '#holder': 'holder',
        '#until': 'until',
      };
      const values: Record<string, unknown> = {
        ':entry': entry,
        ':exp': expires,
        ':now': nowMs,
        ':holder': holder,
        ':n': share.slots + dropping.length,
      };
      const drops = dropLapsed(dropping, '#until');
      Object.assign(names, drops.names);
      Object.assign(values, drops.values);
      const removes = drops.removes;
      try {
        await this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression:
              'SET #holders.#e = :entry, expires_at = :exp' +
              (removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''),
            ConditionExpression: [
              ...drops.conditions,
              '((attribute_not_exists(#holders.#e) AND size(#holders) < :n) OR ' +
                '#holders.#e.#until <= :now OR #holders.#e.#holder = :holder)',
            ].join(' AND '),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return slot;
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        const old = (err as { Item?: Parameters<typeof unmarshall>[0] }).Item;
        if (!old) {
          // The principal's first attempt in flight (or its item expired): the item is made with it.
          const made = await conditionally(
            this.db.send(
              new PutCommand({
                TableName: this.tableName,
                Item: { ...key, holders: { [shareEntryName(endpointId, 0)]: entry }, expires_at: expires },
                ConditionExpression: 'attribute_not_exists(pk)',
              }),
            ),
          );
          if (made) return 0;
          next = { slot: 0, dropping: [] };
          continue;
        }
        const entries = (unmarshall(old).holders ?? {}) as ShareEntries;
        const found = nextShareTry(entries, endpointId, holder, nowMs, slots, share.slots);
        if (found === undefined) return undefined;
        next = found;
      }
    }
    return undefined;
  }

  /**
   * Frees a slot `holder` took (not one that lapsed and was taken by another since); with
   * `share`, answers the principal's entries left, once it freed one.
   */
  async releaseSlot(
    endpointId: string,
    slot: number,
    holder: string,
    share?: LaneShare,
  ): Promise<ShareEntries | undefined> {
    if (share) {
      try {
        const out = await this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: shareKey(share.principal),
            UpdateExpression: 'REMOVE #holders.#e',
            ConditionExpression: '#holders.#e.#holder = :holder',
            ExpressionAttributeNames: {
              '#holders': 'holders',
              '#e': shareEntryName(endpointId, slot),
              '#holder': 'holder',
            },
            ExpressionAttributeValues: { ':holder': holder },
            ReturnValues: 'ALL_NEW',
          }),
        );
        return (out.Attributes?.holders ?? {}) as ShareEntries;
      } catch (err) {
        if (isConditionFailed(err)) return undefined;
        throw err;
      }
    }
    await conditionally(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: slotKey(endpointId, slot),
          ConditionExpression: 'holder = :holder',
          ExpressionAttributeValues: { ':holder': holder },
        }),
      ),
    );
  }

  /**
   * Frees every slot of an endpoint, held by a worker known to be gone (see releaseLease);
   * with `share`, every slot of the principal's on the per-run lane (that worker held them all).
   */
  async releaseSlots(endpointId: string, slots: number, share?: LaneShare): Promise<void> {
    if (share) {
      await conditionally(
        this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: shareKey(share.principal),
            UpdateExpression: 'SET #holders = :none',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#holders': 'holders' },
            ExpressionAttributeValues: { ':none': {} },
          }),
        ),
      );
      return;
    }
    for (let slot = 0; slot < slots; slot++)
      await this.db.send(new DeleteCommand({ TableName: this.tableName, Key: slotKey(endpointId, slot) }));
  }

  /**
   * Parks a crew run's delivery message in its starter's wait list, behind those parked
   * before (its place: the time, or that of `keep`, then its delivery and a nonce, so that
   * each park is one place of its own); kept a day, in case nothing takes it.
   */
  async park(principal: string, message: DeliveryMessage, nowMs: number, keep?: string): Promise<string> {
    const since = keep?.split('#')[0] ?? String(nowMs).padStart(15, '0');
    const place = `${since}#${message.delivery_id}#${randomUUID()}`;
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        // The message under a name of its own: its endpoint_id must not list it among the endpoint's deliveries.
        Item: { ...parkedKey(principal, place), message, expires_at: Math.ceil(nowMs / 1000) + 86_400 },
      }),
    );
    return place;
  }

  /** Takes a parked message out of the wait list by its place: false when a wake took it first. */
  async unpark(principal: string, place: string): Promise<boolean> {
    return conditionally(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: parkedKey(principal, place),
          ConditionExpression: 'attribute_exists(pk)',
        }),
      ),
    );
  }

  /**
   * Takes up to `count` of the principal's parked messages out, oldest first: each removed by
   * a conditional delete, so that two wakes at once never send the same one twice.
   */
  async wakeParked(principal: string, count: number): Promise<DeliveryMessage[]> {
    if (count <= 0) return [];
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': parkedKey(principal, '').pk },
        ConsistentRead: true,
        Limit: count,
      }),
    );
    const woken: DeliveryMessage[] = [];
    for (const item of out.Items ?? [])
      if (await this.unpark(principal, String(item.sk))) woken.push(item.message as DeliveryMessage);
    return woken;
  }

  /** An endpoint's open deliveries (pending or retrying), read consistently. */
  async openOf(endpointId: string): Promise<DeliveryRecord[]> {
    const items = await queryAll(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: '#open = :open',
      ExpressionAttributeNames: { '#open': 'open' },
      ExpressionAttributeValues: { ':pk': `D#${endpointId}`, ':open': 'open' },
      ConsistentRead: true,
    });
    return items.map(toRecord);
  }

  /** Removes a delivery that was never queued (its claim and place in line too). */
  async remove(d: DeliveryRecord): Promise<void> {
    await this.db.send(
      new TransactWriteCommand({
        TransactItems: [deliveryKey(d.endpoint_id, d.id), claimKey(d.endpoint_id, d.event_id), lineKey(d)].map(
          (Key) => ({ Delete: { TableName: this.tableName, Key } }),
        ),
      }),
    );
  }

  /** Whether an open delivery of the same endpoint and subject comes before `d` (read consistently). */
  async waitsInLine(d: DeliveryRecord): Promise<boolean> {
    const { pk, sk } = lineKey(d);
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND sk < :sk',
        ExpressionAttributeValues: { ':pk': pk, ':sk': sk },
        ConsistentRead: true,
        Limit: 1,
      }),
    );
    return (out.Items ?? []).length > 0;
  }

  /** The open delivery of the same endpoint and subject next in line after `d`, if any. */
  async nextInLine(d: DeliveryRecord): Promise<DeliveryRecord | undefined> {
    const { pk, sk } = lineKey(d);
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND sk > :sk',
        ExpressionAttributeValues: { ':pk': pk, ':sk': sk },
        ConsistentRead: true,
        Limit: 1,
      }),
    );
    const next = out.Items?.[0];
    return next ? this.get(d.endpoint_id, String(next.sk).slice(String(next.sk).indexOf('#') + 1)) : undefined;
  }

  /** When a delivery written at `at` (the caller's instant: its creation, or a redelivery's) expires, in epoch seconds. */
  private expiry(at: string): number {
    return Math.floor(Date.parse(at) / 1000) + this.ttlDays * 86_400;
  }

  private deliveryItem(d: DeliveryRecord, expires: number): Record<string, unknown> {
    const { attempt_message, ...fields } = d;
    return {
      ...fields,
      ...deliveryKey(d.endpoint_id, d.id),
      ...(attempt_message ? { attempt_message } : {}),
      ...statusAttributes(d.endpoint_id, d.status),
      created_key: `${d.created_at}#${d.id}`,
      expires_at: expires,
    };
  }
}

function toRecord(item: Record<string, unknown>): DeliveryRecord {
  return {
    id: item.id as string,
    endpoint_id: item.endpoint_id as string,
    event_id: item.event_id as string,
    event_type: item.event_type as string,
    subject: item.subject as string,
    sequence: Number(item.sequence),
    body: item.body as string,
    series: Number(item.series ?? 0),
    status: item.status as DeliveryStatus,
    attempts: Number(item.attempts ?? 0),
    last_response_status: (item.last_response_status as number | null | undefined) ?? null,
    last_error: (item.last_error as string | null | undefined) ?? null,
    last_attempt_at: (item.last_attempt_at as string | null | undefined) ?? null,
    next_attempt_at: (item.next_attempt_at as string | null | undefined) ?? null,
    duration_ms: (item.duration_ms as number | null | undefined) ?? null,
    created_at: item.created_at as string,
    attempt_message: typeof item.attempt_message === 'string' ? item.attempt_message : undefined,
  };
}

/** The delivery as the API answers it, fields in the contract's order. */
export const toDelivery = (d: DeliveryRecord): WebhookDelivery => ({
  id: d.id,
  event_id: d.event_id,
  event_type: d.event_type,
  status: d.status,
  attempts: d.attempts,
  last_response_status: d.last_response_status,
  last_error: d.last_error,
  last_attempt_at: d.last_attempt_at,
  next_attempt_at: d.next_attempt_at,
  duration_ms: d.duration_ms,
});
