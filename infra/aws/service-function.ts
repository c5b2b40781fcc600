import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, Validations } from 'aws-cdk-lib';
import { SecurityGroup, type IVpc } from 'aws-cdk-lib/aws-ec2';
import type { IGrantable, IPrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Stage } from './stages.js';

/**
 * AWS SDK clients left out of the bundles (CDK's own default leaves out all of `@aws-sdk/*`):
 * imported dynamically where they are first used (a secret read or sealed, an object
 * written, a run queued, a crew schedule set, a Bedrock model called), they resolve then to the SDK v3 the Lambda Node.js runtime ships,
 * so no cold start loads them. The DynamoDB client, on every request path, is bundled, and
 * with it the version this repository tests. test/bench/bundles.ts builds with the same list.
 */
export const RUNTIME_SDK_CLIENTS = [
  '@aws-sdk/client-bedrock-runtime',
  '@aws-sdk/client-kms',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-scheduler',
  '@aws-sdk/client-secrets-manager',
  '@aws-sdk/client-sqs',
] as const;

/**
 * Constants the Lambda bundles are built with (esbuild `define`; test/bench/bundles.ts builds
 * with the same): no schema documentation (shared/schema.ts), which no Lambda serves.
 */
export const LAMBDA_DEFINE: Readonly<Record<string, string>> = {
  DPM_LAMBDA_BUNDLE: 'true',
};

/** `data-shares` → `DataShares`: the construct id of a Lambda and of what is named after it (stable, readable). */
export const constructId = (name: string): string =>
  name.replace(/(^|-)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase());

/** The repository root: entries and the lock file resolve from it whatever the cwd. */
export const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceFunctionProps {
  readonly stage: Stage;
  /** Group (or worker) name: names the function, its log group and its Powertools service. */
  readonly name: string;
  /** Handler module relative to `projectRoot`. */
  readonly entry: string;
  readonly environment?: Readonly<Record<string, string>>;
  /** Defaults to the repository root; tests point it at stub handlers. */
  readonly projectRoot?: string;
  /** Overrides the stage's API timeout (queue workers run longer than API Gateway allows). */
  readonly timeoutSeconds?: number;
  /** Concurrency kept for this function alone (and its ceiling): what the API cannot take from it. */
  readonly reservedConcurrency?: number;
  /** Runs the function in the VPC's private subnets, with a security group of its own. */
  readonly vpc?: IVpc;
  /** Files the code reads at run time, copied beside the bundle: folder → paths from the project root. */
  readonly bundledFiles?: Readonly<Record<string, readonly string[]>>;
  /** Files built beside the bundle: folder → the build script, run as `node --import tsx <script> <outdir>`. */
  readonly builtFiles?: Readonly<Record<string, string>>;
}

/** The commands that copy `files` (folder → paths from the project root) beside a bundle. */
export function copyCommands(
  files: Readonly<Record<string, readonly string[]>>,
  inputDir: string,
  outputDir: string,
): string[] {
  return Object.entries(files).flatMap(([folder, paths]) => [
    `mkdir -p "${join(outputDir, folder)}"`,
    ...paths.map((path) => `cp "${join(inputDir, path)}" "${join(outputDir, folder)}/"`),
  ]);
}

/** The commands that build files (folder → build script from the project root) beside a bundle. */
export function buildCommands(builds: Readonly<Record<string, string>>, inputDir: string, outputDir: string): string[] {
  return Object.entries(builds).map(
    ([folder, script]) => `cd "${inputDir}" && node --import tsx "${script}" "${join(outputDir, folder)}"`,
  );
}

/** What runs after esbuild bundled a function: its run-time files copied, its built files built. */
export function afterBundlingCommands(
  props: Pick<ServiceFunctionProps, 'bundledFiles' | 'builtFiles'>,
  inputDir: string,
  outputDir: string,
): string[] {
  return [
    ...copyCommands(props.bundledFiles ?? {}, inputDir, outputDir),
    ...buildCommands(props.builtFiles ?? {}, inputDir, outputDir),
  ];
}

/** Every Lambda's defaults in one place: runtime, bundling, logging, environment. */
export class ServiceFunction extends Construct implements IGrantable {
  readonly lambda: NodejsFunction;
  readonly logGroup: LogGroup;
  readonly grantPrincipal: IPrincipal;
  /** Only for a function in a VPC: all outbound, no inbound (nothing connects to a Lambda). */
  readonly securityGroup: SecurityGroup | undefined;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);
    const { stage, name } = props;
    const functionName = `dpm-${stage.name}-${name}`;
    const projectRoot = props.projectRoot ?? REPOSITORY_ROOT;

    // Explicit log group so retention and removal follow the stage, not Lambda's defaults.
    this.logGroup = new LogGroup(this, 'LogGroup', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: stage.logRetentionDays,
      removalPolicy: stage.removalPolicy,
    });

    this.securityGroup =
      props.vpc &&
      new SecurityGroup(this, 'SecurityGroup', {
        vpc: props.vpc,
        description: `${functionName}: outbound only`,
        allowAllOutbound: true,
      });

    this.lambda = new NodejsFunction(this, 'Function', {
      functionName,
      entry: join(projectRoot, props.entry),
      handler: 'handler',
      projectRoot,
      depsLockFilePath: join(projectRoot, 'package-lock.json'),
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: stage.lambdaMemoryMb,
      timeout: Duration.seconds(props.timeoutSeconds ?? stage.lambdaTimeoutSeconds),
      ...(props.reservedConcurrency !== undefined && { reservedConcurrentExecutions: props.reservedConcurrency }),
      logGroup: this.logGroup,
      loggingFormat: LoggingFormat.JSON,
      ...(stage.tracing && { tracing: Tracing.ACTIVE }),
      // The role gains AWSLambdaVPCAccessExecutionRole (network interfaces) with the VPC.
      ...(props.vpc && {
        vpc: props.vpc,
        vpcSubnets: { subnets: props.vpc.privateSubnets },
        securityGroups: [this.securityGroup!],
      }),
      environment: {
        STAGE: stage.name,
        // No NODE_OPTIONS=--enable-source-maps: Node would read and parse each bundle's source
        // map at every cold start (+75 ms for the metastore group's in the bench's A/B). Stack
        // traces in the logs name the minified index.mjs; its index.mjs.map ships beside it
        // (ARCHITECTURE.md "Cold starts and stack traces").
        POWERTOOLS_SERVICE_NAME: `dpm-${name}`,
        ...props.environment,
      },
      bundling: {
        minify: true,
        sourceMap: true,
        define: { ...LAMBDA_DEFINE },
        format: OutputFormat.ESM,
        target: 'node24',
        // The bundled SDK v3 is newer than the runtime's and loads faster cold...
        bundleAwsSDK: true,
        // ...but a client only some stages call, loaded on first use, comes from the runtime.
        externalModules: [...RUNTIME_SDK_CLIENTS],
        mainFields: ['module', 'main'],
        // ESM bundles still meet CommonJS dependencies that call require().
        banner: "import { createRequire } from 'module';const require = createRequire(import.meta.url);",
        // Local esbuild from node_modules; Docker is not available everywhere.
        forceDockerBundling: false,
        ...((props.bundledFiles || props.builtFiles) && {
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (inputDir: string, outputDir: string) => afterBundlingCommands(props, inputDir, outputDir),
          },
        }),
      },
    });
    this.grantPrincipal = this.lambda.grantPrincipal;

    // cdk-nag (infra/aws/nag.ts): what every function's role holds by design.
    const managed = (name: string) =>
      `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/${name}]`;
    Validations.of(this).acknowledge({
      id: managed('AWSLambdaBasicExecutionRole'),
      reason:
        "Lambda's own minimal managed policy: create log streams and put log events (the log group is the " +
        "function's own, made here with the stage's retention)",
    });
    if (props.vpc) {
      Validations.of(this).acknowledge({
        id: managed('AWSLambdaVPCAccessExecutionRole'),
        reason: "Lambda's own managed policy for a function in a VPC: create and delete its network interfaces",
      });
    }
    if (stage.tracing) {
      Validations.of(this).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords take no resource ' +
          '(test/infra checks that nothing else is granted on every resource)',
      });
    }
  }
}
