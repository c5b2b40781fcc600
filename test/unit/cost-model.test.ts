import { describe, expect, it } from 'vitest';
import { STAGES } from '../../infra/aws/stages.js';
import {
  apiGatewayRequests,
  chunks,
  dollars,
  dynamoDbUnits,
  eventBridgeEntryBytes,
  eventBridgeEvents,
  FLOORS,
  floorUsage,
  lambdaGbSeconds,
  lambdaMemoryMb,
  NO_USAGE,
  perMillion,
  PRICES,
  readUnits,
  sqsRequests,
  stepFunctionsRun,
  timesFloor,
  type Usage,
  writeUnits,
} from '../bench/cost.js';

const KB = 1024;

describe('the cost model of the benchmark (test/bench/cost.ts)', () => {
  it('rounds DynamoDB writes up to 1 KB units and doubles transactional ones', () => {
    expect(writeUnits(1)).toBe(1);
    expect(writeUnits(KB)).toBe(1);
    expect(writeUnits(KB + 1)).toBe(2);
    expect(writeUnits(3 * KB)).toBe(3);
    expect(writeUnits(3 * KB, true)).toBe(6);
    expect(writeUnits(KB + 1, true)).toBe(4);
  });

  it('rounds DynamoDB reads up to 4 KB units: half when eventually consistent, twice in a transaction', () => {
    expect(readUnits(100, 'eventual')).toBe(0.5);
    expect(readUnits(4 * KB, 'strong')).toBe(1);
    expect(readUnits(4 * KB + 1, 'strong')).toBe(2);
    expect(readUnits(9000, 'eventual')).toBe(1.5);
    expect(readUnits(5 * KB, 'transactional')).toBe(4);
  });

  it('counts each index a write touches, and a transaction’s index upkeep once', () => {
    // As DynamoDB Local reports a 100-byte put into two GSIs, and a transaction of two puts, one into a GSI.
    const put = {
      TableName: 't',
      CapacityUnits: 3,
      Table: { CapacityUnits: 1 },
      GlobalSecondaryIndexes: { a: { CapacityUnits: 1 }, b: { CapacityUnits: 1 } },
    };
    expect(dynamoDbUnits('PutItemCommand', put)).toEqual({ read: 0, write: 3 });
    const indexKeyChanged = { Table: { CapacityUnits: 1 }, GlobalSecondaryIndexes: { a: { CapacityUnits: 2 } } };
    expect(dynamoDbUnits('UpdateItemCommand', indexKeyChanged)).toEqual({ read: 0, write: 3 });
    const transaction = [
      {
        TableName: 't',
        CapacityUnits: 6,
        Table: { CapacityUnits: 4 },
        GlobalSecondaryIndexes: { a: { CapacityUnits: 2 } },
      },
    ];
    expect(dynamoDbUnits('TransactWriteItemsCommand', transaction)).toEqual({ read: 0, write: 5 });
    // Only a total (ReturnConsumedCapacity TOTAL): taken as it is.
    expect(dynamoDbUnits('PutItemCommand', { CapacityUnits: 2 })).toEqual({ read: 0, write: 2 });
  });

  it('reads the units of reads, across tables and indexes', () => {
    const onIndex = {
      CapacityUnits: 0.5,
      Table: { CapacityUnits: 0 },
      GlobalSecondaryIndexes: { a: { CapacityUnits: 0.5 } },
    };
    expect(dynamoDbUnits('QueryCommand', onIndex)).toEqual({ read: 0.5, write: 0 });
    expect(dynamoDbUnits('TransactGetItemsCommand', [{ Table: { CapacityUnits: 8 } }])).toEqual({ read: 8, write: 0 });
    const batch = [{ Table: { CapacityUnits: 2 } }, { Table: { CapacityUnits: 0.5 } }];
    expect(dynamoDbUnits('BatchGetItemCommand', batch)).toEqual({ read: 2.5, write: 0 });
  });

  it('bills refused conditional writes, which DynamoDB Local reports nothing for', () => {
    expect(dynamoDbUnits('PutItemCommand', undefined, { kind: 'condition' })).toEqual({ read: 0, write: 1 });
    expect(dynamoDbUnits('TransactWriteItemsCommand', undefined, { kind: 'transaction', actions: 3 })).toEqual({
      read: 0,
      write: 6,
    });
  });

  it('cuts SQS and EventBridge payloads in 64 KB chunks and API Gateway requests in 512 KB', () => {
    expect(chunks(0, 64 * KB)).toBe(1);
    expect(sqsRequests(0)).toBe(1);
    expect(sqsRequests(64 * KB)).toBe(1);
    expect(sqsRequests(64 * KB + 1)).toBe(2);
    expect(sqsRequests(256 * KB)).toBe(4);
    expect(eventBridgeEvents(64 * KB)).toBe(1);
    expect(eventBridgeEvents(100 * KB)).toBe(2);
    expect(apiGatewayRequests(512 * KB)).toBe(1);
    expect(apiGatewayRequests(512 * KB + 1)).toBe(2);
    // 14 bytes of Time, then UTF-8 bytes: 'é' is two.
    expect(eventBridgeEntryBytes({ source: 'dpm.prod', detailType: 'é', detail: '{}' })).toBe(26);
    expect(eventBridgeEntryBytes({ source: 'a', detailType: 'b', detail: 'c', resources: ['de'], time: false })).toBe(
      5,
    );
  });

  it('turns handler time into GB-seconds at the configured memory, rounded up to the millisecond', () => {
    expect(lambdaGbSeconds(100.2, 1024)).toBeCloseTo(0.101, 12);
    expect(lambdaGbSeconds(10, 512)).toBeCloseTo(0.005, 12);
    expect(lambdaMemoryMb('crews-worker')).toBe(STAGES.prod.lambdaMemoryMb);
    expect(lambdaMemoryMb('crews-worker', 'dev')).toBe(STAGES.dev.lambdaMemoryMb);
  });

  it('prices a known set of counts in dollars per million operations', () => {
    const usage: Usage = {
      dynamoDbCalls: 5,
      readUnits: 2,
      writeUnits: 10,
      sqsRequests: 3,
      eventBridgeEvents: 2,
      eventBridgeBytes: 2 * KB,
      lambdaInvocations: 4,
      lambdaGbSeconds: 0.5,
      apiGatewayRequests: 1,
      kmsRequests: 2,
      schedulerInvocations: 1,
    };
    // 0.25 + 6.25 + 1.2 + 2 + 0.19073486328125 (2 KiB archived) + 0.8 + 6.6667 + 1 + 6 + 1, in µ$
    expect(perMillion(usage)).toBeCloseTo(25.35743486328125, 9);
    expect(dollars(NO_USAGE)).toBe(0);
    expect(perMillion({ ...NO_USAGE, writeUnits: 1 })).toBeCloseTo(0.625, 12);
    expect(perMillion({ ...NO_USAGE, readUnits: 1 })).toBeCloseTo(0.125, 12);
    expect(perMillion({ ...NO_USAGE, lambdaGbSeconds: 1 })).toBeCloseTo(13.3334, 9);
  });

  it('prices the same run on Step Functions Standard and Express', () => {
    const three = stepFunctionsRun(3, 40);
    expect(three.standard * 1e6).toBeCloseTo(75, 9);
    // one request + 100 ms × 64 MB
    expect(three.express * 1e6).toBeCloseTo(1 + 0.1 * (64 / 1024) * 16.67, 9);
    // 101 ms → 200 ms; 100 MB → 128 MB
    expect(stepFunctionsRun(3, 101, 100).express * 1e6).toBeCloseTo(1 + 0.2 * (128 / 1024) * 16.67, 9);
  });

  it('writes out every floor with its reason, and prices it at the measured Lambda time', () => {
    for (const [op, floor] of Object.entries(FLOORS)) {
      expect(floor.why.length, op).toBeGreaterThan(10);
      expect(floor.dynamoDbCalls, op).toBeGreaterThanOrEqual(0);
    }
    // Calls: E2's 2 and the worker's 1, the events in their transactions. Units: 2 items in
    // E2's transaction, 2 in the worker's (the run, its entries), doubled; a put per event: 4 + 4 + 3.
    expect(FLOORS['run-3-render']).toMatchObject({
      dynamoDbCalls: 3,
      writeUnits: 11,
      sqsRequests: 3,
      eventBridgeEvents: 3,
      lambdaInvocations: 4,
    });
    expect(FLOORS.e1).toMatchObject({ dynamoDbCalls: 1, writeUnits: 2, eventBridgeEvents: 1, lambdaInvocations: 2 });
    const measured: Usage = { ...NO_USAGE, lambdaInvocations: 6, lambdaGbSeconds: 0.6, readUnits: 3 };
    const floor = floorUsage(FLOORS.e1, measured);
    expect(floor.lambdaGbSeconds).toBeCloseTo(0.2, 12);
    expect(floor.writeUnits).toBe(2);
    expect(floor.lambdaInvocations).toBe(2);
    // a list's read units are the data's: the measured ones
    expect(floorUsage(FLOORS.e10, measured).readUnits).toBe(3);
    expect(timesFloor(3, 2)).toBe(1.5);
    expect(timesFloor(0, 0)).toBe(1);
    expect(timesFloor(1, 0)).toBe(Infinity);
  });

  it('cites a source for every price', () => {
    for (const price of Object.values(PRICES)) {
      expect(price.source).toMatch(/^https:\/\/aws\.amazon\.com\/[a-z-]+\/pricing\//);
      expect(price.usd).toBeGreaterThan(0);
    }
  });
});
