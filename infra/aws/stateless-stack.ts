import { CfnOutput, Duration, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  GROUPS,
  STREAM_CONSUMERS,
  WORKERS,
  type LambdaDefinition,
  type StreamConsumerDefinition,
  type WorkerDefinition,
} from '../groups.js';
import { QUEUES, TABLES, type QueueKey, type TableDefinition } from '../tables.js';
import { lambdaAlarms } from './alarms.js';
import { STREAM_RETRY } from './domain-events.js';
import { SqsDeadLetterDestination } from './grants.js';
import { serviceHttpApi } from './http-api.js';
import {
  assertSecretsGiven,
  importMigrationVpc,
  lambdaFor,
  reservedConcurrencyOf,
  type LambdaResources,
} from './lambdas.js';
import type { ServiceFunction } from './service-function.js';
import { assertDeployable, type Stage } from './stages.js';

export interface StatelessStackProps extends StackProps, Omit<LambdaResources, 'migrationVpc'> {
  readonly deadLetterQueues: Readonly<Record<QueueKey, IQueue>>;
  /** Each stream consumer's dead-letter queue, by consumer name (the stateful stack creates them). */
  readonly streamDeadLetterQueues: Readonly<Record<string, IQueue>>;
  /** Queue consumers; defaults to `WORKERS` (tests pass others to exercise the checks). */
  readonly workers?: readonly WorkerDefinition[];
  /** Stream consumers; defaults to `STREAM_CONSUMERS` (tests pass others to exercise the checks). */
  readonly streamConsumers?: readonly StreamConsumerDefinition[];
}

/**
 * Compute and routing: one Lambda per endpoint group behind one HTTP API, one per queue worker,
 * one per stream consumer, each built from its definition in infra/groups.ts.
 */
export class StatelessStack extends Stack {
  readonly functions: ReadonlyMap<string, ServiceFunction>;
  readonly api: HttpApi;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    const { stage } = props;
    const workers = props.workers ?? WORKERS;
    const streamConsumers = props.streamConsumers ?? STREAM_CONSUMERS;
    // Before any construct: a misfit fails the synth with one line, not a half-built tree.
    assertDeployable(stage);
    for (const worker of workers) assertFitsVisibilityTimeout(worker);
    for (const worker of workers) assertConcurrencyWithinReservation(stage, worker);
    for (const consumer of streamConsumers) assertStreamsExist(consumer, props.streamDeadLetterQueues);
    assertSecretsGiven(props);

    const resources: LambdaResources = { ...props, migrationVpc: importMigrationVpc(this, stage) };
    const build = (definition: LambdaDefinition) => lambdaFor(this, definition, resources);
    const lambdas: (readonly [LambdaDefinition, ServiceFunction])[] = [
      ...GROUPS.map((group) => [group, build(group)] as const),
      ...workers.map((worker) => [worker, consumeQueue(build(worker), worker, props)] as const),
      ...streamConsumers.map((consumer) => [consumer, consumeStreams(build(consumer), consumer, props)] as const),
    ];
    this.functions = new Map(lambdas.map(([{ name }, fn]) => [name, fn]));
    const { api, apiStage } = serviceHttpApi(this, stage, GROUPS, this.functions);
    this.api = api;
    lambdaAlarms(this, stage, lambdas);
    new CfnOutput(this, 'ApiUrl', { value: apiStage.url, description: `dpm ${stage.name} HTTP API` });
  }
}

/** A worker's SQS event source; it adds the queue's consume grant (and its key's decrypt). */
function consumeQueue(fn: ServiceFunction, worker: WorkerDefinition, props: StatelessStackProps): ServiceFunction {
  const queue = (worker.deadLetter ? props.deadLetterQueues : props.queues)[worker.consumes];
  fn.lambda.addEventSource(
    new SqsEventSource(queue, {
      batchSize: worker.batchSize,
      reportBatchItemFailures: true,
      // At most this many invocations at once: a flood of messages waits in the queue
      // instead of throttling the function (which would use up receive counts).
      maxConcurrency: maxConcurrencyOf(props.stage, worker),
      ...(worker.maxBatchingWindowSeconds !== undefined && {
        maxBatchingWindow: Duration.seconds(worker.maxBatchingWindowSeconds),
      }),
    }),
  );
  return fn;
}

/**
 * A stream consumer's event sources, one per stream: each adds its stream's read grant (and the
 * key's decrypt), its dead-letter destination the send grant on that queue.
 */
function consumeStreams(
  fn: ServiceFunction,
  consumer: StreamConsumerDefinition,
  props: StatelessStackProps,
): ServiceFunction {
  Validations.of(fn).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'the stream event source needs dynamodb:ListStreams, which takes no resource (it lists stream ARNs ' +
      'and reads no data; test/infra checks that nothing else is granted on every resource)',
  });
  const onFailure = new SqsDeadLetterDestination(props.streamDeadLetterQueues[consumer.name]!, props.key);
  for (const key of consumer.streams) {
    fn.lambda.addEventSource(
      new DynamoEventSource(props.tables[key], {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: consumer.batchSize,
        // Partial batch responses: the first failed record comes back with all after it, so
        // one item's records keep their order.
        reportBatchItemFailures: true,
        bisectBatchOnError: true,
        retryAttempts: STREAM_RETRY.retryAttempts,
        maxRecordAge: Duration.hours(STREAM_RETRY.maxRecordAgeHours),
        onFailure,
      }),
    );
  }
  return fn;
}

/**
 * SQS hides a received message for the visibility timeout; a worker still running past it
 * would see the message redelivered. AWS advises at least six times the function's timeout
 * for an SQS event source (room for its retries of a throttled batch before the message
 * comes back). The dead-letter queue shares the definition's timeout (see the stateful stack).
 */
export const VISIBILITY_PER_TIMEOUT = 6;

function assertFitsVisibilityTimeout(worker: WorkerDefinition): void {
  const queue = QUEUES[worker.consumes];
  if (queue.visibilityTimeoutSeconds < VISIBILITY_PER_TIMEOUT * worker.timeoutSeconds) {
    throw new Error(
      `queue "${queue.id}${worker.deadLetter ? '-dlq' : ''}" visibility timeout (${queue.visibilityTimeoutSeconds} s) ` +
        `must be at least ${VISIBILITY_PER_TIMEOUT} times the timeout of worker "${worker.name}" (${worker.timeoutSeconds} s)`,
    );
  }
}

/** The SQS event source's `maxConcurrency` of a worker on the stage: the stage setting it names. */
export const maxConcurrencyOf = (stage: Stage, worker: Pick<WorkerDefinition, 'maxConcurrencySetting'>): number =>
  stage[worker.maxConcurrencySetting];

/**
 * A function throttled below its event source's `maxConcurrency` hands batches back to the
 * queue, each a receive more, until messages reach the dead-letter queue without having
 * failed: the event source may never carry more than the function's reservation.
 */
function assertConcurrencyWithinReservation(stage: Stage, worker: WorkerDefinition): void {
  const reserved = reservedConcurrencyOf(stage, worker);
  const max = maxConcurrencyOf(stage, worker);
  if (reserved !== undefined && max > reserved) {
    throw new Error(
      `stage "${stage.name}": worker "${worker.name}" maxConcurrency (${max}) must not exceed its reserved concurrency (${reserved})`,
    );
  }
}

/**
 * A stream consumer reads only tables that have a stream (DynamoEventSource would fail with
 * the construct path instead), and the stateful stack must have made its dead-letter queue.
 */
function assertStreamsExist(
  consumer: StreamConsumerDefinition,
  deadLetterQueues: Readonly<Record<string, IQueue>>,
): void {
  for (const key of consumer.streams) {
    if ((TABLES[key] as TableDefinition).stream !== true) {
      throw new Error(`stream consumer "${consumer.name}" reads table "${TABLES[key].id}", which has no stream`);
    }
  }
  if (!deadLetterQueues[consumer.name]) {
    throw new Error(`stream consumer "${consumer.name}" has no dead-letter queue in the stateful stack`);
  }
}
