import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { GROUPS, type GroupDefinition, type GroupName } from '../groups.js';
import type { QueueKey, TableKey } from '../tables.js';
import { ServiceFunction } from './service-function.js';
import type { Stage } from './stages.js';

export interface StatelessStackProps extends StackProps {
  readonly stage: Stage;
  readonly tables: Readonly<Record<TableKey, ITable>>;
  readonly queues: Readonly<Record<QueueKey, IQueue>>;
  /** Where group entries resolve from; defaults to the repository root. */
  readonly projectRoot?: string;
  /** Reported by GET /api/health/ping (`-c buildNumber=<git sha>`). */
  readonly buildNumber?: string;
}

/** The variable through which a sending group learns each queue's URL (read by shared/config.ts). */
const QUEUE_URL_VARIABLE: Record<QueueKey, string> = { crewRuns: 'CREW_RUN_QUEUE_URL' };

/** Serves `$default`, so unknown paths get the service's JSON 404 rather than API Gateway's. */
const FALLBACK_GROUP: GroupName = 'platform';

/** Compute and routing: one Lambda per endpoint group behind one HTTP API. */
export class StatelessStack extends Stack {
  readonly functions: ReadonlyMap<string, ServiceFunction>;
  readonly api: HttpApi;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    const { stage } = props;
    const groups: readonly GroupDefinition[] = GROUPS;

    const sharedEnvironment = definedOnly({
      AUTH_ISSUER: stage.authIssuer,
      AUTH_AUDIENCE: stage.authAudience,
      AUTH_JWKS_URL: stage.authJwksUrl,
      EVENTS_TTL_DAYS: String(stage.eventsTtlDays),
      BUILD_NUMBER: props.buildNumber,
      CREW_HTTP_ALLOWED_HOSTS:
        stage.crewHttpAllowedHosts.length > 0 ? stage.crewHttpAllowedHosts.join(',') : undefined,
      LLM_BASE_URL: stage.llmBaseUrl,
    });

    const functions = new Map<string, ServiceFunction>();
    const integrations = new Map<string, HttpLambdaIntegration>();
    for (const group of groups) {
      const queueEnvironment = Object.fromEntries(
        (group.sendsTo ?? []).map((key) => [QUEUE_URL_VARIABLE[key], props.queues[key].queueUrl]),
      );
      const fn = new ServiceFunction(this, constructId(group.name), {
        stage,
        name: group.name,
        entry: group.entry,
        projectRoot: props.projectRoot,
        environment: { ...sharedEnvironment, ...queueEnvironment },
      });
      // Least privilege: exactly what the group declares; the grants add the KMS actions they need.
      for (const [key, access] of Object.entries(group.tables) as [TableKey, 'read' | 'readWrite'][]) {
        if (access === 'readWrite') props.tables[key].grantReadWriteData(fn);
        else props.tables[key].grantReadData(fn);
      }
      for (const key of group.sendsTo ?? []) props.queues[key].grantSendMessages(fn);

      functions.set(group.name, fn);
      integrations.set(group.name, new HttpLambdaIntegration(`${constructId(group.name)}Integration`, fn.lambda));
    }
    this.functions = functions;

    const fallback = integrations.get(FALLBACK_GROUP);
    if (!fallback) throw new Error(`no group named "${FALLBACK_GROUP}" to serve unknown paths`);

    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      logGroupName: `/aws/apigateway/dpm-${stage.name}`,
      retention: stage.logRetentionDays,
      removalPolicy: stage.removalPolicy,
    });
    this.api = new HttpApi(this, 'Api', {
      apiName: `dpm-${stage.name}`,
      defaultIntegration: fallback,
      createDefaultStage: false,
    });
    // Declared by hand because only an explicit stage takes access-log settings.
    const apiStage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            routeKey: '$context.routeKey',
            path: '$context.path',
            status: '$context.status',
            responseLength: '$context.responseLength',
            integrationLatency: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });

    for (const group of groups) {
      const integration = integrations.get(group.name)!;
      for (const prefix of group.prefixes) {
        this.api.addRoutes({ path: prefix, methods: [HttpMethod.ANY], integration });
        this.api.addRoutes({ path: `${prefix}/{proxy+}`, methods: [HttpMethod.ANY], integration });
      }
      for (const path of group.exactPaths ?? []) {
        this.api.addRoutes({ path, methods: [HttpMethod.GET], integration });
      }
    }

    new CfnOutput(this, 'ApiUrl', { value: apiStage.url, description: `dpm ${stage.name} HTTP API` });
  }
}

/** `data-shares` → `DataShares`: construct ids stay stable and readable. */
const constructId = (name: string): string =>
  name.replace(/(^|-)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase());

const definedOnly = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
