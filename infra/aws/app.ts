import { App, Tags, Validations } from 'aws-cdk-lib';
import { DpmNagChecks } from './nag.js';
import { stageFromContext, type Stage } from './stages.js';
import { stageStacks } from './stage-stacks.js';

const app = new App();
// cdk-nag's AwsSolutions pack: a finding without an acknowledged reason fails the synth.
Validations.of(app).addPlugins(new DpmNagChecks());

/** The stage from the context, or one line saying what is wrong with it (not a stack trace). */
function build(): Stage {
  try {
    const stage = stageFromContext(String(app.node.tryGetContext('stage') ?? 'dev'), (key) =>
      app.node.tryGetContext(key),
    );
    stageStacks(app, stage, {
      env: { account: stage.account, region: stage.region },
      buildNumber: app.node.tryGetContext('buildNumber') as string | undefined,
    });
    return stage;
  } catch (error) {
    console.error(`dpm: ${(error as Error).message}`);
    process.exit(1);
  }
}

const stage = build();
Tags.of(app).add('service', 'dpm');
Tags.of(app).add('stage', stage.name);
