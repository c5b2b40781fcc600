import { Duration, Stack } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
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
