import { App, Tags } from 'aws-cdk-lib';
import { stageNamed } from './stages.js';
import { StatefulStack } from './stateful-stack.js';
import { StatelessStack } from './stateless-stack.js';

const app = new App();
const stage = stageNamed(String(app.node.tryGetContext('stage') ?? 'dev'));
const env = { account: stage.account, region: stage.region };

const stateful = new StatefulStack(app, `Dpm-${stage.name}-Stateful`, { stage, env });
new StatelessStack(app, `Dpm-${stage.name}-Stateless`, {
  stage,
  env,
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
  streamDeadLetterQueues: stateful.streamDeadLetterQueues,
  buildNumber: app.node.tryGetContext('buildNumber') as string | undefined,
});

Tags.of(app).add('service', 'dpm');
Tags.of(app).add('stage', stage.name);
