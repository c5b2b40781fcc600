import { Duration, Stack } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Stats, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import type { LambdaDefinition } from '../groups.js';
import { ITERATOR_AGE_ALARM } from './domain-events.js';
import { constructId, type ServiceFunction } from './service-function.js';
import type { Stage } from './stages.js';

/** Every alarm looks at 5-minute periods. */
export const ALARM_PERIOD = Duration.minutes(5);

const topics = new WeakMap<Stack, ITopic>();

/** The stage's alarm topic imported once per stack (by ARN: no lookup, synth stays offline). */
function alarmTopic(scope: Construct, arn: string): ITopic {
  const stack = Stack.of(scope);
  let topic = topics.get(stack);
  if (!topic) {
    topic = Topic.fromTopicArn(stack, 'AlarmTopic', arn);
    topics.set(stack, topic);
  }
  return topic;
}

export interface StageAlarmProps {
  readonly name: string;
  readonly description: string;
  readonly metric: IMetric;
  /** The alarm fires at or above this value in `evaluationPeriods` periods in a row. */
  readonly threshold: number;
  /** Consecutive periods at or above the threshold; default 1. */
  readonly evaluationPeriods?: number;
}

/**
 * An alarm of the stage: `dpm-<stage>-<name>`, missing data is not breaching (no traffic is
 * no trouble), and it notifies the stage's `alarmTopicArn` when one is set.
 */
export function stageAlarm(scope: Construct, id: string, stage: Stage, props: StageAlarmProps): Alarm {
  const alarm = new Alarm(scope, id, {
    alarmName: `dpm-${stage.name}-${props.name}`,
    alarmDescription: props.description,
    metric: props.metric,
    threshold: props.threshold,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    evaluationPeriods: props.evaluationPeriods ?? 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
  if (stage.alarmTopicArn) {
    const action = new SnsAction(alarmTopic(scope, stage.alarmTopicArn));
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
  }
  return alarm;
}

/** A Lambda's p99 duration alarm fires above this share of its timeout. */
export const DURATION_ALARM_SHARE = 0.8;

/**
 * Every Lambda's alarms, whatever starts it: any throttled invocation, any failed one, a p99
 * duration close to its timeout; and for a Lambda that reads streams, records waiting too long.
 */
export function lambdaAlarms(
  scope: Construct,
  stage: Stage,
  lambdas: readonly (readonly [LambdaDefinition, ServiceFunction])[],
): void {
  for (const [{ name }, fn] of lambdas) {
    stageAlarm(scope, `${constructId(name)}ThrottleAlarm`, stage, {
      name: `${name}-throttles`,
      description: `Invocations of dpm-${stage.name}-${name} are throttled`,
      metric: fn.lambda.metricThrottles({ period: ALARM_PERIOD, statistic: Stats.SUM }),
      threshold: 1,
    });
    // An invocation that failed as a whole (a crash, a timeout; not a handled 4xx/5xx answer).
    stageAlarm(scope, `${constructId(name)}ErrorAlarm`, stage, {
      name: `${name}-errors`,
      description: `Invocations of dpm-${stage.name}-${name} failed`,
      metric: fn.lambda.metricErrors({ period: ALARM_PERIOD, statistic: Stats.SUM }),
      threshold: 1,
    });
    // Close to its timeout for a quarter of an hour: the next slowdown times it out.
    const timeoutMs = fn.lambda.timeout!.toMilliseconds();
    stageAlarm(scope, `${constructId(name)}DurationAlarm`, stage, {
      name: `${name}-duration-p99`,
      description: `The p99 duration of dpm-${stage.name}-${name} is above ${DURATION_ALARM_SHARE * 100} % of its timeout`,
      metric: fn.lambda.metricDuration({ period: ALARM_PERIOD, statistic: Stats.p(99) }),
      threshold: Math.round(DURATION_ALARM_SHARE * timeoutMs),
      evaluationPeriods: 3,
    });
  }
  // A consumer falling behind its streams: events reach the feed, the bus and webhooks late.
  for (const [definition, fn] of lambdas) {
    if (!('streams' in definition)) continue;
    const { name } = definition;
    stageAlarm(scope, `${constructId(name)}IteratorAgeAlarm`, stage, {
      name: `${name}-iterator-age`,
      description:
        `Records wait more than ${ITERATOR_AGE_ALARM.thresholdSeconds} s for dpm-${stage.name}-${name} ` +
        `(${ITERATOR_AGE_ALARM.evaluationPeriods} periods in a row)`,
      metric: fn.lambda.metric('IteratorAge', { period: ALARM_PERIOD, statistic: Stats.MAXIMUM }),
      threshold: ITERATOR_AGE_ALARM.thresholdSeconds * 1000,
      evaluationPeriods: ITERATOR_AGE_ALARM.evaluationPeriods,
    });
  }
}
