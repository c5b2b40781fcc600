/**
 * Counts what the local platform does for the `cost` phase of the benchmark: every call of
 * the shared DynamoDB document client (with the request units it consumed) and of the shared
 * SQS client, the local Lambdas' invocations and handler time (through the platform's
 * `instrument` option), the entries the dispatcher puts on the bus, KMS requests. Calls are
 * attributed to the Lambda whose handler made them (AsyncLocalStorage). Inert until `attach`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { recordedEvent } from '../../functions/domain-events/dispatcher.js';
import { GROUPS } from '../../infra/groups.js';
import type { Instrument } from '../../infra/local/platform.js';
import { tableOfStream } from '../../shared/events/stream.js';
import { LocalKeyWrapper } from '../../shared/secrets.js';
import {
  apiGatewayRequests,
  type ConsumedCapacity,
  dynamoDbUnits,
  eventBridgeEntryBytes,
  eventBridgeEvents,
  lambdaGbSeconds,
  lambdaMemoryMb,
  type RefusedWrite,
  sqsRequests,
  UNIT_COMMANDS,
  type Usage,
} from './cost.js';

/** Calls made outside any handler: the SQS event source mapping's receives and deletes (billed to the account). */
export const EVENT_SOURCE = '(event source)';

/** What an operation made the platform do, summed over its repetitions. */
export interface Tally {
  /** DynamoDB calls by the Lambda that made them. */
  readonly calls: Map<string, number>;
  readonly invocations: Map<string, number>;
  /** Lambda GB-seconds by Lambda. */
  readonly gbSeconds: Map<string, number>;
  readUnits: number;
  writeUnits: number;
  /** Conditional writes DynamoDB refused (billed all the same). */
  refusedWrites: number;
  sqsRequests: number;
  /** Receives that found nothing: the event source's polling, a fixed cost per queue, not an operation's. */
  emptyReceives: number;
  eventBridgeEvents: number;
  eventBridgeBytes: number;
  apiGatewayRequests: number;
  kmsRequests: number;
  schedulerInvocations: number;
}

const newTally = (): Tally => ({
  calls: new Map(),
  invocations: new Map(),
  gbSeconds: new Map(),
  readUnits: 0,
  writeUnits: 0,
  refusedWrites: 0,
  sqsRequests: 0,
  emptyReceives: 0,
  eventBridgeEvents: 0,
  eventBridgeBytes: 0,
  apiGatewayRequests: 0,
  kmsRequests: 0,
  schedulerInvocations: 0,
});

const sum = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const add = (m: Map<string, number>, key: string, n = 1) => m.set(key, (m.get(key) ?? 0) + n);

/** A tally per repetition, as the cost model's Usage. */
export function usageOf(t: Tally, repetitions: number): Usage {
  return {
    dynamoDbCalls: sum(t.calls) / repetitions,
    readUnits: t.readUnits / repetitions,
    writeUnits: t.writeUnits / repetitions,
    sqsRequests: t.sqsRequests / repetitions,
    eventBridgeEvents: t.eventBridgeEvents / repetitions,
    eventBridgeBytes: t.eventBridgeBytes / repetitions,
    lambdaInvocations: sum(t.invocations) / repetitions,
    lambdaGbSeconds: sum(t.gbSeconds) / repetitions,
    apiGatewayRequests: t.apiGatewayRequests / repetitions,
    kmsRequests: t.kmsRequests / repetitions,
    schedulerInvocations: t.schedulerInvocations / repetitions,
  };
}

const API_LAMBDAS: ReadonlySet<string> = new Set(GROUPS.map((g) => g.name));
const DISPATCHER = 'domain-events-dispatcher';
const DYNAMO_MIDDLEWARE = 'benchCostDynamoDb';
const SQS_MIDDLEWARE = 'benchCostSqs';
/** SQS calls that carry a payload (billed per 64 KB chunk); the others are one request each. */
const SQS_SENDS = /^SendMessage(Batch)?Command$/;

export class CostMeter {
  private readonly lambda = new AsyncLocalStorage<string>();
  private tally = newTally();
  private attached: { db: DynamoDBDocumentClient; sqs: SQSClient; bus: BusEntries; restoreKms: () => void } | undefined;
  /** Handler invocations and DynamoDB / SQS calls under way. */
  private inFlight = 0;
  /** Bumped by every start and end of an invocation or call: what `settle` watches. */
  private activity = 0;

  /** For `startPlatform({ instrument })`: counts each invocation while attached. */
  readonly instrument: Instrument = (name, handler) =>
    (async (...args: Parameters<typeof handler>) => {
      if (!this.attached) return handler(...args);
      const tally = this.tally;
      add(tally.invocations, name);
      if (API_LAMBDAS.has(name)) tally.apiGatewayRequests += apiGatewayRequests(bodyBytes(args[0]));
      if (name === DISPATCHER) countBusEntries(tally, this.attached.bus, args[0] as unknown as DynamoDBStreamEvent);
      this.begin();
      const started = performance.now();
      try {
        return await this.lambda.run(name, () => handler(...args));
      } finally {
        add(tally.gbSeconds, name, lambdaGbSeconds(performance.now() - started, lambdaMemoryMb(name)));
        this.end();
      }
    }) as typeof handler;

  /** Starts counting the calls of these clients (the platform's own), bus entries and KMS requests. */
  attach(db: DynamoDBDocumentClient, sqs: SQSClient, bus: BusEntries): void {
    if (this.attached) return;
    db.middlewareStack.add(
      (next, context) => async (args) => {
        const command = context.commandName ?? '';
        if (!UNIT_COMMANDS.test(command)) return next(args);
        const tally = this.tally;
        add(tally.calls, this.caller());
        const input: { TransactItems?: unknown[]; ReturnConsumedCapacity: string } = {
          ...(args.input as Record<string, unknown>),
          ReturnConsumedCapacity: 'INDEXES',
        };
        let units: { read: number; write: number };
        this.begin();
        try {
          const out = await next({ ...args, input });
          units = dynamoDbUnits(
            command,
            (out.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity,
          );
          return out;
        } catch (err) {
          const refused = refusal(err, input);
          units = dynamoDbUnits(command, undefined, refused);
          if (refused) tally.refusedWrites++;
          throw err;
        } finally {
          tally.readUnits += units!.read;
          tally.writeUnits += units!.write;
          this.end();
        }
      },
      { step: 'initialize', name: DYNAMO_MIDDLEWARE },
    );
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const command = context.commandName ?? '';
        const input = args.input as { MessageBody?: string; Entries?: { MessageBody?: string }[] };
        // Long polls wait whether or not anything comes: only a receive that brings messages is
        // an operation's, and the one under way when it brings them (it may have started before).
        const receive = command === 'ReceiveMessageCommand';
        const started = this.tally;
        if (!receive) this.begin();
        try {
          const out = await next(args);
          const tally = receive ? this.tally : started;
          if (receive) {
            const messages = (out.output as { Messages?: { Body?: string }[] }).Messages ?? [];
            if (messages.length === 0) tally.emptyReceives++;
            else {
              tally.sqsRequests += sqsRequests(messages.reduce((n, m) => n + utf8(m.Body), 0));
              this.activity++;
            }
          } else if (SQS_SENDS.test(command)) {
            tally.sqsRequests += sqsRequests(
              utf8(input.MessageBody) + (input.Entries ?? []).reduce((n, e) => n + utf8(e.MessageBody), 0),
            );
          } else tally.sqsRequests += 1;
          return out;
        } finally {
          if (!receive) this.end();
        }
      },
      { step: 'initialize', name: SQS_MIDDLEWARE },
    );
    // Locally a data key is wrapped by the file key; on AWS each of these is one KMS request.
    const proto = LocalKeyWrapper.prototype;
    const { generateDataKey, unwrap } = proto;
    const meter = this;
    proto.generateDataKey = function (this: LocalKeyWrapper) {
      meter.tally.kmsRequests++;
      return generateDataKey.call(this);
    };
    proto.unwrap = function (this: LocalKeyWrapper, wrapped: string) {
      meter.tally.kmsRequests++;
      return unwrap.call(this, wrapped);
    };
    const restoreKms = () => Object.assign(proto, { generateDataKey, unwrap });
    this.attached = { db, sqs, bus, restoreKms };
  }

  /** Stops counting: the clients and handlers run as before. */
  detach(): void {
    if (!this.attached) return;
    this.attached.db.middlewareStack.remove(DYNAMO_MIDDLEWARE);
    this.attached.sqs.middlewareStack.remove(SQS_MIDDLEWARE);
    this.attached.restoreKms();
    this.attached = undefined;
  }

  /** What was counted since the last `take`, and a fresh tally from here. */
  take(): Tally {
    const taken = this.tally;
    this.tally = newTally();
    return taken;
  }

  /** Invocations of EventBridge Scheduler (the bench sends a schedule's fire as Scheduler would). */
  countSchedulerInvocation(): void {
    this.tally.schedulerInvocations++;
  }

  /**
   * Until nothing is under way and nothing has started or ended for `quietMs` (the stream
   * pollers are woken at once by a write, and their reads of DynamoDB Local take tens of
   * ms), at most `maxMs`. False when the platform was still busy then.
   */
  async settle(quietMs: number, maxMs = 15_000): Promise<boolean> {
    const deadline = Date.now() + maxMs;
    let seen = this.activity;
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
      if (this.inFlight > 0 || this.activity !== seen) {
        seen = this.activity;
        quietSince = Date.now();
      } else if (Date.now() - quietSince >= quietMs) return true;
    }
    return false;
  }

  private caller(): string {
    return this.lambda.getStore() ?? EVENT_SOURCE;
  }

  private begin(): void {
    this.inFlight++;
    this.activity++;
  }

  private end(): void {
    this.inFlight--;
    this.activity++;
  }
}

/** Where the dispatcher's bus entries come from and what they say (shared/adapters/eventbridge.ts). */
export interface BusEntries {
  /** The events table's physical name: each new event on its stream goes on the bus. */
  readonly eventsTable: string;
  /** The entries' `Source`, `dpm.<stage>`. */
  readonly source: string;
}

/** The dispatcher puts each new event of the events table's stream on the bus (functions/domain-events/dispatcher.ts). */
function countBusEntries(tally: Tally, bus: BusEntries, event: DynamoDBStreamEvent): void {
  for (const record of event.Records ?? []) {
    if (tableOfStream(record.eventSourceARN) !== bus.eventsTable) continue;
    const e = recordedEvent(record);
    if (!e) continue;
    const bytes = eventBridgeEntryBytes({ source: bus.source, detailType: e.type, detail: JSON.stringify(e) });
    tally.eventBridgeEvents += eventBridgeEvents(bytes);
    tally.eventBridgeBytes += bytes;
  }
}

const utf8 = (s: string | undefined) => (s === undefined ? 0 : Buffer.byteLength(s, 'utf8'));

/** An API request's body size (the API Lambdas' first argument is the Request). */
function bodyBytes(request: unknown): number {
  const length = Number((request as { headers?: Headers }).headers?.get('content-length') ?? 0);
  return Number.isFinite(length) ? length : 0;
}

/** A refused conditional write, billed by AWS though DynamoDB Local reports no capacity for it. */
function refusal(err: unknown, input: { TransactItems?: unknown[] }): RefusedWrite | undefined {
  const name = (err as { name?: string }).name;
  if (name === 'ConditionalCheckFailedException') return { kind: 'condition' };
  if (name === 'TransactionCanceledException')
    return { kind: 'transaction', actions: input.TransactItems?.length ?? 1 };
  return undefined;
}
