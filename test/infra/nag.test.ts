import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Stack, Validations, type App } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { DpmNagChecks, FINDINGS_KEY, acknowledgeFindings } from '../../infra/aws/nag.js';
import { REPOSITORY_ROOT } from '../../infra/aws/service-function.js';
import { stageFromContext, type StageName } from '../../infra/aws/stages.js';
import { withStubHandlers } from './support.js';

/**
 * cdk-nag's AwsSolutions pack (infra/aws/nag.ts, registered by app.ts) over the synthesized
 * stacks: no finding without a written reason next to its construct, and ARCHITECTURE.md lists them.
 */

const { synthesize, synthesizeOnce } = withStubHandlers();

/** Findings as `rule  construct path` lines: what a failure prints. */
const findings = (app: App): string[] =>
  new DpmNagChecks()
    .validateScope(app)
    .violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName}  ${r.constructPath}`));

/** Every acknowledgment in the tree: [construct path, rule id, reason]. */
function acknowledgments(app: App): [string, string, string][] {
  const found: [string, string, string][] = [];
  for (const construct of app.node.findAll() as IConstruct[]) {
    for (const entry of construct.node.metadata) {
      if (entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY) {
        for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
          found.push([construct.node.path, id.replace(/^annotation::/i, ''), reason]);
        }
      } else if (entry.type === FINDINGS_KEY) {
        const data = entry.data as { rule: string; finding: string; reason: string };
        found.push([construct.node.path, `${data.rule}[${data.finding}]`, data.reason]);
      }
    }
  }
  return found;
}

/** A stage with every optional part: VPC, Keycloak, Airflow, secrets, CORS, tracing. */
const EVERY_OPTION = {
  tracing: true,
  idp: 'keycloak',
  keycloakUrl: 'https://keycloak.example.com',
  keycloakRealm: 'dpm',
  keycloakAdminClientId: 'dpm-admin',
  workflow: 'airflow',
  airflowBaseUrl: 'https://airflow.example.com',
  airflowUsername: 'dpm',
  llmApiKeySecret: true,
  adminPsk: true,
  corsOrigins: ['https://portal.example.com'],
  migrationVpc: {
    vpcId: 'vpc-0123456789abcdef0',
    availabilityZones: ['eu-west-1a', 'eu-west-1b'],
    privateSubnetIds: ['subnet-0123456789abcdef0', 'subnet-0123456789abcdef1'],
  },
} as const;

const ARCHITECTURE = readFileSync(join(REPOSITORY_ROOT, 'ARCHITECTURE.md'), 'utf8');
/** ARCHITECTURE.md's cdk-nag section: from its heading to the next heading of the same level or above. */
const nagSection = (): string => {
  const start = ARCHITECTURE.search(/^#{2,3} .*cdk-nag/m);
  expect(start, 'ARCHITECTURE.md has a cdk-nag section').toBeGreaterThanOrEqual(0);
  const heading = /^(#+).*\n/.exec(ARCHITECTURE.slice(start))!;
  const level = heading[1]!.length;
  const rest = ARCHITECTURE.slice(start + heading[0].length);
  const end = rest.search(new RegExp(`^#{1,${level}} `, 'm'));
  return end === -1 ? rest : rest.slice(0, end);
};

describe('cdk-nag AwsSolutions', () => {
  const cases: [string, StageName, object][] = [
    ['dev', 'dev', {}],
    ['prod', 'prod', {}],
    ['staging with every optional part', 'staging', EVERY_OPTION],
  ];
  for (const [label, name, stage] of cases) {
    it(`finds nothing unacknowledged on ${label}`, () => {
      const { app } = synthesizeOnce(name, { stage });
      expect(findings(app)).toEqual([]);
    }, 60_000);

    it(`gives every acknowledgment on ${label} a reason, and ARCHITECTURE.md lists its rule`, () => {
      const { app } = synthesizeOnce(name, { stage });
      const acks = acknowledgments(app);
      expect(acks.length).toBeGreaterThan(0);
      const section = nagSection();
      for (const [path, id, reason] of acks) {
        expect(reason.trim().length, `${id} on ${path}`).toBeGreaterThanOrEqual(30);
        const rule = id.replace(/\[.*$/s, '');
        expect(rule).toMatch(/^AwsSolutions-[A-Z]+\d+$/);
        expect(section, `ARCHITECTURE.md's cdk-nag section names ${rule}`).toContain(rule);
      }
    }, 60_000);
  }

  it('reports a finding nobody acknowledged, and drops it once acknowledged with a matching finding', () => {
    const { app } = synthesize('dev');
    const stack = app.node.findChild('Dpm-dev-Stateless') as Stack;
    const role = new Role(stack, 'NagProbe', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    role.addToPolicy(new PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::probe/*'] }));
    expect(findings(app)).toEqual([
      'AwsSolutions-IAM5[Resource::arn:aws:s3:::probe/*]  Dpm-dev-Stateless/NagProbe/DefaultPolicy/Resource',
    ]);
    acknowledgeFindings(role, { rule: 'AwsSolutions-IAM5', finding: /^Resource::.*probe\/\*$/, reason: 'a probe' });
    expect(findings(app)).toEqual([]);
  }, 60_000);
});

describe('what prod cannot be synthesized without', () => {
  it.each([
    ['alarmTopicArn', { alarmTopicArn: undefined }, /the SNS topic its alarms notify.*-c alarmTopicArn=/],
    ['authIssuer', { authIssuer: undefined }, /the OpenID issuer whose Bearer tokens it accepts/],
    ['authAudience', { authAudience: undefined }, /the audience its Bearer tokens must carry.*-c authAudience=/],
    ['adminPsk', { adminPsk: false }, /the bootstrap admin pre-shared key/],
  ])('refuses prod without %s, in one line naming it', (setting, stage, why) => {
    let message = '';
    try {
      synthesize('prod', { stage });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(new RegExp(`^stage "prod" cannot be synthesized without ${setting} \\(`));
    expect(message).toMatch(why);
    expect(message).not.toContain('\n');
  });

  it('names every missing setting in one line, not one per synth', () => {
    let message = '';
    try {
      synthesize('prod', {
        stage: { alarmTopicArn: undefined, authIssuer: undefined, authAudience: undefined, adminPsk: false },
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).not.toContain('\n');
    expect(message).toMatch(
      /^stage "prod" cannot be synthesized without alarmTopicArn \(.*\), authIssuer \(.*\), authAudience \(.*\), adminPsk \(.*\): /,
    );
    expect(message).toContain('pass -c alarmTopicArn=… -c authIssuer=… -c authAudience=…');
  });

  it('refuses an issuer without its audience on any stage (every function would refuse to load)', () => {
    expect(() => synthesize('dev', { stage: { authIssuer: 'https://id.example.com' } })).toThrow(
      /^stage "dev" cannot be synthesized without authAudience \(/,
    );
  });

  it('refuses prod synthesized as an operator would, with an issuer but no audience, in one line', () => {
    // infra/aws/app.ts as `cdk synth -c stage=prod -c authIssuer=…` runs it (the CDK hands it the context).
    const synth = spawnSync(process.execPath, ['--import', 'tsx', join(REPOSITORY_ROOT, 'infra/aws/app.ts')], {
      cwd: REPOSITORY_ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        CDK_CONTEXT_JSON: JSON.stringify({
          stage: 'prod',
          authIssuer: 'https://id.example.com',
          alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops',
        }),
      },
    });
    expect(synth.status, synth.stderr).toBe(1);
    expect(synth.stdout).toBe('');
    expect(synth.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^dpm: stage "prod" cannot be synthesized without authAudience \(.*-c authAudience=…$/),
    ]);
  }, 60_000);

  it('refuses an alarm topic that is not an SNS topic ARN, and an issuer that is not https', () => {
    expect(() => synthesize('prod', { stage: { alarmTopicArn: 'arn:aws:sqs:eu-west-1:123456789012:q' } })).toThrow(
      'alarmTopicArn "arn:aws:sqs:eu-west-1:123456789012:q" is not an SNS topic ARN',
    );
    expect(() => synthesize('prod', { stage: { authIssuer: 'http://id.example.com' } })).toThrow(
      'authIssuer "http://id.example.com" is not an https URL',
    );
  });

  it('requires nothing of dev', () => {
    expect(() => synthesize('dev')).not.toThrow();
  }, 60_000);

  it('takes the account settings from the CDK context (-c key=value), and only those', () => {
    const context: Record<string, string> = {
      alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops',
      authIssuer: 'https://id.example.com',
      account: '123456789012',
      region: 'eu-west-1',
      eventsTtlDays: '1',
    };
    const stage = stageFromContext('prod', (key) => context[key]);
    expect(stage).toMatchObject({
      name: 'prod',
      alarmTopicArn: context.alarmTopicArn,
      authIssuer: context.authIssuer,
      account: '123456789012',
      region: 'eu-west-1',
      eventsTtlDays: 30,
    });
    expect(() => stageFromContext('prod', (key) => (key === 'authIssuer' ? ' ' : undefined))).toThrow(
      '-c authIssuer must be a non-empty value',
    );
    expect(() => stageFromContext('qa', () => undefined)).toThrow('unknown stage "qa"');
  });
});
