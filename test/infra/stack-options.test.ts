import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { CORS } from '../../shared/cors.js';
import { GROUPS, type GroupDefinition } from '../../infra/groups.js';
import { QUEUES } from '../../infra/tables.js';
import { REPOSITORY_ROOT, RUNTIME_SDK_CLIENTS } from '../../infra/aws/service-function.js';
import {
  STAGES,
  airflowPasswordSecretName,
  keycloakAdminClientSecretName,
  stageNamed,
} from '../../infra/aws/stages.js';
import {
  actions,
  functionDefs,
  functionIn,
  resources,
  single,
  statementsIn,
  withStubHandlers,
  workers,
  type Resource,
} from './support.js';

const { synthesize, synthesizeOnce } = withStubHandlers();

/** Stacks of stages with options (stacks.test.ts holds dev's and prod's own records). */
describe('workers', () => {
  const crewsWorker = workers.find((w) => w.name === 'crews-worker')!;
  const deadLetter = workers.find((w) => w.name === 'crews-dead-letter')!;

  it('are defined for crew runs and their dead letters', () => {
    expect(crewsWorker).toMatchObject({ consumes: 'crewRuns' });
    expect(crewsWorker.deadLetter ?? false).toBe(false);
    expect(deadLetter).toMatchObject({ consumes: 'crewRuns', deadLetter: true });
  });

  it('consume queues whose visibility timeout is at least six times their timeout (AWS advice)', () => {
    for (const worker of workers) {
      expect(QUEUES[worker.consumes].visibilityTimeoutSeconds, worker.name).toBeGreaterThanOrEqual(
        6 * worker.timeoutSeconds,
      );
    }
  });

  it("lets a stage's corsOrigins call the API from a browser, with the local platform's rules", () => {
    const { stateless } = synthesize('prod', { stage: { corsOrigins: ['https://portal.example.com'] } });
    const [, api] = single(resources(stateless, 'AWS::ApiGatewayV2::Api'), 'HTTP API');
    expect(api.Properties.CorsConfiguration).toEqual({
      AllowOrigins: ['https://portal.example.com'],
      AllowMethods: [...CORS.allowMethods],
      AllowHeaders: [...CORS.allowHeaders],
      ExposeHeaders: [...CORS.exposeHeaders],
      MaxAge: CORS.maxAgeSeconds,
    });
    expect(() => synthesize('dev', { stage: { corsOrigins: ['*'] } })).toThrow(
      /^stage "dev" corsOrigins '\*' is not an origin/,
    );
  });

  it('refuses to synthesize a worker whose queue visibility timeout is under six times its timeout', () => {
    const visibility = QUEUES.crewRuns.visibilityTimeoutSeconds;
    expect(visibility).toBe(900);
    expect(() => synthesize('dev', { workers: [{ ...crewsWorker, timeoutSeconds: 151 }] })).toThrow(
      /^queue "crew-runs" visibility timeout \(900 s\) must be at least 6 times the timeout of worker "crews-worker" \(151 s\)$/,
    );
    expect(() => synthesize('dev', { workers: [{ ...deadLetter, timeoutSeconds: 600 }] })).toThrow(
      /^queue "crew-runs-dlq" visibility timeout \(900 s\) must be at least 6 times the timeout of worker "crews-dead-letter" \(600 s\)$/,
    );
    expect(() => synthesize('dev', { workers: [{ ...crewsWorker, timeoutSeconds: 150 }] })).not.toThrow();
  });

  it('get the LLM model and crew HTTP hosts from the stage record, but never an API key', () => {
    const { stateless } = synthesize('dev', {
      stage: {
        llmBaseUrl: 'https://llm.example.com/v1',
        llmModel: 'model-x',
        crewHttpAllowedHosts: ['a.example.com', 'b.example.com'],
      },
    });
    const worker = single(
      resources(stateless, 'AWS::Lambda::Function').filter(
        ([, f]) => f.Properties.FunctionName === 'dpm-dev-crews-worker',
      ),
      'crews worker',
    )[1];
    const env = worker.Properties.Environment.Variables;
    expect(env).toMatchObject({
      LLM_BASE_URL: 'https://llm.example.com/v1',
      LLM_MODEL: 'model-x',
      CREW_HTTP_ALLOWED_HOSTS: 'a.example.com,b.example.com',
      EVENTS_TTL_DAYS: '30',
      POWERTOOLS_SERVICE_NAME: 'dpm-crews-worker',
    });
    expect(env.LLM_API_KEY).toBeUndefined();
  });
});

describe('keycloak stage', () => {
  const keycloak = {
    idp: 'keycloak',
    keycloakUrl: 'https://sso.example.com',
    keycloakRealm: 'dpm',
    keycloakAdminClientId: 'dpm-admin',
  } as const;
  let stateful: Template;
  let stateless: Template;
  beforeAll(() => {
    ({ stateful, stateless } = synthesize('dev', { stage: keycloak }));
  }, 60_000);

  const secretId = () => single(resources(stateful, 'AWS::SecretsManager::Secret'), 'Keycloak secret')[0];

  it('keeps the admin client secret in Secrets Manager under the stage name', () => {
    const secret = single(resources(stateful, 'AWS::SecretsManager::Secret'), 'Keycloak secret')[1];
    expect(keycloakAdminClientSecretName('dev')).toBe('dpm/dev/keycloak-admin-client-secret');
    expect(secret.Properties.Name).toBe('dpm/dev/keycloak-admin-client-secret');
    expect(secret.DeletionPolicy).toBe('Delete');
  });

  it('configures data-shares for Keycloak with the secret by ARN, never by value', () => {
    const env = functionIn(stateless, 'dev', 'data-shares')[1].Properties.Environment.Variables;
    expect(env).toMatchObject({
      IDP: 'keycloak',
      KEYCLOAK_URL: 'https://sso.example.com',
      KEYCLOAK_REALM: 'dpm',
      KEYCLOAK_ADMIN_CLIENT_ID: 'dpm-admin',
    });
    const secretArn = { 'Fn::ImportValue': expect.stringMatching(`^Dpm-dev-Stateful:ExportsOutputRef${secretId()}`) };
    expect(env.KEYCLOAK_ADMIN_CLIENT_SECRET_ARN).toEqual(secretArn);
    expect(env.KEYCLOAK_ADMIN_CLIENT_SECRET).toBeUndefined();
    const onSecrets = statementsIn(stateless, 'dev', 'data-shares').filter((s) =>
      actions(s).some((a) => a.startsWith('secretsmanager:')),
    );
    expect(onSecrets).toEqual([
      expect.objectContaining({ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: secretArn }),
    ]);
  });

  it('gives no other function the identity provider settings or the secret', () => {
    for (const fn of functionDefs.filter((f) => f.name !== 'data-shares')) {
      const env = functionIn(stateless, 'dev', fn.name)[1].Properties.Environment.Variables;
      expect(
        Object.keys(env).filter((v) => v === 'IDP' || v.startsWith('KEYCLOAK_')),
        fn.name,
      ).toEqual([]);
      const granted = statementsIn(stateless, 'dev', fn.name).flatMap(actions);
      expect(
        granted.filter((a) => a.startsWith('secretsmanager:')),
        fn.name,
      ).toEqual([]);
    }
  });

  it('refuses to synthesize a keycloak stage missing a setting', () => {
    expect(() => synthesize('dev', { stage: { ...keycloak, keycloakRealm: undefined } })).toThrow(
      /^stage "dev" uses keycloak but has no keycloakRealm$/,
    );
  });
});

describe('stage with a bootstrap admin key', () => {
  let stateful: Template;
  let stateless: Template;
  beforeAll(() => {
    ({ stateful, stateless } = synthesize('dev', { stage: { adminPsk: true } }));
  }, 60_000);

  it('has Secrets Manager generate the key under the stage name', () => {
    const [, secret] = single(resources(stateful, 'AWS::SecretsManager::Secret'), 'admin key secret');
    expect(secret.Properties.Name).toBe('dpm/dev/admin-psk');
    expect(secret.Properties.GenerateSecretString).toMatchObject({ PasswordLength: 48, ExcludePunctuation: true });
  });

  it('lets exactly the functions that check keys read it, by ARN', () => {
    const [secretId] = single(resources(stateful, 'AWS::SecretsManager::Secret'), 'admin key secret');
    const secretArn = { 'Fn::ImportValue': expect.stringMatching(`^Dpm-dev-Stateful:ExportsOutputRef${secretId}`) };
    const checking = GROUPS.filter((g) => (g.tables as Record<string, unknown>).keys !== undefined).map((g) => g.name);
    expect(checking).toEqual(expect.arrayContaining(['decisions', 'crews', 'dataproduct', 'mcps']));
    for (const fn of functionDefs) {
      const env = functionIn(stateless, 'dev', fn.name)[1].Properties.Environment.Variables;
      const reads = statementsIn(stateless, 'dev', fn.name).filter((s) =>
        actions(s).includes('secretsmanager:GetSecretValue'),
      );
      if (checking.includes(fn.name as never)) {
        expect(env.DPM_ADMIN_PSK_ARN, fn.name).toEqual(secretArn);
        expect(reads, fn.name).toEqual([expect.objectContaining({ Resource: secretArn })]);
      } else {
        expect(env.DPM_ADMIN_PSK_ARN, fn.name).toBeUndefined();
        expect(reads, fn.name).toEqual([]);
      }
      expect(env.DPM_ADMIN_PSK, fn.name).toBeUndefined();
    }
  });
});

describe('stage with a model API key in Secrets Manager', () => {
  it('lets only the functions that call the model (crew worker, E12) read it, by ARN', () => {
    const { stateful, stateless } = synthesize('dev', {
      stage: { llmApiKeySecret: true, llmBaseUrl: 'https://llm.example.com/v1' },
    });
    const [secretId, secret] = single(resources(stateful, 'AWS::SecretsManager::Secret'), 'model key secret');
    expect(secret.Properties.Name).toBe('dpm/dev/llm-api-key');
    const secretArn = { 'Fn::ImportValue': expect.stringMatching(`^Dpm-dev-Stateful:ExportsOutputRef${secretId}`) };
    for (const fn of functionDefs) {
      const env = functionIn(stateless, 'dev', fn.name)[1].Properties.Environment.Variables;
      const reads = statementsIn(stateless, 'dev', fn.name).filter((s) =>
        actions(s).includes('secretsmanager:GetSecretValue'),
      );
      expect(env.LLM_API_KEY, fn.name).toBeUndefined();
      if (fn.name === 'crews-worker' || fn.name === 'query') {
        expect(env.LLM_API_KEY_ARN, fn.name).toEqual(secretArn);
        expect(reads).toEqual([expect.objectContaining({ Resource: secretArn })]);
      } else {
        expect(env.LLM_API_KEY_ARN, fn.name).toBeUndefined();
        expect(reads, fn.name).toEqual([]);
      }
    }
  }, 60_000);
});

describe('stage whose model is on Amazon Bedrock', () => {
  const invokes = (stack: Template, fn: string) =>
    statementsIn(stack, 'dev', fn).filter((s) => actions(s).some((a) => a.startsWith('bedrock:')));

  it('lets only the functions that call the model (crew worker, E12) invoke exactly that model, with no key', () => {
    const model = 'anthropic.claude-3-haiku-20240307-v1:0';
    const { stateful, stateless } = synthesize('dev', { stage: { llmProvider: 'bedrock', llmModel: model } });
    expect(resources(stateful, 'AWS::SecretsManager::Secret')).toEqual([]);
    for (const fn of functionDefs) {
      const env = functionIn(stateless, 'dev', fn.name)[1].Properties.Environment.Variables;
      expect(env.LLM_API_KEY_ARN, fn.name).toBeUndefined();
      if (fn.name === 'crews-worker' || fn.name === 'query') {
        expect(env).toMatchObject({ LLM_PROVIDER: 'bedrock', LLM_MODEL: model });
        expect(invokes(stateless, fn.name), fn.name).toEqual([
          expect.objectContaining({
            Effect: 'Allow',
            Action: ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'],
            Resource: {
              'Fn::Join': [
                '',
                ['arn:', { Ref: 'AWS::Partition' }, ':bedrock:', { Ref: 'AWS::Region' }, `::foundation-model/${model}`],
              ],
            },
          }),
        ]);
      } else {
        expect(invokes(stateless, fn.name), fn.name).toEqual([]);
      }
    }
  }, 60_000);

  it('grants an inference profile id in the stage account and region, and an ARN as it is', () => {
    const profile = 'us.anthropic.claude-3-5-sonnet-20240620-v1:0';
    const byId = synthesize('dev', { stage: { llmProvider: 'bedrock', llmModel: profile } }).stateless;
    expect(JSON.stringify(invokes(byId, 'crews-worker')[0]!.Resource)).toContain(`:inference-profile/${profile}`);
    const arn = 'arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123';
    const byArn = synthesize('dev', { stage: { llmProvider: 'bedrock', llmModel: arn } }).stateless;
    expect(invokes(byArn, 'crews-worker')[0]!.Resource).toBe(arn);
  }, 60_000);

  it('refuses the local stand-in model, and bedrock without a model', () => {
    expect(() => synthesize('dev', { stage: { llmProvider: 'local' } })).toThrow(
      /^stage "dev" sets llmProvider "local": the local stand-in model runs only on a developer's machine/,
    );
    expect(() => synthesize('dev', { stage: { llmProvider: 'bedrock' } })).toThrow(
      /^stage "dev" sets llmProvider "bedrock" without llmModel/,
    );
    expect(() => synthesize('dev', { stage: { llmProvider: 'bedrock', llmModel: 'bad model*' } })).toThrow(
      /llmModel "bad model\*" is not a Bedrock model id/,
    );
  });
});

describe('airflow stage with a migration VPC', () => {
  const airflow = {
    workflow: 'airflow',
    airflowBaseUrl: 'https://airflow.example.com',
    airflowUsername: 'dpm-migration',
    migrationVpc: {
      vpcId: 'vpc-0123456789abcdef0',
      availabilityZones: ['eu-west-1a', 'eu-west-1b'],
      privateSubnetIds: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'],
    },
  } as const;
  let stateful: Template;
  let stateless: Template;
  beforeAll(() => {
    ({ stateful, stateless } = synthesizeOnce('dev', { stage: airflow }));
  }, 60_000);

  const secretId = () => single(resources(stateful, 'AWS::SecretsManager::Secret'), 'Airflow secret')[0];
  const secretArn = () => ({
    'Fn::ImportValue': expect.stringMatching(`^Dpm-dev-Stateful:ExportsOutputRef${secretId()}`),
  });
  const secretsStatements = (fn: string) =>
    statementsIn(stateless, 'dev', fn).filter((s) => actions(s).some((a) => a.startsWith('secretsmanager:')));

  it('keeps the Airflow password in Secrets Manager under the stage name', () => {
    const [id, secret] = single(resources(stateful, 'AWS::SecretsManager::Secret'), 'Airflow secret');
    expect(id).toMatch(/^AirflowPassword/);
    expect(airflowPasswordSecretName('dev')).toBe('dpm/dev/airflow-password');
    expect(secret.Properties.Name).toBe('dpm/dev/airflow-password');
    expect(secret.DeletionPolicy).toBe('Delete');
  });

  it('configures migration for Airflow with the password by ARN, never by value', () => {
    const env = functionIn(stateless, 'dev', 'migration')[1].Properties.Environment.Variables;
    expect(env).toMatchObject({
      WORKFLOW: 'airflow',
      AIRFLOW_BASE_URL: 'https://airflow.example.com',
      AIRFLOW_USERNAME: 'dpm-migration',
    });
    expect(env.AIRFLOW_PASSWORD_ARN).toEqual(secretArn());
    expect(env.AIRFLOW_PASSWORD).toBeUndefined();
    // Exactly one statement: GetSecretValue (not DescribeSecret or a wildcard) on exactly that secret.
    expect(secretsStatements('migration')).toEqual([
      expect.objectContaining({ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: secretArn() }),
    ]);
  });

  it('gives no other function the workflow settings or the secret', () => {
    for (const fn of functionDefs.filter((f) => f.name !== 'migration')) {
      const env = functionIn(stateless, 'dev', fn.name)[1].Properties.Environment.Variables;
      expect(
        Object.keys(env).filter((v) => v === 'WORKFLOW' || v.startsWith('AIRFLOW_')),
        fn.name,
      ).toEqual([]);
      expect(secretsStatements(fn.name), fn.name).toEqual([]);
    }
  });

  it('runs migration in the private subnets with a security group of its own', () => {
    const [, fn] = functionIn(stateless, 'dev', 'migration');
    const [sgId, sg] = single(resources(stateless, 'AWS::EC2::SecurityGroup'), 'security group');
    expect(fn.Properties.VpcConfig).toEqual({
      SubnetIds: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'],
      SecurityGroupIds: [{ 'Fn::GetAtt': [sgId, 'GroupId'] }],
    });
    expect(sg.Properties.VpcId).toBe('vpc-0123456789abcdef0');
    // All outbound, nothing inbound.
    expect(sg.Properties.SecurityGroupEgress).toEqual([
      expect.objectContaining({ CidrIp: '0.0.0.0/0', IpProtocol: '-1' }),
    ]);
    expect(sg.Properties.SecurityGroupIngress).toBeUndefined();
    stateless.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
    // Creating its network interfaces needs the VPC access policy on the role.
    const roleId = fn.Properties.Role['Fn::GetAtt'][0];
    const role = stateless.toJSON().Resources[roleId] as Resource;
    expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain('AWSLambdaVPCAccessExecutionRole');
  });

  it('leaves every other function outside the VPC', () => {
    for (const fn of functionDefs.filter((f) => f.name !== 'migration')) {
      expect(functionIn(stateless, 'dev', fn.name)[1].Properties.VpcConfig, fn.name).toBeUndefined();
    }
  });

  it('refuses to synthesize an airflow stage missing a setting', () => {
    expect(() => synthesize('dev', { stage: { ...airflow, airflowBaseUrl: undefined } })).toThrow(
      /^stage "dev" uses airflow but has no airflowBaseUrl$/,
    );
    expect(() => synthesize('dev', { stage: { ...airflow, airflowUsername: '' } })).toThrow(
      /^stage "dev" uses airflow but has no airflowUsername$/,
    );
  });

  it('refuses to synthesize a migration VPC without subnets', () => {
    expect(() =>
      synthesize('dev', { stage: { ...airflow, migrationVpc: { ...airflow.migrationVpc, privateSubnetIds: [] } } }),
    ).toThrow(/^stage "dev" has a migrationVpc with no privateSubnetIds$/);
  });
});

describe('stage with an alarm topic', () => {
  it('has every alarm of both stacks notify it, on alarm and back to OK', () => {
    const arn = 'arn:aws:sns:eu-west-1:123456789012:dpm-alarms';
    const { stateful, stateless } = synthesize('prod', { stage: { alarmTopicArn: arn } });
    const alarms = [
      ...resources(stateful, 'AWS::CloudWatch::Alarm'),
      ...resources(stateless, 'AWS::CloudWatch::Alarm'),
    ];
    expect(alarms.length).toBeGreaterThan(10);
    for (const [, alarm] of alarms) {
      expect(alarm.Properties.AlarmActions, alarm.Properties.AlarmName).toEqual([arn]);
      expect(alarm.Properties.OKActions, alarm.Properties.AlarmName).toEqual([arn]);
    }
  }, 60_000);
});

describe('stage record', () => {
  it('names the known stages when the stage is unknown', () => {
    expect(() => stageNamed('qa')).toThrow(/unknown stage "qa"; known stages: dev, staging, prod$/);
  });

  it('turns point-in-time recovery off for dev only', () => {
    expect(
      Object.entries(STAGES)
        .filter(([, s]) => !s.pointInTimeRecovery)
        .map(([n]) => n),
    ).toEqual(['dev']);
  });
});

describe('the platform function serves /docs without a CDN', () => {
  it('copies the Swagger UI files it reads beside its bundle, and every one of them exists', async () => {
    const { copyCommands } = await import('../../infra/aws/service-function.js');
    const { SWAGGER_UI_ASSETS, BUNDLED_ASSET_DIR } = await import('../../functions/platform/docs.js');
    const platform = GROUPS.find((g) => g.name === 'platform') as GroupDefinition;
    const files = platform.bundledFiles?.[BUNDLED_ASSET_DIR] ?? [];
    // Exactly the files the page serves, each present in the installed package.
    expect(files.map((f) => f.split('/').pop()).sort()).toEqual(Object.keys(SWAGGER_UI_ASSETS).sort());
    for (const file of files) expect(readFileSync(join(REPOSITORY_ROOT, file)).length, file).toBeGreaterThan(0);
    const { BUNDLED_DOCUMENTS_DIR } = await import('../../functions/platform/compose.js');
    const documents = platform.bundledFiles?.[BUNDLED_DOCUMENTS_DIR] ?? [];
    expect(documents).toEqual(['functions/platform/openapi.json', 'functions/platform/asyncapi.json']);
    expect(copyCommands(platform.bundledFiles!, '/in', '/out')).toEqual([
      `mkdir -p "/out/${BUNDLED_ASSET_DIR}"`,
      ...files.map((f) => `cp "/in/${f}" "/out/${BUNDLED_ASSET_DIR}/"`),
      `mkdir -p "/out/${BUNDLED_DOCUMENTS_DIR}"`,
      ...documents.map((f) => `cp "/in/${f}" "/out/${BUNDLED_DOCUMENTS_DIR}/"`),
    ]);
    // No other function carries them.
    expect(GROUPS.filter((g) => (g as GroupDefinition).bundledFiles).map((g) => g.name)).toEqual(['platform']);
  });

  /** Every Lambda entry bundled at once (in memory), with the esbuild options given. */
  const bundleLambdas = async (outdir: string, options: { mainFields?: string[]; external?: string[] } = {}) => {
    const { build } = await import('esbuild');
    return build({
      entryPoints: functionDefs.map((d) => join(REPOSITORY_ROOT, d.entry)),
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      outdir: join(tmpdir(), outdir),
      logLevel: 'silent',
      ...options,
    });
  };

  it('serves /openapi.json and /asyncapi.json from the documents beside its bundle, which holds neither', async () => {
    const { build } = await import('esbuild');
    const { LAMBDA_DEFINE } = await import('../../infra/aws/service-function.js');
    const platform = GROUPS.find((g) => g.name === 'platform') as GroupDefinition;
    // Inside the repository, so that the clients left to the runtime resolve as on Lambda.
    const dir = mkdtempSync(join(REPOSITORY_ROOT, 'test/bench/.tmp-platform-'));
    try {
      const outfile = join(dir, 'index.mjs');
      await build({
        entryPoints: [join(REPOSITORY_ROOT, platform.entry)],
        bundle: true,
        minify: true,
        platform: 'node',
        format: 'esm',
        target: 'node24',
        mainFields: ['module', 'main'],
        banner: { js: "import { createRequire } from 'module';const require = createRequire(import.meta.url);" },
        external: [...RUNTIME_SDK_CLIENTS],
        define: { ...LAMBDA_DEFINE },
        outfile,
        logLevel: 'silent',
      });
      const code = readFileSync(outfile, 'utf8');
      expect(code.length).toBeLessThan(250_000);
      expect(code).not.toContain('"operationId"');
      expect(code).not.toContain('dpm.decision.version.approved');
      // what ServiceFunction's afterBundling copies (copyCommands above)
      for (const [folder, paths] of Object.entries(platform.bundledFiles!)) {
        mkdirSync(join(dir, folder));
        for (const path of paths) copyFileSync(join(REPOSITORY_ROOT, path), join(dir, folder, path.split('/').pop()!));
      }
      const { handler } = (await import(pathToFileURL(outfile).href)) as {
        handler: (event: unknown, context: unknown) => Promise<{ statusCode: number; body: string }>;
      };
      for (const name of ['openapi.json', 'asyncapi.json']) {
        const res = await handler(
          {
            version: '2.0',
            routeKey: '$default',
            rawPath: `/${name}`,
            rawQueryString: '',
            headers: { host: 'api.example.com' },
            requestContext: { http: { method: 'GET', path: `/${name}`, sourceIp: '127.0.0.1' }, requestId: name },
            isBase64Encoded: false,
          },
          { getRemainingTimeInMillis: () => 30_000 },
        );
        expect(res.statusCode, name).toBe(200);
        const committed = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'functions/platform', name), 'utf8'));
        const served = JSON.parse(res.body);
        expect(Object.keys(served.paths ?? served.channels).sort(), name).toEqual(
          Object.keys(committed.paths ?? committed.channels).sort(),
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  /** Every Lambda bundled as ServiceFunction resolves packages, the runtime's SDK clients left out: built once for the tests below. */
  let leanBuild: ReturnType<typeof bundleLambdas> | undefined;
  const leanBundles = () =>
    (leanBuild ??= bundleLambdas('dpm-bundle-lean-check', {
      mainFields: ['module', 'main'],
      external: [...RUNTIME_SDK_CLIENTS],
    }));

  it('never deploys the local identity provider: no Lambda bundle holds it or anything of infra/local', async () => {
    // The bundles as ServiceFunction builds them (what is deployed).
    const out = await leanBundles();
    const inputs = Object.keys(out.metafile.inputs);
    expect(inputs.length).toBeGreaterThan(100);
    expect(inputs.filter((i) => /node_modules\/oidc-provider\/|(^|\/)infra\/local\//.test(i))).toEqual([]);
  }, 120_000);

  it('carries only what a Lambda runs: zod/mini, no OpenAPI, AsyncAPI or JSON Schema generator, no event catalog, no zod locales, no Secrets Manager client', async () => {
    const out = await leanBundles();
    const entries = Object.values(out.metafile.outputs).filter((o) => o.entryPoint);
    // One bundle per entry (the two webhook workers, one per lane, share theirs).
    expect(entries).toHaveLength(new Set(functionDefs.map((d) => d.entry)).size);
    const unwanted =
      /zod\/v4\/classic\/|zod\/v4\/locales\/|to-json-schema|json-schema-processors|zod-to-openapi|zod-openapi|shared\/http\/openapi\.ts|shared\/http\/asyncapi\.ts|functions\/events\/catalog\.ts/;
    const runtimeClients = RUNTIME_SDK_CLIENTS as readonly string[];
    const loadedLater = new Set<string>();
    for (const output of entries) {
      // no code of a client left to the runtime is bundled
      expect(
        Object.keys(output.inputs).filter((i) => runtimeClients.some((c) => i.startsWith(`node_modules/${c}/`))),
        output.entryPoint,
      ).toEqual([]);
      for (const i of output.imports) if (runtimeClients.includes(i.path)) loadedLater.add(i.path);
      expect(
        Object.keys(output.inputs).filter((i) => unwanted.test(i)),
        output.entryPoint,
      ).toEqual([]);
      // A client left to the runtime is imported when needed, never at cold start.
      expect(
        output.imports.filter((i) => runtimeClients.includes(i.path) && i.kind !== 'dynamic-import'),
        output.entryPoint,
      ).toEqual([]);
      // It does validate with zod (mini): the check above is not vacuous.
      if (!output.entryPoint!.includes('dead-letter'))
        expect(
          Object.keys(output.inputs).some((i) => i.includes('zod/v4/mini/')),
          output.entryPoint,
        ).toBe(true);
    }
    // every client on the list is one some Lambda does load (when it needs it)
    expect([...loadedLater].sort()).toEqual([...runtimeClients].sort());
  }, 120_000);

  it("bundles Powertools' idempotency utility only into the HTTP groups with idempotent endpoints", async () => {
    const out = await leanBundles();
    const entries = Object.values(out.metafile.outputs).filter((o) => o.entryPoint);
    /** Bytes of the function's bundle from inputs matching `test` (an input tree-shaken away adds none). */
    const bytesOf = (entry: string, test: RegExp) =>
      Object.entries(entries.find((o) => o.entryPoint === entry)!.inputs)
        .filter(([input]) => test.test(input))
        .reduce((sum, [, { bytesInOutput }]) => sum + bytesInOutput, 0);
    // Powertools' utility with its own jmespath, and the modules that use it
    const idempotency =
      /node_modules\/@aws-lambda-powertools\/idempotency\/|^shared\/http\/idempotent-answers\.ts$|^functions\/idempotency\.ts$/;
    const carrying = functionDefs.filter((d) => bytesOf(d.entry, idempotency) > 0).map((d) => d.name);
    expect(carrying.sort()).toEqual(
      [
        'crews',
        'data-shares',
        'dataproduct',
        'decisions',
        'documents',
        'finetune',
        'mcps',
        'metastore',
        'webhooks',
      ].sort(),
    );
    // and those hold all of it: the check is not vacuous
    for (const name of carrying)
      expect(bytesOf(functionDefs.find((d) => d.name === name)!.entry, idempotency), name).toBeGreaterThan(20_000);
  }, 120_000);
});
