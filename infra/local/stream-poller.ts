import { setMaxListeners } from 'node:events';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as timeout } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  type AttributeValue as StreamsAttributeValue,
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBBatchResponse, DynamoDBRecord, StreamRecord } from 'aws-lambda';
import { emulatorOptions, requestTimeouts } from '../../shared/aws/client-options.js';
import type { StreamHandler } from '../../shared/aws/lambda.js';
import { settledWithin } from '../../shared/concurrency.js';
import { logger } from '../../shared/logger.js';
import { latestStreamArns } from './provision.js';
import { backoffMs } from '../../shared/retry.js';

export interface StreamPollerOptions {
  readonly endpoint: string;
  readonly region: string;
  /** Physical table names whose streams are read. */
  readonly tables: readonly string[];
  readonly handler: StreamHandler;
  /** JSON file of the checkpoints, one file per poller; absent: checkpoints in memory. */
  readonly checkpointFile?: string;
  /** Records per handler call at most (default 100; one GetRecords, so at most 1000). */
  readonly batchSize?: number;
  /** Before a failed batch is handed again (default 1000). */
  readonly retryDelayMs?: number;
}

/** An idle shard is polled again after this long at first, ... */
const MIN_IDLE_MS = 25;
/** ... growing by this factor with each empty answer (at MAX_IDLE_MS after about 25 s), ... */
const IDLE_GROWTH = 1.25;
/**
 * ... up to this long. DynamoDB Local's GetRecords costs it time in proportion to what its
 * streams hold (≈ 50 ms each at ~15,000 records), so ~18 idle shards polled every second
 * kept it half busy once a local database had grown. The platform wakes the shards of the
 * tables it writes (`wake`) at once, so this bounds only the latency of writes made by
 * another process.
 */
const MAX_IDLE_MS = 5_000;
/**
 * Tables' streams and streams' shards are listed again this often (and at once when a shard
 * ends or a stream is gone); every FAST one while a table has no stream yet.
 */
const DISCOVERY_INTERVAL_MS = 10_000;
const DISCOVERY_INTERVAL_FAST_MS = 1_000;
/** Back-off after failed calls to DynamoDB, doubling up to the maximum. */
const ERROR_DELAY_MS = 250;
const MAX_ERROR_DELAY_MS = 5_000;

interface ShardCheckpoint {
  /** The last record handled successfully. */
  readonly sequenceNumber?: string;
  /** Every record of the (closed) shard was handled: its children may start. */
  readonly finished?: true;
}

/**
 * Where each shard was left, by stream ARN and shard id. Saved after every change (a temp
 * file renamed over the old one), so a process killed at any moment finds the checkpoint
 * of the last batch it handled: it hands again at most the batch it was handling.
 */
class Checkpoints {
  private readonly streams = new Map<string, Map<string, ShardCheckpoint>>();

  constructor(private readonly file: string | undefined) {
    if (!file) return;
    mkdirSync(dirname(file), { recursive: true });
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    try {
      const saved = JSON.parse(text) as { streams?: Record<string, Record<string, ShardCheckpoint>> };
      for (const [arn, shards] of Object.entries(saved.streams ?? {})) {
        this.streams.set(arn, new Map(Object.entries(shards)));
      }
    } catch (err) {
      // Only a hand-edited file can be unreadable: starting from the oldest records repeats, never loses.
      logger.error('stream poller: unreadable checkpoint file, every shard starts at its oldest record', {
        file,
        error: err as Error,
      });
    }
  }

  get(arn: string, shardId: string): ShardCheckpoint | undefined {
    return this.streams.get(arn)?.get(shardId);
  }

  set(arn: string, shardId: string, checkpoint: ShardCheckpoint): void {
    let shards = this.streams.get(arn);
    if (!shards) this.streams.set(arn, (shards = new Map()));
    shards.set(shardId, checkpoint);
    this.save();
  }

  /** Forgets streams no longer read (a table created again has a new stream) and shards trimmed away. */
  retain(listed: ReadonlyMap<string, ReadonlySet<string>>): void {
    let changed = false;
    for (const [arn, shards] of this.streams) {
      const keep = listed.get(arn);
      if (!keep) {
        this.streams.delete(arn);
        changed = true;
        continue;
      }
      for (const shardId of shards.keys()) {
        if (!keep.has(shardId)) {
          shards.delete(shardId);
          changed = true;
        }
      }
    }
    if (changed) this.save();
  }

  private save(): void {
    if (!this.file) return;
    const streams = Object.fromEntries(
      [...this.streams].map(([arn, shards]) => [arn, Object.fromEntries(shards)] as const),
    );
    // Synchronous: a few hundred bytes, and no two saves can interleave. One poller per file
    // (the data directory's lock keeps it to one process), so the temp file's name is fixed.
    const temp = `${this.file}.tmp`;
    try {
      writeFileSync(temp, JSON.stringify({ streams }));
      renameSync(temp, this.file);
    } catch (err) {
      // The checkpoint stays in memory: only a restart would hand those records again.
      logger.error('stream poller: could not save the checkpoints', { file: this.file, error: err as Error });
    }
  }
}

interface StreamState {
  readonly table: string;
  readonly arn: string;
  /** The shards DescribeStream listed last, by id. */
  shards: Map<string, Shard>;
  /** No longer the table's stream (the table was created again, or its stream replaced). */
  retired: boolean;
}

/** Waits `ms`, or less when woken through one of the sets the waiter is put in. */
async function pause(ms: number, ...wakers: Set<() => void>[]): Promise<void> {
  const woken = new AbortController();
  const wake = () => woken.abort();
  for (const set of wakers) set.add(wake);
  try {
    await timeout(ms, undefined, { signal: woken.signal });
  } catch {
    // woken
  } finally {
    for (const set of wakers) set.delete(wake);
  }
}

const errorName = (err: unknown) => (err as { name?: string } | undefined)?.name;

/**
 * What Lambda's DynamoDB stream event source does (with ReportBatchItemFailures), for the
 * local platform: each shard's records in order, in batches, to the handler; a failed
 * record and those after it handed again after `retryDelayMs`, never skipped; a child
 * shard only after its parent is finished. Shards are read concurrently, so the handler
 * may be called for several shards (tables) at once, as Lambda would run it.
 *
 * Latency: a shard that returned records is polled again at once; an empty one after
 * MIN_IDLE_MS, backing off to MAX_IDLE_MS.
 */
export interface StreamPoller {
  /**
   * Stops reading (calls under way are cut short) and waits for the handler calls under way
   * and their checkpoints, at most `drainMs` (default: until they are done); a batch left
   * unfinished is handed again after the next start.
   */
  stop(drainMs?: number): Promise<void>;
  /**
   * Something was just written: idle shards are read again now rather than after their
   * back-off (the local platform calls it after the writes of its own client). With table
   * names, only those tables' shards; without, every shard.
   */
  wake(tables?: Iterable<string>): void;
}

export function startStreamPoller(options: StreamPollerOptions): StreamPoller {
  const { handler, region } = options;
  const tables = [...new Set(options.tables)];
  const batchSize = Math.min(Math.max(1, options.batchSize ?? 100), 1000);
  const retryDelayMs = options.retryDelayMs ?? 1000;
  const clientOptions = {
    ...emulatorOptions({ region, endpoint: options.endpoint }),
    requestHandler: requestTimeouts(),
  };
  const dynamodb = new DynamoDBClient(clientOptions);
  const streams = new DynamoDBStreamsClient(clientOptions);
  // No SDK logger is configured: its middleware would only copy every answer for nothing.
  dynamodb.middlewareStack.remove('loggerMiddleware');
  streams.middlewareStack.remove('loggerMiddleware');
  const checkpoints = new Checkpoints(options.checkpointFile);
  const byTable = new Map<string, StreamState>();
  const reading = new Map<string, Promise<void>>();
  /** Everything waiting: stop() wakes it. */
  const waiting = new Set<() => void>();
  /** Idle shards waiting for their next read, by table: wake() wakes them. */
  const idle = new Map(tables.map((t) => [t, new Set<() => void>()]));
  const discoveryWanted = new Set<() => void>();
  let discoveryAgain = false;
  const abort = new AbortController();
  // Every call of every shard listens to it.
  setMaxListeners(0, abort.signal);
  const send = { abortSignal: abort.signal };
  let running = true;

  async function listShards(arn: string): Promise<Map<string, Shard>> {
    const shards = new Map<string, Shard>();
    let start: string | undefined;
    do {
      const out = await streams.send(new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: start }), send);
      for (const shard of out.StreamDescription?.Shards ?? []) if (shard.ShardId) shards.set(shard.ShardId, shard);
      start = out.StreamDescription?.LastEvaluatedShardId;
    } while (start);
    return shards;
  }

  /** Reads the tables' current streams and their shards; starts each shard that is ready. */
  async function discover(): Promise<void> {
    const arns = await latestStreamArns(dynamodb, tables);
    for (const [table, arn] of arns) {
      const current = byTable.get(table);
      if (current?.arn === arn) continue;
      if (current) current.retired = true;
      if (arn) byTable.set(table, { table, arn, shards: new Map(), retired: false });
      else byTable.delete(table);
    }
    for (const stream of byTable.values()) {
      stream.shards = await listShards(stream.arn);
      startReadyShards(stream);
    }
    checkpoints.retain(new Map([...byTable.values()].map((s) => [s.arn, new Set(s.shards.keys())])));
  }

  /**
   * Starts every shard not finished and not being read whose parent is finished (or gone:
   * a parent trimmed away has nothing left to hand).
   */
  function startReadyShards(stream: StreamState): void {
    for (const [shardId, shard] of stream.shards) {
      const key = `${stream.arn} ${shardId}`;
      if (!running || stream.retired || reading.has(key) || checkpoints.get(stream.arn, shardId)?.finished) continue;
      const parent = shard.ParentShardId;
      if (parent && stream.shards.has(parent) && !checkpoints.get(stream.arn, parent)?.finished) continue;
      reading.set(
        key,
        readShard(stream, shardId)
          .catch((err) =>
            logger.error('stream poller: shard reader stopped', { table: stream.table, shardId, error: err }),
          )
          .finally(() => reading.delete(key)),
      );
    }
  }

  async function discoveryLoop(): Promise<void> {
    let failures = 0;
    while (running) {
      discoveryAgain = false;
      try {
        await discover();
        failures = 0;
      } catch (err) {
        if (!running) return;
        failures++;
        logger.warn('stream poller: listing the streams failed, retrying', { tables, error: err as Error });
      }
      if (!running) return;
      if (discoveryAgain && !failures) continue;
      const waitMs = failures
        ? errorDelay(failures)
        : byTable.size < tables.length
          ? DISCOVERY_INTERVAL_FAST_MS
          : DISCOVERY_INTERVAL_MS;
      await pause(waitMs, waiting, discoveryWanted);
    }
  }

  /** A listing soon, also when one is under way (it may have missed what prompted this). */
  const requestDiscovery = () => {
    discoveryAgain = true;
    for (const wake of [...discoveryWanted]) wake();
  };

  /** An iterator at the shard's checkpoint: after its last handled record, or at its oldest one. */
  async function iteratorAtCheckpoint(stream: StreamState, shardId: string, fromOldest = false) {
    const after = fromOldest ? undefined : checkpoints.get(stream.arn, shardId)?.sequenceNumber;
    const out = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: stream.arn,
        ShardId: shardId,
        ...(after
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
      send,
    );
    return out.ShardIterator;
  }

  /** Whether DescribeStream says the shard is closed (it has an ending sequence number). */
  async function isClosed(stream: StreamState, shardId: string): Promise<boolean> {
    stream.shards = await listShards(stream.arn);
    return stream.shards.get(shardId)?.SequenceNumberRange?.EndingSequenceNumber !== undefined;
  }

  async function readShard(stream: StreamState, shardId: string): Promise<void> {
    const active = () => running && !stream.retired && stream.shards.has(shardId);
    let iterator: string | undefined;
    let idleMs = MIN_IDLE_MS;
    let failures = 0;
    /**
     * After a TrimmedDataAccessException the shard is read from its oldest record again:
     * records up to the checkpoint are passed over (DynamoDB Local is known to raise it
     * spuriously), so nothing handled is handed again.
     */
    let passOverThrough: bigint | undefined;
    while (active()) {
      try {
        let records: _Record[] = [];
        let next: string | undefined;
        iterator ??= await iteratorAtCheckpoint(stream, shardId, passOverThrough !== undefined);
        if (iterator) {
          const out = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: batchSize }), send);
          records = out.Records ?? [];
          next = out.NextShardIterator;
        }
        failures = 0;
        if (passOverThrough !== undefined && records.length > 0) {
          const through = passOverThrough;
          records = records.filter((r) => BigInt(r.dynamodb?.SequenceNumber ?? '0') > through);
          if (records.length > 0) passOverThrough = undefined;
        }
        if (records.length > 0) {
          if (!active()) return;
          if (!(await deliver(stream, shardId, records))) {
            iterator = undefined;
            await pause(retryDelayMs, waiting);
            continue;
          }
          idleMs = MIN_IDLE_MS;
        }
        if (!next) {
          // No next iterator: the shard is closed and read to its end. DynamoDB Local may also
          // answer so for an open shard: then it is read again from the checkpoint.
          if (await isClosed(stream, shardId)) {
            const checkpoint = checkpoints.get(stream.arn, shardId);
            checkpoints.set(stream.arn, shardId, { ...checkpoint, finished: true });
            startReadyShards(stream);
            requestDiscovery();
            return;
          }
          iterator = undefined;
          if (records.length === 0) await pause(MAX_IDLE_MS, waiting);
          continue;
        }
        iterator = next;
        if (records.length === 0) {
          await pause(idleMs, waiting, idle.get(stream.table)!);
          idleMs = Math.min(MAX_IDLE_MS, idleMs * IDLE_GROWTH);
        }
      } catch (err) {
        if (!running) return;
        iterator = undefined;
        failures++;
        const name = errorName(err);
        // Iterators expire after 15 minutes: a new one from the checkpoint, at once.
        if (name === 'ExpiredIteratorException' && failures === 1) continue;
        if (name === 'TrimmedDataAccessException' && failures === 1) {
          const after = checkpoints.get(stream.arn, shardId)?.sequenceNumber;
          // DynamoDB Local raises it for a shard without records yet once another table took
          // the sequence number its iterator pointed at: nothing worth a warning then.
          const attributes = { table: stream.table, shardId, checkpoint: after };
          const message = 'stream poller: trimmed data access, reading the shard from its oldest record';
          if (after) logger.warn(message, attributes);
          else logger.debug(message, attributes);
          passOverThrough = BigInt(after ?? '0');
          continue;
        }
        // A stream or shard gone (table deleted, shard trimmed away): the listing says what is left.
        if (name === 'ResourceNotFoundException') requestDiscovery();
        logger.warn('stream poller: reading the shard failed, retrying', {
          table: stream.table,
          shardId,
          error: err as Error,
        });
        await pause(errorDelay(failures), waiting);
      }
    }
  }

  /**
   * Hands a batch to the handler and checkpoints what succeeded. True when all of it did;
   * else the checkpoint is just before the first failed record (a thrown error fails all).
   */
  async function deliver(stream: StreamState, shardId: string, records: _Record[]): Promise<boolean> {
    let failedAt: number;
    try {
      const result = await handler({ Records: records.map((r) => toLambdaRecord(r, stream.arn, region)) });
      failedAt = firstFailure(records, result);
      if (failedAt < records.length) {
        logger.warn('stream poller: the handler reported failed records; they are handed again', {
          table: stream.table,
          shardId,
          failed: result.batchItemFailures.length,
          from: records[failedAt]?.dynamodb?.SequenceNumber,
          retryDelayMs,
        });
      }
    } catch (err) {
      failedAt = 0;
      logger.warn('stream poller: the handler failed; the batch is handed again', {
        table: stream.table,
        shardId,
        from: records[0]?.dynamodb?.SequenceNumber,
        records: records.length,
        retryDelayMs,
        error: err as Error,
      });
    }
    const lastDone = records[failedAt - 1]?.dynamodb?.SequenceNumber;
    if (lastDone) checkpoints.set(stream.arn, shardId, { sequenceNumber: lastDone });
    return failedAt === records.length;
  }

  const discovery = discoveryLoop();
  let stopped: Promise<void> | undefined;
  return {
    wake: (written) => {
      const sets = written ? [...new Set(written)].flatMap((t) => idle.get(t) ?? []) : [...idle.values()];
      for (const set of sets) for (const wake of [...set]) wake();
    },
    stop: (drainMs) =>
      (stopped ??= (async () => {
        running = false;
        abort.abort();
        for (const wake of [...waiting]) wake();
        await discovery;
        // Handler calls under way finish, and their checkpoints are saved.
        await settledWithin([...reading.values()], drainMs);
        dynamodb.destroy();
        streams.destroy();
      })()),
  };
}

const errorDelay = (failures: number) => backoffMs(failures - 1, { baseMs: ERROR_DELAY_MS, maxMs: MAX_ERROR_DELAY_MS });

/**
 * Index of the first record to hand again (records.length: none), as Lambda reads a
 * partial batch response: no failures is success; an identifier that is empty or names no
 * record of the batch fails the whole batch; else the lowest failed record.
 */
function firstFailure(records: _Record[], result: DynamoDBBatchResponse | undefined): number {
  const failures = result?.batchItemFailures ?? [];
  if (failures.length === 0) return records.length;
  const index = new Map(records.map((r, i) => [r.dynamodb?.SequenceNumber, i]));
  let first = records.length;
  for (const failure of failures) {
    const at = failure?.itemIdentifier ? index.get(failure.itemIdentifier) : undefined;
    if (at === undefined) return 0;
    first = Math.min(first, at);
  }
  return first;
}

/** A stream record as Lambda hands it: binary values in base64, the time in epoch seconds. */
function toLambdaRecord(record: _Record, streamArn: string, region: string): DynamoDBRecord {
  const d = record.dynamodb ?? {};
  const dynamodb: StreamRecord = {
    ...(d.ApproximateCreationDateTime && {
      ApproximateCreationDateTime: d.ApproximateCreationDateTime.getTime() / 1000,
    }),
    ...(d.Keys && { Keys: toLambdaImage(d.Keys) }),
    ...(d.NewImage && { NewImage: toLambdaImage(d.NewImage) }),
    ...(d.OldImage && { OldImage: toLambdaImage(d.OldImage) }),
    SequenceNumber: d.SequenceNumber,
    SizeBytes: d.SizeBytes,
    StreamViewType: d.StreamViewType,
  };
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    // DynamoDB Local names its own region ("ddblocal"); Lambda names the table's.
    awsRegion: region,
    dynamodb,
    eventSourceARN: streamArn,
    // Present for deletions by TTL ({ type: "Service", principalId: "dynamodb.amazonaws.com" }).
    ...(record.userIdentity && {
      userIdentity: { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId },
    }),
  };
}

function toLambdaImage(image: Record<string, StreamsAttributeValue>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([name, value]) => [name, toLambdaValue(value)]));
}

function toLambdaValue(value: StreamsAttributeValue): AttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (value.L !== undefined) return { L: value.L.map(toLambdaValue) };
  if (value.M !== undefined) return { M: toLambdaImage(value.M) };
  // S, N, BOOL, NULL, SS and NS look the same in both.
  // DynamoDB Local streams an empty map as a value of no type: `{}` (AWS sends `{"M":{}}`).
  if (Object.keys(value).length === 0) return { M: {} };
  return value as AttributeValue;
}
