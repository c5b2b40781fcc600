import type { App, Environment } from 'aws-cdk-lib';
import type { StreamConsumerDefinition, WorkerDefinition } from '../groups.js';
import type { Stage } from './stages.js';
import { StatefulStack } from './stateful-stack.js';
import { StatelessStack } from './stateless-stack.js';

export interface StageStacksOptions {
  readonly env?: Environment;
  /** Reported by GET /api/health/ping (`-c buildNumber=<git sha>`). */
  readonly buildNumber?: string;
  /** Where function entries resolve from (tests: stub handlers); default the repository root. */
  readonly projectRoot?: string;
  /** Other queue or stream consumers than infra/groups.ts's (tests exercise the checks). */
  readonly workers?: readonly WorkerDefinition[];
  readonly streamConsumers?: readonly StreamConsumerDefinition[];
}

/** A stage's two stacks, `Dpm-<stage>-Stateful` and `Dpm-<stage>-Stateless`, the second built on the first's resources. */
export function stageStacks(
  app: App,
  stage: Stage,
  options: StageStacksOptions = {},
): { stateful: StatefulStack; stateless: StatelessStack } {
  const stateful = new StatefulStack(app, `Dpm-${stage.name}-Stateful`, { stage, env: options.env });
  const stateless = new StatelessStack(app, `Dpm-${stage.name}-Stateless`, {
    stage,
    env: options.env,
    tables: stateful.tables,
    queues: stateful.queues,
    deadLetterQueues: stateful.deadLetterQueues,
    buckets: stateful.buckets,
    key: stateful.key,
    keycloakAdminClientSecret: stateful.keycloakAdminClientSecret,
    airflowPassword: stateful.airflowPassword,
    adminPsk: stateful.adminPsk,
    llmApiKey: stateful.llmApiKey,
    eventBus: stateful.eventBus,
    scheduleGroup: stateful.scheduleGroup,
    schedulerRole: stateful.schedulerRole,
    streamDeadLetterQueues: stateful.streamDeadLetterQueues,
    ...(options.buildNumber !== undefined && { buildNumber: options.buildNumber }),
    ...(options.projectRoot !== undefined && { projectRoot: options.projectRoot }),
    ...(options.workers && { workers: options.workers }),
    ...(options.streamConsumers && { streamConsumers: options.streamConsumers }),
  });
  return { stateful, stateless };
}
